//===- topology_fuzzer.cpp - libFuzzer target for topology files ----------===//
//
// Any topology text must be refused with an error naming the key, or give
// a topology that survives its own JSON form: what toJSON writes, parse
// reads back to the same cluster. The bytes are tried as a preset
// spec ("dgx-h100:4") too.
//
//===----------------------------------------------------------------------===//

#include "passes/costmodel/Topology.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

using weft::Topology;

namespace {
bool sameCluster(const Topology &a, const Topology &b) {
  return a.name == b.name && a.nodes == b.nodes &&
         a.devicesPerNode == b.devicesPerNode &&
         a.device.name == b.device.name &&
         a.device.peakFlops.size() == b.device.peakFlops.size();
}

void roundTrip(const Topology &t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << t.toJSON();
  llvm::Expected<Topology> again = Topology::parse(text, "round-trip.json");
  if (!again) {
    llvm::errs() << llvm::toString(again.takeError()) << "\n";
    std::abort();
  }
  if (!sameCluster(t, *again))
    std::abort();
  llvm::Error fits = t.checkMesh({{"dp", t.nodes}, {"tp", t.devicesPerNode}});
  if (fits)
    std::abort(); // The whole cluster as a mesh always fits it.
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<Topology> topology = Topology::parse(text, "fuzz.json");
  if (topology)
    roundTrip(*topology);
  else
    llvm::consumeError(topology.takeError());
  if (size < 64) {
    llvm::Expected<Topology> preset = Topology::preset(text);
    if (preset)
      roundTrip(*preset);
    else
      llvm::consumeError(preset.takeError());
  }
  return 0;
}
