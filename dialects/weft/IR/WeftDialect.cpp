//===- WeftDialect.cpp - weft dialect registration ------------------------===//

#include "dialects/weft/IR/WeftDialect.h"
#include "dialects/weft/IR/WeftOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace weft;

#include "dialects/weft/IR/WeftDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/weft/IR/WeftAttrs.cpp.inc"

void WeftDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/weft/IR/WeftAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/weft/IR/WeftOps.cpp.inc"
      >();
}

void weft::registerWeftDialects(DialectRegistry &registry) {
  registry.insert<WeftDialect, func::FuncDialect>();
}
