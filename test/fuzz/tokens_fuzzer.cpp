//===- tokens_fuzzer.cpp - libFuzzer target for token files ---------------===//
//
// The bytes as a training data file, read every way weft-run and weftc eval
// read one: flat 2- and 4-byte ids and text under the byte tokenizer, then
// checked against a vocabulary and cut into shuffled training windows. Any file
// must give tokens or an error naming it, never a crash or a read out of
// bounds.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Dataset.h"
#include "runtime/data/TokenFile.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace weft::runtime;

namespace {
/// The file as weft-run trains on it (ids checked, then windows of 4
/// tokens in shuffled epochs) over vocabularies of the byte tokenizer's 256
/// ids and GPT-2's 50257.
void drawBatches(const std::vector<uint32_t> &tokens, const std::string &path,
                 int width) {
  for (int64_t vocab : {256, 50257}) {
    if (!checkTokenRange(tokens, static_cast<uint32_t>(vocab), path).ok())
      continue;
    absl::StatusOr<Dataset> data = Dataset::fromFile(path, width, vocab);
    if (!data.ok())
      std::abort();
    absl::StatusOr<ShuffledWindows> windows =
        ShuffledWindows::create(*data, 4, vocab, 7);
    if (!windows.ok())
      continue;
    int32_t inputs[4], labels[4];
    for (int64_t i = 0; i < std::min<int64_t>(2 * windows->size(), 16); ++i) {
      if (!windows->read(windows->at(i), inputs, labels).ok())
        std::abort();
      for (int k = 0; k < 4; ++k)
        if (inputs[k] < 0 || inputs[k] >= vocab || labels[k] < 0 ||
            labels[k] >= vocab)
          std::abort();
    }
  }
  (void)decodeByteTokens(tokens);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The readers take a path, as weft-run does: one file per process.
  static const std::string path =
      "/tmp/weft-fuzz-tokens-" + std::to_string(::getpid()) + ".bin";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data), size);
  }
  for (int width : {2, 4}) {
    auto tokens = readTokenFile(path, width);
    if (!tokens.ok())
      continue;
    if (tokens->size() != size / width)
      std::abort();
    drawBatches(*tokens, path, width);
  }
  auto bytes = readByteTokens(path);
  if (!bytes.ok() || bytes->size() != size)
    std::abort();
  drawBatches(*bytes, path, 1);
  return 0;
}
