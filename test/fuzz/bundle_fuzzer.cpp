//===- bundle_fuzzer.cpp - libFuzzer target for the manifest reader -------===//
//
// Any manifest text must load or be rejected with a diagnostic; a manifest
// that loads must be safe to bind (every id and offset was checked).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Bundle.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto bundle = weft::runtime::Bundle::parse(
      std::string(reinterpret_cast<const char *>(data), size), "fuzz");
  if (bundle.ok())
    for (const auto &[name, program] : bundle->programs)
      for (const auto &value : program.values)
        (void)value.bytes();
  return 0;
}
