//===- weft-opt.cpp - the MLIR driver with every Weft dialect and pass ----===//
//
// `weft-opt` is mlir-opt restricted to what Weft graphs use: the weft and
// func dialects, Weft's passes and named pipelines, and MLIR's generic
// transforms (canonicalize, cse), so --pass-pipeline,
// --mlir-print-ir-after-all and --verify-diagnostics all work on Weft IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "frontend/MlirText.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerAllDialects(registry);
  weft::registerAllPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  // Before MlirOptMain registers the rest, so the default sticks.
  weft::registerContextOptionsQuietly();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "Weft optimizer driver\n", registry);
  // Text nested too deeply for MLIR's recursive parser is refused first
  // (frontend/MlirText.h); MlirOptMain then reads the file itself.
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text =
      llvm::MemoryBuffer::getFileOrSTDIN(input);
  if (text) {
    if (llvm::Error e = weft::checkMlirNesting((*text)->getBuffer(), input)) {
      llvm::WithColor::error(llvm::errs(), "weft-opt")
          << llvm::toString(std::move(e)) << "\n";
      return EXIT_FAILURE;
    }
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> out =
        mlir::openOutputFile(output, &error);
    if (!out) {
      llvm::WithColor::error(llvm::errs(), "weft-opt") << error << "\n";
      return EXIT_FAILURE;
    }
    if (mlir::failed(
            mlir::MlirOptMain(out->os(), std::move(*text), registry,
                              mlir::MlirOptMainConfig::createFromCLOptions())))
      return EXIT_FAILURE;
    out->keep();
    return EXIT_SUCCESS;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
