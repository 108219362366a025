//===- Kernels.h - the CPU kernels a bundle's steps call --------*- C++ -*-===//
//
// One kernel per weft op, in fp32 with wider accumulation, matching the
// reference evaluator's semantics. GEMMs go to OpenBLAS. A kernel is bound
// once, at load, to its buffers and decoded attributes, so running a step is
// a loop over closures.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_KERNELS_H
#define WEFT_RUNTIME_EXEC_KERNELS_H

#include "runtime/exec/Bundle.h"
#include "runtime/exec/CpuMath.h"

#include "absl/status/statusor.h"

#include <functional>
#include <vector>

namespace weft::runtime {

/// A value's storage as a kernel sees it.
struct Buf {
  char *data = nullptr;
  const ValueSpec *spec = nullptr;

  float *f() const { return reinterpret_cast<float *>(data); }
  int32_t *i() const { return reinterpret_cast<int32_t *>(data); }
  int64_t size() const { return spec->numElements(); }
  const std::vector<int64_t> &shape() const { return spec->shape; }
};

/// A bound kernel; a failure (an id out of range) names the op and index.
using Kernel = std::function<absl::Status()>;

/// Binds the kernel of `step` to its operand and result buffers, or reports
/// an op or element type the CPU runtime does not support.
/// Finds a generated kernel by symbol name in the bundle's library.
using SymbolResolver = std::function<void *(const std::string &)>;

/// The signature of a generated fused kernel's CPU launcher.
using FusedKernelFn = void (*)(const float *const *in, float *const *out,
                               int64_t n);

/// Where a vocabulary-parallel step (`vocab_axes`) sits: its rows or
/// columns are [offset, offset + local) of `total`, and `combine` all-reduces
/// floats across the vocabulary's group (max or sum), for cross-entropy.
/// Default: the whole vocabulary.
using VocabBlock = cpu::VocabRange;

/// (weft.fused steps call the generated kernel named by their "kernel"
/// attribute, found through `resolve`.)
absl::StatusOr<Kernel> bindKernel(const StepSpec &step,
                                  const std::vector<Buf> &in,
                                  const std::vector<Buf> &out,
                                  const SymbolResolver &resolve,
                                  const VocabBlock &block = {});

class Communicator;

/// Whether `op` is a collective (weft.all_reduce, weft.all_gather, ...).
bool isCollective(const std::string &op);

/// Binds a collective step to `comm` (which may be null only for
/// weft.copy_to_group, an identity in the forward).
absl::StatusOr<Kernel> bindCollective(const StepSpec &step,
                                      const std::vector<Buf> &in,
                                      const std::vector<Buf> &out,
                                      Communicator *comm);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_KERNELS_H
