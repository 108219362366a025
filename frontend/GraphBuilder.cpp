//===- GraphBuilder.cpp - build weft graphs from C++ ----------------------===//

#include "frontend/GraphBuilder.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace weft {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

GraphBuilder::GraphBuilder(MLIRContext &context, StringRef name)
    : b(&context), loc(UnknownLoc::get(&context)) {
  context.loadDialect<WeftDialect, func::FuncDialect>();
  module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(b, loc, name, b.getFunctionType({}, {}));
  b.setInsertionPointToEnd(func.addEntryBlock());
}

void GraphBuilder::setScope(StringRef name) {
  loc = NameLoc::get(b.getStringAttr(name));
}

Value GraphBuilder::input(StringRef name, ArrayRef<int64_t> shape, Type elt) {
  Block &entry = func.getBody().front();
  Value arg = entry.addArgument(RankedTensorType::get(shape, elt), loc);
  func.setFunctionType(
      b.getFunctionType(entry.getArgumentTypes(), func.getResultTypes()));
  inputNames.push_back(name.str());
  return arg;
}

Value GraphBuilder::param(StringRef name, ArrayRef<int64_t> shape, Type elt,
                          Init init) {
  FloatAttr scale = init.scale ? b.getF64FloatAttr(*init.scale) : FloatAttr();
  return ParamOp::create(b, loc, RankedTensorType::get(shape, elt),
                         b.getStringAttr(name),
                         InitKindAttr::get(b.getContext(), init.kind), scale);
}

Value GraphBuilder::constant(ArrayRef<int64_t> shape, Type elt, double value) {
  auto type = RankedTensorType::get(shape, elt);
  Attribute scalar = isa<FloatType>(elt) ? Attribute(b.getFloatAttr(elt, value))
                                         : b.getIntegerAttr(elt, (int64_t)value);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, scalar));
}

Value GraphBuilder::add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
Value GraphBuilder::sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
Value GraphBuilder::mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
Value GraphBuilder::div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
Value GraphBuilder::max(Value x, Value y) { return MaxOp::create(b, loc, x, y); }
Value GraphBuilder::neg(Value x) { return NegOp::create(b, loc, x); }
Value GraphBuilder::exp(Value x) { return ExpOp::create(b, loc, x); }
Value GraphBuilder::log(Value x) { return LogOp::create(b, loc, x); }
Value GraphBuilder::tanh(Value x) { return TanhOp::create(b, loc, x); }
Value GraphBuilder::sqrt(Value x) { return SqrtOp::create(b, loc, x); }
Value GraphBuilder::rsqrt(Value x) { return RsqrtOp::create(b, loc, x); }
Value GraphBuilder::square(Value x) { return SquareOp::create(b, loc, x); }
Value GraphBuilder::pow(Value x, double e) {
  return PowOp::create(b, loc, x, b.getF64FloatAttr(e));
}
Value GraphBuilder::gelu(Value x) { return GeluOp::create(b, loc, x); }
Value GraphBuilder::silu(Value x) { return SiluOp::create(b, loc, x); }

Value GraphBuilder::matmul(Value lhs, Value rhs, bool tl, bool tr) {
  return MatmulOp::create(b, loc, lhs, rhs, tl, tr);
}
Value GraphBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  auto elt = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, elt), x);
}
Value GraphBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, x, perm);
}
Value GraphBuilder::broadcast(Value x, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> dims) {
  auto elt = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  return BroadcastOp::create(b, loc, RankedTensorType::get(shape, elt), x, dims);
}
Value GraphBuilder::slice(Value x, ArrayRef<int64_t> starts,
                          ArrayRef<int64_t> limits) {
  return SliceOp::create(b, loc, x, starts, limits);
}
Value GraphBuilder::concat(ValueRange inputs, int64_t dim) {
  return ConcatOp::create(b, loc, inputs, dim);
}
Value GraphBuilder::cast(Value x, Type elt) {
  return CastOp::create(b, loc, RankedTensorType::get(shapeOf(x), elt), x);
}
Value GraphBuilder::reduceSum(Value x, ArrayRef<int64_t> dims) {
  return ReduceSumOp::create(b, loc, x, dims);
}
Value GraphBuilder::reduceMax(Value x, ArrayRef<int64_t> dims) {
  return ReduceMaxOp::create(b, loc, x, dims);
}
Value GraphBuilder::reduceMean(Value x, ArrayRef<int64_t> dims) {
  return ReduceMeanOp::create(b, loc, x, dims);
}

Value GraphBuilder::embedding(Value table, Value ids) {
  return EmbeddingOp::create(b, loc, table, ids);
}
Value GraphBuilder::layerNorm(Value x, Value w, Value bias, double eps) {
  return LayerNormOp::create(b, loc, x, w, bias, b.getF64FloatAttr(eps));
}
Value GraphBuilder::rmsNorm(Value x, Value w, double eps) {
  return RMSNormOp::create(b, loc, x, w, b.getF64FloatAttr(eps));
}
Value GraphBuilder::softmax(Value x, int64_t dim) {
  return SoftmaxOp::create(b, loc, x, dim);
}
Value GraphBuilder::rope(Value x, double theta, int64_t offset) {
  return RopeOp::create(b, loc, x, b.getF64FloatAttr(theta),
                        b.getI64IntegerAttr(offset));
}
Value GraphBuilder::attention(Value q, Value k, Value v, double scale,
                              bool causal) {
  return AttentionOp::create(b, loc, q, k, v, b.getF64FloatAttr(scale),
                             causal ? b.getUnitAttr() : nullptr);
}
Value GraphBuilder::dropout(Value x, double rate, int64_t seed) {
  return DropoutOp::create(b, loc, x, b.getF64FloatAttr(rate),
                           b.getI64IntegerAttr(seed));
}
Value GraphBuilder::crossEntropy(Value logits, Value labels, int64_t ignore) {
  return CrossEntropyOp::create(b, loc, logits, labels,
                                b.getI64IntegerAttr(ignore));
}
std::pair<Value, Value> GraphBuilder::topk(Value x, int64_t k) {
  auto op = TopKOp::create(b, loc, x, k);
  return {op.getValues(), op.getIndices()};
}
std::pair<Value, Value> GraphBuilder::topkGating(Value logits, int64_t k,
                                                 bool normalize) {
  auto op = TopKGatingOp::create(b, loc, logits, k, normalize);
  return {op.getWeights(), op.getIndices()};
}
Value GraphBuilder::expertDispatch(Value x, Value indices, int64_t experts,
                                   int64_t capacity) {
  return ExpertDispatchOp::create(b, loc, x, indices, experts, capacity);
}
Value GraphBuilder::expertCombine(Value eo, Value w, Value indices) {
  return ExpertCombineOp::create(b, loc, eo, w, indices);
}

Value GraphBuilder::addBias(Value x, Value bias) {
  ArrayRef<int64_t> shape = shapeOf(x);
  return add(x, broadcast(bias, shape, {static_cast<int64_t>(shape.size()) - 1}));
}

OwningOpRef<ModuleOp> GraphBuilder::finish(ValueRange results) {
  func::ReturnOp::create(b, loc, results);
  func.setFunctionType(b.getFunctionType(
      func.getBody().front().getArgumentTypes(), results.getTypes()));
  // Argument attributes are set once the argument list is final.
  for (auto [i, name] : llvm::enumerate(inputNames))
    func.setArgAttr(i, "weft.input", b.getStringAttr(name));
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

} // namespace weft
