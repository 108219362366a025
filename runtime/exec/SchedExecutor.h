//===- SchedExecutor.h - run a bundle v2's programs on the CPU --*- C++ -*-===//
//
// Executes the instructions of a loaded (so validated) bundle v2: every
// decision is already in them, so this switches on each instruction's kind,
// reads its typed attributes and calls OpenBLAS, the generated kernels, the
// library kernels (CpuMath) or the Communicator. It owns what a run keeps
// between programs (parameters and optimizer state, constants) and one
// arena its programs share, each from its start (arena_ says why). One CPU
// stream runs every instruction in program order, a valid serialisation of the
// program's streams, so record and wait do nothing. With a GPU, the
// programs run on it instead (runtime/gpu/GpuBackend) and the host keeps
// the parameters for initialising, checkpoints and gathering, copying them
// to and from the device when the other side has changed them.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H
#define WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/BundleData.h"
#include "runtime/exec/ParamBlocks.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/gpu/GpuBackend.h"
#include "runtime/io/Safetensors.h"

#include "absl/status/statusor.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

/// A caller's input: the program input's bytes, of its shape and dtype.
struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  const void *data = nullptr;
};

class SchedExecutor {
public:
  struct Options {
    /// The job's collectives; required when the bundle's mesh has more
    /// than one rank (its size must be the job's).
    Communicator *comm = nullptr;
    /// After each instruction, fill the bytes of every alloc it was the last
    /// user of with NaN, so a wrong memory plan shows up as wrong results
    /// (tests; the CPU only).
    bool poisonDeadBuffers = false;
    /// After each instruction, scan the float buffers it names for NaN or
    /// infinity and fail at the first, naming the program, the instruction
    /// and the operand: the op that first made a non-finite value, instead
    /// of a NaN loss many steps later (weft-run --check-finite; the CPU
    /// only; it reads every operand again, so it is for finding a fault,
    /// not for every run).
    bool checkFinite = false;
    /// Run the programs on the GPU of this rank (its local rank) instead of
    /// the CPU; the bundle must have been compiled for cuda.
    bool cuda = false;
    /// On the GPU, replay each program as a CUDA graph after its first run.
    bool cudaGraphs = true;
    /// Makes the GPU backend instead of GpuBackend::create (tests: an
    /// emulated device); implies cuda.
    std::function<absl::StatusOr<std::unique_ptr<GpuBackend>>(
        const sched::SchedBundle &, GpuBackend::Options)>
        makeGpu;
  };

  /// Called after each instruction the CPU runs, with its program, its
  /// index and when it started and ended (weft-run --trace); empty: none.
  using InstructionHook =
      std::function<void(const sched::Program &, int64_t instruction,
                         std::chrono::steady_clock::time_point start,
                         std::chrono::steady_clock::time_point end)>;
  void setInstructionHook(InstructionHook hook) {
    instructionHook_ = std::move(hook);
  }
  /// Where this rank is: the program and instruction running now (null and
  /// -1 between runs), readable from another thread (a stall report).
  std::pair<const sched::Program *, int64_t> position() const {
    return {currentProgram_.load(std::memory_order_relaxed),
            currentInstruction_.load(std::memory_order_relaxed)};
  }

  /// Binds the programs this rank runs (programsOfRank) to their buffers,
  /// in one arena they share; fails on an
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
  /// Waits until every sched.send the programs have posted since the last
  /// call has been received, and frees the copies they were sent from
  /// (Communicator::waitSends); OK without a communicator. A send returns
  /// once posted and run() never waits for one: a pipeline schedule sends a
  /// micro-batch's activations long before the next stage runs the program
  /// that receives them, and waiting at the end of the sending program
  /// could wait for a receive the peer only posts after its own, matching,
  /// send to us. The training loop calls this at the end of each step.
  absl::Status finishSends();

  /// The first element of output `name` of the last run of `program`. The
  /// outputs in the arena are there until another program runs (the rank's
  /// programs share it): reading one after is an error, and so is reading
  /// another pipeline rank's program's.
  absl::StatusOr<float> scalarOutput(const std::string &program,
                                     const std::string &name) const;
  /// All elements of output `name` of the last run of `program`, as f32
  /// (while it is the last program run, as scalarOutput).
  absl::StatusOr<std::vector<float>> output(const std::string &program,
                                            const std::string &name) const;
  /// This rank's block of parameter `name`, as f32.
  absl::StatusOr<std::vector<float>> param(const std::string &name) const;
  /// The same block's bytes, in the parameter's type, copied into `into`
  /// (resized; its memory reused when it fits: a checkpoint's snapshot
  /// then costs one copy, no allocation and no widening).
  absl::Status copyParamBytes(const std::string &name,
                              std::vector<uint8_t> &into) const;
  /// Replaces this rank's block of parameter `name` (f32 values, as many as
  /// the block has; rounded to the parameter's type).
  absl::Status setParam(const std::string &name,
                        const std::vector<float> &values);
  /// The whole of parameter `name`, gathered from the ranks by its `split`
  /// (a collective: every rank calls it, in the same order).
  absl::StatusOr<std::vector<float>> gatherParam(const std::string &name);
  /// The whole of output `name` of the last run of `program`, gathered by
  /// the output's `split` (a collective, as gatherParam; while `program` is
  /// the last run, as scalarOutput).
  absl::StatusOr<std::vector<float>> gatherOutput(const std::string &program,
                                                  const std::string &name);

  /// Per expert_route instruction this rank runs (in the bundle's program
  /// order), the pairs its whole token group routed to each expert since the
  /// last call, dropped ones included; the counters restart. On the CPU
  /// only (empty on a GPU).
  std::vector<std::vector<int64_t>> takeRoutedPairs();

  const sched::SchedBundle &bundle() const { return bundle_; }
  /// Where the programs run: "cpu", or the GPU's name and architecture.
  std::string device() const;
  /// This process's rank in the job (0 without a communicator).
  int64_t rank() const { return options_.comm ? options_.comm->rank() : 0; }
  /// The bytes of the arena this rank's programs share (on the CPU).
  int64_t arenaBytes() const;
  /// The job's communicator (null on one rank).
  Communicator *communicator() const { return options_.comm; }
  /// Whether this rank's copy of `p` is current: a pipeline stage's tensor
  /// is only on the ranks of its pp coordinate (the others' copies are
  /// never read).
  bool holds(const sched::Param &p) const {
    return rankHolds(mesh_, rank(), p);
  }

private:
  struct Bytes;
  struct Bound;
  SchedExecutor() = default;
  absl::Status bindProgram(const sched::Program &program);
  /// Whether this rank runs `p` (programsOfRank); an error naming it if not.
  absl::Status checkRunnable(const sched::Program &p) const;
  /// Parameter k's block in f32: its own storage, or `wide` when it is
  /// narrower (then written back by narrow()).
  ParamFill blockOf(size_t k, std::vector<float> &wide);
  void narrow(size_t k, const std::vector<float> &wide);
  absl::StatusOr<std::function<absl::Status()>>
  bindInstruction(const sched::Program &program, const Bound &bound,
                  int64_t index);
  /// Options::checkFinite: the float operands of instruction `index` that
  /// it reads from outside the program (`before`: parameters, inputs,
  /// constants) or may have written (its allocs and views) hold no NaN or
  /// infinity; else an error naming the instruction and the operand.
  absl::Status checkFinite(const sched::Program &program, const Bound &bound,
                           int64_t index, bool before) const;

  sched::SchedBundle bundle_;
  Options options_;
  MeshSpec mesh_;           // The bundle's mesh (empty: one rank).
  void *library_ = nullptr; // dlopen handle of kernels.cpu.
  std::vector<std::unique_ptr<Bytes>> params_, constants_;
  std::map<std::string, std::unique_ptr<Bound>> programs_;
  /// The programs this rank runs (programsOfRank), the only ones bound.
  std::vector<bool> mine_;
  /// One arena, the size of the largest of those programs', that each uses
  /// from its start: a rank runs one program at a time (the GPU's too, each
  /// run ending in a synchronisation), and the train loop takes a run's
  /// stashes and outputs before the next, so a pipeline stage's forward,
  /// backward and W and the rank's step need the largest of their arenas,
  /// not their sum. arenaHolder_ is the program that ran last, whose
  /// outputs in the arena are still there.
  std::unique_ptr<Bytes> arena_;
  int64_t arenaBytes_ = 0;
  const sched::Program *arenaHolder_ = nullptr;
  /// Per expert_route instruction, pairs routed to each expert (a deque:
  /// the routes' steps keep pointers into it).
  std::deque<std::vector<int64_t>> routed_;
  /// The GPU half; parameters then live on the device between runs, and
  /// these say which copy is newer.
  std::unique_ptr<GpuBackend> gpu_;
  bool deviceStale_ = true;
  mutable bool hostStale_ = false;
  /// With a GPU: brings the host parameters up to date after runs.
  absl::Status syncHost() const;
  InstructionHook instructionHook_;
  std::atomic<const sched::Program *> currentProgram_{nullptr};
  std::atomic<int64_t> currentInstruction_{-1};
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_SCHEDEXECUTOR_H
