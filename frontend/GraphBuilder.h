//===- GraphBuilder.h - build weft graphs from C++ --------------*- C++ -*-===//
//
// A thin, typed layer over mlir::OpBuilder for host programs and the model
// families: each method creates one weft op at the end of the graph function
// and returns its result. Shapes are checked by the ops' own inference: a
// wrong shape emits the op's diagnostic (through the context's handler) and
// yields a null Value; every later call given a null Value yields null too,
// and finish() returns null. So a host program checks once, at the end.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FRONTEND_GRAPHBUILDER_H
#define WEFT_FRONTEND_GRAPHBUILDER_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace weft {

/// How a parameter is initialised (see weft.param).
struct Init {
  InitKind kind = InitKind::Zeros;
  std::optional<double> scale;

  static Init zeros() { return {InitKind::Zeros, std::nullopt}; }
  static Init ones() { return {InitKind::Ones, std::nullopt}; }
  static Init normal(double stddev) { return {InitKind::Normal, stddev}; }
  static Init uniform(double bound) { return {InitKind::Uniform, bound}; }
};

class GraphBuilder {
public:
  /// Starts a module holding one function `name` with no arguments yet.
  GraphBuilder(mlir::MLIRContext &context, llvm::StringRef name = "forward");

  mlir::OpBuilder &builder() { return b; }
  mlir::MLIRContext *context() { return b.getContext(); }
  /// Ops created from now on carry `name` as their location.
  void setScope(llvm::StringRef name);
  /// Parameters declared from now on belong to transformer layer `layer`
  /// (`weft.layer`, which pipeline stages are cut along); -1: to none
  /// (embeddings, the final norm, the head).
  void setLayer(int64_t layer) { this->layer = layer; }

  /// Adds a function argument; `name` is kept as the `weft.input` arg attr.
  mlir::Value input(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    mlir::Type elementType);
  mlir::Value param(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                    mlir::Type elementType, Init init);
  /// A splat constant of the given shape and element type.
  mlir::Value constant(llvm::ArrayRef<int64_t> shape, mlir::Type elementType,
                       double value);
  /// The positions 0 .. seq - 1 of the sequence (i32, marked
  /// `weft.positions`: context parallelism reorders them).
  mlir::Value positions(int64_t seq);

  // Elementwise.
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value max(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value tanh(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value rsqrt(mlir::Value x);
  mlir::Value square(mlir::Value x);
  mlir::Value pow(mlir::Value x, double exponent);
  mlir::Value gelu(mlir::Value x);
  mlir::Value silu(mlir::Value x);

  // Linear algebra and shapes.
  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs,
                     bool transposeLhs = false, bool transposeRhs = false);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> permutation);
  mlir::Value broadcast(mlir::Value x, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> dims);
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> limits);
  mlir::Value concat(mlir::ValueRange inputs, int64_t dim);
  mlir::Value cast(mlir::Value x, mlir::Type elementType);
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> dims);
  mlir::Value reduceMax(mlir::Value x, llvm::ArrayRef<int64_t> dims);
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> dims);

  // Neural-network ops.
  mlir::Value embedding(mlir::Value table, mlir::Value ids);
  mlir::Value layerNorm(mlir::Value x, mlir::Value weight, mlir::Value bias,
                        double epsilon);
  mlir::Value rmsNorm(mlir::Value x, mlir::Value weight, double epsilon);
  mlir::Value softmax(mlir::Value x, int64_t dim);
  mlir::Value rope(mlir::Value x, double theta, int64_t positionOffset = 0);
  mlir::Value attention(mlir::Value q, mlir::Value k, mlir::Value v,
                        double scale, bool causal, double dropout = 0,
                        int64_t seed = 0);
  /// Inverted dropout of `x` at `rate` (`x` itself at 0), its mask a
  /// function of `seed` and the model's `dropout_step` state parameter,
  /// which the first dropout declares.
  mlir::Value dropout(mlir::Value x, double rate, int64_t seed);
  mlir::Value crossEntropy(mlir::Value logits, mlir::Value labels,
                           int64_t ignoreIndex = -100);
  std::pair<mlir::Value, mlir::Value> topk(mlir::Value x, int64_t k);
  std::pair<mlir::Value, mlir::Value> topkGating(mlir::Value logits, int64_t k,
                                                 bool normalize);
  /// weft.expert_route: each pair's packed row and each expert's kept
  /// count; no `capacity`: dropless.
  std::pair<mlir::Value, mlir::Value>
  expertRoute(mlir::Value indices, int64_t numExperts,
              std::optional<int64_t> capacity);
  mlir::Value expertDispatch(mlir::Value x, mlir::Value positions,
                             int64_t rows);
  mlir::Value expertCombine(mlir::Value expertOutputs, mlir::Value weights,
                            mlir::Value positions);
  mlir::Value groupedMatmul(mlir::Value x, mlir::Value weight,
                            mlir::Value sizes, bool transposeRhs);
  /// [..., C] one-hot rows of `indices` in `elementType`.
  mlir::Value oneHot(mlir::Value indices, int64_t classes,
                     mlir::Type elementType);

  /// x + bias, with a [D] bias broadcast along the leading dims of x.
  mlir::Value addBias(mlir::Value x, mlir::Value bias);

  /// True once any op failed to build; finish() will return null.
  bool hasFailed() const { return hasError; }

  /// Ends the function with `results` and returns the module. Verifies it;
  /// returns null (with diagnostics emitted) if it does not verify.
  mlir::OwningOpRef<mlir::ModuleOp> finish(mlir::ValueRange results);
  /// Records the results for a later finish() by someone else (the JIT
  /// Compiler): for a model, the 0-d loss first, then the logits.
  void setResults(mlir::ValueRange results) {
    pendingResults.assign(results.begin(), results.end());
  }
  mlir::OwningOpRef<mlir::ModuleOp> finish() { return finish(pendingResults); }

private:
  mlir::Type placeholder() { return b.getNoneType(); }
  mlir::Operation *typed(mlir::Operation *op);
  template <typename OpTy> mlir::Value unary(mlir::Value x);
  template <typename OpTy> mlir::Value binary(mlir::Value x, mlir::Value y);
  static bool usable(mlir::ValueRange values);
  static mlir::Value first(mlir::Operation *op);

  mlir::OpBuilder b;
  mlir::Location loc;
  int64_t layer = -1;
  /// The `dropout_step` state parameter, declared by the first dropout
  /// that needs it.
  mlir::Value stepOfDropout();
  mlir::Value dropoutStep;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  std::vector<std::string> inputNames;
  llvm::SmallVector<mlir::Value> pendingResults;
  bool hasError = false;
};

/// Shape of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);

} // namespace weft

#endif // WEFT_FRONTEND_GRAPHBUILDER_H
