//===- KernelExpr.h - what the CPU and CUDA kernel emitters share -*- C++
//-*-===//
//
// Internal to codegen/: one kernel body per fused group, two launchers. The
// CPU emitter (KernelSource.cpp) and the CUDA emitter (CudaSource.cpp) name
// kernels the same way and print the same per-element code, so a bundle's
// kernels compute the same values on either device.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_CODEGEN_KERNELEXPR_H
#define WEFT_CODEGEN_KERNELEXPR_H

#include "dialects/weft/IR/WeftOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace weft::codegen {

/// Helper functions (gelu, silu gradient, max, round-to-f32) over the
/// weft_exp / weft_log / weft_tanh / weft_sqrt / weft_pow / weft_isnan each
/// platform's prelude defines; WEFT_DEVICE is empty on the CPU and
/// __device__ for CUDA.
extern const char *const kKernelMath;

/// The C++ expression of one elementwise op over its operands' names.
mlir::FailureOr<std::string> kernelExpression(mlir::Operation *op,
                                              llvm::ArrayRef<std::string> args);

/// kernelExpression over the names `names` gives `op`'s operands.
mlir::FailureOr<std::string>
operandExpression(mlir::Operation *op,
                  const llvm::DenseMap<mlir::Value, std::string> &names);

bool isF32Tensor(mlir::Type type);

/// `v` as a C++ expression of the kernels: a full-precision literal, or the
/// prelude's WEFT_INF / WEFT_NAN for the values a literal cannot spell
/// (masks hold infinities).
std::string doubleLiteral(double v);

/// Where a launcher reads element `index` (a C++ expression) of a group's
/// input: a 0-d input (a scalar the group broadcasts) at 0, an input of
/// `rowWidth` elements (a norm's weights) at `column`, any other at `index`.
std::string inputIndex(mlir::Value input, const std::string &index,
                       int64_t rowWidth = 0, const std::string &column = "");

/// The source of every fused group of `module`: `prelude` and the shared
/// math, then per group `row(fused, name, os)` for a row group, or the
/// element body and `elementLauncher(fused, name, os)`.
mlir::FailureOr<std::string> emitKernels(
    mlir::ModuleOp module, llvm::StringRef prelude,
    llvm::function_ref<mlir::LogicalResult(FusedOp, const std::string &,
                                           llvm::raw_ostream &)>
        row,
    llvm::function_ref<void(FusedOp, const std::string &, llvm::raw_ostream &)>
        elementLauncher);

/// Names every weft.fused op `weft_k<N>` (attribute `weft.kernel`) in walk
/// order, identical groups (same body and types) sharing one name and so one
/// kernel; fails on a group that is not all f32.
mlir::LogicalResult nameKernels(mlir::ModuleOp module);

/// Whether the group holds a norm (a row kernel) rather than elementwise
/// ops only (an element kernel).
bool isRowGroup(FusedOp fused);

/// Prints `static WEFT_DEVICE void <name>_body(in..., out..., int64_t i)`,
/// element i of every result of an element group.
mlir::LogicalResult emitElementBody(FusedOp fused, llvm::raw_ostream &os);

} // namespace weft::codegen

#endif // WEFT_CODEGEN_KERNELEXPR_H
