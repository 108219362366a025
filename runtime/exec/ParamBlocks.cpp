//===- ParamBlocks.cpp - parameters as blocks on the ranks ----------------===//

#include "runtime/exec/ParamBlocks.h"

#include "runtime/dist/Communicator.h"
#include "runtime/io/Safetensors.h"
#include "runtime/support/Random.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace weft::runtime {

void fillParams(uint64_t seed, const std::vector<ParamFill> &fills) {
  // Threads take tensors one at a time.
  std::atomic<size_t> next{0};
  auto fill = [&] {
    for (size_t k = next++; k < fills.size(); k = next++) {
      const ParamFill &p = fills[k];
      uint64_t stream = seed ^ fnv1a64(p.name);
      // Draws are indexed by the element's place in the global tensor, so
      // a shard holds exactly the values a single rank would.
      forEachInBlock(p.local, p.global, p.start, [&](int64_t i, int64_t g) {
        double v = p.init == ParamInit::Ones     ? 1.0
                   : p.init == ParamInit::Normal ? p.scale * normal(stream, g)
                   : p.init == ParamInit::Uniform
                       ? p.scale * (2 * uniform24(stream, g) - 1)
                       : 0.0;
        p.data[i] = static_cast<float>(v);
      });
    }
  };
  unsigned threads =
      std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t)
    workers.emplace_back(fill);
  fill();
  for (std::thread &w : workers)
    w.join();
}

absl::Status readBlock(const SafetensorsFile &file, const ParamFill &fill,
                       DType dtype) {
  std::vector<int64_t> stored = fill.global;
  if (fill.checkpointRows >= 0)
    stored[0] = fill.checkpointRows;
  if (!fill.checkpointShape.empty())
    stored = fill.checkpointShape;
  absl::StatusOr<std::vector<double>> values =
      fill.checkpointStack.empty()
          ? file.parameterValues(fill.name, dtype, stored)
          : file.stackedParameterValues(fill.checkpointStack, dtype, stored);
  if (!values.ok())
    return values.status();
  // Rows lead in row-major order: the stored rows' flat indices are the
  // global tensor's, and the padding's come after them all.
  size_t end = values->size();
  forEachInBlock(fill.local, fill.global, fill.start,
                 [&](int64_t i, int64_t g) {
                   fill.data[i] = static_cast<size_t>(g) < end
                                      ? static_cast<float>((*values)[g])
                                      : 0.0f;
                 });
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>>
gatherBlocks(Communicator *comm, const MeshSpec &mesh,
             const std::vector<float> &local, const std::vector<int64_t> &shape,
             const Sharding &sharding) {
  std::vector<std::string> axes = MeshSpec::axesOf(sharding);
  if (axes.empty() || !comm)
    return local;
  std::vector<float> blocks(local.size() * mesh.groupSize(axes));
  if (absl::Status s =
          comm->allGather(axes, local.data(), blocks.data(), local.size());
      !s.ok())
    return s;
  std::vector<int64_t> global = mesh.globalShape(shape, sharding);
  std::vector<float> out(blocks.size());
  std::vector<int64_t> members = mesh.groupMembers(comm->rank(), axes);
  for (size_t j = 0; j < members.size(); ++j) {
    const float *block = blocks.data() + j * local.size();
    forEachInBlock(shape, global, mesh.blockStart(members[j], shape, sharding),
                   [&](int64_t i, int64_t g) { out[g] = block[i]; });
  }
  return out;
}

} // namespace weft::runtime
