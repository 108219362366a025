//===- Passes.h - precision rewrites ----------------------------*- C++ -*-===//

#ifndef WEFT_PASSES_PRECISION_PASSES_H
#define WEFT_PASSES_PRECISION_PASSES_H

#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Error.h"

namespace weft {
#define GEN_PASS_DECL
#include "passes/precision/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/precision/Passes.h.inc"

/// Checks weft-fp8's recipe and keep list (see its description): an error
/// that says what each accepts.
llvm::Error checkFp8Options(llvm::StringRef recipe, llvm::StringRef keep);

/// weft-fp8 sets kFp8Attr, kFp8GemmsAttr and kFp8BytesAttr (WeftOps.h) on
/// the function it rewrites.
} // namespace weft

#endif // WEFT_PASSES_PRECISION_PASSES_H
