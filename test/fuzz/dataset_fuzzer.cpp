//===- dataset_fuzzer.cpp - libFuzzer target for dataset indexes ----------===//
//
// The bytes as a dataset.json beside three shards of known sizes (40 uint16
// ids, 101 bytes, and an empty file), read as training reads a dataset:
// the index checked against the shards, cut into windows of 4 tokens and
// shuffled, and two epochs of windows read back. Any index must give
// windows of ids inside the vocabulary it declares, or an error, never a
// crash or a read out of bounds.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Dataset.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace weft::runtime;
namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() /
                 ("weft-fuzz-dataset-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream ids(d / "shard-0.bin", std::ios::binary);
    for (uint16_t i = 0; i < 40; ++i)
      ids.write(reinterpret_cast<const char *>(&i), 2);
    std::ofstream(d / "shard-1.bin", std::ios::binary)
        << std::string(101, '\x07');
    std::ofstream(d / "empty.bin", std::ios::binary);
    return d;
  }();
  {
    std::ofstream out(dir / "dataset.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(data), size);
  }
  absl::StatusOr<Dataset> dataset = Dataset::open(dir.string());
  if (!dataset.ok())
    return 0;
  int64_t vocab = dataset->vocab;
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*dataset, 4, 50257, 3);
  if (!windows.ok())
    return 0;
  int32_t tokens[4], labels[4];
  int64_t reads = std::min<int64_t>(2 * windows->size(), 64);
  for (int64_t i = 0; i < reads; ++i) {
    WindowRef w = windows->at(i);
    if (w.shard < 0 ||
        w.shard >= static_cast<int64_t>(dataset->shards.size()) ||
        w.offset < 0 || w.offset + 5 > dataset->shards[w.shard].tokens)
      std::abort();
    if (!windows->read(w, tokens, labels).ok())
      continue;
    for (int k = 0; k < 4; ++k)
      if (tokens[k] < 0 || tokens[k] >= vocab || labels[k] < 0 ||
          labels[k] >= vocab)
        std::abort();
  }
  return 0;
}
