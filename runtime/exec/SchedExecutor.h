//===- SchedExecutor.h - run a bundle v2's programs on the CPU --*- C++ -*-===//
//
// Executes the instructions of a loaded (so validated) bundle v2: every
// decision is already in them, so this switches on each instruction's kind,
// reads its typed attributes and calls OpenBLAS, the generated kernels, the
// library kernels (CpuMath) or the Communicator. It owns what a run keeps
// between programs (parameters and optimizer state, constants) and one
// arena per program, aligned and sized as the program says. One CPU stream
// runs every instruction in program order, a valid serialisation of the
// program's streams, so record and wait do nothing.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H
#define WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/ParamBlocks.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/io/Safetensors.h"

#include "absl/status/statusor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

class SchedExecutor {
public:
  struct Options {
    /// The job's collectives; required when the bundle's mesh has more
    /// than one rank (its size must be the job's).
    Communicator *comm = nullptr;
  };

  /// Binds every program's instructions to their buffers; fails on an
  /// instruction the CPU cannot run (naming the program and instruction).
  static absl::StatusOr<std::unique_ptr<SchedExecutor>>
  create(sched::SchedBundle bundle, Options options);

  ~SchedExecutor();

  /// Fills every parameter and state tensor from its initializer under
  /// `seed`, as Executor::initialize does (the same numbers).
  void initialize(uint64_t seed);
  /// Overwrites parameters from a checkpoint of whole tensors (names,
  /// dtypes and global shapes must match; state tensors are taken when
  /// present). With `requireAll`, every model parameter must be in it.
  absl::Status load(const SafetensorsFile &file, bool requireAll);
  /// Runs `program` on `inputs` (in the program's input order; shapes and
  /// dtypes must be the program's), then applies its assigns.
  absl::Status run(const std::string &program,
                   const std::vector<HostTensor> &inputs);

  /// The first element of output `name` of the last run of `program`.
  absl::StatusOr<float> scalarOutput(const std::string &program,
                                     const std::string &name) const;
  /// All elements of output `name` of the last run of `program`, as f32.
  absl::StatusOr<std::vector<float>> output(const std::string &program,
                                            const std::string &name) const;
  /// This rank's block of parameter `name`, as f32.
  absl::StatusOr<std::vector<float>> param(const std::string &name) const;
  /// The whole of parameter `name`, gathered from the ranks by its `split`
  /// (a collective: every rank calls it, in the same order).
  absl::StatusOr<std::vector<float>> gatherParam(const std::string &name);
  /// The whole of output `name` of the last run of `program`, gathered by
  /// the output's `split` (a collective, as gatherParam).
  absl::StatusOr<std::vector<float>> gatherOutput(const std::string &program,
                                                  const std::string &name);

  const sched::SchedBundle &bundle() const { return bundle_; }
  /// This process's rank in the job (0 without a communicator).
  int64_t rank() const { return options_.comm ? options_.comm->rank() : 0; }

private:
  struct Bytes;
  struct Bound;
  SchedExecutor() = default;
  absl::Status bindProgram(const sched::Program &program);
  /// Parameter k's block in f32: its own storage, or `wide` when it is
  /// narrower (then written back by narrow()).
  ParamFill blockOf(size_t k, std::vector<float> &wide);
  void narrow(size_t k, const std::vector<float> &wide);
  absl::StatusOr<std::function<absl::Status()>>
  bindInstruction(const sched::Program &program, const Bound &bound,
                  int64_t index);

  sched::SchedBundle bundle_;
  Options options_;
  MeshSpec mesh_;           // The bundle's mesh (empty: one rank).
  void *library_ = nullptr; // dlopen handle of kernels.cpu.
  std::vector<std::unique_ptr<Bytes>> params_, constants_;
  std::map<std::string, std::unique_ptr<Bound>> programs_;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H
