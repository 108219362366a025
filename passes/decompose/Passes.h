//===- Passes.h - composite-op expansion passes -----------------*- C++ -*-===//

#ifndef WEFT_PASSES_DECOMPOSE_PASSES_H
#define WEFT_PASSES_DECOMPOSE_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Pass/Pass.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/decompose/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/decompose/Passes.h.inc"
} // namespace weft

#endif // WEFT_PASSES_DECOMPOSE_PASSES_H
