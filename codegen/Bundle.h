//===- Bundle.h - write planned programs as a bundle ------------*- C++ -*-===//

#ifndef WEFT_CODEGEN_BUNDLE_H
#define WEFT_CODEGEN_BUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace weft::codegen {

/// Serialises the memory-planned functions `programs` of `module` into
/// `dir/manifest.json` (see runtime/exec/BundleFormat.h). `meta` is stored
/// as given. Emits a diagnostic and fails on an op or type it cannot encode.
mlir::LogicalResult writeBundle(mlir::ModuleOp module,
                                llvm::ArrayRef<llvm::StringRef> programs,
                                llvm::StringRef dir, llvm::json::Object meta);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_BUNDLE_H
