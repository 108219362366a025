//===- data_bench.cpp - how fast the loader reads a dataset ---------------===//
//
//   weft-data-bench DATASET --seq S --batch B --steps N [--ranks R]
//                   [--chunk-windows C]
//
// Reads N steps of a [B, S] global batch from DATASET's shuffled windows
// (runtime/data/Dataset.h), as rank 0 of R data-parallel ranks reads its
// rows (B / R of them), on one thread as the prefetch thread does, and
// prints {"tokens_per_s": ..., "seconds": ..., "file_reads": ...} for the
// tokens that rank read. --chunk-windows 1 reads each window on its own
// (0, the default: training's chunks of about 1 MiB). The page cache is
// whatever it is (run it twice for a warm one).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Dataset.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace weft::runtime;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: weft-data-bench DATASET --seq S --batch B "
                         "--steps N [--ranks R]\n");
    return 1;
  }
  int64_t seq = 256, batch = 8, steps = 1000, ranks = 1;
  ChunkShape shape;
  for (int i = 2; i + 1 < argc; i += 2) {
    int64_t value = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seq"))
      seq = value;
    else if (!std::strcmp(argv[i], "--batch"))
      batch = value;
    else if (!std::strcmp(argv[i], "--steps"))
      steps = value;
    else if (!std::strcmp(argv[i], "--ranks"))
      ranks = value;
    else if (!std::strcmp(argv[i], "--chunk-windows"))
      shape.windows = value;
  }
  absl::StatusOr<Dataset> data = Dataset::open(argv[1]);
  if (!data.ok()) {
    std::fprintf(stderr, "weft-data-bench: %s\n",
                 std::string(data.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<ShuffledWindows> windows =
      ShuffledWindows::create(*data, seq, data->vocab, 0, shape);
  if (!windows.ok()) {
    std::fprintf(stderr, "weft-data-bench: %s\n",
                 std::string(windows.status().message()).c_str());
    return 1;
  }
  int64_t rows = batch / ranks;
  std::vector<int32_t> tokens(seq), labels(seq);
  auto start = std::chrono::steady_clock::now();
  for (int64_t n = 0; n < steps; ++n)
    for (int64_t r = 0; r < rows; ++r)
      if (absl::Status s = windows->read(windows->at(n * batch + r),
                                         tokens.data(), labels.data());
          !s.ok()) {
        std::fprintf(stderr, "weft-data-bench: %s\n",
                     std::string(s.message()).c_str());
        return 1;
      }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("{\"tokens_per_s\": %.0f, \"seconds\": %.3f, \"windows\": "
              "%lld, \"file_reads\": %lld}\n",
              static_cast<double>(steps * rows * seq) / seconds, seconds,
              static_cast<long long>(windows->size()),
              static_cast<long long>(windows->fileReads()));
  return 0;
}
