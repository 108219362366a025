//===- WeftDialect.h - the weft graph dialect -------------------*- C++ -*-===//

#ifndef WEFT_DIALECTS_WEFT_IR_WEFTDIALECT_H
#define WEFT_DIALECTS_WEFT_IR_WEFTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/weft/IR/WeftDialect.h.inc"

#endif // WEFT_DIALECTS_WEFT_IR_WEFTDIALECT_H
