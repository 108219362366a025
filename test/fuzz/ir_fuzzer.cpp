//===- ir_fuzzer.cpp - libFuzzer target for .mlir text --------------------===//
//
// What weftc and weft-opt do with a .mlir file a user gives: the nesting
// check of frontend/MlirText.h, MLIR's parser over the weft, sched and func
// dialects, then the verifier. Any text must give a verified module or
// diagnostics, never a crash, a hang or a stack overflow. Diagnostics are
// captured, not printed.
//
//===----------------------------------------------------------------------===//

#include "dialects/sched/IR/SchedOps.h"
#include "dialects/weft/IR/WeftOps.h"
#include "frontend/MlirText.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  if (llvm::Error e = weft::checkMlirNesting(text, "fuzz.mlir")) {
    llvm::consumeError(std::move(e));
    return 0;
  }
  // A context lives for a few hundred inputs: building one (the dialects'
  // registration) costs more than most inputs, and one kept forever would
  // grow without bound, holding every attribute and type ever parsed.
  static std::unique_ptr<mlir::MLIRContext> context;
  static int uses = 0;
  if (!context || ++uses == 500) {
    mlir::DialectRegistry registry;
    weft::registerWeftDialects(registry);
    weft::sched::registerSchedDialect(registry);
    context = std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    uses = 0;
  }
  mlir::ScopedDiagnosticHandler quiet(
      context.get(), [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.mlir"), llvm::SMLoc());
  mlir::ParserConfig config(context.get(), /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, config);
  if (module)
    (void)mlir::verify(*module);
  return 0;
}
