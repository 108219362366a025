//===- SchedOps.h - sched types and ops -------------------------*- C++ -*-===//

#ifndef WEFT_DIALECTS_SCHED_IR_SCHEDOPS_H
#define WEFT_DIALECTS_SCHED_IR_SCHEDOPS_H

#include "dialects/sched/IR/SchedDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/sched/IR/SchedEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sched/IR/SchedTypes.h.inc"

namespace weft::sched {
class ProgramOp;
class ScheduleOp;
class SequenceOp;
} // namespace weft::sched

#include "dialects/sched/IR/SchedInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/sched/IR/SchedOps.h.inc"

namespace weft::sched {
/// Registers the sched dialect.
void registerSchedDialect(mlir::DialectRegistry &registry);

/// The scratch bytes attention with `algorithm` needs for q [B, S, Hq, D]
/// and k [B, T, Hkv, D] of `elementBytes`-wide elements (the one rule of
/// the lowering and the verifier): gemm_softmax keeps f32 scores and the
/// probabilities in q's type, [B, Hq, S, T] each (the backward reuses them
/// for dP and dS); every backward adds an f32 row term delta [B, Hq, S];
/// the flash forward needs none. nullopt if the count overflows.
std::optional<int64_t> attentionScratchBytes(AttentionAlgorithm algorithm,
                                             bool grad,
                                             llvm::ArrayRef<int64_t> q,
                                             llvm::ArrayRef<int64_t> k,
                                             int64_t elementBytes);
/// Whether gemm_softmax can run q, k, v: cuBLASLt wants every row of S, T,
/// D and Dv elements 16-byte aligned.
bool attentionRowsAligned(llvm::ArrayRef<int64_t> q, llvm::ArrayRef<int64_t> k,
                          llvm::ArrayRef<int64_t> v, int64_t elementBytes);
} // namespace weft::sched

#endif // WEFT_DIALECTS_SCHED_IR_SCHEDOPS_H
