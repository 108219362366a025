//===- WeftOps.h - weft graph ops -------------------------------*- C++ -*-===//

#ifndef WEFT_DIALECTS_WEFT_IR_WEFTOPS_H
#define WEFT_DIALECTS_WEFT_IR_WEFTOPS_H

#include "dialects/weft/IR/WeftDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/weft/IR/ShardingRule.h"

#include "dialects/weft/IR/WeftEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/weft/IR/WeftAttrs.h.inc"
#include "dialects/weft/IR/WeftInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/weft/IR/WeftOps.h.inc"

namespace weft {

/// Registers the weft dialect and the dialects its graphs use (func).
void registerWeftDialects(mlir::DialectRegistry &registry);

/// The `weft.sharding` of a function argument or op result, or null.
ShardingAttr getSharding(mlir::Value value);
/// Sets the `weft.sharding` of a function argument or op result (an op's
/// other results keep theirs, or become replicated).
void setSharding(mlir::Value value, ShardingAttr sharding);

/// Returns true if `type` is an element type weft computes in floating point.
bool isWeftFloat(mlir::Type type);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_IR_WEFTOPS_H
