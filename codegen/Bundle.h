//===- Bundle.h - write planned programs as a bundle ------------*- C++ -*-===//

#ifndef WEFT_CODEGEN_BUNDLE_H
#define WEFT_CODEGEN_BUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace weft::codegen {

/// The manifest (see runtime/exec/BundleFormat.h) of the memory-planned
/// functions `programs` of `module`, with `meta` stored as given. Emits a
/// diagnostic and fails on an op or type it cannot encode.
mlir::FailureOr<llvm::json::Object>
buildManifest(mlir::ModuleOp module, llvm::ArrayRef<llvm::StringRef> programs,
              llvm::json::Object meta);

/// buildManifest, written to `dir/manifest.json`.
mlir::LogicalResult writeBundle(mlir::ModuleOp module,
                                llvm::ArrayRef<llvm::StringRef> programs,
                                llvm::StringRef dir, llvm::json::Object meta);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_BUNDLE_H
