//===- SchedDialect.h - the sched schedule dialect --------------*- C++ -*-===//

#ifndef WEFT_DIALECTS_SCHED_IR_SCHEDDIALECT_H
#define WEFT_DIALECTS_SCHED_IR_SCHEDDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/sched/IR/SchedDialect.h.inc"

#endif // WEFT_DIALECTS_SCHED_IR_SCHEDDIALECT_H
