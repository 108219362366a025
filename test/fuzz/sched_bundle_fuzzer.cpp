//===- sched_bundle_fuzzer.cpp - libFuzzer target for the v2 loader -------===//
//
// Any manifest text must load or be refused with a status; a manifest that
// loads must be safe to execute from: every operand id, view, offset and
// launch the loader accepted is inside what it claims, which this walks.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/SchedBundle.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace weft::runtime::sched;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // No kernel files: a directory that does not exist.
  auto bundle = parseSchedManifest(
      std::string_view(reinterpret_cast<const char *>(data), size),
      "/nonexistent/weft-fuzz-bundle");
  if (!bundle.ok())
    return 0;
  int64_t sum = 0;
  for (const Program &p : bundle->programs) {
    for (const Buffer &b : p.buffers)
      sum +=
          b.type.bytes() +
          (b.kind == Buffer::Kind::View ? p.buffers.at(b.of).type.bytes() : 0);
    for (const Instruction &in : p.instructions) {
      for (int64_t id : in.operands)
        sum += p.buffers.at(id).type.numElements();
      (void)p.streams.at(in.stream);
      if (in.op == Op::Launch)
        (void)bundle->kernelDecls.at(in.as<LaunchAttrs>().kernelIndex);
    }
    for (const Output &o : p.outputs)
      (void)p.buffers.at(o.buffer);
  }
  for (const Schedule &s : bundle->schedules)
    for (const Sequence &q : s.sequences)
      for (const Run &r : q.runs)
        (void)bundle->programs.at(r.programIndex);
  return sum == -1;
}
