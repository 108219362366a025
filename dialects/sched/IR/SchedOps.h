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
#include "llvm/ADT/SmallPtrSet.h"

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
/// The buffer whose storage `v` is: `v` seen through its views.
mlir::Value storageRoot(mlir::Value v);

/// The buffers an instruction reads and writes, by storage (storageRoot),
/// from its operands' memory effects.
struct BufferAccess {
  llvm::SmallPtrSet<mlir::Value, 4> reads, writes;
};
BufferAccess bufferAccess(mlir::Operation *op);

/// The first instruction after `op` that reads `buffer`'s storage, or null.
mlir::Operation *nextReader(mlir::Operation *op, mlir::Value buffer);

/// Fails with an error naming `pass` when `program` is already planned: the
/// passes that reorder instructions or give them streams run before memory
/// planning, which fixes where each buffer lives and for how long.
mlir::LogicalResult requireUnplanned(ProgramOp program, llvm::StringRef pass);

/// The FP8 scale modes' names ("tensor", "rows", "vec128", "blk128") and
/// their WEFT_FP8_SCALE_* (runtime/support/Fp8Scaling.h).
std::optional<int> parseFp8ScaleMode(llvm::StringRef name);
llvm::StringRef fp8ScaleModeName(int mode);

/// Registers the sched dialect.
void registerSchedDialect(mlir::DialectRegistry &registry);
} // namespace weft::sched

#endif // WEFT_DIALECTS_SCHED_IR_SCHEDOPS_H
