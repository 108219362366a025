//===- Rebatch.cpp - a model rewritten at another micro-batch ---*- C++ -*-===//
//
// A model read from .mlir is written at one micro-batch: @forward's tokens
// are [B, S]. The planner chooses the micro-batch (and weftc compile takes
// the step's --batch), so the graph is rewritten at N sequences, as a
// frontend would have built it at N.
//
// The batch is followed from the arguments through every op: each value
// that carries it has one dimension holding it, possibly merged with others
// ([B*S, H] holds it as the major part of dimension 0). That dimension
// grows from outer * B * inner to outer * N * inner. Ops whose result types
// follow from their operands (InferTypeOpInterface) are re-inferred; ops
// whose results take an operand's shape take the new one; a reshape puts
// the batch where the same elements precede it and one sequence's step
// spans the same elements. A broadcast or splat constant that an op pairs
// with a batched value (the position embedding broadcast over the batch,
// an epsilon) is rebuilt at the new shape. A mixture of experts' capacity
// follows the tokens (from the frontend's capacity factor where the route
// carries it), and its packed rows, which a capacity rounds, are their own
// count, not a multiple of the batch.
//
// With B > 1 where the batch sits is determined; from one sequence it is
// not (a dimension of one may be anywhere), so a reshape prefers the
// dimension that is the batch alone, and an argument of rank one or more
// is data: a packed [1, B*S] layout is read as one sequence of B*S.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <optional>

namespace weft {
#define GEN_PASS_DEF_REBATCH
#include "passes/pipeline/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// Where a value holds the batch: dimension `dim`, of outer * B * inner
/// elements with the batch in the middle (row-major: `outer` blocks of it
/// before, `inner` elements in each of its steps).
struct Batched {
  int64_t dim = 0, outer = 1, inner = 1;
  /// Non-zero: the dimension is an expert buffer's packed rows, which the
  /// tokens decide but not in proportion (a capacity rounds), this many at
  /// N sequences.
  int64_t packed = 0;
};

class Rebatcher {
public:
  Rebatcher(func::FuncOp forward, int64_t from, int64_t to, int64_t group)
      : forward(forward), from(from), to(to), group(group) {}

  LogicalResult run();

private:
  InFlightDiagnostic fail(Operation *op, const Twine &message) {
    return op->emitError("weft-rebatch: ") << message;
  }
  /// `type` with the batch of `b` at N sequences (a size past 64 bits is
  /// noted in `overflow` and left as it was).
  RankedTensorType resized(Type type, Batched b) {
    auto t = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(t.getShape());
    int64_t part, size;
    if (b.packed)
      shape[b.dim] = b.packed;
    else if (llvm::MulOverflow(b.outer, to, part) ||
             llvm::MulOverflow(part, b.inner, size))
      overflow = true;
    else
      shape[b.dim] = size;
    return t.clone(shape);
  }
  LogicalResult visit(Operation *op);
  /// The results of `op` take operand `source`'s new shape; the other
  /// operands in `partners` that have its old shape are batched alike.
  LogicalResult sameShape(Operation *op, unsigned source,
                          ArrayRef<unsigned> partners);
  /// `v` (unbatched, with the old shape of a value batched as `b`) at the
  /// new shape, for `user`: a broadcast or splat constant rebuilt, or a
  /// batch of one broadcast.
  FailureOr<Value> widened(Value v, Batched b, Operation *user);
  /// Where a reshape from `in` (batched as `b`) to `out` holds the batch.
  std::optional<Batched> reshaped(ArrayRef<int64_t> in, Batched b,
                                  ArrayRef<int64_t> out) const;
  /// A mixture of experts' buffer rows for `positions` ([T, k] pairs, the
  /// tokens rebatched) that held `rows` for the old tokens.
  FailureOr<int64_t> packedRows(Operation *op, Value positions, int64_t rows);

  func::FuncOp forward;
  int64_t from, to, group;
  llvm::DenseMap<Value, Batched> where;
  /// The types values had at B sequences (only those that changed).
  llvm::DenseMap<Value, Type> before;
  /// Broadcasts and constants rebuilt, by the value and the type wanted.
  llvm::DenseMap<std::pair<Value, Type>, Value> rebuilt;
  /// Each expert_route's capacity at B sequences.
  llvm::DenseMap<Operation *, int64_t> capacityOf;
  bool overflow = false;

  Type oldType(Value v) const { return before.lookup_or(v, v.getType()); }
  void retype(Value v, Type t) {
    if (t == v.getType())
      return;
    before.try_emplace(v, v.getType());
    v.setType(t);
  }
};
} // namespace

std::optional<Batched> Rebatcher::reshaped(ArrayRef<int64_t> in, Batched b,
                                           ArrayRef<int64_t> out) const {
  // The blocks before the batch, and the elements one sequence spans.
  int64_t blocks = b.outer, step = b.inner;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (d < b.dim)
      blocks *= in[d];
    else if (d > b.dim)
      step *= in[d];
  std::optional<Batched> found;
  int64_t prefix = 1;
  for (int64_t e = 0; e < static_cast<int64_t>(out.size()); ++e) {
    int64_t suffix = 1;
    for (int64_t d = e + 1; d < static_cast<int64_t>(out.size()); ++d)
      suffix *= out[d];
    if (blocks % prefix == 0 && step % suffix == 0 &&
        blocks / prefix * from * (step / suffix) == out[e]) {
      Batched here{e, blocks / prefix, step / suffix};
      // A batch of one fits beside any dimension of one: the dimension
      // that is the batch alone wins, then the first.
      bool alone = here.outer == 1 && here.inner == 1;
      if (!found || (alone && (found->outer != 1 || found->inner != 1)))
        found = here;
    }
    prefix *= out[e];
  }
  return found;
}

FailureOr<Value> Rebatcher::widened(Value v, Batched b, Operation *user) {
  RankedTensorType type = resized(v.getType(), b);
  if (Value done = rebuilt.lookup({v, type}))
    return done;
  // In the old one's place (as a frontend orders them), or before `user`.
  OpBuilder builder(v.getDefiningOp() ? v.getDefiningOp() : user);
  Value made;
  if (auto broadcast = v.getDefiningOp<BroadcastOp>()) {
    // The batch's dimension must be one the broadcast makes (or repeats
    // from a dimension of one), not one it copies from its input.
    auto input = cast<ShapedType>(broadcast.getInput().getType());
    for (auto [d, dim] : llvm::enumerate(broadcast.getDims()))
      if (dim == b.dim && input.getDimSize(d) != 1)
        return fail(user, "the broadcast it pairs with the batch copies its "
                          "input's dimension " +
                              Twine(d) + " into the batch's");
    made = BroadcastOp::create(builder, broadcast.getLoc(), type,
                               broadcast.getInput(), broadcast.getDimsAttr());
  } else if (auto constant = v.getDefiningOp<ConstantOp>();
             constant && isa<SplatElementsAttr>(constant.getValue())) {
    auto splat = cast<SplatElementsAttr>(constant.getValue());
    made = ConstantOp::create(
        builder, constant.getLoc(),
        SplatElementsAttr::get(type, splat.getSplatValue<Attribute>()));
  } else if (from == 1 && b.outer == 1 && b.inner == 1) {
    // One sequence's values, the same for each of the N.
    builder.setInsertionPoint(user);
    auto t = cast<RankedTensorType>(v.getType());
    made = BroadcastOp::create(builder, v.getLoc(), type, v,
                               builder.getDenseI64ArrayAttr(llvm::to_vector(
                                   llvm::seq<int64_t>(0, t.getRank()))));
  } else {
    return fail(user, "an operand of type " +
                          llvm::formatv("'{0}'", v.getType()).str() +
                          " pairs with the batch but is computed from no "
                          "input (only a broadcast or a splat constant is "
                          "rebuilt at another batch)");
  }
  rebuilt[{v, type}] = made;
  return made;
}

FailureOr<int64_t> Rebatcher::packedRows(Operation *op, Value positions,
                                         int64_t rows) {
  auto pairs = [](Type t) { return cast<ShapedType>(t).getNumElements(); };
  int64_t oldPairs = pairs(oldType(positions)),
          newPairs = pairs(positions.getType());
  auto route = positions.getDefiningOp<ExpertRouteOp>();
  if (!route || !route.getCapacity()) {
    if (rows != oldPairs)
      return fail(op, "its " + Twine(rows) + " rows are not its " +
                          Twine(oldPairs) +
                          " routing pairs (dropless routing packs each)");
    return newPairs;
  }
  int64_t experts = route.getNumExperts();
  int64_t oldCapacity =
      capacityOf.lookup_or(route.getOperation(), *route.getCapacity());
  if (rows != std::min(oldPairs, experts * oldCapacity))
    return fail(op, "its " + Twine(rows) +
                        " rows are not min(pairs, experts x capacity) = " +
                        Twine(std::min(oldPairs, experts * oldCapacity)));
  return std::min(newPairs, experts * int64_t(*route.getCapacity()));
}

LogicalResult Rebatcher::sameShape(Operation *op, unsigned source,
                                   ArrayRef<unsigned> partners) {
  auto found = where.find(op->getOperand(source));
  if (found == where.end())
    return fail(op, "its operand #" + Twine(source) +
                        " does not hold the batch, but another does");
  Batched b = found->second;
  for (unsigned i : partners) {
    Value v = op->getOperand(i);
    if (where.count(v))
      continue;
    FailureOr<Value> wide = widened(v, b, op);
    if (failed(wide))
      return failure();
    where[*wide] = b;
    op->setOperand(i, *wide);
  }
  for (Value r : op->getResults()) {
    where[r] = b;
    retype(r, resized(r.getType(), b));
  }
  return success();
}

LogicalResult Rebatcher::visit(Operation *op) {
  if (llvm::none_of(op->getOperands(),
                    [&](Value v) { return where.count(v) > 0; }))
    return success();
  auto name = [&] { return "'" + op->getName().getStringRef().str() + "'"; };
  auto shape = [](Type t) { return llvm::formatv("'{0}'", t).str(); };
  if (op->getNumRegions())
    return fail(op, name() + " has regions: a model is rebatched before its "
                             "ops are fused");
  // weft-partition places an op's block of the global tensor (dropout's
  // and attention's masks); a placed model is not rebatched.
  if (op->hasAttr("split") || op->hasAttr("microbatches"))
    return fail(op, name() + " is placed (split or microbatches): rebatch "
                             "the model before placing it");

  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    Type in = oldType(reshape.getInput());
    Batched b = where[reshape.getInput()];
    std::optional<Batched> r = b.packed
                                   ? std::nullopt
                                   : reshaped(cast<ShapedType>(in).getShape(),
                                              b, reshape.getType().getShape());
    if (!r)
      return fail(op, "the reshape from " + shape(in) + " to " +
                          shape(reshape.getType()) +
                          " splits the batch over dimensions");
    where[reshape.getResult()] = *r;
    retype(reshape.getResult(), resized(reshape.getType(), *r));
    return success();
  }
  if (auto broadcast = dyn_cast<BroadcastOp>(op)) {
    Batched b = where[broadcast.getInput()];
    int64_t dim = broadcast.getDims()[b.dim];
    if (cast<ShapedType>(oldType(broadcast.getInput())).getDimSize(b.dim) !=
        broadcast.getType().getDimSize(dim))
      return fail(op, "the broadcast repeats the batch's dimension");
    Batched r = b;
    r.dim = dim;
    where[broadcast.getResult()] = r;
    retype(broadcast.getResult(), resized(broadcast.getType(), r));
    return success();
  }
  if (op->hasTrait<OpTrait::Elementwise>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultType>()) {
    SmallVector<unsigned> all =
        llvm::to_vector(llvm::seq<unsigned>(0, op->getNumOperands()));
    unsigned source = *llvm::find_if(
        all, [&](unsigned i) { return where.count(op->getOperand(i)); });
    return sameShape(op, source, all);
  }
  // The result is the first operand's type; the rest are weights,
  // positions or counters.
  if (isa<LayerNormOp, RMSNormOp, RopeOp, DropoutOp>(op))
    return sameShape(op, 0, {0});
  if (auto oneHot = dyn_cast<OneHotOp>(op)) {
    Batched b = where[oneHot.getIndices()];
    where[oneHot.getResult()] = b;
    retype(oneHot.getResult(), resized(oneHot.getType(), b));
    return success();
  }
  if (isa<CrossEntropyOp>(op))
    return success(); // A 0-d mean.

  // A capacity-limited expert keeps as many pairs in the same proportion
  // to the tokens (rounded up: the capacity factor's ceiling), and the
  // packed buffer follows.
  // The frontend's capacity factor gives it as a frontend would at N.
  if (auto route = dyn_cast<ExpertRouteOp>(op); route && route.getCapacity()) {
    int64_t capacity = *route.getCapacity(), scaled;
    capacityOf[op] = capacity;
    auto pairs = cast<ShapedType>(route.getIndices().getType());
    if (auto factor = op->getAttrOfType<FloatAttr>(kCapacityFactorAttr))
      scaled =
          expertCapacity(factor.getValueAsDouble(),
                         pairs.getNumElements() * group, route.getNumExperts());
    else if (llvm::MulOverflow(capacity, to, scaled) ||
             llvm::MulOverflow(scaled, group, scaled))
      return fail(op,
                  "its capacity at " + Twine(to) + " sequences passes 64 bits");
    else
      scaled = (scaled + from - 1) / from;
    route.setCapacity(std::max<int64_t>(1, scaled));
  }
  // A slice may keep the whole batch (and grows with it), not cut it.
  if (auto slice = dyn_cast<SliceOp>(op)) {
    Batched b = where[slice.getInput()];
    int64_t was = cast<ShapedType>(oldType(slice.getInput())).getDimSize(b.dim);
    if (slice.getStarts()[b.dim] != 0 || slice.getLimits()[b.dim] != was)
      return fail(op, "the slice cuts the batch's dimension " + Twine(b.dim) +
                          " (it keeps [" + Twine(slice.getStarts()[b.dim]) +
                          ", " + Twine(slice.getLimits()[b.dim]) + ") of " +
                          Twine(was) + ")");
    SmallVector<int64_t> limits(slice.getLimits());
    limits[b.dim] = resized(oldType(slice.getInput()), b).getDimSize(b.dim);
    slice.setLimits(limits);
  }
  // Values joined beside the batch hold it alike (an unbatched one is
  // rebuilt as an elementwise partner is); joined along it, they would
  // interleave sequences.
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    Batched b = where[*llvm::find_if(
        concat.getInputs(), [&](Value v) { return where.count(v) > 0; })];
    if (b.dim == static_cast<int64_t>(concat.getDim()))
      return fail(op, "it joins values along the batch's dimension " +
                          Twine(b.dim));
    for (OpOperand &input : op->getOpOperands()) {
      if (where.count(input.get()))
        continue;
      FailureOr<Value> wide = widened(input.get(), b, op);
      if (failed(wide))
        return failure();
      where[*wide] = b;
      input.set(*wide);
    }
  }
  auto repack = [&](auto packing) {
    FailureOr<int64_t> rows =
        packedRows(op, packing.getPositions(), packing.getRows());
    if (succeeded(rows))
      packing.setRows(*rows);
    return rows;
  };
  if (auto dispatch = dyn_cast<ExpertDispatchOp>(op);
      dispatch && failed(repack(dispatch)))
    return failure();
  if (auto scatter = dyn_cast<ExpertScatterOp>(op);
      scatter && failed(repack(scatter)))
    return failure();
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return fail(op, "it does not know how " + name() + " carries the batch");
  SmallVector<Type> types;
  if (failed(infer.inferReturnTypes(
          op->getContext(), op->getLoc(), op->getOperands(),
          op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
          op->getRegions(), types)))
    return failure();
  // An expert buffer's rows: from the routing, or from rows before.
  bool packs = isa<ExpertDispatchOp, ExpertScatterOp>(op) ||
               llvm::any_of(op->getOperands(), [&](Value v) {
                 auto it = where.find(v);
                 return it != where.end() && it->second.packed;
               });
  for (auto [i, result, type] : llvm::enumerate(op->getResults(), types)) {
    auto was = cast<ShapedType>(result.getType());
    auto now = cast<ShapedType>(type);
    SmallVector<int64_t> changed;
    for (int64_t d = 0; d < was.getRank() && was.getRank() == now.getRank();
         ++d)
      if (was.getDimSize(d) != now.getDimSize(d))
        changed.push_back(d);
    if (was.getRank() == now.getRank() && changed.empty())
      continue; // Not batched: a weight's gradient, a count per expert.
    int64_t d = changed.size() == 1 ? changed.front() : -1;
    bool proportional = d >= 0 &&
                        was.getDimSize(d) * to == now.getDimSize(d) * from &&
                        was.getDimSize(d) % from == 0;
    if (d >= 0 && !proportional && packs) {
      where[result] = Batched{d, 1, 1, now.getDimSize(d)};
      retype(result, type);
      continue;
    }
    if (!proportional)
      return fail(op, "its result #" + Twine(i) + " would change from " +
                          shape(was) + " to " + shape(now) +
                          ", not as the batch does in one dimension");
    // Merged as in the operand it comes from (the one whose batch's
    // dimension has the size), else the major part.
    Batched r{d, 1, was.getDimSize(d) / from};
    for (Value operand : op->getOperands())
      if (auto it = where.find(operand);
          it != where.end() && !it->second.packed &&
          cast<ShapedType>(oldType(operand)).getDimSize(it->second.dim) ==
              was.getDimSize(d)) {
        r = {d, it->second.outer, it->second.inner};
        break;
      }
    where[result] = r;
    retype(result, type);
  }
  return success();
}

LogicalResult Rebatcher::run() {
  Block &body = forward.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() == 0)
      continue; // A step counter, a scale.
    if (t.getDimSize(0) != from)
      return forward.emitError("weft-rebatch: argument #")
             << arg.getArgNumber() << " is " << t
             << ", whose first dimension is not the batch of " << from
             << " sequences the tokens give";
    where[arg] = Batched{};
    retype(arg, resized(t, Batched{}));
  }
  if (overflow)
    return forward.emitError("weft-rebatch: at ")
           << to << " sequences an argument's size passes 64 bits";
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (failed(visit(&op)))
      return failure();
    if (overflow)
      return fail(&op, "at " + Twine(to) +
                           " sequences a result's size passes 64 bits");
  }
  // What the rebuilt broadcasts and constants replaced, if nothing else
  // reads it.
  llvm::SetVector<Operation *> replaced;
  for (auto [old, made] : rebuilt)
    if (Operation *def = old.first.getDefiningOp())
      replaced.insert(def);
  for (Operation *def : replaced)
    if (isOpTriviallyDead(def))
      def->erase();
  forward.setFunctionType(
      FunctionType::get(forward.getContext(), body.getArgumentTypes(),
                        body.getTerminator()->getOperandTypes()));
  return verify(forward);
}

LogicalResult weft::rebatch(func::FuncOp forward, int64_t batch,
                            int64_t capacityGroup) {
  if (forward.isExternal())
    return forward.emitError("weft-rebatch: @")
           << forward.getSymName() << " has no body to rebatch";
  auto tokens = forward.getNumArguments()
                    ? dyn_cast<RankedTensorType>(forward.getArgumentTypes()[0])
                    : RankedTensorType();
  if (!tokens || tokens.getRank() != 2 || !tokens.hasStaticShape() ||
      !tokens.getElementType().isInteger() || tokens.getDimSize(0) < 1)
    return forward.emitError("weft-rebatch: @")
           << forward.getSymName()
           << " must take [batch, seq] integer token ids first, the batch "
              "at least 1";
  if (batch < 1)
    return forward.emitError("weft-rebatch: a micro-batch of ")
           << batch << " sequences; it takes at least 1";
  int64_t from = tokens.getDimSize(0);
  if (batch == from && capacityGroup == 1)
    return success();
  return Rebatcher(forward, from, batch, capacityGroup).run();
}

namespace {
struct RebatchPass : weft::impl::RebatchBase<RebatchPass> {
  using RebatchBase::RebatchBase;

  void runOnOperation() override {
    auto forward = getOperation().lookupSymbol<func::FuncOp>(func);
    if (!forward) {
      getOperation().emitError("weft-rebatch: no function named @") << func;
      return signalPassFailure();
    }
    if (failed(rebatch(forward, batch)))
      signalPassFailure();
  }
};
} // namespace
