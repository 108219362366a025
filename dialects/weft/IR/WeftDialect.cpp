//===- WeftDialect.cpp - weft dialect registration ------------------------===//

#include "dialects/weft/IR/WeftDialect.h"
#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace weft;

#include "dialects/weft/IR/WeftDialect.cpp.inc"

void WeftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/weft/IR/WeftOps.cpp.inc"
      >();
}

void weft::registerWeftDialects(DialectRegistry &registry) {
  registry.insert<WeftDialect, func::FuncDialect>();
}
