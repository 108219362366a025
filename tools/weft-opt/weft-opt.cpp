//===- weft-opt.cpp - the MLIR driver with every Weft dialect and pass ----===//
//
// `weft-opt` is mlir-opt restricted to what Weft graphs use: the weft and
// func dialects, Weft's passes and named pipelines, and MLIR's generic
// transforms (canonicalize, cse), so --pass-pipeline,
// --mlir-print-ir-after-all and --verify-diagnostics all work on Weft IR.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerAllDialects(registry);
  weft::registerAllPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Weft optimizer driver\n", registry));
}
