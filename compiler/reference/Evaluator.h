//===- Evaluator.h - the reference evaluator of weft graphs -----*- C++ -*-===//
//
// A plain interpreter of the weft dialect on the CPU. It defines what every
// op means: each op's result is computed in double from the op description
// and rounded once to the result's element type (fp32 in Precision::F32 mode,
// left in double in Precision::F64 mode; bf16, f16 and fp8 always emulated by
// rounding). It is slow and meant to be obviously correct: every later pass
// and placement is checked against it.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_COMPILER_REFERENCE_EVALUATOR_H
#define WEFT_COMPILER_REFERENCE_EVALUATOR_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "runtime/support/Float.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::reference {

/// A dense row-major tensor of doubles; integer tensors hold exact integers.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> shape, std::vector<double> data)
      : shape(std::move(shape)), data(std::move(data)) {}
  static Tensor zeros(std::vector<int64_t> shape);
  int64_t numElements() const;
};

enum class Precision { F64, F32 };

/// Supplies the value of a weft.param; a failure (with a diagnostic already
/// emitted) stops evaluation.
using ParamProvider = std::function<mlir::FailureOr<Tensor>(ParamOp)>;

/// The value a fresh run gives `param` under `seed` (see weft.param).
Tensor initialParamValue(ParamOp param, uint64_t seed);

/// A provider that initialises every parameter from its initializer.
ParamProvider randomInitProvider(uint64_t seed);

/// The values a step's weft.assign ops give each parameter, by name.
using Assignments = std::map<std::string, Tensor>;

/// Runs `func` on `inputs` (one per argument, matching its types) and returns
/// its results; weft.assign values go to `assignments` when given. Run-time
/// errors (an id out of range) are emitted as diagnostics on the offending
/// op.
mlir::FailureOr<std::vector<Tensor>>
evaluate(mlir::func::FuncOp func, llvm::ArrayRef<Tensor> inputs,
         const ParamProvider &params, Precision precision = Precision::F32,
         Assignments *assignments = nullptr);

/// The runtime dtype that stores `elementType` (a safetensors dtype), if any.
std::optional<runtime::DType> storageType(mlir::Type elementType);

/// The number of scalar elements in the model parameters (weft.param ops not
/// marked `state`) of `func`.
int64_t countParameters(mlir::func::FuncOp func);

} // namespace weft::reference

#endif // WEFT_COMPILER_REFERENCE_EVALUATOR_H
