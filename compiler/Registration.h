//===- Registration.h - register Weft dialects and passes -------*- C++ -*-===//

#ifndef WEFT_COMPILER_REGISTRATION_H
#define WEFT_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace weft {
/// Adds every dialect a Weft graph may contain.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Registers every Weft pass and the named pipelines (weft-train), for
/// weft-opt and pass-pipeline strings.
void registerAllPasses();
/// Registers MLIRContext's command-line options with
/// --mlir-print-op-on-diagnostic off by default: a diagnostic on a function
/// or module would otherwise be followed by the whole of it in generic form
/// (thousands of lines for a real model) after the one line that matters.
/// Giving the flag turns it back on.
void registerContextOptionsQuietly();
} // namespace weft

#endif // WEFT_COMPILER_REGISTRATION_H
