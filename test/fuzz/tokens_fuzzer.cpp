//===- tokens_fuzzer.cpp - libFuzzer target for token files ---------------===//
//
// The bytes as a training data file, read every way weft-run and weftc eval
// read one: flat 2- and 4-byte ids and text under the byte tokenizer, then
// checked against a vocabulary and drawn into batches. Any file must give
// tokens or an error naming it, never a crash or a read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Batches.h"
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
/// Windows of 4 tokens, 2 rows, over vocabularies of the byte tokenizer's
/// 256 ids and GPT-2's 50257.
void drawBatches(std::vector<uint32_t> tokens, const std::string &label) {
  for (int64_t vocab : {256, 50257}) {
    auto sampler = BatchSampler::create(tokens, 2, 4, vocab, 7, label);
    if (!sampler.ok())
      continue;
    int32_t inputs[8], labels[8];
    for (int64_t step = 1; step <= 3; ++step) {
      sampler->fill(step, inputs, labels);
      for (int i = 0; i < 8; ++i)
        if (inputs[i] < 0 || inputs[i] >= vocab || labels[i] < 0 ||
            labels[i] >= vocab)
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
    drawBatches(std::move(*tokens), path);
  }
  auto bytes = readByteTokens(path);
  if (!bytes.ok() || bytes->size() != size)
    std::abort();
  drawBatches(std::move(*bytes), path);
  return 0;
}
