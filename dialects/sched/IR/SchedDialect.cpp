//===- SchedDialect.cpp - sched dialect and buffer type -------------------===//

#include "dialects/sched/IR/SchedDialect.h"
#include "dialects/sched/IR/SchedOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace weft::sched;

#include "dialects/sched/IR/SchedDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/sched/IR/SchedTypes.cpp.inc"

void SchedDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/sched/IR/SchedTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/sched/IR/SchedOps.cpp.inc"
      >();
}

void weft::sched::registerSchedDialect(DialectRegistry &registry) {
  registry.insert<SchedDialect>();
}

//===----------------------------------------------------------------------===//
// BufferType
//===----------------------------------------------------------------------===//

/// Bytes of one element, or 0 for a type buffers cannot hold.
static int64_t elementBytes(Type type) {
  if (type.isF32() || type.isInteger(32))
    return 4;
  if (type.isBF16() || type.isF16())
    return 2;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return 1;
  if (type.isInteger(64))
    return 8;
  return 0;
}

// Shapes the verifier accepted fit in 2^62 bytes, so these cannot overflow.
int64_t BufferType::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : getShape())
    n *= d;
  return n;
}

int64_t BufferType::getElementBytes() const {
  return elementBytes(getElementType());
}

LogicalResult BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType) {
  int64_t bytes = elementBytes(elementType);
  if (bytes == 0)
    return emitError() << "buffers cannot hold element type " << elementType;
  for (int64_t d : shape) {
    if (d < 0)
      return emitError() << "buffer dimension " << d << " is negative";
    std::optional<int64_t> next = llvm::checkedMul(bytes, d);
    if (!next || *next > (int64_t(1) << 62))
      return emitError() << "buffer of shape [" << shape
                         << "] is larger than 2^62 bytes";
    bytes = *next;
  }
  return success();
}

Type BufferType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return parser.getChecked<BufferType>(parser.getContext(), shape, elementType);
}

void BufferType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t d : getShape())
    printer << d << "x";
  printer << getElementType() << ">";
}
