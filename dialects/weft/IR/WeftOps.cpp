//===- WeftOps.cpp - weft op verifiers and shape inference ----------------===//
//
// Shape rules live in each op's inferReturnTypes, so the parser, the builder
// and the verifier share one statement of them; hasVerifier covers what
// inference cannot see (attributes, explicitly spelled result types).
//
//===----------------------------------------------------------------------===//

#include "dialects/weft/IR/WeftOps.h"

#include "dialects/common/AttentionDropout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace weft;

#include "dialects/weft/IR/WeftEnums.cpp.inc"
#include "dialects/weft/IR/WeftInterfaces.cpp.inc"

bool weft::isWeftFloat(Type type) {
  return isa<Float32Type, BFloat16Type, Float16Type, Float8E4M3FNType,
             Float8E5M2Type>(type);
}

bool weft::readsCheckedData(Operation *func) {
  WalkResult walk = func->walk([](Operation *op) {
    for (Type type : op->getOperandTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(type);
          tensor && tensor.getRank() > 0 && tensor.getElementType().isInteger())
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return walk.wasInterrupted();
}

ParamOp weft::inPlaceParam(OpResult result, bool readsChecked) {
  if (readsChecked || !result.hasOneUse())
    return {};
  // A gather whose whole result a state takes (weft-gather-per-step's
  // @gather), where the function does not read the state: nothing wants
  // its old value.
  if (isa<AllGatherOp>(result.getOwner())) {
    auto assign = dyn_cast<AssignOp>(*result.getUsers().begin());
    if (!assign)
      return {};
    // Its storage is bound where it is declared: before the gather.
    Operation *gather = result.getOwner();
    for (ParamOp p : gather->getBlock()->getOps<ParamOp>())
      if (p.getName() == assign.getName())
        return p.getType() == result.getType() && p->use_empty() &&
                       p->isBeforeInBlock(gather)
                   ? p
                   : ParamOp();
    return {};
  }
  auto fused = dyn_cast<FusedOp>(result.getOwner());
  if (!fused)
    return {};
  // Element by element only: a norm's row kernel reads a row more than once.
  if (llvm::any_of(fused.getBody().front(), [](Operation &op) {
        return isa<LayerNormOp, RMSNormOp>(op);
      }))
    return {};
  auto assign = dyn_cast<AssignOp>(*result.getUsers().begin());
  if (!assign)
    return {};
  ParamOp param;
  for (Value operand : fused->getOperands())
    if (auto p = operand.getDefiningOp<ParamOp>();
        p && p.getName() == assign.getName())
      param = p;
  if (!param || param.getType() != result.getType() ||
      !llvm::all_of(param->getUsers(),
                    [&](Operation *user) { return user == fused; }))
    return {};
  return param;
}

Fp8QuantizeOp weft::fp8GemmOperandOf(Value v) {
  while (isa_and_nonnull<ReshapeOp, CastOp, AllGatherOp>(v.getDefiningOp()))
    v = v.getDefiningOp()->getOperand(0);
  return v.getDefiningOp<Fp8QuantizeOp>();
}

namespace {
/// Prints a shape as "[2, 8, 64]" for diagnostics.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

/// The static ranked tensor type of `v`, or a diagnostic naming `what`.
/// Inference runs while parsing, before ODS type constraints are checked,
/// so it must not assume well-typed operands.
FailureOr<RankedTensorType> staticTensor(Value v, std::optional<Location> loc,
                                         StringRef what) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(
        loc, what, " must be a statically shaped tensor, got ", v.getType());
  return type;
}

/// Checks that `dims` is strictly increasing and within [0, rank).
LogicalResult checkDimList(ArrayRef<int64_t> dims, int64_t rank,
                           std::optional<Location> loc, StringRef what) {
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, what, " ", d, " is out of range for rank ",
                               rank);
    if (i > 0 && dims[i - 1] >= d)
      return emitOptionalError(loc, what, "s ", shapeStr(dims),
                               " must be strictly increasing");
  }
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

bool weft::isSizedTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return false;
  Type element = tensor.getElementType();
  int64_t bytes =
      element.isIntOrFloat()
          ? std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8)
          : 1;
  for (int64_t d : tensor.getShape())
    if (d <= 0 || __builtin_mul_overflow(bytes, d, &bytes))
      return false;
  return bytes <= (int64_t(1) << 62);
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("parameter name must not be empty");
  bool takesScale =
      getInit() == InitKind::Normal || getInit() == InitKind::Uniform;
  if (takesScale && !getScale())
    return emitOpError("initializer '")
           << stringifyInitKind(getInit()) << "' needs a scale";
  if (!takesScale && getScale())
    return emitOpError("initializer '")
           << stringifyInitKind(getInit()) << "' takes no scale";
  if (takesScale && !(getScale()->convertToDouble() > 0.0))
    return emitOpError("initializer scale must be positive, got ")
           << getScale()->convertToDouble();
  // The block's parameters and assigns are checked together, once, by its
  // first parameter: per-op scans of the block would make verifying a
  // model of many layers quadratic. A later parameter finds an earlier one
  // by walking back to the nearest (parameters are declared together), so
  // every op is walked past once in all.
  for (Operation *prev = getOperation()->getPrevNode(); prev;
       prev = prev->getPrevNode())
    if (isa<ParamOp>(prev))
      return success();
  return verifyParamsAndAssigns(getOperation()->getBlock());
}

/// Parameter names are unique in a block (so a checkpoint maps onto
/// parameters one to one) and every assign names one of them, with its type.
LogicalResult weft::verifyParamsAndAssigns(Block *block) {
  llvm::StringMap<ParamOp> params;
  for (ParamOp param : block->getOps<ParamOp>())
    if (!params.try_emplace(param.getName(), param).second)
      return param.emitOpError("parameter '")
             << param.getName() << "' is declared twice";
  for (AssignOp assign : block->getOps<AssignOp>()) {
    ParamOp param = params.lookup(assign.getName());
    if (!param)
      return assign.emitOpError("no parameter named '")
             << assign.getName() << "' in this block";
    if (param.getType() != assign.getValue().getType())
      return assign.emitOpError("value of type ")
             << assign.getValue().getType() << " does not match parameter '"
             << assign.getName() << "' of type " << param.getType();
  }
  return success();
}

LogicalResult AssignOp::verify() {
  // With a parameter in the block, its first one checks the assigns
  // (ParamOp::verify); an assign after another defers to it the same way.
  for (Operation *prev = getOperation()->getPrevNode(); prev;
       prev = prev->getPrevNode())
    if (isa<ParamOp, AssignOp>(prev))
      return success();
  if (getOperation()->getBlock()->getOps<ParamOp>().empty())
    return emitOpError("no parameter named '")
           << getName() << "' in this block";
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp, ReshapeOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult ConstantOp::verify() {
  auto dense = dyn_cast<DenseFPElementsAttr>(getValue());
  if (!dense)
    return success();
  auto values = dense.getValues<APFloat>();
  if (dense.isSplat()
          ? values[0].isNaN()
          : llvm::any_of(values, [](const APFloat &v) { return v.isNaN(); }))
    return emitOpError("holds NaN: a constant must be a number (infinities "
                       "are allowed)");
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << shapeStr(in.getShape()) << " (" << in.getNumElements()
           << " elements) into " << shapeStr(out.getShape()) << " ("
           << out.getNumElements() << " elements)";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto lhs = staticTensor(adaptor.getLhs(), loc, "matmul lhs");
  auto rhs = staticTensor(adaptor.getRhs(), loc, "matmul rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getRank() < 2 || rhs->getRank() < 2)
    return emitOptionalError(loc, "matmul operands must have rank >= 2, got ",
                             lhs->getRank(), " and ", rhs->getRank());
  if (lhs->getElementType() != rhs->getElementType())
    return emitOptionalError(
        loc, "matmul operand element types differ: ", lhs->getElementType(),
        " vs ", rhs->getElementType());
  ArrayRef<int64_t> ls = lhs->getShape(), rs = rhs->getShape();
  int64_t lr = ls.size(), rr = rs.size();
  int64_t m = adaptor.getTransposeLhs() ? ls[lr - 1] : ls[lr - 2];
  int64_t kl = adaptor.getTransposeLhs() ? ls[lr - 2] : ls[lr - 1];
  int64_t kr = adaptor.getTransposeRhs() ? rs[rr - 1] : rs[rr - 2];
  int64_t n = adaptor.getTransposeRhs() ? rs[rr - 2] : rs[rr - 1];
  if (kl != kr)
    return emitOptionalError(loc, "matmul contraction sizes differ: lhs has ",
                             kl, ", rhs has ", kr);
  ArrayRef<int64_t> lb = ls.drop_back(2), rb = rs.drop_back(2);
  if (!lb.empty() && !rb.empty() && lb != rb)
    return emitOptionalError(loc,
                             "matmul batch dimensions differ: ", shapeStr(lb),
                             " vs ", shapeStr(rb));
  SmallVector<int64_t> shape(lb.empty() ? rb : lb);
  shape.push_back(m);
  shape.push_back(n);
  results.push_back(RankedTensorType::get(shape, lhs->getElementType()));
  return success();
}

LogicalResult MatmulEpilogueOp::verify() {
  auto lhs = cast<RankedTensorType>(getLhs().getType());
  auto rhs = cast<RankedTensorType>(getRhs().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (lhs.getRank() < 2 || rhs.getRank() != 2)
    return emitOpError("takes lhs of rank >= 2 and a rank-2 weight, got ranks ")
           << lhs.getRank() << " and " << rhs.getRank();
  Type elt = lhs.getElementType();
  if (rhs.getElementType() != elt || result.getElementType() != elt)
    return emitOpError("operands and result must share one element type");
  int64_t k = lhs.getShape().back();
  int64_t kr = getTransposeRhs() ? rhs.getDimSize(1) : rhs.getDimSize(0);
  int64_t n = getTransposeRhs() ? rhs.getDimSize(0) : rhs.getDimSize(1);
  if (k != kr)
    return emitOpError("contraction sizes differ: lhs has ")
           << k << ", rhs has " << kr;
  SmallVector<int64_t> shape(lhs.getShape().drop_back());
  shape.push_back(n);
  if (result.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("result shape ")
           << shapeStr(result.getShape()) << " should be " << shapeStr(shape);

  Epilogue kind = getEpilogue();
  bool wantsBias = kind == Epilogue::Bias || kind == Epilogue::BiasGelu;
  bool wantsAux = kind == Epilogue::Gelu || kind == Epilogue::BiasGelu;
  bool wantsPre = kind == Epilogue::DGelu;
  StringRef name = stringifyEpilogue(kind);
  if (static_cast<bool>(getBias()) != wantsBias)
    return emitOpError("epilogue '")
           << name << "' " << (wantsBias ? "needs" : "takes no") << " bias";
  if (static_cast<bool>(getPreactivation()) != wantsPre)
    return emitOpError("epilogue '")
           << name << "' " << (wantsPre ? "needs" : "takes no")
           << " preactivation";
  if (static_cast<bool>(getAux()) != wantsAux)
    return emitOpError("epilogue '")
           << name << "' " << (wantsAux ? "has" : "has no") << " aux result";
  if (Value bias = getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type != RankedTensorType::get({n}, elt))
      return emitOpError("bias must be ")
             << RankedTensorType::get({n}, elt) << ", got " << type;
  }
  for (Value v : {Value(getPreactivation()), Value(getAux())})
    if (v && v.getType() != Type(result))
      return emitOpError("preactivation and aux must have the result type ")
             << Type(result) << ", got " << v.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto in = staticTensor(adaptor.getInput(), loc, "transpose input");
  if (failed(in))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = in->getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "permutation ", shapeStr(perm), " has ",
                             perm.size(), " entries for a tensor of rank ",
                             rank);
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(loc, shapeStr(perm),
                               " is not a permutation of 0..", rank - 1);
    seen[p] = true;
    shape.push_back(in->getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, in->getElementType()));
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("element type changes from ")
           << in.getElementType() << " to " << out.getElementType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError("dims ")
           << shapeStr(dims) << " has " << dims.size()
           << " entries for an input of rank " << in.getRank();
  if (failed(checkDimList(dims, out.getRank(), getLoc(), "broadcast dim")))
    return failure();
  for (auto [d, target] : llvm::enumerate(dims)) {
    int64_t from = in.getDimSize(d), to = out.getDimSize(target);
    if (from != 1 && from != to)
      return emitOpError("input dimension ")
             << d << " of size " << from
             << " cannot broadcast to result dimension " << target
             << " of size " << to;
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  auto in = staticTensor(adaptor.getInput(), loc, "slice input");
  if (failed(in))
    return failure();
  ArrayRef<int64_t> starts = adaptor.getStarts(), limits = adaptor.getLimits();
  int64_t rank = in->getRank();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(limits.size()) != rank)
    return emitOptionalError(loc, "slice starts ", shapeStr(starts),
                             " and limits ", shapeStr(limits),
                             " must both have rank ", rank, " entries");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (starts[d] < 0 || starts[d] > limits[d] || limits[d] > in->getDimSize(d))
      return emitOptionalError(loc, "slice of dimension ", d, " [", starts[d],
                               ", ", limits[d], ") is outside [0, ",
                               in->getDimSize(d), "]");
    shape.push_back(limits[d] - starts[d]);
  }
  results.push_back(RankedTensorType::get(shape, in->getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = staticTensor(adaptor.getInputs().front(), loc, "concat input");
  if (failed(first))
    return failure();
  int64_t rank = first->getRank();
  int64_t dim = static_cast<int64_t>(adaptor.getDim());
  if (dim < 0 || dim >= rank)
    return emitOptionalError(loc, "concat dim ", dim,
                             " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first->getShape());
  shape[dim] = 0;
  for (auto [i, v] : llvm::enumerate(adaptor.getInputs())) {
    auto t = staticTensor(v, loc, "concat input");
    if (failed(t))
      return failure();
    if (t->getElementType() != first->getElementType() || t->getRank() != rank)
      return emitOptionalError(loc, "concat input ", i, " has type ", Type(*t),
                               ", unlike input 0 of type ", Type(*first));
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim && t->getDimSize(d) != first->getDimSize(d))
        return emitOptionalError(loc, "concat input ", i, " has size ",
                                 t->getDimSize(d), " in dimension ", d,
                                 ", input 0 has ", first->getDimSize(d));
    shape[dim] += t->getDimSize(dim);
  }
  results.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Shared by the three reductions: the result drops the reduced dims.
static LogicalResult inferReduce(Value input, ArrayRef<int64_t> dims,
                                 std::optional<Location> loc,
                                 SmallVectorImpl<Type> &results) {
  auto in = staticTensor(input, loc, "reduction input");
  if (failed(in))
    return failure();
  if (dims.empty())
    return emitOptionalError(loc, "reduction needs at least one dim");
  if (failed(checkDimList(dims, in->getRank(), loc, "reduction dim")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in->getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      shape.push_back(in->getDimSize(d));
  results.push_back(RankedTensorType::get(shape, in->getElementType()));
  return success();
}

#define WEFT_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &results) {                                        \
    return inferReduce(adaptor.getInput(), adaptor.getDims(), loc, results);   \
  }
WEFT_REDUCE_INFER(ReduceSumOp)
WEFT_REDUCE_INFER(ReduceMaxOp)
WEFT_REDUCE_INFER(ReduceMeanOp)
#undef WEFT_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Neural-network ops
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto table = staticTensor(adaptor.getTable(), loc, "embedding table");
  auto ids = staticTensor(adaptor.getIds(), loc, "embedding ids");
  if (failed(table) || failed(ids))
    return failure();
  if (table->getRank() != 2)
    return emitOptionalError(loc, "embedding table must be [vocab, dim], got ",
                             shapeStr(table->getShape()));
  SmallVector<int64_t> shape(ids->getShape());
  shape.push_back(table->getDimSize(1));
  results.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

/// Checks a norm's per-feature vector against the input's last dimension.
static LogicalResult verifyNormVector(Operation *op, RankedTensorType input,
                                      RankedTensorType vec, StringRef what) {
  if (input.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  int64_t d = input.getDimSize(input.getRank() - 1);
  if (vec.getRank() != 1 || vec.getDimSize(0) != d)
    return op->emitOpError() << what << " must be [" << d
                             << "] to match the last input dimension, got "
                             << shapeStr(vec.getShape());
  if (vec.getElementType() != input.getElementType())
    return op->emitOpError()
           << what << " element type " << vec.getElementType()
           << " differs from the input's " << input.getElementType();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (!(getEpsilon().convertToDouble() >= 0.0))
    return emitOpError("epsilon must be non-negative");
  auto in = getInput().getType();
  if (failed(verifyNormVector(*this, in, getWeight().getType(), "weight")))
    return failure();
  return verifyNormVector(*this, in, getBias().getType(), "bias");
}

LogicalResult RMSNormOp::verify() {
  if (!(getEpsilon().convertToDouble() >= 0.0))
    return emitOpError("epsilon must be non-negative");
  return verifyNormVector(*this, getInput().getType(), getWeight().getType(),
                          "weight");
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t dim = static_cast<int64_t>(getDim());
  if (dim < 0 || dim >= rank)
    return emitOpError("softmax dim ")
           << dim << " is out of range for rank " << rank;
  return success();
}

LogicalResult RopeOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() != 4)
    return emitOpError("input must be [batch, seq, heads, head_dim], got ")
           << shapeStr(type.getShape());
  if (type.getDimSize(3) % 2 != 0)
    return emitOpError("head_dim ") << type.getDimSize(3) << " must be even";
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError("theta must be positive");
  if (Value positions = getPositions();
      positions && cast<RankedTensorType>(positions.getType()).getShape() !=
                       ArrayRef<int64_t>{type.getDimSize(1)})
    return emitOpError("positions must be [")
           << type.getDimSize(1) << "] (one per row of the sequence), got "
           << shapeStr(cast<RankedTensorType>(positions.getType()).getShape());
  return success();
}

/// A mask's micro-batch counter and count (weft.dropout's `microbatch` and
/// `microbatches`, attention's the same) and its block (`split`, per
/// dimension the axes of @mesh, each axis once) of a rank-`rank` tensor.
static LogicalResult verifyMaskBlock(Operation *op, Value microbatch,
                                     std::optional<int64_t> microbatches,
                                     std::optional<ArrayAttr> split,
                                     int64_t rank) {
  if (static_cast<bool>(microbatch) != microbatches.has_value())
    return op->emitOpError("takes a microbatch operand exactly when it has "
                           "microbatches");
  if (microbatches && *microbatches < 1)
    return op->emitOpError("microbatches must be at least 1, got ")
           << *microbatches;
  if (microbatches && rank == 0)
    return op->emitOpError("cuts dimension 0 into micro-batches, but its "
                           "input is a scalar");
  if (!split)
    return success();
  if (static_cast<int64_t>(split->size()) != rank)
    return op->emitOpError("split has ")
           << split->size() << " entries for a tensor of rank " << rank;
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
      op, StringAttr::get(op->getContext(), "mesh"));
  if (!mesh)
    return op->emitOpError("split needs a weft.mesh @mesh");
  llvm::SmallDenseSet<StringRef> seen;
  for (auto [d, entry] : llvm::enumerate(*split)) {
    auto axes = dyn_cast<ArrayAttr>(entry);
    if (!axes)
      return op->emitOpError("split entry ") << d << " is not a list of axes";
    for (Attribute a : axes) {
      auto axis = dyn_cast<StringAttr>(a);
      if (!axis || !mesh.axisSize(axis.getValue()))
        return op->emitOpError("split entry ")
               << d << " names " << a << ", which is not an axis of @mesh";
      if (!seen.insert(axis.getValue()).second)
        return op->emitOpError("split names axis '")
               << axis.getValue() << "' twice";
    }
  }
  return success();
}

static LogicalResult verifyRate(Operation *op, double rate) {
  if (!(rate >= 0.0 && rate < 1.0))
    return op->emitOpError("rate must be in [0, 1), got ") << rate;
  return success();
}

/// Attention's optional positions: both or neither, only with `causal`,
/// [S] for the queries and [T] for the keys.
static LogicalResult verifyPositions(Operation *op, Value query, Value key,
                                     Value queryPositions, Value keyPositions,
                                     bool causal) {
  if (!queryPositions && !keyPositions)
    return success();
  if (!queryPositions || !keyPositions)
    return op->emitOpError("needs both query and key positions, or neither");
  if (!causal)
    return op->emitOpError("positions only mask a causal attention");
  for (auto [positions, of, what] : {std::tuple{queryPositions, query, "query"},
                                     std::tuple{keyPositions, key, "key"}}) {
    int64_t seq = cast<RankedTensorType>(of.getType()).getDimSize(1);
    ArrayRef<int64_t> shape =
        cast<RankedTensorType>(positions.getType()).getShape();
    if (shape != ArrayRef<int64_t>{seq})
      return op->emitOpError(what)
             << " positions must be [" << seq << "], got " << shapeStr(shape);
  }
  return success();
}

/// What attention and its gradient check alike: the causal positions and
/// the probability dropout's mask block.
template <typename AttentionLike>
static LogicalResult verifyAttentionMasks(AttentionLike op) {
  if (failed(verifyPositions(op, op.getQuery(), op.getKey(),
                             op.getQueryPositions(), op.getKeyPositions(),
                             op.getCausal())))
    return failure();
  return weft::verifyAttentionDropout(op, [&] {
    return verifyMaskBlock(op, op.getMicrobatch(), op.getMicrobatches(),
                           op.getSplit(), 4);
  });
}

LogicalResult AttentionOp::verify() { return verifyAttentionMasks(*this); }

/// Shared by attention and its gradient: the result and lse types.
static LogicalResult inferAttention(Value query, Value key, Value value,
                                    std::optional<Location> loc,
                                    SmallVectorImpl<Type> &results) {
  auto q = staticTensor(query, loc, "attention query");
  auto k = staticTensor(key, loc, "attention key");
  auto v = staticTensor(value, loc, "attention value");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  if (q->getRank() != 4 || k->getRank() != 4 || v->getRank() != 4)
    return emitOptionalError(
        loc, "attention operands must be [batch, seq, heads, head_dim], got ",
        shapeStr(q->getShape()), ", ", shapeStr(k->getShape()), ", ",
        shapeStr(v->getShape()));
  if (q->getElementType() != k->getElementType() ||
      q->getElementType() != v->getElementType())
    return emitOptionalError(loc, "attention operand element types differ");
  ArrayRef<int64_t> qs = q->getShape(), ks = k->getShape(), vs = v->getShape();
  if (qs[0] != ks[0] || qs[0] != vs[0])
    return emitOptionalError(loc, "attention batch sizes differ: ", qs[0], ", ",
                             ks[0], ", ", vs[0]);
  if (ks[1] != vs[1] || ks[2] != vs[2])
    return emitOptionalError(loc, "key ", shapeStr(ks), " and value ",
                             shapeStr(vs),
                             " must agree in sequence length and heads");
  if (qs[3] != ks[3])
    return emitOptionalError(loc, "query head_dim ", qs[3],
                             " differs from key head_dim ", ks[3]);
  if (ks[2] == 0 || qs[2] % ks[2] != 0)
    return emitOptionalError(loc, "query heads ", qs[2],
                             " are not a multiple of key/value heads ", ks[2]);
  results.push_back(
      RankedTensorType::get({qs[0], qs[1], qs[2], vs[3]}, q->getElementType()));
  results.push_back(RankedTensorType::get({qs[0], qs[2], qs[1]},
                                          Float32Type::get(q->getContext())));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferAttention(adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), loc, results);
}

LogicalResult
AttentionEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &results) {
  // The key stands in for the value: the result is shaped as lse.
  SmallVector<Type> forward;
  if (failed(inferAttention(adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getKey(), loc, forward)))
    return failure();
  results.push_back(forward[1]);
  return success();
}

LogicalResult AttentionEntropyOp::verify() {
  if (getLse().getType() != getType())
    return emitOpError("lse must be ")
           << getType() << " ([batch, heads, seq] of the query), got "
           << getLse().getType();
  return verifyPositions(*this, getQuery(), getKey(), getQueryPositions(),
                         getKeyPositions(), getCausal());
}

AttentionOp AttentionEntropyOp::getFusableAttention() {
  auto att = getLse().getDefiningOp<AttentionOp>();
  if (!att || att.getLse() != getLse() || att.getQuery() != getQuery() ||
      att.getKey() != getKey() ||
      att.getQueryPositions() != getQueryPositions() ||
      att.getKeyPositions() != getKeyPositions() ||
      att.getScale() != getScale() || att.getCausal() != getCausal())
    return nullptr;
  return att;
}

LogicalResult
AttentionGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  SmallVector<Type> forward;
  if (failed(inferAttention(adaptor.getQuery(), adaptor.getKey(),
                            adaptor.getValue(), loc, forward)))
    return failure();
  results.push_back(adaptor.getQuery().getType());
  results.push_back(adaptor.getKey().getType());
  results.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult AttentionGradOp::verify() {
  SmallVector<Type> forward;
  if (failed(
          inferAttention(getQuery(), getKey(), getValue(), getLoc(), forward)))
    return failure();
  if (getResult().getType() != forward[0] || getGrad().getType() != forward[0])
    return emitOpError("result and grad must have the attention result type ")
           << forward[0];
  if (getLse().getType() != forward[1])
    return emitOpError("lse must have type ") << forward[1];
  if (getLseGrad() && getLseGrad().getType() != forward[1])
    return emitOpError("lse_grad must have type ") << forward[1];
  return verifyAttentionMasks(*this);
}

LogicalResult DropoutOp::verify() {
  if (failed(verifyRate(*this, getRate().convertToDouble())))
    return failure();
  if (Value positions = getPositions()) {
    auto type = cast<RankedTensorType>(positions.getType());
    if (getType().getRank() < 2 || type.getRank() != 1 ||
        type.getDimSize(0) != getType().getDimSize(1))
      return emitOpError("positions must be one per element of dimension 1 "
                         "of the input, got ")
             << type;
    // The mask's index merges no dimension of a positioned tensor.
    if (getType().getRank() > 4)
      return emitOpError("positions index a tensor of rank at most 4, not ")
             << getType().getRank();
  }
  return verifyMaskBlock(*this, getMicrobatch(), getMicrobatches(), getSplit(),
                         getType().getRank());
}

/// An FP8 quantization's format.
static LogicalResult verifyFp8Format(Operation *op, Type format) {
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(format))
    return op->emitOpError("format must be f8E4M3FN or f8E5M2, got ") << format;
  return success();
}

/// A grid of `grid` blocks over `shape`: one count per dimension, each at
/// least 1 and dividing it.
static LogicalResult verifyFp8Grid(Operation *op, ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> grid, StringRef what) {
  if (grid.size() != shape.size())
    return op->emitOpError(what)
           << " " << shapeStr(grid) << " needs one size per dimension of "
           << shapeStr(shape);
  for (auto [d, size] : llvm::enumerate(grid))
    if (size < 1 || shape[d] % size != 0)
      return op->emitOpError(what)
             << " size " << size << " of dimension " << d
             << " must be at least 1 and divide its size " << shape[d];
  return success();
}

LogicalResult Fp8AmaxOp::verify() {
  return verifyFp8Grid(*this, getInput().getType().getShape(),
                       getType().getShape(), "result");
}

/// An expert weight gradient's tiles of an expert's rows (`group_rows`,
/// weft.fp8_group_quantize's `rows`): 0 (all of them) or a positive
/// multiple of 32, the FP8 GEMM's k-blocks, of rows [N, C].
static LogicalResult verifyGroupRows(Operation *op, ArrayRef<int64_t> shape,
                                     std::optional<int64_t> rows,
                                     StringRef name = "group_rows") {
  if (!rows)
    return success();
  if (shape.size() != 2)
    return op->emitOpError(name)
           << " tiles the rows of a matrix [N, C], not " << shapeStr(shape);
  if (*rows < 0 || *rows % 32 != 0)
    return op->emitOpError(name)
           << " must be 0 (all of an expert's rows) or a positive multiple "
              "of 32, not "
           << *rows;
  return success();
}

LogicalResult Fp8QuantizeOp::verify() {
  if (failed(verifyFp8Format(*this, getFormat())))
    return failure();
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (failed(
          verifyFp8Grid(*this, shape, getAmax().getType().getShape(), "amax")))
    return failure();
  if (auto backward = getBackwardBlock();
      backward &&
      failed(verifyFp8Grid(*this, shape, *backward, "backward_block")))
    return failure();
  return verifyGroupRows(*this, shape, getGroupRows());
}

LogicalResult Fp8QuantizeGradOp::verify() {
  if (failed(verifyFp8Format(*this, getFormat())))
    return failure();
  // The block sizes, read as a grid of the same rank, must divide too.
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (failed(verifyFp8Grid(*this, shape, getBlock(), "block")))
    return failure();
  if (auto backward = getBackwardBlock();
      backward &&
      failed(verifyFp8Grid(*this, shape, *backward, "backward_block")))
    return failure();
  if (failed(verifyGroupRows(*this, shape, getGroupRows())))
    return failure();
  if (Value history = getHistory()) {
    SmallVector<int64_t> grid = fp8Grid(shape, getBlock());
    auto type = cast<RankedTensorType>(history.getType());
    if (type.getShape() != ArrayRef<int64_t>(grid))
      return emitOpError("history ")
             << shapeStr(type.getShape()) << " must be the grid of blocks "
             << shapeStr(grid);
  }
  return success();
}

LogicalResult Fp8GroupQuantizeOp::verify() {
  if (failed(verifyFp8Format(*this, getFormat())) ||
      failed(verifyGroupRows(*this, getInput().getType().getShape(), getRows(),
                             "rows")))
    return failure();
  auto sizes = cast<RankedTensorType>(getSizes().getType());
  if (sizes.getRank() != 1 || !sizes.getElementType().isInteger(32))
    return emitOpError("sizes must be i32 [G], not ") << sizes;
  int64_t experts = getExperts();
  if (experts < 1 || sizes.getDimSize(0) % experts != 0)
    return emitOpError("the ") << experts << " experts do not divide the "
                               << sizes.getDimSize(0) << " groups";
  return success();
}

/// Labels are the logits' shape without the vocabulary dimension.
static LogicalResult checkLabels(Value logits, Value labels,
                                 std::optional<Location> loc) {
  auto l = staticTensor(logits, loc, "cross_entropy logits");
  auto y = staticTensor(labels, loc, "cross_entropy labels");
  if (failed(l) || failed(y))
    return failure();
  if (l->getRank() < 1 || l->getShape().drop_back() != y->getShape())
    return emitOptionalError(
        loc, "labels ", shapeStr(y->getShape()), " must be the logits shape ",
        shapeStr(l->getShape()), " without its last (vocabulary) dimension");
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return checkLabels(getLogits(), getLabels(), getLoc());
}

LogicalResult
CrossEntropyGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                     Adaptor adaptor,
                                     SmallVectorImpl<Type> &results) {
  if (failed(checkLabels(adaptor.getLogits(), adaptor.getLabels(), loc)))
    return failure();
  results.push_back(adaptor.getLogits().getType());
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto ids = getIds().getType(), grad = getGrad().getType(),
       table = getResult().getType();
  SmallVector<int64_t> expected(ids.getShape());
  if (table.getRank() == 2)
    expected.push_back(table.getDimSize(1));
  if (table.getRank() != 2 || grad.getElementType() != table.getElementType() ||
      grad.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("grad ")
           << shapeStr(grad.getShape()) << " must be the ids shape "
           << shapeStr(ids.getShape()) << " plus a row of the table "
           << getResult().getType();
  return success();
}

/// Shared by the norm gradients: `count` results, the input's type first and
/// then the weight's. (AllTypesMatch checks that grad has the input's type.)
static LogicalResult inferNormGrad(Value input, Value weight, unsigned count,
                                   std::optional<Location> loc,
                                   SmallVectorImpl<Type> &results) {
  auto x = staticTensor(input, loc, "norm input");
  auto w = staticTensor(weight, loc, "norm weight");
  if (failed(x) || failed(w))
    return failure();
  if (x->getRank() < 1 || w->getRank() != 1 ||
      w->getDimSize(0) != x->getDimSize(x->getRank() - 1))
    return emitOptionalError(loc, "weight ", shapeStr(w->getShape()),
                             " must match the last dimension of ",
                             shapeStr(x->getShape()));
  results.push_back(*x);
  for (unsigned i = 1; i < count; ++i)
    results.push_back(*w);
  return success();
}

LogicalResult
LayerNormGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  return inferNormGrad(adaptor.getInput(), adaptor.getWeight(), 3, loc,
                       results);
}

LogicalResult RMSNormGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return inferNormGrad(adaptor.getInput(), adaptor.getWeight(), 2, loc,
                       results);
}

LogicalResult OneHotOp::verify() {
  auto in = getIndices().getType(), out = getResult().getType();
  if (out.getRank() != in.getRank() + 1 ||
      out.getShape().drop_back() != in.getShape() ||
      out.getDimSize(out.getRank() - 1) < 1)
    return emitOpError("result ")
           << shapeStr(out.getShape()) << " must be the indices shape "
           << shapeStr(in.getShape()) << " plus one class dimension";
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// Shared by topk and topk_gating: [..., N] -> values and i32 ids [..., k].
static LogicalResult inferTopK(Value input, int64_t k, int64_t requiredRank,
                               std::optional<Location> loc,
                               SmallVectorImpl<Type> &results) {
  auto in = staticTensor(input, loc, "topk input");
  if (failed(in))
    return failure();
  if (in->getRank() < 1 || (requiredRank > 0 && in->getRank() != requiredRank))
    return emitOptionalError(loc, "topk input has unexpected shape ",
                             shapeStr(in->getShape()));
  int64_t n = in->getDimSize(in->getRank() - 1);
  if (k < 1 || k > n)
    return emitOptionalError(loc, "k = ", k, " must be in [1, ", n, "]");
  SmallVector<int64_t> shape(in->getShape());
  shape.back() = k;
  results.push_back(RankedTensorType::get(shape, in->getElementType()));
  results.push_back(
      RankedTensorType::get(shape, IntegerType::get(in->getContext(), 32)));
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  return inferTopK(adaptor.getInput(), static_cast<int64_t>(adaptor.getK()),
                   /*requiredRank=*/0, loc, results);
}

LogicalResult TopKGatingOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  return inferTopK(adaptor.getLogits(), static_cast<int64_t>(adaptor.getK()),
                   /*requiredRank=*/2, loc, results);
}

/// More experts than this is a typo, not a model (DeepSeek-V3 has 256).
static constexpr int64_t kMaxExperts = int64_t(1) << 20;

LogicalResult ExpertRouteOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  auto idx = staticTensor(adaptor.getIndices(), loc, "expert_route indices");
  if (failed(idx))
    return failure();
  if (idx->getRank() != 2)
    return emitOptionalError(loc, "expert_route wants indices [T, k], got ",
                             shapeStr(idx->getShape()));
  auto e = static_cast<int64_t>(adaptor.getNumExperts());
  if (e < 1 || e > kMaxExperts)
    return emitOptionalError(loc, "num_experts (", e, ") must be in [1, ",
                             kMaxExperts, "]");
  if (std::optional<uint64_t> c = adaptor.getCapacity();
      c && (static_cast<int64_t>(*c) < 1))
    return emitOptionalError(loc, "capacity (", static_cast<int64_t>(*c),
                             ") must be positive (leave it out for dropless "
                             "routing)");
  auto i32 = IntegerType::get(context, 32);
  results.push_back(RankedTensorType::get(idx->getShape(), i32));
  results.push_back(RankedTensorType::get({e}, i32));
  return success();
}

/// The rows attribute of dispatch and scatter: a positive row count.
static LogicalResult checkRows(int64_t rows, std::optional<Location> loc,
                               StringRef op) {
  if (rows < 1)
    return emitOptionalError(loc, op, " rows (", rows, ") must be positive");
  return success();
}

LogicalResult
ExpertDispatchOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  auto in = staticTensor(adaptor.getInput(), loc, "expert_dispatch input");
  auto pos =
      staticTensor(adaptor.getPositions(), loc, "expert_dispatch positions");
  if (failed(in) || failed(pos))
    return failure();
  if (in->getRank() != 2 || pos->getRank() != 2 ||
      pos->getDimSize(0) != in->getDimSize(0))
    return emitOptionalError(loc,
                             "expert_dispatch wants input [T, D] and "
                             "positions [T, k], got ",
                             shapeStr(in->getShape()), " and ",
                             shapeStr(pos->getShape()));
  auto rows = static_cast<int64_t>(adaptor.getRows());
  if (failed(checkRows(rows, loc, "expert_dispatch")))
    return failure();
  results.push_back(
      RankedTensorType::get({rows, in->getDimSize(1)}, in->getElementType()));
  return success();
}

LogicalResult
ExpertCombineOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto eo = staticTensor(adaptor.getExpertOutputs(), loc, "expert outputs");
  auto w = staticTensor(adaptor.getWeights(), loc, "expert_combine weights");
  auto pos =
      staticTensor(adaptor.getPositions(), loc, "expert_combine positions");
  if (failed(eo) || failed(w) || failed(pos))
    return failure();
  if (eo->getRank() != 2 || w->getRank() != 2 ||
      w->getShape() != pos->getShape())
    return emitOptionalError(loc,
                             "expert_combine wants expert outputs "
                             "[N, D] and weights, positions [T, k], got ",
                             shapeStr(eo->getShape()), ", ",
                             shapeStr(w->getShape()), ", ",
                             shapeStr(pos->getShape()));
  if (w->getElementType() != eo->getElementType())
    return emitOptionalError(loc, "expert_combine weights element type ",
                             w->getElementType(), " differs from ",
                             eo->getElementType());
  results.push_back(RankedTensorType::get({w->getDimSize(0), eo->getDimSize(1)},
                                          eo->getElementType()));
  return success();
}

LogicalResult ExpertGatherOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  auto eo = staticTensor(adaptor.getExpertOutputs(), loc, "expert outputs");
  auto pos =
      staticTensor(adaptor.getPositions(), loc, "expert_gather positions");
  if (failed(eo) || failed(pos))
    return failure();
  if (eo->getRank() != 2 || pos->getRank() != 2)
    return emitOptionalError(loc,
                             "expert_gather wants expert outputs [N, D] "
                             "and positions [T, k], got ",
                             shapeStr(eo->getShape()), " and ",
                             shapeStr(pos->getShape()));
  results.push_back(RankedTensorType::get(
      {pos->getDimSize(0), pos->getDimSize(1), eo->getDimSize(1)},
      eo->getElementType()));
  return success();
}

LogicalResult
ExpertScatterOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto pairs = staticTensor(adaptor.getPairs(), loc, "expert_scatter pairs");
  auto pos =
      staticTensor(adaptor.getPositions(), loc, "expert_scatter positions");
  if (failed(pairs) || failed(pos))
    return failure();
  if (pairs->getRank() != 3 || pairs->getShape().drop_back() != pos->getShape())
    return emitOptionalError(loc,
                             "expert_scatter wants pairs [T, k, D] and "
                             "positions [T, k], got ",
                             shapeStr(pairs->getShape()), " and ",
                             shapeStr(pos->getShape()));
  auto rows = static_cast<int64_t>(adaptor.getRows());
  if (failed(checkRows(rows, loc, "expert_scatter")))
    return failure();
  results.push_back(RankedTensorType::get({rows, pairs->getDimSize(2)},
                                          pairs->getElementType()));
  return success();
}

LogicalResult
GroupedMatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto x = staticTensor(adaptor.getInput(), loc, "grouped_matmul input");
  auto w = staticTensor(adaptor.getWeight(), loc, "grouped_matmul weight");
  auto sizes = staticTensor(adaptor.getSizes(), loc, "grouped_matmul sizes");
  if (failed(x) || failed(w) || failed(sizes))
    return failure();
  bool t = adaptor.getTransposeRhs();
  if (x->getRank() != 2 || w->getRank() != 3 || sizes->getRank() != 1 ||
      w->getDimSize(t ? 2 : 1) != x->getDimSize(1))
    return emitOptionalError(loc, "grouped_matmul wants input [N, K], weight ",
                             t ? "[E, M, K]" : "[E, K, M]",
                             " and sizes [G], got ", shapeStr(x->getShape()),
                             ", ", shapeStr(w->getShape()), ", ",
                             shapeStr(sizes->getShape()));
  if (w->getDimSize(0) < 1 || sizes->getDimSize(0) % w->getDimSize(0) != 0)
    return emitOptionalError(loc, "grouped_matmul: the ", w->getDimSize(0),
                             " experts do not divide the ",
                             sizes->getDimSize(0), " groups");
  if (x->getElementType() != w->getElementType())
    return emitOptionalError(loc, "grouped_matmul input element type ",
                             x->getElementType(), " differs from weight's ",
                             w->getElementType());
  results.push_back(RankedTensorType::get(
      {x->getDimSize(0), w->getDimSize(t ? 1 : 2)}, x->getElementType()));
  return success();
}

LogicalResult GroupedMatmulWgradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto a = staticTensor(adaptor.getLhs(), loc, "grouped_matmul_wgrad lhs");
  auto r = staticTensor(adaptor.getRhs(), loc, "grouped_matmul_wgrad rhs");
  auto sizes =
      staticTensor(adaptor.getSizes(), loc, "grouped_matmul_wgrad sizes");
  if (failed(a) || failed(r) || failed(sizes))
    return failure();
  auto e = static_cast<int64_t>(adaptor.getExperts());
  if (a->getRank() != 2 || r->getRank() != 2 || sizes->getRank() != 1 ||
      a->getDimSize(0) != r->getDimSize(0))
    return emitOptionalError(loc,
                             "grouped_matmul_wgrad wants lhs [N, P], rhs "
                             "[N, Q] and sizes [G], got ",
                             shapeStr(a->getShape()), ", ",
                             shapeStr(r->getShape()), ", ",
                             shapeStr(sizes->getShape()));
  if (e < 1 || sizes->getDimSize(0) % e != 0)
    return emitOptionalError(loc, "grouped_matmul_wgrad: experts = ", e,
                             " must divide the ", sizes->getDimSize(0),
                             " groups");
  if (a->getElementType() != r->getElementType())
    return emitOptionalError(loc, "grouped_matmul_wgrad operand element types ",
                             a->getElementType(), " and ", r->getElementType(),
                             " differ");
  results.push_back(RankedTensorType::get(
      {e, a->getDimSize(1), r->getDimSize(1)}, a->getElementType()));
  return success();
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " differs from input type " << input.getType();
  auto yield = dyn_cast_or_null<YieldOp>(body.empty() ? nullptr : &body.back());
  if (!yield)
    return emitOpError("body must end with weft.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types differ from the result types");
  for (Operation &op : body.without_terminator()) {
    bool splat =
        isa<ConstantOp>(op) && cast<ConstantOp>(op).getValue().isSplat();
    bool rowNorm = isa<LayerNormOp, RMSNormOp>(op);
    auto bc = dyn_cast<BroadcastOp>(op);
    bool scalar =
        bc && cast<RankedTensorType>(bc.getInput().getType()).getRank() == 0;
    if (!splat && !rowNorm && !scalar && !op.hasTrait<OpTrait::Elementwise>())
      return op.emitOpError("cannot be part of a fused elementwise group");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/weft/IR/WeftOps.cpp.inc"
