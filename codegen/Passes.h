//===- Passes.h - codegen passes --------------------------------*- C++ -*-===//

#ifndef WEFT_CODEGEN_PASSES_H
#define WEFT_CODEGEN_PASSES_H

#include "dialects/sched/IR/SchedOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"
} // namespace weft

namespace weft::codegen {
struct SchedTarget;
/// weft-lower-to-sched on `module` for `target`.
mlir::LogicalResult lowerToSched(mlir::ModuleOp module,
                                 const SchedTarget &target);
} // namespace weft::codegen

#endif // WEFT_CODEGEN_PASSES_H
