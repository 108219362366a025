//===- BundleData.cpp - what both executors derive from a bundle ---------===//

#include "runtime/exec/BundleData.h"

#include <algorithm>
#include <cstring>

namespace weft::runtime {

MeshSpec meshSpecOf(const sched::SchedBundle &bundle) {
  MeshSpec spec;
  if (bundle.mesh) {
    spec.axes = bundle.mesh->axes;
    spec.sizes = bundle.mesh->sizes;
  }
  return spec;
}

bool rankHolds(const MeshSpec &mesh, int64_t rank, const sched::Param &p) {
  int axis = mesh.axisIndex("pp");
  return !p.pipelineRank || axis < 0 ||
         mesh.coords(rank)[axis] == *p.pipelineRank;
}

std::vector<bool> programsOfRank(const sched::SchedBundle &b, int64_t rank) {
  std::vector<bool> mine(b.programs.size()), others(b.programs.size());
  for (const sched::Schedule &schedule : b.schedules) {
    const sched::Sequence &own = b.sequenceFor(schedule, rank);
    for (const sched::Sequence &s : schedule.sequences)
      for (const sched::Run &run : s.runs)
        (&s == &own ? mine : others)[run.programIndex] = true;
  }
  for (size_t i = 0; i < mine.size(); ++i)
    mine[i] = mine[i] || !others[i];
  return mine;
}

std::vector<std::vector<std::string>>
communicationGroups(const sched::SchedBundle &b) {
  std::vector<std::vector<std::string>> groups;
  auto add = [&](const std::vector<std::string> &axes) {
    if (!axes.empty() &&
        std::find(groups.begin(), groups.end(), axes) == groups.end())
      groups.push_back(axes);
  };
  for (const sched::Program &p : b.programs)
    for (const sched::Instruction &ins : p.instructions) {
      if (const auto *c = std::get_if<sched::CollectiveAttrs>(&ins.attrs))
        add(c->axes);
      else if (const auto *v = std::get_if<sched::VocabAttrs>(&ins.attrs))
        add(v->vocabAxes);
      else if (const auto *x =
                   std::get_if<sched::CrossEntropyAttrs>(&ins.attrs))
        add(x->vocabAxes);
      else if (ins.op == sched::Op::RingShift) // NCCL's ring is the axis'.
        add({ins.as<sched::PeerAttrs>().axis});
      else if (const auto *r = std::get_if<sched::RaggedAttrs>(&ins.attrs))
        add(r->axes);
      else if (const auto *route =
                   std::get_if<sched::ExpertRouteAttrs>(&ins.attrs))
        add(route->tokenAxes);
    }
  for (const sched::Param &p : b.params) {
    if (p.split)
      add(MeshSpec::axesOf(*p.split));
    // Gathered from its stage's ranks over pp (SchedExecutor::gatherParam).
    if (p.pipelineRank)
      add({"pp"});
  }
  for (const sched::Program &p : b.programs)
    for (const sched::Output &o : p.outputs)
      if (o.split)
        add(MeshSpec::axesOf(*o.split));
  return groups;
}

std::vector<uint8_t> elementBytes(double value, DType dtype) {
  std::vector<uint8_t> bytes(dtypeSize(dtype));
  if (dtype == DType::I32) {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(bytes.data(), &v, bytes.size());
  } else if (dtype == DType::I64) {
    int64_t v = static_cast<int64_t>(value);
    std::memcpy(bytes.data(), &v, bytes.size());
  } else {
    encode(value, dtype, bytes.data());
  }
  return bytes;
}

std::vector<uint8_t> constantBytes(const sched::Constant &c) {
  size_t width = dtypeSize(c.type.dtype);
  int64_t n = c.type.numElements();
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * width);
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = c.splat ? 0 : i;
    uint8_t *to = bytes.data() + i * width;
    if (c.type.dtype == DType::I32) {
      int32_t v = static_cast<int32_t>(c.ints[j]);
      std::memcpy(to, &v, width);
    } else if (c.type.dtype == DType::I64) {
      std::memcpy(to, &c.ints[j], width);
    } else {
      encode(c.floats[j], c.type.dtype, to);
    }
  }
  return bytes;
}

GemmEpilogue epilogueOf(sched::Epilogue e) {
  switch (e) {
  case sched::Epilogue::None:
    return GemmEpilogue::None;
  case sched::Epilogue::Bias:
    return GemmEpilogue::Bias;
  case sched::Epilogue::Gelu:
    return GemmEpilogue::Gelu;
  case sched::Epilogue::BiasGelu:
    return GemmEpilogue::BiasGelu;
  case sched::Epilogue::Dgelu:
    return GemmEpilogue::DGelu;
  }
  return GemmEpilogue::None;
}

} // namespace weft::runtime
