//===- Trainer.h - training with the reference evaluator --------*- C++ -*-===//
//
// Runs a step function built by weft-autodiff + weft-optimizer-adamw on the
// reference evaluator, keeping parameters and optimizer state between steps.
// It is the oracle compiled training runs are compared against.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_COMPILER_REFERENCE_TRAINER_H
#define WEFT_COMPILER_REFERENCE_TRAINER_H

#include "compiler/reference/Evaluator.h"

namespace weft::reference {

struct StepMetrics {
  double loss = 0;
  double gradNorm = 0;
};

class Trainer {
public:
  /// `step` takes (tokens, labels, lr, step) and returns (loss, grad_norm).
  /// Parameters and state start from their initializers under `seed`, or
  /// from `initial` for the names it holds.
  Trainer(mlir::func::FuncOp step, uint64_t seed, Assignments initial = {},
          Precision precision = Precision::F32);

  /// Runs one step on a batch with learning rate `lr` and applies its
  /// assignments.
  mlir::FailureOr<StepMetrics> step(const Tensor &tokens, const Tensor &labels,
                                    double lr);

  /// Current parameter and state values by name.
  const Assignments &values() const { return values_; }
  /// Continues from other values, as if `stepsDone` steps had run.
  void reset(Assignments values, int64_t stepsDone) {
    values_ = std::move(values);
    steps = stepsDone;
  }
  int64_t stepsDone() const { return steps; }

private:
  mlir::func::FuncOp stepFunc;
  Precision precision;
  Assignments values_;
  int64_t steps = 0;
};

} // namespace weft::reference

#endif // WEFT_COMPILER_REFERENCE_TRAINER_H
