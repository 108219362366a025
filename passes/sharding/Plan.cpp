//===- Plan.cpp - parallelism plans and the seeds they place --------------===//

#include "passes/sharding/Passes.h"

#include "dialects/common/MeshAxes.h"
#include "passes/costmodel/Topology.h"
#include "runtime/support/SequenceChunks.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace weft {
#define GEN_PASS_DEF_APPLYPLAN
#include "passes/sharding/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

int64_t Plan::size(StringRef axis) const {
  for (const auto &[name, size] : axes)
    if (name == axis)
      return size;
  return 1;
}

int64_t Plan::worldSize() const {
  int64_t n = 1;
  for (const auto &axis : axes)
    n *= axis.second;
  return n;
}

std::string Plan::str() const {
  SmallVector<std::string> parts;
  for (const auto &[name, size] : axes)
    parts.push_back(name + "=" + std::to_string(size));
  if (zero > 0)
    parts.push_back("zero=" + std::to_string(zero));
  if (sequenceParallel)
    parts.push_back("sp=on");
  if (microbatches > 1)
    parts.push_back("microbatches=" + std::to_string(microbatches));
  if (size("pp") > 1) {
    parts.push_back("schedule=" + schedule);
    if (chunks > 1)
      parts.push_back("virtual=" + std::to_string(chunks));
    if (!stages.empty())
      parts.push_back("stages=" + stages);
  }
  if (!gather.empty())
    parts.push_back("gather=" + gather);
  return llvm::join(parts, ",");
}

llvm::Expected<Plan> weft::parsePlan(StringRef spec) {
  auto fail = [](const Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  Plan plan;
  SmallVector<StringRef> parts, meshParts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  bool zeroGiven = false, spGiven = false, microbatchesGiven = false,
       scheduleGiven = false, virtualGiven = false, stagesGiven = false,
       gatherGiven = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto [key, value] = parts[i].trim().split('=');
    if (key == "mb")
      key = "microbatches";
    // A strategy given twice would silently keep the last.
    if ((key == "zero" && std::exchange(zeroGiven, true)) ||
        (key == "sp" && std::exchange(spGiven, true)) ||
        (key == "microbatches" && std::exchange(microbatchesGiven, true)) ||
        (key == "schedule" && std::exchange(scheduleGiven, true)) ||
        (key == "virtual" && std::exchange(virtualGiven, true)) ||
        (key == "stages" && std::exchange(stagesGiven, true)) ||
        (key == "gather" && std::exchange(gatherGiven, true)))
      return fail("plan: " + key + " is given twice");
    if (key == "stages") {
      // stages=0-7,8-15: the ranges after it are its own parts.
      SmallVector<StringRef> ranges = {value.trim()};
      while (i + 1 < parts.size() && !parts[i + 1].contains('='))
        ranges.push_back(parts[++i].trim());
      // Each a range of layer numbers (weft-pipeline-assign-stages checks
      // them against the model), so the plan reads back as it is spelled.
      for (StringRef range : ranges) {
        auto [from, to] = range.split('-');
        if (from.empty() || to.empty() || !llvm::all_of(from, llvm::isDigit) ||
            !llvm::all_of(to, llvm::isDigit))
          return fail("plan: stages needs layer ranges such as 0-7, got '" +
                      range + "' (e.g. stages=0-7,8-15)");
      }
      plan.stages = llvm::join(ranges, ",");
    } else if (key == "schedule") {
      if (value != "gpipe" && value != "1f1b" && value != "interleaved" &&
          value != "zb-h1")
        return fail("plan: schedule '" + value +
                    "' does not exist (gpipe, 1f1b, interleaved, zb-h1)");
      plan.schedule = value.str();
    } else if (key == "virtual") {
      if (value.getAsInteger(10, plan.chunks) || plan.chunks < 1 ||
          plan.chunks > 1024)
        return fail("plan: virtual needs a count of virtual stages per rank "
                    "from 1 to 1024, got '" +
                    value + "'");
    } else if (key == "microbatches") {
      // At most 2^16: a step of more is a typo, not a plan.
      if (value.getAsInteger(10, plan.microbatches) || plan.microbatches < 1 ||
          plan.microbatches > 65536)
        return fail("plan: microbatches needs a count from 1 to 65536, got '" +
                    value + "'");
    } else if (key == "zero") {
      if (value.getAsInteger(10, plan.zero) || plan.zero < 0 || plan.zero > 3)
        return fail("plan: zero needs a stage 0, 1, 2 or 3, got '" + value +
                    "'");
    } else if (key == "gather") {
      if (value != "step" && value != "microbatch")
        return fail("plan: gather needs step or microbatch, got '" + value +
                    "'");
      plan.gather = value.str();
    } else if (key == "sp") {
      if (value != "on" && value != "off")
        return fail("plan: sp needs on or off, got '" + value + "'");
      plan.sequenceParallel = value == "on";
    } else {
      meshParts.push_back(parts[i]);
    }
  }
  // Micro-batches alone run on one rank.
  if (meshParts.empty() && !microbatchesGiven)
    return fail("plan '" + spec + "' names no mesh axis (expected e.g. dp=2)");
  if (!meshParts.empty()) {
    auto axes = parseMeshSpec(llvm::join(meshParts, ","));
    if (!axes)
      return fail("plan: " + llvm::toString(axes.takeError()));
    plan.axes = std::move(*axes);
  }
  // The ranks are counted in int64 everywhere after this.
  int64_t ranks = 1;
  for (const auto &[axis, size] : plan.axes)
    if (__builtin_mul_overflow(ranks, size, &ranks) || ranks > kMaxMeshRanks)
      return fail("plan '" + spec + "' asks for too many ranks (more than " +
                  Twine(kMaxMeshRanks) + ")");
  if (plan.zero > 0 && plan.size("dp") < 2)
    return fail("plan: zero=" + Twine(plan.zero) +
                " shards over dp, which needs dp >= 2");
  if (plan.size("pp") > 1) {
    if (plan.schedule == "interleaved" && plan.chunks < 2)
      return fail("plan: schedule=interleaved needs virtual=V with V >= 2 "
                  "virtual stages per rank");
    if (plan.schedule != "interleaved" && plan.chunks > 1)
      return fail("plan: virtual=" + Twine(plan.chunks) +
                  " needs schedule=interleaved");
  } else if (scheduleGiven || virtualGiven || stagesGiven) {
    return fail("plan: schedule, virtual and stages are pipeline settings, "
                "which need pp >= 2");
  }
  if (gatherGiven && plan.zero != 3)
    return fail("plan: gather=" + plan.gather +
                " says when ZeRO-3 gathers parameters, which needs zero=3");
  if (plan.sequenceParallel && plan.size("tp") < 2)
    return fail("plan: sp=on splits the sequence over tp, which needs tp >= 2");
  if (plan.size("cp") > 1 && plan.sequenceParallel)
    return fail("plan: cp with sp=on (the sequence split over both) is not "
                "supported yet");
  if (plan.size("cp") > 1 && plan.size("ep") > 1)
    return fail("plan: cp with ep is not supported yet (expert capacity "
                "follows the token order, which cp changes)");
  return plan;
}

/// Megatron tensor parallelism: every parameter the model family marked
/// with `weft.tp_dim` (see frontend/models/Families.h) is split over tp along
/// that dimension; propagation carries the split through the layer.
static LogicalResult seedTensorParallel(func::FuncOp forward,
                                        FlatSymbolRefAttr mesh, int64_t tp) {
  MLIRContext *context = forward.getContext();
  Builder b(context);
  WalkResult result = forward.walk([&](ParamOp param) {
    auto dimAttr = param->getAttrOfType<IntegerAttr>(kTpDimAttr);
    if (!dimAttr)
      return WalkResult::advance();
    int64_t dim = dimAttr.getInt(), unit = 1;
    if (auto unitAttr = param->getAttrOfType<IntegerAttr>(kTpUnitAttr))
      unit = unitAttr.getInt();
    ArrayRef<int64_t> shape = param.getType().getShape();
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size()) || unit < 1) {
      param.emitError("weft.tp_dim ")
          << dim << " / weft.tp_unit " << unit << " do not fit the parameter";
      return WalkResult::interrupt();
    }
    // Megatron-LM asserts the same: heads (and kv groups) divide by tp.
    if (shape[dim] % (tp * unit) != 0) {
      InFlightDiagnostic diag = param.emitError("cannot split parameter '")
                                << param.getName() << "' over tp=" << tp
                                << ": dimension " << dim << " has "
                                << shape[dim] / unit;
      if (unit > 1)
        diag << " blocks of " << unit << " (heads)";
      else
        diag << " elements";
      diag << ", which tp does not divide";
      return WalkResult::interrupt();
    }
    SmallVector<Attribute> dims(shape.size(), b.getArrayAttr({}));
    dims[dim] = b.getArrayAttr({b.getStringAttr("tp")});
    setSharding(param.getResult(),
                ShardingAttr::get(context, mesh, b.getArrayAttr(dims)));
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Sequence parallelism (Korthikanti et al.): the residual stream, from the
/// token embedding on, is split along the sequence over tp. Propagation
/// carries the split through norms and residual adds; the partitioner then
/// all-gathers the sequence before each column-parallel layer and
/// reduce-scatters after each row-parallel one.
static LogicalResult seedSequenceParallel(func::FuncOp forward,
                                          FlatSymbolRefAttr mesh,
                                          ArrayRef<Attribute> batchAxes,
                                          int64_t tp) {
  EmbeddingOp embedding;
  forward.walk([&](EmbeddingOp op) {
    if (!embedding)
      embedding = op;
  });
  if (!embedding || embedding.getType().getRank() != 3)
    return forward.emitError(
        "sp=on needs a token embedding [batch, seq, hidden] to split");
  int64_t seq = embedding.getType().getDimSize(1);
  if (seq % tp != 0)
    return embedding.emitError("sequence length ")
           << seq << " is not divisible by tp=" << tp << " (sp=on)";
  Builder b(forward.getContext());
  SmallVector<Attribute> dims(3, b.getArrayAttr({}));
  dims[0] = b.getArrayAttr(batchAxes);
  dims[1] = b.getArrayAttr({b.getStringAttr("tp")});
  setSharding(
      embedding.getResult(),
      ShardingAttr::get(forward.getContext(), mesh, b.getArrayAttr(dims)));
  return success();
}

/// Parameters stored split over dp along their first dimension that dp
/// divides and tensor parallelism leaves whole (one with no such dimension
/// stays whole; the memory report counts it): every parameter for ZeRO-3 /
/// FSDP; for ZeRO-1 and -2 the f32 master weights of a mixed-precision
/// model (ZeRO counts them as optimizer state), which are then cast and
/// gathered once per step.
/// `param` split over "dp" along its first dimension that dp divides and
/// its compute sharding leaves whole (null: none).
static ShardingAttr zeroSplit(ParamOp param, FlatSymbolRefAttr mesh,
                              int64_t dp) {
  Builder b(param.getContext());
  ArrayRef<int64_t> shape = param.getType().getShape();
  ShardingAttr compute = getSharding(param.getResult());
  for (auto [d, size] : llvm::enumerate(shape)) {
    if ((compute && !cast<ArrayAttr>(compute.getDims()[d]).empty()) ||
        size % dp != 0)
      continue;
    SmallVector<Attribute> dims(shape.size(), b.getArrayAttr({}));
    dims[d] = b.getArrayAttr({b.getStringAttr("dp")});
    return ShardingAttr::get(param.getContext(), mesh, b.getArrayAttr(dims));
  }
  return ShardingAttr();
}

/// ZeRO's placement, as attributes of the parameters the partitioner and
/// the optimizer read: storage split (`weft.zero_shard`: every parameter
/// for stage 3, mixed precision's f32 masters for 1 and 2) and, for stages
/// 1 and 2, the split of each parameter's optimizer state and update
/// (`weft.optimizer_shard`) and, for 2, of its gradient (`weft.grad_shard`).
static void seedZero(func::FuncOp forward, FlatSymbolRefAttr mesh, int64_t dp,
                     int64_t stage) {
  forward.walk([&](ParamOp param) {
    // State the model declares (dropout's step, FP8 amax histories) is
    // replicated: nothing optimizes it, and a history rolls as a whole.
    if (param.getState())
      return;
    bool master = param.getResult().hasOneUse() &&
                  isa<CastOp>(*param.getResult().getUsers().begin());
    ShardingAttr split = zeroSplit(param, mesh, dp);
    if (!split)
      return;
    if (stage == 3 || master)
      param->setAttr(kZeroShardAttr, split);
    if (stage == 3)
      return;
    param->setAttr(kOptimizerShardAttr, split);
    if (stage == 2)
      param->setAttr(kGradShardAttr, UnitAttr::get(param.getContext()));
  });
}

/// Expert parallelism: every parameter the model family marked with
/// `weft.expert_dim` (stacked expert weights) is split over ep along it, so
/// each rank holds E / ep experts; the partitioner sends each rank's routed
/// tokens to their experts' ranks and back.
static LogicalResult seedExpertParallel(func::FuncOp forward,
                                        FlatSymbolRefAttr mesh, int64_t ep) {
  Builder b(forward.getContext());
  bool any = false;
  WalkResult result = forward.walk([&](ParamOp param) {
    auto dimAttr = param->getAttrOfType<IntegerAttr>(kExpertDimAttr);
    if (!dimAttr)
      return WalkResult::advance();
    any = true;
    int64_t dim = dimAttr.getInt();
    ArrayRef<int64_t> shape = param.getType().getShape();
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size())) {
      param.emitError("weft.expert_dim ")
          << dim << " does not fit the parameter";
      return WalkResult::interrupt();
    }
    if (shape[dim] % ep != 0) {
      param.emitError("cannot split the ")
          << shape[dim] << " experts of '" << param.getName()
          << "' over ep=" << ep << ": ep must divide the experts";
      return WalkResult::interrupt();
    }
    SmallVector<Attribute> dims(shape.size(), b.getArrayAttr({}));
    dims[dim] = b.getArrayAttr({b.getStringAttr("ep")});
    setSharding(param.getResult(), ShardingAttr::get(forward.getContext(), mesh,
                                                     b.getArrayAttr(dims)));
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  if (!any)
    return forward.emitError("plan axis ep=")
           << ep << " splits experts, but the model has none";
  return success();
}

/// Context parallelism (Megatron-LM's, TransformerEngine's): the sequence
/// is cut into 2 x cp chunks and rank i of cp holds chunks i and
/// 2cp - 1 - i, so every rank has as much of the causal mask's work as any
/// other. The program computes on the sequence in that order (rank 0's two
/// chunks, then rank 1's, ...): the token inputs are split along it over cp
/// and say so (`weft.sequence_chunks`, for the runtime that cuts them), and
/// every op whose meaning depends on the order gets the reordered positions
/// as data: rope, causal attention (which the partitioner runs as a ring),
/// the dropout of a [B, S, ...] activation (its mask by position, the one
/// rank's) and a position-table lookup (GPT-2's). Losses are means over tokens,
/// which no order changes.
static LogicalResult seedContextParallel(func::FuncOp forward, int64_t cp) {
  OpBuilder b(forward.getContext());
  int64_t seq = 0;
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!forward.getArgAttr(arg.getArgNumber(), "weft.input") || !type ||
        type.getRank() != 2)
      continue;
    int64_t s = type.getDimSize(1);
    if (s % (2 * cp) != 0)
      return emitError(arg.getLoc(), "sequence length ")
             << s << " of input " << arg.getArgNumber()
             << " does not split into 2 x cp = " << 2 * cp
             << " equal chunks (cp=" << cp << " gives rank i chunks i and "
             << 2 * cp - 1 << " - i)";
    if (seq && s != seq)
      return emitError(arg.getLoc(), "inputs have sequence lengths ")
             << seq << " and " << s << "; cp splits one sequence";
    seq = s;
    forward.setArgAttr(arg.getArgNumber(), kSequenceChunksAttr,
                       b.getI64IntegerAttr(2 * cp));
  }
  if (!seq)
    return forward.emitError("cp=")
           << cp << " splits the sequence of the token inputs [batch, seq], "
           << "but the model has none";
  // The positions in the order the program holds the sequence.
  int64_t chunk = seq / (2 * cp);
  SmallVector<int32_t> order;
  for (int64_t k = 0; k < 2 * cp; ++k)
    for (int64_t i = 0; i < chunk; ++i)
      order.push_back(static_cast<int32_t>(heldChunk(k, 2 * cp) * chunk + i));
  auto type = RankedTensorType::get({seq}, b.getI32Type());
  auto values = DenseElementsAttr::get(type, ArrayRef<int32_t>(order));
  // What reads the sequence's order must be one of the ops that take the
  // positions, at the one marked constant: anything else would silently
  // read the natural order beside reordered tokens.
  ConstantOp positions;
  WalkResult unordered = forward.walk([&](Operation *op) {
    auto fail = [&](const Twine &what) {
      op->emitOpError(what) << "; cp=" << cp
                            << " reorders the sequence, which it would read "
                               "in the natural order";
      return WalkResult::interrupt();
    };
    if (auto c = dyn_cast<ConstantOp>(op); c && c->hasAttr(kPositionsAttr)) {
      if (positions)
        return fail("marks the sequence's positions a second time");
      positions = c;
    } else if (auto route = dyn_cast<ExpertRouteOp>(op);
               route && route.getCapacity()) {
      return fail("drops pairs past a capacity in token order");
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      // A table's first S rows (a position table read by index, as GPT-2
      // models written before positions were data do).
      ArrayRef<int64_t> in = slice.getInput().getType().getShape();
      for (auto [d, size] : llvm::enumerate(slice.getType().getShape()))
        if (size == seq && in[d] != seq)
          return fail("takes " + Twine(seq) +
                      " rows (the sequence's length) of a longer dimension: "
                      "read a position table with weft.embedding at the "
                      "weft.positions");
    }
    return WalkResult::advance();
  });
  if (unordered.wasInterrupted())
    return failure();
  if (positions && positions.getType() != type)
    return positions.emitOpError("marks the sequence's positions, but is ")
           << positions.getType() << ", not " << type;
  if (!positions) {
    b.setInsertionPointToStart(&forward.getBody().front());
    positions = ConstantOp::create(b, forward.getLoc(), values);
    positions->setAttr(kPositionsAttr, b.getUnitAttr());
  }
  positions.setValueAttr(values);
  Value pos = positions.getResult();
  // A causal attention (or its entropy) masks by the positions instead of
  // the index.
  auto maskByPositions = [&](auto att) {
    if (att.getQueryPositions() || !att.getCausal())
      return WalkResult::advance();
    if (att.getQuery().getType().getDimSize(1) != seq ||
        att.getKey().getType().getDimSize(1) != seq) {
      att.emitOpError("attends over sequences of ")
          << att.getQuery().getType().getDimSize(1) << " and "
          << att.getKey().getType().getDimSize(1) << ", not the inputs' " << seq
          << ", which cp=" << cp << " reorders";
      return WalkResult::interrupt();
    }
    att.getQueryPositionsMutable().assign(pos);
    att.getKeyPositionsMutable().assign(pos);
    return WalkResult::advance();
  };
  WalkResult result = forward.walk([&](Operation *op) {
    // Positions already given must be the marked ones, reordered here.
    for (Value v : op->getOperands())
      if (v != pos &&
          isa<RopeOp, AttentionOp, AttentionEntropyOp, DropoutOp>(op) &&
          isa<IntegerType>(
              cast<RankedTensorType>(v.getType()).getElementType())) {
        op->emitOpError("has positions other than the marked "
                        "weft.positions, which cp=")
            << cp << " would leave in the natural order";
        return WalkResult::interrupt();
      }
    if (auto rope = dyn_cast<RopeOp>(op)) {
      if (rope.getPositions())
        return WalkResult::advance();
      if (rope.getType().getDimSize(1) != seq) {
        rope.emitOpError("rotates a sequence of ")
            << rope.getType().getDimSize(1) << ", not the inputs' " << seq
            << ", which cp=" << cp << " reorders";
        return WalkResult::interrupt();
      }
      rope.getPositionsMutable().assign(pos);
    } else if (auto drop = dyn_cast<DropoutOp>(op)) {
      // A [B, S, ...] activation's mask by position, the one rank's.
      if (!drop.getPositions() && drop.getType().getRank() >= 2 &&
          drop.getType().getRank() <= 4 && drop.getType().getDimSize(1) == seq)
        drop.getPositionsMutable().assign(pos);
    } else if (auto att = dyn_cast<AttentionOp>(op)) {
      return maskByPositions(att);
    } else if (auto entropy = dyn_cast<AttentionEntropyOp>(op)) {
      return maskByPositions(entropy);
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult weft::applyPlan(ModuleOp module, const Plan &plan) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return module.emitError("the model has no @forward function");

  // Mesh axes major to minor as Megatron-LM orders ranks: pipeline stages
  // outermost, tensor parallelism innermost, so a tp group is consecutive
  // ranks (one node).
  SmallVector<Attribute> names;
  SmallVector<int64_t> sizes;
  for (const char *axis : {"pp", "dp", "ep", "cp", "tp"})
    if (int64_t size = plan.size(axis); size > 1) {
      names.push_back(StringAttr::get(module.getContext(), axis));
      sizes.push_back(size);
    }
  if (names.empty())
    return success(); // One rank: nothing to place.
  if (module.lookupSymbol(kMeshName))
    return module.emitError("the module already declares @") << kMeshName;
  OpBuilder b(module.getBodyRegion());
  MeshOp::create(b, module.getLoc(), kMeshName, b.getArrayAttr(names),
                 b.getDenseI64ArrayAttr(sizes));
  auto mesh = FlatSymbolRefAttr::get(module.getContext(), kMeshName);

  if (int64_t tp = plan.size("tp");
      tp > 1 && failed(seedTensorParallel(forward, mesh, tp)))
    return failure();

  int64_t dp = plan.size("dp"), ep = plan.size("ep");
  if (ep > 1 && failed(seedExpertParallel(forward, mesh, ep)))
    return failure();
  // The batch is split over dp and ep together (Megatron carves expert
  // parallelism out of data parallelism): dp major, ep minor.
  SmallVector<Attribute> batchAxes;
  for (auto [axis, size] : {std::pair{"dp", dp}, std::pair{"ep", ep}})
    if (size > 1)
      batchAxes.push_back(b.getStringAttr(axis));
  if (plan.sequenceParallel &&
      failed(seedSequenceParallel(forward, mesh, batchAxes, plan.size("tp"))))
    return failure();
  int64_t cp = plan.size("cp");
  if (cp > 1 && failed(seedContextParallel(forward, cp)))
    return failure();
  if (batchAxes.empty() && cp == 1)
    return success();
  // Data parallelism: each rank takes batch rows [r*B/n, (r+1)*B/n), r its
  // coordinate in the dp x ep group; context parallelism its block of the
  // (reordered) sequence.
  for (BlockArgument arg : forward.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!forward.getArgAttr(arg.getArgNumber(), "weft.input") || !type ||
        type.getRank() == 0)
      continue;
    if (type.getDimSize(0) % (dp * ep) != 0) {
      InFlightDiagnostic diag = emitError(arg.getLoc(), "batch ")
                                << type.getDimSize(0) << " of input "
                                << arg.getArgNumber()
                                << " is not divisible by ";
      if (ep > 1)
        diag << "dp x ep = " << dp * ep;
      else
        diag << "dp=" << dp;
      return diag;
    }
    SmallVector<Attribute> dims(type.getRank(), b.getArrayAttr({}));
    dims[0] = b.getArrayAttr(batchAxes);
    if (forward.getArgAttr(arg.getArgNumber(), kSequenceChunksAttr))
      dims[1] = b.getArrayAttr({b.getStringAttr("cp")});
    forward.setArgAttr(
        arg.getArgNumber(), kShardingAttr,
        ShardingAttr::get(module.getContext(), mesh, b.getArrayAttr(dims)));
  }
  if (plan.zero > 0)
    seedZero(forward, mesh, dp, plan.zero);
  return success();
}

namespace {
struct ApplyPlanPass : weft::impl::ApplyPlanBase<ApplyPlanPass> {
  using ApplyPlanBase::ApplyPlanBase;
  void runOnOperation() override {
    auto parsed = parsePlan(plan);
    if (!parsed) {
      getOperation().emitError(llvm::toString(parsed.takeError()));
      return signalPassFailure();
    }
    if (failed(applyPlan(getOperation(), *parsed)))
      signalPassFailure();
  }
};
} // namespace
