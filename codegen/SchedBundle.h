//===- SchedBundle.h - sched modules as bundle v2 manifests -----*- C++ -*-===//
//
// The compiler side of bundle v2 (docs/bundle-format.md): a planned sched
// module written as the manifest the runtime executes, and a manifest read
// back as the sched module it says, for `weftc inspect` and for tests that
// the round trip bundle -> sched -> bundle is the identity.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_SCHEDBUNDLE_H
#define WEFT_CODEGEN_SCHEDBUNDLE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/JSON.h"

namespace weft::codegen {

/// The bundle version this writer writes and this reader reads.
inline constexpr int64_t kSchedBundleVersion = 2;

/// The manifest of planned sched module `module`. `meta` (what the model
/// is) and `kernels` (the kernel files and their hashes) are stored as
/// given; a module read back by readSchedManifest keeps both as module
/// attributes (`sched.meta`, `sched.kernels`) and they are used when the
/// arguments are null. Fails with a diagnostic on a module that is not
/// planned or holds something the format cannot say.
mlir::FailureOr<llvm::json::Object>
writeSchedManifest(mlir::ModuleOp module, const llvm::json::Object *meta,
                   const llvm::json::Object *kernels);

/// The sched module the v2 manifest `text` says, verified; errors name the
/// file (`source`) and, for text that is not JSON, has a key twice or nests
/// too deep, the byte or key; else the program and the instruction.
mlir::OwningOpRef<mlir::ModuleOp> readSchedManifest(llvm::StringRef text,
                                                    llvm::StringRef source,
                                                    mlir::MLIRContext *context);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_SCHEDBUNDLE_H
