//===- MlirText.h - limits on .mlir text before it is parsed ----*- C++ -*-===//
//
// MLIR's parser recurses once per nested region, attribute or type, so text
// nested deeply enough (a few hundred thousand levels, easily generated)
// overflows the stack and the tool dies with a stack dump. The tools that
// read .mlir files a user gives (weftc, weft-opt) check the nesting first,
// cheaply and without recursion, as the runtime's JSON readers do.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FRONTEND_MLIRTEXT_H
#define WEFT_FRONTEND_MLIRTEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace weft {

/// Deeper than any model's IR nests (a module, functions, fused regions and
/// their attributes stay within a few dozen levels).
inline constexpr int kMaxMlirNesting = 1000;

/// Fails, naming `name`, the line and the column, if `text` nests braces,
/// brackets, parentheses or angle brackets (outside strings and comments;
/// `->` is no bracket) deeper than `maxDepth`.
llvm::Error checkMlirNesting(llvm::StringRef text, llvm::StringRef name,
                             int maxDepth = kMaxMlirNesting);

} // namespace weft

#endif // WEFT_FRONTEND_MLIRTEXT_H
