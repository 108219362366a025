//===- Nccl.h - a placed bundle's collectives through NCCL ------*- C++ -*-===//
//
// GpuCollectives on NVIDIA GPUs: one NCCL communicator per group of mesh
// axes the programs use, made when the GPU runtime starts. The group's
// first member makes the NCCL id and the others receive it through the
// job's CPU Communicator (Gloo, itself bootstrapped through the rendezvous
// store), so NCCL needs no launcher of its own. NCCL is loaded with dlopen
// (libnccl.so.2), like the rest of CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_GPU_NCCL_H
#define WEFT_RUNTIME_GPU_NCCL_H

#include "runtime/dist/Communicator.h"
#include "runtime/gpu/GpuDevice.h"

#include <map>
#include <memory>

namespace weft::runtime {

struct NcclLibrary;

class NcclCollectives : public GpuCollectives {
public:
  /// Makes this rank's communicator for each of `groups` (every rank passes
  /// the same list, in the same order), on the current CUDA context.
  static absl::StatusOr<std::unique_ptr<NcclCollectives>>
  create(Communicator &comm,
         const std::vector<std::vector<std::string>> &groups);
  ~NcclCollectives() override;

  absl::Status allReduce(const std::vector<std::string> &axes, uint64_t data,
                         size_t count, bool max, void *stream) override;
  absl::Status allGather(const std::vector<std::string> &axes, uint64_t in,
                         uint64_t out, size_t count, void *stream) override;
  /// Grouped ncclSend / ncclRecv to and from every member.
  absl::Status allToAll(const std::vector<std::string> &axes, uint64_t in,
                        uint64_t out, size_t count, void *stream) override;
  absl::Status reduceScatter(const std::vector<std::string> &axes, uint64_t in,
                             uint64_t out, size_t count, void *stream) override;
  /// A grouped ncclSend / ncclRecv on the axis' communicator.
  absl::Status ringShift(const std::string &axis, int64_t delta, int64_t tag,
                         uint64_t in, uint64_t out, size_t bytes,
                         void *stream) override;

private:
  NcclCollectives() = default;
  absl::StatusOr<void *> comm(const std::vector<std::string> &axes) const;
  absl::Status check(int result, const char *what) const;

  std::unique_ptr<NcclLibrary> lib;
  std::map<std::vector<std::string>, void *> comms;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_GPU_NCCL_H
