//===- Executor.h - run a bundle's programs on the CPU ----------*- C++ -*-===//
//
// Owns what a training run keeps between steps (parameters, optimizer state,
// constants) and one arena per program sized by the memory plan. Programs run
// their bound kernels in order; assigns are applied after the last step.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_EXECUTOR_H
#define WEFT_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/dist/Communicator.h"
#include "runtime/exec/Bundle.h"
#include "runtime/exec/Kernels.h"
#include "runtime/io/Safetensors.h"

#include "absl/status/statusor.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::runtime {

class GpuBackend;

/// A caller's input: F32 or I32 data of the program input's shape.
struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  const void *data = nullptr;
};

class Executor {
public:
  struct Options {
    /// After each step, fill arena bytes that no live value occupies with
    /// NaN, so a wrong memory plan shows up as wrong results (tests).
    bool poisonDeadBuffers = false;
    /// The job's collectives; required when the bundle is placed on more
    /// than one rank (its mesh), which it then lays out on the ranks.
    Communicator *comm = nullptr;
    /// Run the programs on GPU 0 (runtime/gpu) instead of the CPU. The
    /// bundle must have been compiled with `weftc compile --target cuda`.
    bool cuda = false;
    /// On the GPU, replay each program as a CUDA graph after its first run.
    bool cudaGraphs = true;
  };

  static absl::StatusOr<std::unique_ptr<Executor>> create(Bundle bundle,
                                                          Options options);
  static absl::StatusOr<std::unique_ptr<Executor>> create(Bundle bundle) {
    return create(std::move(bundle), Options());
  }

  ~Executor();

  /// Fills every parameter and state tensor from its initializer under
  /// `seed`, with the same generator as the reference evaluator.
  void initialize(uint64_t seed);
  /// The whole of parameter `name`: its shards gathered from the ranks
  /// that hold them (a collective: every rank of the job must call it, in
  /// the same order).
  absl::StatusOr<std::vector<float>> gatherParam(const std::string &name);
  /// The whole of output `name` of the last run of `program`, gathered
  /// from the ranks when it is split (a collective, as gatherParam).
  absl::StatusOr<std::vector<float>> gatherOutput(const std::string &program,
                                                  const std::string &name);
  /// Overwrites parameters from a checkpoint (names, dtypes and shapes must
  /// match; state tensors are taken when present). With `requireAll`, every
  /// model parameter must be in the file.
  absl::Status load(const SafetensorsFile &file, bool requireAll);

  /// Runs `program` on `inputs` (in the program's input order).
  absl::Status run(const std::string &program,
                   const std::vector<HostTensor> &inputs);
  /// The first element of output `name` of the last run of `program`.
  absl::StatusOr<float> scalarOutput(const std::string &program,
                                     const std::string &name) const;
  /// All elements of output `name` of the last run of `program`.
  absl::StatusOr<std::vector<float>> output(const std::string &program,
                                            const std::string &name) const;

  const Bundle &bundle() const { return bundle_; }
  /// This process's rank in the job (0 without a communicator).
  int64_t rank() const { return options_.comm ? options_.comm->rank() : 0; }
  /// Parameter `name` on the host, for reading or changing before a run.
  std::vector<float> &param(const std::string &name);
  const std::map<std::string, std::vector<float>> &params();
  /// Where the programs run: "cpu", or the GPU's name and architecture.
  std::string device() const;

private:
  struct Program;
  Executor() = default;
  absl::Status bind(const std::string &name, const ProgramSpec &spec);
  /// Assembles the whole tensor of which `local` (of `shape`) is this
  /// rank's block under `sharding`, from every rank's block.
  absl::StatusOr<std::vector<float>>
  gatherBlocks(const std::vector<float> &local,
               const std::vector<int64_t> &shape, const Sharding &sharding);
  /// Where a vocabulary-parallel step's block lies (default: none).
  absl::StatusOr<VocabBlock> vocabBlock(const StepSpec &step,
                                        const std::vector<Buf> &in,
                                        const std::vector<Buf> &out);
  void poison(const Program &program, size_t step);
  /// With a GPU: brings the host parameters up to date after runs.
  absl::Status syncHostParams();

  Bundle bundle_;
  Options options_;
  void *library_ = nullptr; // dlopen handle of the generated kernels.
  std::map<std::string, std::vector<float>> params_;
  std::vector<std::vector<float>> constants_;
  std::map<std::string, std::unique_ptr<Program>> programs_;
  /// The GPU half, when options_.cuda; parameters then live on the device
  /// between runs, and these say which copy is newer.
  std::unique_ptr<GpuBackend> gpu_;
  bool deviceParamsStale_ = true, hostParamsStale_ = false;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_EXECUTOR_H
