//===- Layers.h - a training graph's transformer layers --------*- C++ -*-===//
//
// Which forward op belongs to which transformer layer, found from the
// `weft.layer` of the parameters each op reads (not from names or
// locations, so a graph written by hand has layers too), and what leaves
// each layer. Recomputation chooses per layer; the health probes measure
// per layer.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_RECOMPUTE_LAYERS_H
#define WEFT_PASSES_RECOMPUTE_LAYERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <cstdint>
#include <limits>
#include <string>

namespace weft {

/// Layer numbers of forward ops outside the model's layers.
constexpr int64_t kPrologue = -1;
constexpr int64_t kEpilogue = std::numeric_limits<int64_t>::max();
/// A parameter without `weft.layer` (an embedding, the final norm's).
constexpr int64_t kUnlayered = -2;

inline bool inLayers(int64_t l) { return l >= 0 && l != kEpilogue; }

/// The forward of `func`: the ops its first result (the loss) needs.
llvm::DenseSet<mlir::Operation *> forwardOps(mlir::func::FuncOp func);

/// Each forward op's layer: the largest `weft.layer` among the parameters
/// it reads and its operands' layers. Before any layered op, an op is in
/// the prologue; an op that reads a parameter without a layer after one
/// (the final norm, a tied head) starts the epilogue, which then spreads.
/// Where a parameter is declared does not matter, only where it is read.
/// (A parameter without a layer that the layers themselves share, as
/// T5's relative bias, would end them early: give it a layer.)
llvm::DenseMap<mlir::Operation *, int64_t>
layersOf(mlir::func::FuncOp func,
         const llvm::DenseSet<mlir::Operation *> &forward);

/// The forward values that depend on the step's inputs: activations, as
/// against parameters and what is made from them alone (a weight's view,
/// its compute-type copy, its ZeRO-3 gather), which stay whatever the
/// policy.
llvm::DenseSet<mlir::Value>
activationsOf(mlir::func::FuncOp func,
              const llvm::DenseSet<mlir::Operation *> &forward);

/// Per layer in order, the activation that leaves it: the last one (in
/// program order) of the layer's ops that an op of a later layer or the
/// epilogue reads, the residual stream the next layer takes.
llvm::MapVector<int64_t, mlir::Value> layerOutputs(mlir::func::FuncOp func);

/// Layer `l`'s name: its first parameter's name up to and including the
/// first all-digit component ("transformer.h.3",
/// "model.layers.3"), or "layer.3" when a parameter name has none.
std::string layerName(mlir::func::FuncOp func, int64_t l);

} // namespace weft

#endif // WEFT_PASSES_RECOMPUTE_LAYERS_H
