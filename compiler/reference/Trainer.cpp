//===- Trainer.cpp - training with the reference evaluator ----------------===//

#include "compiler/reference/Trainer.h"

using namespace mlir;

namespace weft::reference {

Trainer::Trainer(func::FuncOp step, uint64_t seed, Assignments initial,
                 Precision precision)
    : stepFunc(step), precision(precision), values_(std::move(initial)) {
  step.walk([&](ParamOp p) {
    if (!values_.count(p.getName().str()))
      values_[p.getName().str()] = initialParamValue(p, seed);
  });
}

FailureOr<StepMetrics> Trainer::step(const Tensor &tokens, const Tensor &labels,
                                     double lr) {
  ParamProvider provider = [this](ParamOp p) -> FailureOr<Tensor> {
    return values_.at(p.getName().str());
  };
  Tensor lrTensor({}, {lr}), stepTensor({}, {static_cast<double>(steps + 1)});
  Assignments assigned;
  FailureOr<std::vector<Tensor>> results =
      evaluate(stepFunc, {tokens, labels, lrTensor, stepTensor}, provider,
               precision, &assigned);
  if (failed(results))
    return failure();
  for (auto &[name, value] : assigned)
    values_[name] = std::move(value);
  ++steps;
  return StepMetrics{(*results)[0].data[0], (*results)[1].data[0]};
}

} // namespace weft::reference
