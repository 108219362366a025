//===- safetensors_fuzzer.cpp - libFuzzer target for the reader -----------===//
//
// Any bytes must give a file or a diagnostic, never a crash, a hang or an
// out-of-bounds read (run under AddressSanitizer).
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = weft::runtime::SafetensorsFile::parse(
      std::string(reinterpret_cast<const char *>(data), size), "fuzz");
  if (file.ok())
    for (const weft::runtime::TensorInfo &t : file->tensors())
      (void)file->toDoubles(t);
  return 0;
}
