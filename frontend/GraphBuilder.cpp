//===- GraphBuilder.cpp - build weft graphs from C++ ----------------------===//

#include "frontend/GraphBuilder.h"

#include "mlir/IR/Verifier.h"

#include <numeric>

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
  auto param = ParamOp::create(
      b, loc, RankedTensorType::get(shape, elt), b.getStringAttr(name),
      InitKindAttr::get(b.getContext(), init.kind), scale);
  if (layer >= 0)
    param->setAttr(kLayerAttr, b.getI64IntegerAttr(layer));
  return param;
}

Value GraphBuilder::constant(ArrayRef<int64_t> shape, Type elt, double value) {
  auto type = RankedTensorType::get(shape, elt);
  Attribute scalar = isa<FloatType>(elt)
                         ? Attribute(b.getFloatAttr(elt, value))
                         : b.getIntegerAttr(elt, (int64_t)value);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, scalar));
}

Value GraphBuilder::positions(int64_t seq) {
  SmallVector<int32_t> values(seq);
  std::iota(values.begin(), values.end(), 0);
  auto type = RankedTensorType::get({seq}, b.getI32Type());
  auto op = ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, ArrayRef<int32_t>(values)));
  op->setAttr(kPositionsAttr, b.getUnitAttr());
  return op;
}

template <typename OpTy> Value GraphBuilder::unary(Value x) {
  return usable(x) ? OpTy::create(b, loc, x).getResult() : Value();
}
template <typename OpTy> Value GraphBuilder::binary(Value x, Value y) {
  return usable({x, y}) ? OpTy::create(b, loc, x, y).getResult() : Value();
}

Value GraphBuilder::add(Value x, Value y) { return binary<AddOp>(x, y); }
Value GraphBuilder::sub(Value x, Value y) { return binary<SubOp>(x, y); }
Value GraphBuilder::mul(Value x, Value y) { return binary<MulOp>(x, y); }
Value GraphBuilder::div(Value x, Value y) { return binary<DivOp>(x, y); }
Value GraphBuilder::max(Value x, Value y) { return binary<MaxOp>(x, y); }
Value GraphBuilder::neg(Value x) { return unary<NegOp>(x); }
Value GraphBuilder::exp(Value x) { return unary<ExpOp>(x); }
Value GraphBuilder::log(Value x) { return unary<LogOp>(x); }
Value GraphBuilder::tanh(Value x) { return unary<TanhOp>(x); }
Value GraphBuilder::sqrt(Value x) { return unary<SqrtOp>(x); }
Value GraphBuilder::rsqrt(Value x) { return unary<RsqrtOp>(x); }
Value GraphBuilder::square(Value x) { return unary<SquareOp>(x); }
Value GraphBuilder::pow(Value x, double e) {
  if (!usable(x))
    return {};
  return PowOp::create(b, loc, x, b.getF64FloatAttr(e));
}
Value GraphBuilder::gelu(Value x) { return unary<GeluOp>(x); }
Value GraphBuilder::silu(Value x) { return unary<SiluOp>(x); }

/// Ops whose result type is inferred are created with a placeholder type and
/// then typed by their own inferReturnTypes, so a shape error becomes a
/// diagnostic (and a null Value) instead of the fatal error the generated
/// inferring builders raise.
Operation *GraphBuilder::typed(Operation *op) {
  SmallVector<Type> types;
  auto iface = llvm::cast<InferTypeOpInterface>(op);
  if (mlir::failed(iface.inferReturnTypes(
          b.getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), types))) {
    op->erase();
    hasError = true;
    return nullptr;
  }
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    result.setType(type);
  return op;
}

bool GraphBuilder::usable(ValueRange values) {
  return !llvm::is_contained(values, Value());
}

Value GraphBuilder::first(Operation *op) {
  return op ? op->getResult(0) : Value();
}

Value GraphBuilder::matmul(Value lhs, Value rhs, bool tl, bool tr) {
  if (!usable({lhs, rhs}))
    return {};
  return first(
      typed(MatmulOp::create(b, loc, placeholder(), lhs, rhs, tl, tr)));
}
Value GraphBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (!usable(x))
    return {};
  auto elt = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, elt), x);
}
Value GraphBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  if (!usable(x))
    return {};
  return first(typed(TransposeOp::create(b, loc, placeholder(), x, perm)));
}
Value GraphBuilder::broadcast(Value x, ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> dims) {
  if (!usable(x))
    return {};
  auto elt = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  return BroadcastOp::create(b, loc, RankedTensorType::get(shape, elt), x,
                             dims);
}
Value GraphBuilder::slice(Value x, ArrayRef<int64_t> starts,
                          ArrayRef<int64_t> limits) {
  if (!usable(x))
    return {};
  return first(
      typed(SliceOp::create(b, loc, placeholder(), x, starts, limits)));
}
Value GraphBuilder::concat(ValueRange inputs, int64_t dim) {
  if (!usable(inputs))
    return {};
  return first(typed(ConcatOp::create(b, loc, placeholder(), inputs, dim)));
}
Value GraphBuilder::cast(Value x, Type elt) {
  if (!usable(x))
    return {};
  return CastOp::create(b, loc, RankedTensorType::get(shapeOf(x), elt), x);
}
Value GraphBuilder::reduceSum(Value x, ArrayRef<int64_t> dims) {
  if (!usable(x))
    return {};
  return first(typed(ReduceSumOp::create(b, loc, placeholder(), x, dims)));
}
Value GraphBuilder::reduceMax(Value x, ArrayRef<int64_t> dims) {
  if (!usable(x))
    return {};
  return first(typed(ReduceMaxOp::create(b, loc, placeholder(), x, dims)));
}
Value GraphBuilder::reduceMean(Value x, ArrayRef<int64_t> dims) {
  if (!usable(x))
    return {};
  return first(typed(ReduceMeanOp::create(b, loc, placeholder(), x, dims)));
}

Value GraphBuilder::embedding(Value table, Value ids) {
  if (!usable({table, ids}))
    return {};
  return first(typed(EmbeddingOp::create(b, loc, placeholder(), table, ids)));
}
Value GraphBuilder::layerNorm(Value x, Value w, Value bias, double eps) {
  if (!usable({x, w, bias}))
    return {};
  return LayerNormOp::create(b, loc, x, w, bias, b.getF64FloatAttr(eps));
}
Value GraphBuilder::rmsNorm(Value x, Value w, double eps) {
  if (!usable({x, w}))
    return {};
  return RMSNormOp::create(b, loc, x, w, b.getF64FloatAttr(eps));
}
Value GraphBuilder::softmax(Value x, int64_t dim) {
  if (!usable(x))
    return {};
  return SoftmaxOp::create(b, loc, x, dim);
}
Value GraphBuilder::rope(Value x, double theta, int64_t offset) {
  if (!usable(x))
    return {};
  return RopeOp::create(b, loc, x, Value(), b.getF64FloatAttr(theta),
                        b.getI64IntegerAttr(offset));
}
Value GraphBuilder::attention(Value q, Value k, Value v, double scale,
                              bool causal, double dropout, int64_t seed) {
  if (!usable({q, k, v}))
    return {};
  bool drops = dropout != 0;
  return first(typed(AttentionOp::create(
      b, loc, placeholder(), placeholder(), q, k, v, Value(), Value(),
      drops ? stepOfDropout() : Value(), /*microbatch=*/Value(),
      b.getF64FloatAttr(scale), causal ? b.getUnitAttr() : nullptr,
      drops ? b.getF64FloatAttr(dropout) : FloatAttr(),
      drops ? b.getI64IntegerAttr(seed) : IntegerAttr(), /*split=*/ArrayAttr(),
      /*microbatches=*/IntegerAttr())));
}
Value GraphBuilder::stepOfDropout() {
  // One step counter for every mask.
  if (!dropoutStep)
    dropoutStep =
        ParamOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()),
                        b.getStringAttr(kDropoutStepParam),
                        InitKindAttr::get(b.getContext(), InitKind::Zeros),
                        FloatAttr(), b.getUnitAttr());
  return dropoutStep;
}
Value GraphBuilder::dropout(Value x, double rate, int64_t seed) {
  if (!usable(x))
    return {};
  if (rate == 0)
    return x;
  return DropoutOp::create(b, loc, x, stepOfDropout(), /*microbatch=*/Value(),
                           /*positions=*/Value(), b.getF64FloatAttr(rate),
                           b.getI64IntegerAttr(seed),
                           /*split=*/ArrayAttr(),
                           /*microbatches=*/IntegerAttr());
}
Value GraphBuilder::crossEntropy(Value logits, Value labels, int64_t ignore) {
  if (!usable({logits, labels}))
    return {};
  return first(typed(CrossEntropyOp::create(
      b, loc, placeholder(), logits, labels, b.getI64IntegerAttr(ignore))));
}
std::pair<Value, Value> GraphBuilder::topk(Value x, int64_t k) {
  if (!usable(x))
    return {};
  Operation *op =
      typed(TopKOp::create(b, loc, placeholder(), placeholder(), x, k));
  return op ? std::make_pair(op->getResult(0), op->getResult(1))
            : std::pair<Value, Value>();
}
std::pair<Value, Value> GraphBuilder::topkGating(Value logits, int64_t k,
                                                 bool normalize) {
  if (!usable(logits))
    return {};
  Operation *op = typed(TopKGatingOp::create(
      b, loc, placeholder(), placeholder(), logits, k, normalize));
  return op ? std::make_pair(op->getResult(0), op->getResult(1))
            : std::pair<Value, Value>();
}
std::pair<Value, Value>
GraphBuilder::expertRoute(Value indices, int64_t experts,
                          std::optional<int64_t> capacity) {
  if (!usable(indices))
    return {};
  Operation *op = typed(ExpertRouteOp::create(
      b, loc, placeholder(), placeholder(), indices, experts,
      capacity ? b.getI64IntegerAttr(*capacity) : IntegerAttr()));
  return op ? std::make_pair(op->getResult(0), op->getResult(1))
            : std::pair<Value, Value>();
}
Value GraphBuilder::expertDispatch(Value x, Value positions, int64_t rows) {
  if (!usable({x, positions}))
    return {};
  return first(typed(
      ExpertDispatchOp::create(b, loc, placeholder(), x, positions, rows)));
}
Value GraphBuilder::expertCombine(Value eo, Value w, Value positions) {
  if (!usable({eo, w, positions}))
    return {};
  return first(
      typed(ExpertCombineOp::create(b, loc, placeholder(), eo, w, positions)));
}
Value GraphBuilder::groupedMatmul(Value x, Value weight, Value sizes,
                                  bool transposeRhs) {
  if (!usable({x, weight, sizes}))
    return {};
  return first(typed(GroupedMatmulOp::create(b, loc, placeholder(), x, weight,
                                             sizes, transposeRhs)));
}
Value GraphBuilder::oneHot(Value indices, int64_t classes, Type elementType) {
  if (!usable(indices))
    return {};
  SmallVector<int64_t> shape(shapeOf(indices));
  shape.push_back(classes);
  return OneHotOp::create(b, loc, RankedTensorType::get(shape, elementType),
                          indices);
}

Value GraphBuilder::addBias(Value x, Value bias) {
  if (!usable({x, bias}))
    return {};
  ArrayRef<int64_t> shape = shapeOf(x);
  return add(x,
             broadcast(bias, shape, {static_cast<int64_t>(shape.size()) - 1}));
}

OwningOpRef<ModuleOp> GraphBuilder::finish(ValueRange results) {
  if (hasError || !usable(results))
    return nullptr;
  func::ReturnOp::create(b, loc, results);
  func.setFunctionType(b.getFunctionType(
      func.getBody().front().getArgumentTypes(), results.getTypes()));
  // Argument attributes are set once the argument list is final.
  for (auto [i, name] : llvm::enumerate(inputNames))
    func.setArgAttr(i, "weft.input", b.getStringAttr(name));
  if (mlir::failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

} // namespace weft
