//===- Passes.h - passes that compose the compiler's layers -----*- C++ -*-===//

#ifndef WEFT_COMPILER_PASSES_H
#define WEFT_COMPILER_PASSES_H

#include "dialects/sched/IR/SchedOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Passes.h.inc"

/// What turns fused weft programs into planned sched programs, as a bundle
/// is compiled: weft-lower-to-sched with `options`, on cuda (with
/// overlap-collectives) the gather prefetch and deferred reduction readers
/// and stream assignment, then weft-sched-plan-memory.
void addSchedPasses(mlir::OpPassManager &pm, const SchedArenasOptions &options);
} // namespace weft

#endif // WEFT_COMPILER_PASSES_H
