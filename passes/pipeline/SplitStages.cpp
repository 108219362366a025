//===- SplitStages.cpp - one program per pipeline stage and phase ---------===//
//
// After weft-accumulate-gradients and the optimizer, every op of
// @accumulate and @step carries the stage that runs it (weft-pipeline-
// assign-stages; autodiff puts each gradient op on its forward op's stage).
// This cuts them into what a pipeline rank runs:
//
//   stage<s>.forward   the ops the micro-batch's loss needs, on stage s;
//   stage<s>.backward  the rest of stage s's ops: the gradients and their
//                      accumulation; with zb-h1 only B, the input
//                      gradients the previous stage waits for and what
//                      they need;
//   stage<s>.wgrad     with zb-h1, W: the rest (the weight gradients and
//                      their accumulation), taking what it needs from B's
//                      stash (B passes on what W needs of the forward's);
//   stage<s>.backward_last (or .wgrad_last, the one that adds to the
//                      stage's accumulators) with ZeRO-0/1 data
//                      parallelism: cut from @accumulate_last, it
//                      all-reduces each accumulator over dp as its last
//                      gradient is added; the table runs it for the last
//                      micro-batch. It takes the same stashes (ordered by
//                      where their values are made, so both cuts agree);
//   rank<r>.step       the optimizer step of the stages rank r holds;
//   rank<r>.gather     with weft-gather-per-step, the ZeRO-3 gathers of
//                      rank r's stages, run once before its micro-batches.
//
// A value one program makes and another needs crosses between them as a
// send and a receive when the programs are on different stages (forward
// values move to later stages, gradients to earlier ones), and as a stash
// when they are the same stage's forward and backward: the forward returns
// it ("stash.<i>") and the backward takes it, in the same order, so the
// runtime only hands over what the forward of a micro-batch returned to
// that micro-batch's backward. Ops that read no stage's value (constants,
// shapes of the inputs) are copied into each program that uses them, and
// parameters into each program of their own stage.
//
// The optimizer step needs no transfers: its only values that combine
// stages are scalars summed over `pp` (the squared gradient norm; the
// loss, summed here from the last stage), and each rank reads zeros for
// the other ranks' stages before that sum.
//
// The schedule table (GPipe, 1F1B, interleaved) is built and checked
// (passes/pipeline/Schedule.h) and left on the module as `weft.pipeline`,
// which weft-lower-to-sched writes as the `train` schedule.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"

#include "passes/pipeline/Schedule.h"

#include "dialects/weft/IR/WeftEmitter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"

#include <map>

namespace weft {
#define GEN_PASS_DEF_SPLITSTAGES
#include "passes/pipeline/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
constexpr int64_t kFree = -1; // Reads no stage's value: copied where used.
// In the step: a rank's share of a sum over stages (before the sum over
// pp), and values every rank computes alike (after it).
constexpr int64_t kPartial = -2;
constexpr int64_t kReplicated = -3;

/// With zb-h1 the backward is two programs: B, the input gradients the
/// previous stage waits for (and what they need), and W, the rest (the
/// weight gradients and their accumulation), which nobody waits for.
enum Phase { Forward = 0, Backward = 1, WeightGrad = 2 };

struct Layout {
  int64_t ranks = 1, chunks = 1;
  int64_t stages() const { return ranks * chunks; }
  int64_t rank(int64_t stage) const { return stage % ranks; }
  int64_t chunk(int64_t stage) const { return stage / ranks; }
  /// The mesh offset along pp from stage `from`'s rank to stage `to`'s.
  int64_t offset(int64_t from, int64_t to) const {
    return rank(to) - rank(from);
  }
};

std::string gatherProgramName(int64_t rank) {
  return "rank" + std::to_string(rank) + "." + kGatherFunc;
}

std::string programName(int64_t stage, Phase phase, bool last = false) {
  const char *suffix[] = {".forward", ".backward", ".wgrad"};
  return "stage" + std::to_string(stage) + suffix[phase] +
         (last ? kLastSuffix : "");
}

/// The program phase of a schedule table's action.
Phase phaseOf(pipeline::Phase phase) {
  return phase == pipeline::Phase::Forward    ? Forward
         : phase == pipeline::Phase::Backward ? Backward
                                              : WeightGrad;
}

const char *phaseText(Phase phase) {
  const char *text[] = {"forward", "backward", "weight gradient"};
  return text[phase];
}

int64_t stageAttr(Operation *op) {
  auto s = op->getAttrOfType<IntegerAttr>(kStageAttr);
  return s ? s.getInt() : kFree;
}

/// The stage of each op of `body`: its weft.stage; an assign's, its
/// parameter's; none (kFree) otherwise. With `strict`, an op without a
/// stage that reads a staged value is an error: a pass before lost it.
FailureOr<llvm::DenseMap<Operation *, int64_t>>
stagesOf(Block &body, StringRef pass, bool strict) {
  llvm::StringMap<ParamOp> params;
  for (ParamOp p : body.getOps<ParamOp>())
    params[p.getName()] = p;
  llvm::DenseMap<Operation *, int64_t> stage;
  for (Operation &op : body.without_terminator()) {
    int64_t s = stageAttr(&op);
    if (auto assign = dyn_cast<AssignOp>(op))
      s = stageAttr(params.lookup(assign.getName()));
    if (strict && s == kFree && !isa<AssignOp>(op))
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp();
            def && stage.lookup(def) != kFree)
          return op.emitError(pass)
                     << ": '" << op.getName()
                     << "' has no weft.stage but reads a value of stage "
                     << stage.lookup(def) << " (from '" << def->getName()
                     << "')",
                 failure();
    stage[&op] = s;
  }
  return stage;
}

//===----------------------------------------------------------------------===//
// @accumulate: forward and backward programs per stage
//===----------------------------------------------------------------------===//

class AccumulateSplit {
public:
  /// With `last`, `acc` is @accumulate_last: only the backward (and W)
  /// programs that reduce an accumulator are built, as `<name>_last`, each
  /// taking and handing on what @accumulate's program of its stage and
  /// phase does (the same forward ops, cut the same way).
  AccumulateSplit(func::FuncOp acc, const Layout &layout,
                  FlatSymbolRefAttr mesh, bool splitBackward, bool last = false)
      : acc(acc), layout(layout), mesh(mesh), splitBackward(splitBackward),
        last(last), b(acc) {}

  /// The programs built.
  const llvm::StringSet<> &built() const { return names; }

  LogicalResult run() {
    Block &body = acc.getBody().front();
    FailureOr<llvm::DenseMap<Operation *, int64_t>> stages =
        stagesOf(body, "weft-pipeline-split", /*strict=*/true);
    if (failed(stages))
      return failure();
    stage = std::move(*stages);
    for (auto assign : body.getOps<AssignOp>())
      assigned.insert(assign.getName());
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // The forward: what the micro-batch's loss needs.
    SmallVector<Operation *> work;
    if (Operation *def = ret.getOperand(0).getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!forward.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          work.push_back(def);
    }
    if (splitBackward)
      findInputGradients(body);
    for (Operation &op : body.without_terminator()) {
      int64_t s = stage.lookup(&op);
      if (s == kFree || isa<ParamOp>(op))
        continue;
      if (s < 0 || s >= layout.stages())
        return op.emitError("weft-pipeline-split: stage ")
               << s << " is outside the " << layout.stages()
               << " stages of the pipeline";
      Phase phase = phaseOf(&op);
      programs[{s, phase}].push_back(&op);
      for (Value v : op.getOperands())
        if (failed(route(v, s, phase, &op)))
          return failure();
    }
    return build();
  }

private:
  using Key = std::pair<int64_t, Phase>;
  struct Transfer {
    Value value;
    Key from, to;
    int64_t tag;
  };

  /// The phase of a staged op: forward if the loss needs it; with the
  /// backward split, B if its stage's input gradients need it, else W.
  Phase phaseOf(Operation *op) {
    if (forward.contains(op) || isa<ParamOp>(op))
      return Forward;
    return splitBackward && !inputGradient.contains(op) ? WeightGrad : Backward;
  }

  /// B: the backward ops whose results another stage reads (the gradients
  /// sent to the previous stage) and, on their own stage, what those read.
  void findInputGradients(Block &body) {
    SmallVector<Operation *> work;
    for (Operation &op : body.without_terminator()) {
      int64_t s = stage.lookup(&op);
      if (s == kFree || forward.contains(&op) || isa<ParamOp>(op))
        continue;
      if (llvm::any_of(op.getUsers(), [&](Operation *user) {
            int64_t t = stage.lookup(user);
            return t != kFree && t != s;
          }))
        work.push_back(&op);
    }
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!inputGradient.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && stage.lookup(def) == stage.lookup(op) &&
            !forward.contains(def) && !isa<ParamOp>(def))
          work.push_back(def);
    }
  }

  /// Where `v` is made: its stage and phase, or kFree for values every
  /// program can make itself (block arguments, unstaged ops). A parameter
  /// is its stage's forward value, which that stage's backward also reads
  /// without a stash.
  std::pair<int64_t, Phase> home(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || stage.lookup(def) == kFree)
      return {kFree, Forward};
    return {stage.lookup(def), phaseOf(def)};
  }

  /// Records how program (s, phase) gets operand `v` of `user`. A value
  /// W needs from the forward or from another stage reaches it through B's
  /// stash, as B is what runs between them.
  LogicalResult route(Value v, int64_t s, Phase phase, Operation *user) {
    auto [from, fromPhase] = home(v);
    if (from == kFree ||
        (from == s && (fromPhase == phase || fromStageParams(v, s))))
      return success();
    if (from == s && fromPhase < phase) { // A later phase of the stage.
      if (fromPhase == Forward)
        stash(s, v);
      if (phase == WeightGrad)
        stashForW(s, v);
      return success();
    }
    if (from != s && layout.rank(from) == layout.rank(s))
      return user->emitError("weft-pipeline-split: this op on stage ")
             << s << " reads a value of stage " << from
             << ", which is on the same rank; only neighbouring ranks' "
                "values can be passed";
    if (fromPhase == Forward && from < s) {
      transfer(v, {from, Forward}, {s, Forward});
      if (phase != Forward)
        stash(s, v);
      if (phase == WeightGrad)
        stashForW(s, v);
      return success();
    }
    if (fromPhase == Backward && phase != Forward && from > s) {
      transfer(v, {from, Backward}, {s, Backward});
      if (phase == WeightGrad)
        stashForW(s, v);
      return success();
    }
    return user->emitError("weft-pipeline-split: this op runs on stage ")
           << s << " (" << phaseText(phase) << ") but reads a "
           << phaseText(fromPhase) << " value of stage " << from
           << ", which the pipeline cannot pass that way";
  }

  /// Whether `v` is stage `s`'s parameters, or them cast, reshaped,
  /// transposed, broadcast, sliced (with constants) or copied into a
  /// data-parallel region (copy_to_group): what the stage's later
  /// programs make again from its parameters instead of taking it in the
  /// stash. Stashed, a layer's compute-type weights would be held once per
  /// micro-batch in flight.
  bool fromStageParams(Value v, int64_t s, bool direct = true) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    // A parameter itself is its stage's in every program. Made into
    // something else, not one the step assigns (an accumulator): its value
    // could differ between the forward and a later backward.
    if (auto param = dyn_cast<ParamOp>(def))
      return stage.lookup(def) == s &&
             (direct || !assigned.contains(param.getName()));
    if (isa<ConstantOp>(def))
      return stage.lookup(def) == s || stage.lookup(def) == kFree;
    if (!isa<CastOp, ReshapeOp, TransposeOp, BroadcastOp, SliceOp,
             CopyToGroupOp>(def) ||
        stage.lookup(def) != s)
      return false;
    return llvm::all_of(def->getOperands(), [&](Value operand) {
      return fromStageParams(operand, s, /*direct=*/false);
    });
  }

  void stash(int64_t s, Value v) { stashes[s].insert(v); }
  void stashForW(int64_t s, Value v) { weightStashes[s].insert(v); }

  void transfer(Value v, Key from, Key to) {
    for (const Transfer &t : transfers)
      if (t.value == v && t.from == from && t.to == to)
        return;
    transfers.push_back({v, from, to, static_cast<int64_t>(transfers.size())});
  }

  /// `v` in the program being built: mapped already, or a copy of its
  /// unstaged definition (or its stage's parameter), made now.
  Value materialize(Value v, IRMapping &map, int64_t s) {
    if (Value m = map.lookupOrNull(v))
      return m;
    Operation *def = v.getDefiningOp();
    int64_t from = def ? stage.lookup(def) : kFree;
    if (!def || (from != kFree && !(from == s && fromStageParams(v, s)))) {
      // route() missed a value: a bug here, not in the input.
      if (!broken)
        (def ? def->emitError() : acc.emitError())
            << "weft-pipeline-split: stage " << s
            << " needs this value but it was not routed to it";
      broken = true;
      return v;
    }
    for (Value operand : def->getOperands())
      materialize(operand, map, s);
    b.clone(*def, map);
    return map.lookup(v);
  }

  /// Each stage's stashes in the order their values are made (route()
  /// finds them in the order of their readers): @accumulate_last's
  /// programs, whose readers differ in order, take the same stashes.
  void orderStashes(Block &body) {
    llvm::DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = static_cast<int64_t>(i);
    auto where = [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return std::pair<int64_t, int64_t>{-1, arg.getArgNumber()};
      return std::pair<int64_t, int64_t>{position.lookup(v.getDefiningOp()),
                                         cast<OpResult>(v).getResultNumber()};
    };
    for (auto *sets : {&stashes, &weightStashes})
      for (auto &[s, values] : *sets) {
        SmallVector<Value> sorted(values.begin(), values.end());
        llvm::stable_sort(
            sorted, [&](Value x, Value y) { return where(x) < where(y); });
        values.clear();
        values.insert(sorted.begin(), sorted.end());
      }
  }

  LogicalResult build() {
    Block &body = acc.getBody().front();
    MLIRContext *ctx = acc.getContext();
    orderStashes(body);
    SmallVector<Phase, 3> phases = {Forward, Backward};
    if (splitBackward)
      phases.push_back(WeightGrad);
    for (int64_t s = 0; s < layout.stages(); ++s) {
      for (Phase phase : phases) {
        Key key{s, phase};
        const SmallVector<Operation *> &ops = programs[key];
        if (last && (phase == Forward || llvm::none_of(ops, [](Operation *op) {
                       return op->hasAttr(kLastReductionAttr);
                     })))
          continue;
        // Inputs: the step's (tokens, labels) when the program reads them,
        // itself or through unstaged ops it copies in, then the backward's
        // stash.
        bool readsInputs = readsStepInputs(ops, s, phase);
        SmallVector<Type> inputs;
        SmallVector<DictionaryAttr> inputAttrs;
        if (readsInputs)
          for (BlockArgument arg : body.getArguments()) {
            inputs.push_back(arg.getType());
            inputAttrs.push_back(acc.getArgAttrDict(arg.getArgNumber()));
          }
        // What the program takes from its stage's previous phase, and
        // what it hands to the next.
        const llvm::SetVector<Value> &stashed =
            phase == WeightGrad ? weightStashes[s] : stashes[s];
        const llvm::SetVector<Value> &handed =
            phase == Forward ? stashes[s] : weightStashes[s];
        if (phase != Forward)
          for (auto [i, v] : llvm::enumerate(stashed)) {
            inputs.push_back(v.getType());
            inputAttrs.push_back(DictionaryAttr::get(
                ctx, {b.getNamedAttr(
                         "weft.input",
                         b.getStringAttr("stash." + std::to_string(i)))}));
          }
        b.setInsertionPoint(acc);
        std::string name = programName(s, phase, last);
        names.insert(name);
        auto f = func::FuncOp::create(b, acc.getLoc(), name,
                                      b.getFunctionType(inputs, {}));
        f->setAttr(kStageAttr, b.getI64IntegerAttr(s));
        // What weft-recompute recorded of the whole model (its policy, the
        // bytes each layer keeps, what its clones compute) goes with every
        // stage's backward, which runs those clones: the report and the
        // budget search read it there, as from @accumulate without pp.
        if (phase == Backward)
          for (const char *mark :
               {kRecomputeAttr, kRecomputeFlopsAttr, kRecomputeLayerFlopsAttr,
                kActivationBytesAttr})
            if (Attribute value = acc->getAttr(mark))
              f->setAttr(mark, value);
        Block *entry = f.addEntryBlock();
        f.setAllArgAttrs(inputAttrs);
        b.setInsertionPointToStart(entry);
        IRMapping map;
        unsigned next = 0;
        if (readsInputs)
          for (BlockArgument arg : body.getArguments())
            map.map(arg, entry->getArgument(next++));
        if (phase != Forward)
          for (Value v : stashed)
            map.map(v, entry->getArgument(next++));
        // Receives first, in tag order (the order their sends are posted).
        for (const Transfer &t : transfers)
          if (t.to == key)
            map.map(t.value,
                    RecvOp::create(
                        b, acc.getLoc(), t.value.getType(), mesh,
                        b.getStringAttr(kPipelineAxis),
                        b.getI64IntegerAttr(layout.offset(s, t.from.first)),
                        b.getI64IntegerAttr(t.tag))
                        .getResult());
        for (Operation *op : ops) {
          for (Value v : op->getOperands())
            materialize(v, map, s);
          b.clone(*op, map);
        }
        for (const Transfer &t : transfers)
          if (t.from == key)
            SendOp::create(b, acc.getLoc(), materialize(t.value, map, s), mesh,
                           b.getStringAttr(kPipelineAxis),
                           b.getI64IntegerAttr(layout.offset(s, t.to.first)),
                           b.getI64IntegerAttr(t.tag));
        SmallVector<Value> results;
        if (phase != WeightGrad)
          for (Value v : handed)
            results.push_back(materialize(v, map, s));
        func::ReturnOp::create(b, acc.getLoc(), results);
        f.setFunctionType(b.getFunctionType(entry->getArgumentTypes(),
                                            ValueRange(results).getTypes()));
        for (unsigned i = 0; i < results.size(); ++i)
          f.setResultAttr(i, "weft.output",
                          b.getStringAttr("stash." + std::to_string(i)));
        // Copies of parameters and unstaged ops nothing uses any more.
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
          if (isOpTriviallyDead(&op))
            op.erase();
        countRuns(f, programName(s, phase));
      }
    }
    if (broken)
      return failure();
    acc.erase();
    return success();
  }

  /// Dropout in @accumulate reads micro-batch k from a counter that
  /// @accumulate counts up (weft-accumulate-gradients). A stage's forward,
  /// backward and W each run the step's micro-batches once, in order
  /// (splitStages checks the table), but interleaved with each other, so
  /// each program that drops counts its own runs: its own counter, moved
  /// on at its end and wrapped at M, which needs no reset.
  /// `name` is the program's without the last micro-batch's suffix: the
  /// copy counts on the same counter.
  void countRuns(func::FuncOp f, StringRef name) {
    Block &entry = f.getBody().front();
    ParamOp counter;
    for (ParamOp p : entry.getOps<ParamOp>())
      if (p.getName() == kDropoutMicrobatchParam)
        counter = p;
    if (!counter)
      return;
    int64_t microbatches = 1;
    for (Operation *user : counter->getUsers())
      if (auto m = user->getAttrOfType<IntegerAttr>("microbatches"))
        microbatches = m.getInt();
    counter.setNameAttr(
        b.getStringAttr(Twine(kDropoutMicrobatchParam) + "." + name));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(entry.getTerminator());
    weft::detail::Emitter e{b, f.getLoc()};
    auto scalar = cast<RankedTensorType>(counter.getType());
    Value next = e.add(counter.getResult(), e.splat(scalar, 1.0));
    Value wraps = GeOp::create(b, f.getLoc(), next,
                               e.splat(scalar, double(microbatches)));
    AssignOp::create(
        b, f.getLoc(), counter.getNameAttr(),
        SelectOp::create(b, f.getLoc(), wraps, e.splat(scalar, 0.0), next));
  }

  /// Whether program (s, phase) reads the step's inputs: its ops, what it
  /// sends or stashes, or the unstaged ops it copies in for them.
  bool readsStepInputs(ArrayRef<Operation *> ops, int64_t s, Phase phase) {
    llvm::DenseSet<Operation *> seen;
    SmallVector<Value> work;
    for (Operation *op : ops)
      llvm::append_range(work, op->getOperands());
    for (const Transfer &t : transfers)
      if (t.from == Key{s, phase})
        work.push_back(t.value);
    if (phase == Forward)
      llvm::append_range(work, stashes[s]);
    if (phase == Backward)
      llvm::append_range(work, weightStashes[s]);
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def)
        return true;
      if (stage.lookup(def) != kFree || !seen.insert(def).second)
        continue;
      llvm::append_range(work, def->getOperands());
    }
    return false;
  }

  func::FuncOp acc;
  Layout layout;
  FlatSymbolRefAttr mesh;
  bool splitBackward, last;
  OpBuilder b;
  llvm::StringSet<> names;
  llvm::DenseMap<Operation *, int64_t> stage;
  llvm::DenseSet<Operation *> forward, inputGradient;
  /// Parameters the step assigns (accumulators, counters).
  llvm::StringSet<> assigned;
  std::map<Key, SmallVector<Operation *>> programs;
  /// Per stage: forward values its backward (B) takes; with the split,
  /// what B hands W (its own values and what it passes on).
  std::map<int64_t, llvm::SetVector<Value>> stashes, weightStashes;
  std::vector<Transfer> transfers;
  bool broken = false;
};

//===----------------------------------------------------------------------===//
// @step: one optimizer program per rank
//===----------------------------------------------------------------------===//

bool sumsOverPipeline(Operation *op) {
  auto ar = dyn_cast<AllReduceOp>(op);
  return ar && llvm::is_contained(ar.getAxes().getAsValueRange<StringAttr>(),
                                  kPipelineAxis);
}

LogicalResult splitStep(func::FuncOp step, const Layout &layout,
                        FlatSymbolRefAttr mesh) {
  Block &body = step.getBody().front();
  // @accumulate's micro-batch counter is each program's own now, wrapping
  // by itself (AccumulateSplit::countRuns): nothing to reset.
  for (AssignOp a : llvm::make_early_inc_range(body.getOps<AssignOp>()))
    if (a.getName() == kDropoutMicrobatchParam)
      a.erase();
  for (ParamOp p : llvm::make_early_inc_range(body.getOps<ParamOp>()))
    if (p.getName() == kDropoutMicrobatchParam && p->use_empty())
      p.erase();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(ret);
  // The loss is the last stage's: sum it over pp so every rank reports it.
  {
    auto sum = ReduceKindAttr::get(b.getContext(), ReduceKind::Sum);
    Value loss = ret.getOperand(0);
    Value total = AllReduceOp::create(b, ret.getLoc(), sum, ValueRange{loss},
                                      mesh, b.getStrArrayAttr({kPipelineAxis}))
                      .getResult(0);
    ret.setOperand(0, total);
  }
  FailureOr<llvm::DenseMap<Operation *, int64_t>> staged =
      stagesOf(body, "weft-pipeline-split", /*strict=*/false);
  if (failed(staged))
    return failure();
  // Owners: a stage; kPartial for ops combining stages' values or a
  // partial sum (each rank computes its share); kReplicated for the sums
  // over pp and what only they and unstaged values make; kFree. Ops the
  // optimizer built carry no stage: they take their operands'.
  llvm::DenseMap<Operation *, int64_t> owner;
  for (Operation &op : body.without_terminator()) {
    int64_t s = staged->lookup(&op);
    llvm::SmallSet<int64_t, 2> seen;
    bool partial = false, replicated = false;
    for (Value v : op.getOperands()) {
      Operation *def = v.getDefiningOp();
      int64_t o = def ? owner.lookup(def) : kFree;
      if (o >= 0)
        seen.insert(o);
      partial |= o == kPartial;
      replicated |= o == kReplicated;
    }
    if (sumsOverPipeline(&op))
      s = kReplicated;
    else if (s == kFree && !isa<AssignOp>(op))
      s = partial || seen.size() > 1 ? kPartial
          : seen.size() == 1         ? *seen.begin()
          : replicated               ? kReplicated
                                     : kFree;
    owner[&op] = s;
  }
  // Every rank keeps a copy of the loss scale, seeded on the last stage
  // and unscaled on each: its update may read only what every rank holds
  // alike (sums over pp, unstaged values), or the copies would drift.
  for (auto assign : body.getOps<AssignOp>()) {
    if (assign.getName() != kLossScaleParam)
      continue;
    Operation *def = assign.getValue().getDefiningOp();
    int64_t o = def ? owner.lookup(def) : kFree;
    if (o != kReplicated && o != kFree)
      return assign.emitError("weft-pipeline-split: the loss scale's update "
                              "reads ")
             << (o == kPartial ? "a sum of stages' shares not summed over pp"
                               : "one stage's values")
             << "; every pipeline rank must update its copy alike";
  }
  for (int64_t r = 0; r < layout.ranks; ++r) {
    b.setInsertionPoint(step);
    auto copy = cast<func::FuncOp>(b.clone(*step));
    copy.setSymName("rank" + std::to_string(r) + ".step");
    // Pair the copy's ops with the original's owners.
    llvm::DenseMap<Operation *, int64_t> own;
    for (auto [orig, cloned] :
         llvm::zip(body.without_terminator(),
                   copy.getBody().front().without_terminator()))
      own[&cloned] = owner.lookup(&orig);
    auto mine = [&](int64_t s) { return s < 0 || layout.rank(s) == r; };
    // The zeros made below are kFree.
    auto ownerOf = [&](Operation *op) {
      auto it = own.find(op);
      return it == own.end() ? kFree : it->second;
    };
    Block &cbody = copy.getBody().front();
    for (Operation &op : cbody.without_terminator()) {
      // Each rank adds its own stages' share to a sum over pp.
      if (ownerOf(&op) != kPartial && !sumsOverPipeline(&op))
        continue;
      for (OpOperand &use : op.getOpOperands()) {
        Operation *def = use.get().getDefiningOp();
        if (!def || mine(ownerOf(def)))
          continue;
        auto type = cast<RankedTensorType>(use.get().getType());
        if (type.getRank() != 0)
          return op.emitError("weft-pipeline-split: the optimizer step "
                              "combines a ")
                 << type << " of stage " << ownerOf(def)
                 << " with other stages' values; only scalars summed over "
                    "pp may";
        OpBuilder zb(&op);
        weft::detail::Emitter e{zb, op.getLoc()};
        use.set(e.splat(type, 0.0));
      }
    }
    // Users before their definitions; a vector, as erasing invalidates a
    // reversed range's base.
    SmallVector<Operation *> order;
    for (Operation &op : cbody.without_terminator())
      order.push_back(&op);
    for (Operation *opp : llvm::reverse(order)) {
      Operation &op = *opp;
      if (!mine(ownerOf(&op))) {
        if (!op.use_empty())
          return op.emitError("weft-pipeline-split: '")
                 << op.getName() << "' of stage " << ownerOf(&op)
                 << " is used on rank " << r << " by '"
                 << (*op.getUsers().begin())->getName() << "'";
        op.erase();
      }
    }
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(cbody)))
      if (isOpTriviallyDead(&op))
        op.erase();
  }
  step.erase();
  return success();
}
/// weft-gather-per-step's @gather as one program per rank, `rank<r>.gather`,
/// gathering its own stages' parameters; returns the ranks that have one (a
/// rank whose stages gather nothing has none).
FailureOr<llvm::SmallSet<int64_t, 8>> splitGather(func::FuncOp gather,
                                                  const Layout &layout) {
  llvm::SmallSet<int64_t, 8> ranks;
  FailureOr<llvm::DenseMap<Operation *, int64_t>> staged = stagesOf(
      gather.getBody().front(), "weft-pipeline-split", /*strict=*/true);
  if (failed(staged))
    return failure();
  for (int64_t r = 0; r < layout.ranks; ++r) {
    OpBuilder b(gather);
    auto copy = cast<func::FuncOp>(b.clone(*gather));
    copy.setSymName(gatherProgramName(r));
    Block &cbody = copy.getBody().front();
    SmallVector<Operation *> order;
    for (auto [orig, cloned] :
         llvm::zip(gather.getBody().front().without_terminator(),
                   cbody.without_terminator()))
      if (int64_t s = staged->lookup(&orig); s >= 0 && layout.rank(s) != r)
        order.push_back(&cloned);
    for (Operation *op : llvm::reverse(order))
      op->erase();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(cbody)))
      if (isOpTriviallyDead(&op))
        op.erase();
    if (cbody.getOps<AssignOp>().empty())
      copy.erase();
    else
      ranks.insert(r);
  }
  gather.erase();
  return ranks;
}
} // namespace

LogicalResult weft::splitStages(ModuleOp module, llvm::StringRef scheduleName,
                                int64_t chunks) {
  auto fail = [&](const Twine &message) {
    return module.emitError("weft-pipeline-split: ") << message;
  };
  auto acc = module.lookupSymbol<func::FuncOp>(kAccumulateFunc);
  auto step = module.lookupSymbol<func::FuncOp>("step");
  if (!acc || !step)
    return fail("needs @accumulate and @step (run weft-accumulate-gradients "
                "and the optimizer first)");
  MeshOp mesh;
  for (MeshOp m : module.getOps<MeshOp>())
    mesh = m;
  int64_t ranks = mesh ? mesh.axisSize(kPipelineAxis) : 0;
  if (ranks < 2)
    return fail("the module's mesh has no pp axis of 2 or more ranks");
  Layout layout{ranks, chunks};
  auto stagesAttr = acc->getAttrOfType<IntegerAttr>(kStagesAttr);
  if (!stagesAttr || stagesAttr.getInt() != layout.stages())
    return fail("@accumulate is cut into ")
           << (stagesAttr ? stagesAttr.getInt() : 0)
           << " stages (weft-pipeline-assign-stages), but pp=" << ranks
           << " with " << chunks << " virtual stages per rank needs "
           << layout.stages();
  auto microbatches = acc->getAttrOfType<IntegerAttr>(kMicrobatchesAttr);
  int64_t m = microbatches ? microbatches.getInt() : 1;
  llvm::Expected<pipeline::ScheduleKind> kind =
      pipeline::parseScheduleKind(scheduleName);
  if (!kind)
    return fail(llvm::toString(kind.takeError()));
  llvm::Expected<pipeline::ScheduleTable> table =
      pipeline::buildSchedule(*kind, ranks, m, chunks);
  if (!table)
    return fail(llvm::toString(table.takeError()));
  if (llvm::Error e = pipeline::checkSchedule(*table))
    return fail(llvm::toString(std::move(e)));
  // Dropout counts each program's runs as its micro-batch (countRuns),
  // and the last micro-batch's copies reduce what every run added: both
  // need every stage's programs to run the micro-batches in order.
  bool drops =
      llvm::any_of(acc.getBody().front().getOps<ParamOp>(), [](ParamOp p) {
        return p.getName() == kDropoutMicrobatchParam;
      });
  auto accLast = module.lookupSymbol<func::FuncOp>(kAccumulateLastFunc);
  if (drops || accLast)
    for (int64_t r = 0; r < ranks; ++r) {
      std::map<std::pair<int64_t, int>, int64_t> next;
      for (const pipeline::Action &a : table->actions[r]) {
        int64_t &want = next[{a.chunk, static_cast<int>(a.phase)}];
        if (a.microbatch != want++)
          return fail(
              "schedule '" + scheduleName + "' runs micro-batch " +
              Twine(a.microbatch) + " of " +
              programName(table->stageOf(r, a.chunk), phaseOf(a.phase)) +
              " out of order; " +
              (drops ? "dropout counts each program's runs as its "
                       "micro-batch"
                     : "the last micro-batch's copy reduces the "
                       "gradients"));
      }
    }

  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  if (failed(
          AccumulateSplit(acc, layout, meshRef, table->splitBackward).run()) ||
      failed(splitStep(step, layout, meshRef)))
    return failure();
  // ZeRO-0/1's reductions under the last micro-batch: each stage's copies
  // of the programs that add to its accumulators.
  llvm::StringSet<> lastCopies;
  if (accLast) {
    AccumulateSplit split(accLast, layout, meshRef, table->splitBackward,
                          /*last=*/true);
    if (failed(split.run()))
      return failure();
    // The transfers a program posts, in order: what its neighbours'
    // programs match, whichever of a pair runs.
    auto transfers = [](func::FuncOp f) {
      SmallVector<std::tuple<bool, int64_t, int64_t, Type>> out;
      f.walk([&](Operation *op) {
        if (auto send = dyn_cast<SendOp>(op))
          out.push_back({true, send.getOffset(), send.getTag(),
                         send.getInput().getType()});
        else if (auto recv = dyn_cast<RecvOp>(op))
          out.push_back(
              {false, recv.getOffset(), recv.getTag(), recv.getType()});
      });
      return out;
    };
    for (const auto &name : split.built()) {
      // A copy must take, hand on and exchange what its program does: the
      // runtime passes the same stashes to either, and the neighbours'
      // programs match its sends and receives.
      StringRef copy = name.getKey();
      StringRef baseName = copy.drop_back(StringRef(kLastSuffix).size());
      auto mine = module.lookupSymbol<func::FuncOp>(copy);
      auto base = module.lookupSymbol<func::FuncOp>(baseName);
      if (!base || base.getFunctionType() != mine.getFunctionType())
        return fail("@" + copy + " (the last micro-batch's) takes or returns ")
               << mine.getFunctionType() << ", but @" << baseName << " "
               << (base ? base.getFunctionType() : FunctionType());
      if (transfers(base) != transfers(mine))
        return fail("@" + copy +
                    " (the last micro-batch's) sends or "
                    "receives otherwise than @" +
                    baseName);
      lastCopies.insert(copy);
    }
  }
  llvm::SmallSet<int64_t, 8> gathers;
  if (auto gather = module.lookupSymbol<func::FuncOp>(kGatherFunc)) {
    FailureOr<llvm::SmallSet<int64_t, 8>> split = splitGather(gather, layout);
    if (failed(split))
      return failure();
    gathers = std::move(*split);
  }
  // The whole model's forward (evaluation) would read parameters that
  // other ranks update: a pipelined bundle has none yet.
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward"))
    forward.erase();

  // The table, as the lowering writes it: per rank, [program, micro-batch,
  // chunk] entries (its gather first, if it has one), then the rank's step.
  Builder b(module.getContext());
  SmallVector<Attribute> ranksAttr;
  for (int64_t r = 0; r < ranks; ++r) {
    SmallVector<Attribute> entries;
    if (gathers.contains(r))
      entries.push_back(
          b.getArrayAttr({b.getStringAttr(gatherProgramName(r)),
                          b.getI64IntegerAttr(0), b.getI64IntegerAttr(0)}));
    for (const pipeline::Action &a : table->actions[r]) {
      int64_t s = table->stageOf(r, a.chunk);
      Phase phase = phaseOf(a.phase);
      // The last micro-batch's copy where there is one.
      std::string name = programName(s, phase);
      if (a.microbatch == m - 1 &&
          lastCopies.contains(programName(s, phase, /*last=*/true)))
        name = programName(s, phase, /*last=*/true);
      entries.push_back(b.getArrayAttr({b.getStringAttr(name),
                                        b.getI64IntegerAttr(a.microbatch),
                                        b.getI64IntegerAttr(a.chunk)}));
    }
    entries.push_back(
        b.getArrayAttr({b.getStringAttr("rank" + std::to_string(r) + ".step"),
                        b.getI64IntegerAttr(m - 1), b.getI64IntegerAttr(0)}));
    ranksAttr.push_back(b.getArrayAttr(entries));
  }
  module->setAttr(
      kPipelineScheduleAttr,
      b.getDictionaryAttr(
          {b.getNamedAttr("schedule", b.getStringAttr(scheduleName)),
           b.getNamedAttr("microbatches", b.getI64IntegerAttr(m)),
           b.getNamedAttr("ranks", b.getArrayAttr(ranksAttr))}));
  return success();
}

namespace {
struct SplitStagesPass : weft::impl::SplitStagesBase<SplitStagesPass> {
  using SplitStagesBase::SplitStagesBase;

  void runOnOperation() override {
    if (failed(splitStages(getOperation(), schedule, chunks)))
      signalPassFailure();
  }
};
} // namespace
