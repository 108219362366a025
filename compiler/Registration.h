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
} // namespace weft

#endif // WEFT_COMPILER_REGISTRATION_H
