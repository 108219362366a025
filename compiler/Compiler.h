//===- Compiler.h - compile and train models from a host program -*- C++
//-*-===//
//
// The JIT API: a host program hands Weft a model (a Hugging Face config, .mlir
// text, or a graph built with GraphBuilder), compiles it in-process through
// the same pipeline as `weftc compile`, and runs training or evaluation steps
// on its own buffers. No MLIR type appears here, so host programs need not
// include MLIR headers unless they build graphs themselves.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_COMPILER_COMPILER_H
#define WEFT_COMPILER_COMPILER_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft {

class GraphBuilder;

namespace runtime {
class SchedExecutor;
struct TrainSteps;
} // namespace runtime

struct CompileOptions {
  int64_t batch = 1;
  int64_t seq = 0; // 0: the model's maximum positions (configs only).
  /// Compute type: "f32", or "bf16" with f32 master weights.
  std::string dtype = "f32";
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weightDecay = 0.1;
  double maxGradNorm = 1.0;
  uint64_t seed = 0; // Parameter initialisation.
};

struct StepResult {
  float loss = 0;
  float gradNorm = 0;
};

/// A compiled model: parameters, optimizer state, and its step and forward
/// programs, ready to run.
class Executable {
public:
  ~Executable();

  int64_t batch() const { return batch_; }
  int64_t seq() const { return seq_; }

  /// One AdamW step on `tokens` and `labels` ([batch, seq] each, caller
  /// owned) with learning rate `lr`.
  absl::StatusOr<StepResult> trainStep(const int32_t *tokens,
                                       const int32_t *labels, float lr);
  /// The forward pass: returns the mean loss; fills `logits` ([batch, seq,
  /// vocab]) when given.
  absl::StatusOr<float> evaluate(const int32_t *tokens, const int32_t *labels,
                                 std::vector<float> *logits = nullptr);

  /// Parameter values by name (Hugging Face names), as f32, and replacing
  /// them (the same number of elements; rounded to the parameter's type).
  absl::StatusOr<std::vector<float>> parameter(const std::string &name) const;
  absl::Status setParameter(const std::string &name,
                            const std::vector<float> &values);
  std::vector<std::string> parameterNames() const;

private:
  friend class Compiler;
  Executable() = default;
  std::unique_ptr<runtime::SchedExecutor> executor;
  /// The bundle's train schedule, which trainStep walks.
  std::unique_ptr<runtime::TrainSteps> trainSteps;
  int64_t batch_ = 0, seq_ = 0, steps = 0;
};

class Compiler {
public:
  Compiler();
  ~Compiler();

  /// A GraphBuilder whose graph compile() accepts; it must return the 0-d
  /// loss first and take [batch, seq] i32 tokens and labels.
  GraphBuilder &newGraph();
  /// Compiles the graph of the last newGraph() with `loss` and `logits` as
  /// the builder's results (finish is called here).
  absl::StatusOr<std::unique_ptr<Executable>>
  compileGraph(const CompileOptions &options);
  /// Compiles a model family from a Hugging Face config.json.
  absl::StatusOr<std::unique_ptr<Executable>>
  compileConfig(const std::string &path, const CompileOptions &options);
  /// Compiles `.mlir` text holding @forward.
  absl::StatusOr<std::unique_ptr<Executable>>
  compileMlir(const std::string &text, const CompileOptions &options);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace weft

#endif // WEFT_COMPILER_COMPILER_H
