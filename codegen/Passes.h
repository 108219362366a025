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
/// Whether weft-lower-to-sched's `fp8-storage` option (auto, on or off)
/// keeps FP8 GEMM operands and gathered quantizations as codes for a
/// target: on, or auto on the cuda target.
inline bool fp8StorageOn(llvm::StringRef fp8Storage, bool cuda) {
  return fp8Storage == "on" || (fp8Storage == "auto" && cuda);
}
/// weft-lower-to-sched on `module` for `target`.
mlir::LogicalResult lowerToSched(mlir::ModuleOp module,
                                 const SchedTarget &target);
} // namespace weft::codegen

#endif // WEFT_CODEGEN_PASSES_H
