//===- Recompute.cpp - activation recomputation ---------------------------===//
//
// After autodiff a training step is its forward followed by its backward,
// the backward reading forward values directly. A value the policy chooses
// is computed again by a clone of its op placed just before its first
// backward reader, whose operands are either clones themselves (chosen
// values the clone needs, made on demand) or values that stay; later
// backward readers share the clone. The forward's copy then dies at its
// last forward use. Clones keep their attributes: a dropout's seed (the
// same mask), a pipeline stage, a sharding.
//
//===----------------------------------------------------------------------===//

#include "passes/recompute/Passes.h"

#include "passes/recompute/Layers.h"

#include "passes/LayerRuns.h"

#include "passes/memory/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>

#include <limits>

namespace weft {
#define GEN_PASS_DEF_RECOMPUTE
#include "passes/recompute/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
/// What no policy recomputes: communication (a collective or transfer, or
/// the expert route, which all-gathers counts under expert parallelism),
/// what is not an activation, and ops with regions. (copy_to_group is an
/// identity in the forward; its all-reduce is its gradient's.)
bool neverRecomputed(Operation *op) {
  return isa<ParamOp, ConstantOp, AssignOp, AllReduceOp, AllGatherOp,
             ReduceScatterOp, AllToAllOp, RaggedAllToAllOp, RingShiftOp, SendOp,
             RecvOp, ExpertRouteOp>(op) ||
         op->getNumRegions() > 0 || !isa<WeftDialect>(op->getDialect());
}

/// What recomputing `op` costs: 2mnk for a GEMM (K from the lhs, which
/// the transposed lhs of a matmul holds first), 2 S T (D + Dv) per batch
/// and head for attention (its two products, the mask ignored), and one
/// FLOP per element written for everything else.
double recomputeFlops(Operation *op) {
  auto elements = [](Value v) {
    auto type = dyn_cast<ShapedType>(v.getType());
    return type && type.hasStaticShape() ? double(type.getNumElements()) : 0.0;
  };
  auto dim = [](Value v, int64_t fromEnd) {
    ArrayRef<int64_t> shape = cast<ShapedType>(v.getType()).getShape();
    return double(shape[shape.size() - fromEnd]);
  };
  if (auto mm = dyn_cast<MatmulOp>(op))
    return 2 * elements(mm.getResult()) *
           dim(mm.getLhs(), mm.getTransposeLhs() ? 2 : 1);
  if (isa<MatmulEpilogueOp, GroupedMatmulOp>(op))
    return 2 * elements(op->getResult(0)) * dim(op->getOperand(0), 1);
  if (auto att = dyn_cast<AttentionOp>(op)) {
    // q [B, S, H, D], k [B, T, Hkv, D], v [B, T, Hkv, Dv].
    double rows = elements(att.getQuery()) / dim(att.getQuery(), 1);
    return 2 * rows * dim(att.getKey(), 3) *
           (dim(att.getQuery(), 1) + dim(att.getValue(), 1));
  }
  double written = 0;
  for (Value r : op->getResults())
    written += elements(r);
  return written;
}

/// What `selective` keeps: the ops whose work is the layer's FLOPs.
bool isHeavy(Operation *op) {
  return isa<MatmulOp, MatmulEpilogueOp, GroupedMatmulOp, AttentionOp>(op);
}

/// The value whose storage `value` shares, through the memory plan's views.
Value storageOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isViewOp(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

} // namespace

static const char *policyName(RecomputePolicy policy) {
  switch (policy) {
  case RecomputePolicy::None:
    return "none";
  case RecomputePolicy::Full:
    return "full";
  case RecomputePolicy::Selective:
    return "selective";
  case RecomputePolicy::Tensors:
    return "tensors";
  }
  return "none";
}

/// A `tensors:` layer's name: its candidates' indices joined by '+'.
static std::string tensorsName(uint64_t mask) {
  std::string name = "tensors:";
  for (int64_t i = 0; i < kMaxLayerCandidates; ++i)
    if ((mask >> i) & 1)
      name += (name.back() == ':' ? "" : "+") + std::to_string(i);
  return name;
}

namespace {
class Recomputer {
public:
  Recomputer(func::FuncOp func, const RecomputeChoice &choice)
      : func(func), choice(choice), regather(choice.regather),
        forward(forwardOps(func)), layer(layersOf(func, forward)),
        activations(activationsOf(func, forward)) {
    for (auto [op, l] : layer)
      if (inLayers(l))
        layers = std::max(layers, l + 1);
    prepare();
  }

  FailureOr<int64_t> run() {
    if (!choice.layers.empty() &&
        static_cast<int64_t>(choice.layers.size()) != layers)
      return func.emitError("weft-recompute: the choice '")
                 << choice.str() << "' names "
                 << static_cast<int64_t>(choice.layers.size())
                 << " layers' policies; the step has " << layers << " layers",
             failure();
    for (int64_t l = 0; l < layers; ++l) {
      if (choice.of(l) != RecomputePolicy::Tensors)
        continue;
      uint64_t mask = choice.tensorsOf(l);
      int64_t have = candidateCount[l];
      if (have > kMaxLayerCandidates)
        return func.emitError("weft-recompute: layer ")
                   << l << " has " << have
                   << " recomputation candidates, more than a 'tensors:' "
                      "choice can name ("
                   << kMaxLayerCandidates << "); give it a policy",
               failure();
      if (have < kMaxLayerCandidates && (mask >> have) != 0)
        return func.emitError("weft-recompute: layer ")
                   << l << " has " << have << " recomputation candidate"
                   << (have == 1 ? "" : "s") << "; the choice names '"
                   << tensorsName(mask) << "'",
               failure();
    }
    layerFlops.assign(layers, 0.0);
    rewrite();
    // The budget search reads this to find the programs with a backward.
    func->setAttr(kRecomputeAttr,
                  StringAttr::get(func.getContext(), choice.str()));
    func->setAttr(kRecomputeFlopsAttr,
                  FloatAttr::get(Float64Type::get(func.getContext()), flops));
    func->setAttr(kRecomputeLayerFlopsAttr,
                  DenseF64ArrayAttr::get(func.getContext(), layerFlops));
    recordActivationBytes();
    return cloned;
  }

  /// The step's candidates (RecomputeCandidates).
  RecomputeCandidates candidatesOf() {
    RecomputeCandidates out;
    out.layers = layers;
    out.heavy.resize(layers);
    out.flops.resize(layers);
    for (Value c : candidates) {
      Operation *def = c.getDefiningOp();
      int64_t l = layer.lookup(def);
      out.heavy[l].push_back(isHeavy(def));
      out.flops[l].push_back(recomputeFlops(def));
    }
    return out;
  }

private:
  /// Whether the policy computes `value` (a forward op's result) again
  /// rather than keep it for the backward.
  bool recomputable(Value value) {
    if (regathered(value))
      return true;
    if (!isCandidate(value))
      return false;
    int64_t l = layer.lookup(value.getDefiningOp());
    switch (choice.of(l)) {
    case RecomputePolicy::None:
      return false;
    case RecomputePolicy::Full:
      return true;
    case RecomputePolicy::Selective:
      // Selective keeps GEMM and attention outputs. (On the GPU a GEMM
      // whose bias add is recomputed keeps its output for the clone, so
      // weft-gemm-epilogue no longer folds the bias into it; keeping the
      // sum instead stores as much but planned worse on the CPU: 9.7
      // against 7.4 MB for an 8-layer GPT-2-tiny at 4 x 64.)
      return !isHeavy(value.getDefiningOp());
    case RecomputePolicy::Tensors:
      // run() checked that the layer's candidates fit a mask.
      return (choice.tensorsOf(l) >> candidateIndex.lookup(value)) & 1;
    }
    return false;
  }

  /// Whether layer `l` keeps only its input: `full`, or a `tensors:` choice
  /// that names every candidate.
  bool recomputesAll(int64_t l) {
    RecomputePolicy policy = choice.of(l);
    if (policy != RecomputePolicy::Tensors)
      return policy == RecomputePolicy::Full;
    int64_t have = candidateCount[l];
    return have <= kMaxLayerCandidates &&
           choice.tensorsOf(l) == everyCandidate(have);
  }

  /// Sequence parallelism's gather of an activation (a norm's output before
  /// a column-parallel GEMM), which is made again before the weight
  /// gradient reads it, whatever the policy, so the layer keeps its
  /// sequence shard and not the whole (Megatron-LM's sequence parallelism):
  /// one more all-gather for t times less memory.
  bool regathered(Value value) {
    Operation *def = value.getDefiningOp();
    if (!regather || !def || !isa<AllGatherOp>(def) ||
        !activations.contains(value))
      return false;
    int64_t l = layer.lookup(def);
    return inLayers(l) && !readByLaterLayer(value, l);
  }

  /// Whether `full` recomputes `value`: a layer's activation, not
  /// communication, that no later layer reads (sequence parallelism's
  /// regathers aside, which every policy makes again). A layer's
  /// candidates are these.
  bool isCandidate(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def || !activations.contains(value) || regathered(value) ||
        neverRecomputed(def))
      return false;
    int64_t l = layer.lookup(def);
    return inLayers(l) && !readByLaterLayer(value, l);
  }

  /// Whether a forward op of a layer after `l` reads `value`, directly or
  /// through views of it (the value is that layer's input: it stays).
  bool readByLaterLayer(Value value, int64_t l) {
    for (Operation *user : value.getUsers()) {
      if (!forward.contains(user))
        continue;
      if (layer.lookup(user) > l)
        return true;
      if (isViewOp(user) && readByLaterLayer(user->getResult(0), l))
        return true;
    }
    return false;
  }

  /// Whether a recomputation that reads `value`, made from parameters
  /// alone, makes it again too: a bias broadcast to the activations' shape
  /// is as large as one and the backward proper does not read it, so
  /// keeping it for the clone would store what the policy meant to drop.
  /// What the backward reads anyway (a weight's view) or communication
  /// made (a ZeRO-3 gather) is read as it is.
  bool remadeForClone(Value value) {
    Operation *def = value.getDefiningOp();
    return def && forward.contains(def) && !activations.contains(value) &&
           !neverRecomputed(def) && !readByBackward.contains(value);
  }

  /// The clone of `value` made before `before` (and the clones it needs),
  /// or the one made earlier.
  Value materialize(Value value, Operation *before) {
    if (Value done = clones.lookupOrNull(value))
      return done;
    Operation *def = value.getDefiningOp();
    for (Value operand : def->getOperands())
      if (recomputable(operand) || remadeForClone(operand))
        materialize(operand, before);
    OpBuilder b(before);
    b.clone(*def, clones);
    ++cloned;
    double f = recomputeFlops(def);
    flops += f;
    if (int64_t l = layer.lookup(def); inLayers(l))
      layerFlops[l] += f;
    return clones.lookup(value);
  }

  /// The backward, what it reads, and each layer's candidates, in
  /// program order; before the rewrite (the constructor's last step).
  void prepare() {
    candidateCount.assign(layers, 0);
    for (Operation &op : func.getBody().front().without_terminator())
      if (!forward.contains(&op))
        backward.push_back(&op);
    for (Operation *op : backward)
      readByBackward.insert(op->operand_begin(), op->operand_end());
    for (Operation &op : func.getBody().front().without_terminator())
      if (forward.contains(&op))
        for (Value r : op.getResults())
          if (isCandidate(r)) {
            candidateIndex[r] = candidateCount[layer.lookup(&op)]++;
            candidates.push_back(r);
          }
  }

  void rewrite() {
    for (Operation *op : backward)
      for (OpOperand &use : op->getOpOperands())
        if (recomputable(use.get()))
          use.set(materialize(use.get(), op));
  }

  /// The layer a stored value counts for: the first layer that reads it in
  /// the forward (a layer's input is its own, as Korthikanti et al. count
  /// it); the epilogue's when only the epilogue reads it (the last layer's
  /// output, the final norm's input); else the layer that made it (an
  /// attention's lse, read by the backward alone).
  int64_t storedLayer(Value value) {
    int64_t first = kEpilogue;
    bool epilogue = false;
    for (Operation *user : value.getUsers()) {
      if (!forward.contains(user))
        continue;
      int64_t l = layer.lookup(user);
      if (inLayers(l))
        first = std::min(first, l);
      epilogue |= l == kEpilogue;
    }
    if (first != kEpilogue || epilogue)
      return first;
    Operation *def = value.getDefiningOp();
    return def ? layer.lookup(def) : kPrologue;
  }

  /// Per layer, the bytes of activations read after the forward (by the
  /// backward or a recomputation), each storage once: what the step keeps
  /// for the backward. Set only on a function that has a backward.
  void recordActivationBytes() {
    llvm::SetVector<Value> stored;
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (forward.contains(&op))
        continue;
      // A step input the backward reads (a float one: token ids are not
      // activations) is stored too, if outside the arena.
      for (Value operand : op.getOperands())
        if (activations.contains(operand) ||
            (isa<BlockArgument>(operand) &&
             isa<FloatType>(getElementTypeOrSelf(operand.getType()))))
          stored.insert(storageOf(operand));
    }
    if (layers == 0 || stored.empty())
      return;
    SmallVector<int64_t> bytes(layers, 0), paper(layers, 0), core(layers, 0);
    for (Value v : stored) {
      int64_t l = storedLayer(v);
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!inLayers(l) || !type)
        continue;
      bytes[l] += type.getNumElements() * elementBytes(type.getElementType());
      // The log-sum-exp is FlashAttention's; Megatron keeps the core.
      if (auto att = v.getDefiningOp<AttentionOp>(); att && v == att.getLse())
        continue;
      paper[l] += 2 * type.getNumElements();
    }
    // Korthikanti et al. keep every dropout's 1-byte mask (Weft draws it
    // again) and the attention core: scores [B, H, S, T] as the softmax's
    // output, its dropout mask and the dropped probabilities.
    // Under full recomputation they keep the layer's input alone.
    for (Operation *op : forward) {
      int64_t l = layer.lookup(op);
      if (!inLayers(l) || recomputesAll(l))
        continue;
      if (auto drop = dyn_cast<DropoutOp>(op))
        paper[l] += cast<RankedTensorType>(drop.getType()).getNumElements();
      if (auto att = dyn_cast<AttentionOp>(op)) {
        ArrayRef<int64_t> lse =
            cast<RankedTensorType>(att.getLse().getType()).getShape();
        int64_t scores =
            lse[0] * lse[1] * lse[2] *
            cast<RankedTensorType>(att.getKey().getType()).getDimSize(1);
        core[l] += scores * (att.getDropout() ? 5 : 2);
      }
    }
    auto attr = [&](ArrayRef<int64_t> v) {
      return DenseI64ArrayAttr::get(func.getContext(), v);
    };
    func->setAttr(kActivationBytesAttr, attr(bytes));
    func->setAttr(kKorthikantiBytesAttr, attr(paper));
    func->setAttr(kKorthikantiCoreBytesAttr, attr(core));
  }

  func::FuncOp func;
  const RecomputeChoice &choice;
  bool regather = false;
  int64_t layers = 0;
  llvm::DenseSet<Operation *> forward;
  llvm::DenseMap<Operation *, int64_t> layer;
  llvm::DenseSet<Value> activations;
  SmallVector<Operation *> backward;
  llvm::DenseSet<Value> readByBackward; // Before the rewrite.
  /// Each candidate's index in its layer, how many each layer has, and
  /// all of them in program order.
  llvm::DenseMap<Value, int64_t> candidateIndex;
  SmallVector<int64_t> candidateCount;
  SmallVector<Value> candidates;
  IRMapping clones;
  int64_t cloned = 0;
  double flops = 0;               // What the clones compute.
  SmallVector<double> layerFlops; // The same by the clone's layer.
};
} // namespace

std::string RecomputeChoice::str() const {
  if (budgetGiB) {
    char text[32];
    std::snprintf(text, sizeof(text), "budget=%g", *budgetGiB);
    return text;
  }
  if (layers.empty())
    return policyName(uniform);
  std::vector<std::string> names;
  for (auto [l, p] : llvm::enumerate(layers)) {
    // Recomputing no candidate is `none`.
    if (p == RecomputePolicy::Tensors && tensorsOf(l) == 0)
      names.push_back(policyName(RecomputePolicy::None));
    else if (p == RecomputePolicy::Tensors)
      names.push_back(tensorsName(tensorsOf(l)));
    else
      names.push_back(policyName(p));
  }
  return printLayerRuns(names);
}

/// The mask of a `tensors:0+3` layer name, or nothing if it is not one.
static std::optional<uint64_t> parseTensorsName(StringRef name) {
  if (!name.consume_front("tensors:") || name.empty())
    return std::nullopt;
  uint64_t mask = 0;
  SmallVector<StringRef> items;
  name.split(items, '+');
  for (StringRef item : items) {
    int64_t i = 0;
    if (item.getAsInteger(10, i) || i < 0 || i >= kMaxLayerCandidates)
      return std::nullopt;
    mask |= uint64_t(1) << i;
  }
  return mask;
}

bool RecomputeCandidates::masksHold() const {
  return llvm::all_of(heavy, [](const std::vector<bool> &layer) {
    return static_cast<int64_t>(layer.size()) <= kMaxLayerCandidates;
  });
}

uint64_t RecomputeCandidates::all(int64_t l) const {
  return everyCandidate(static_cast<int64_t>(heavy[l].size()));
}

uint64_t RecomputeCandidates::light(int64_t l) const {
  uint64_t mask = 0;
  for (auto [i, h] : llvm::enumerate(heavy[l]))
    if (!h)
      mask |= uint64_t(1) << i;
  return mask;
}

int64_t RecomputeCandidates::count() const {
  int64_t n = 0;
  for (const std::vector<bool> &layer : heavy)
    n += static_cast<int64_t>(layer.size());
  return n;
}

RecomputeChoice RecomputeCandidates::fromMask(uint64_t mask) const {
  assert(masksHold() && "a layer's candidates exceed a mask");
  RecomputeChoice out;
  out.layers.assign(layers, RecomputePolicy::Tensors);
  out.tensors.assign(layers, 0);
  int64_t at = 0;
  for (int64_t l = 0; l < layers; ++l)
    for (size_t i = 0; i < heavy[l].size(); ++i, ++at)
      if (at < 64 && ((mask >> at) & 1))
        out.tensors[l] |= uint64_t(1) << i;
  return out;
}

RecomputeChoice
RecomputeCandidates::asTensors(const RecomputeChoice &choice) const {
  assert(masksHold() && "a layer's candidates exceed a mask");
  RecomputeChoice out;
  out.regather = choice.regather;
  out.layers.assign(layers, RecomputePolicy::Tensors);
  out.tensors.assign(layers, 0);
  for (int64_t l = 0; l < layers; ++l) {
    switch (choice.of(l)) {
    case RecomputePolicy::None:
      break;
    case RecomputePolicy::Full:
      out.tensors[l] = all(l);
      break;
    case RecomputePolicy::Selective:
      out.tensors[l] = light(l);
      break;
    case RecomputePolicy::Tensors:
      out.tensors[l] = choice.tensorsOf(l);
      break;
    }
  }
  return out;
}

RecomputeChoice
RecomputeCandidates::named(const RecomputeChoice &tensors) const {
  assert(masksHold() && "a layer's candidates exceed a mask");
  RecomputeChoice out = tensors;
  for (int64_t l = 0; l < layers; ++l) {
    if (out.of(l) != RecomputePolicy::Tensors)
      continue;
    uint64_t mask = out.tensorsOf(l);
    if (mask == 0)
      out.layers[l] = RecomputePolicy::None;
    else if (mask == all(l))
      out.layers[l] = RecomputePolicy::Full;
    else if (mask == light(l))
      out.layers[l] = RecomputePolicy::Selective;
    else
      continue;
    out.tensors[l] = 0;
  }
  return out;
}

llvm::Expected<RecomputeChoice> weft::parseRecompute(StringRef text) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(
        "recompute '" + text.str() + "': " + why.str() +
        " (expected none, full, selective, tensors:i+j (which of a layer's "
        "candidates), a policy per layer such as full*2,selective*30, or "
        "budget=<GiB>)");
  };
  auto policyNamed = [](StringRef name) {
    return llvm::StringSwitch<std::optional<RecomputePolicy>>(name)
        .Case("none", RecomputePolicy::None)
        .Case("full", RecomputePolicy::Full)
        .Case("selective", RecomputePolicy::Selective)
        .Default(std::nullopt);
  };
  RecomputeChoice choice;
  if (text.consume_front("budget=")) {
    double gib = 0;
    if (text.getAsDouble(gib) || !std::isfinite(gib) || gib <= 0 ||
        gib > 1048576)
      return fail("the budget must be a number of GiB above 0 and at most "
                  "1048576");
    choice.budgetGiB = gib;
    return choice;
  }
  if (std::optional<RecomputePolicy> one = policyNamed(text)) {
    choice.uniform = *one;
    return choice;
  }
  llvm::Expected<std::vector<std::string>> names = parseLayerRuns(
      text,
      [&](StringRef name) {
        return policyNamed(name) || parseTensorsName(name);
      },
      "policy");
  if (!names)
    return fail(llvm::toString(names.takeError()));
  for (const std::string &name : *names) {
    std::optional<uint64_t> mask = parseTensorsName(name);
    choice.layers.push_back(mask ? RecomputePolicy::Tensors
                                 : *policyNamed(name));
    choice.tensors.push_back(mask.value_or(0));
  }
  return choice;
}

// Only autodiff's gradient function has a backward: elsewhere (the
// evaluation forward) an op the loss does not need is no gradient.
bool weft::hasBackward(func::FuncOp func) {
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, "weft.grad"))
      return true;
  return false;
}

FailureOr<int64_t> weft::recompute(func::FuncOp func,
                                   const RecomputeChoice &choice) {
  if (!hasBackward(func))
    return 0;
  if (choice.budgetGiB)
    return func.emitError("weft-recompute: a budget is resolved by the "
                          "compiler (weftc compile --recompute budget=...), "
                          "which picks a policy per layer; pass that"),
           failure();
  return Recomputer(func, choice).run();
}

FailureOr<RecomputeCandidates> weft::recomputeCandidates(func::FuncOp func) {
  if (!hasBackward(func))
    return func.emitError("weft-recompute: the function has no backward"),
           failure();
  RecomputeChoice none;
  return Recomputer(func, none).candidatesOf();
}

namespace {
struct RecomputePass : weft::impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;
  void runOnOperation() override {
    llvm::Expected<RecomputeChoice> parsed = parseRecompute(policy);
    if (!parsed) {
      getOperation().emitError("weft-recompute: ")
          << llvm::toString(parsed.takeError());
      return signalPassFailure();
    }
    parsed->regather = regather;
    if (failed(recompute(getOperation(), *parsed)))
      signalPassFailure();
  }
};
} // namespace
