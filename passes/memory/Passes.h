//===- Passes.h - memory planning -------------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_MEMORY_PASSES_H
#define WEFT_PASSES_MEMORY_PASSES_H

#include "dialects/sched/IR/SchedOps.h"
#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/memory/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/memory/Passes.h.inc"

/// Bytes of one element of a weft element type (f8 = 1, bf16/f16 = 2, ...).
int64_t elementBytes(mlir::Type type);

/// Whether `op`'s result is its operand's value under another type or
/// role, as the sched lowering makes it a view: a reshape, copy_to_group
/// (an identity whose gradient is a collective) and fp8_quantize_grad (an
/// identity whose gradient is quantized). weft-recompute asks.
inline bool isViewOp(mlir::Operation *op) {
  return mlir::isa<ReshapeOp, CopyToGroupOp, Fp8QuantizeGradOp>(op);
}

} // namespace weft

#endif // WEFT_PASSES_MEMORY_PASSES_H
