//===- checkpoint_fuzzer.cpp - libFuzzer target for checkpoint files -----===//
//
// A checkpoint's index.json and rank-<r>.json (runtime/checkpoint/
// CheckpointIndex.h): any bytes give their fields or a diagnostic naming
// the file, never a crash (run under AddressSanitizer). The first byte
// picks which file the rest is.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/CheckpointIndex.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view text(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto table = weft::runtime::parseRankTable(text, "rank-0.json");
    // What resharding computes from an entry must not overflow (UBSan).
    if (table.ok())
      for (const auto &[name, entry] : *table)
        (void)entry.keptElements();
    return 0;
  }
  auto index = weft::runtime::parseCheckpointIndex(text, "index.json");
  if (index.ok())
    (void)weft::runtime::checkRunFacts(*index, "index.json", {{"--seed", "1"}});
  return 0;
}
