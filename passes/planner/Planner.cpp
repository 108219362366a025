//===- Planner.cpp - the search over placements, rewrites and schedules ---===//

#include "passes/planner/Planner.h"

#include "dialects/sched/IR/SchedOps.h"
#include "passes/LayerRuns.h"
#include "passes/costmodel/CostModel.h"
#include "passes/pipeline/Passes.h"
#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace llvm;

namespace weft::planner {
namespace {

constexpr double kGiB = double(int64_t(1) << 30);

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

/// The recomputation levels of the ladder, cheapest first.
constexpr const char *kLevels[] = {"none", "selective", "full"};

/// Everything one evaluation reads, fetched once per configuration.
struct Profiles {
  /// By level (none, selective, full); a level the search leaves out is
  /// absent.
  std::map<std::string, SliceProfile> byLevel;
  /// The highest ladder step per layer: 0 (none only), 1 (up to
  /// selective), 2 (up to full).
  int maxLevel = 0;
  int minLevel = 0;
  std::string fp8 = "none"; // The FP8 recipe of the slices.
};

/// A layer of kind `kind` (ModelShape::layerKinds) at ladder level
/// `level` (0 none, 1 selective, 2 full).
const PartCost &layerAt(const Profiles &p, int level, int64_t kind = 0) {
  const SliceProfile &s = p.byLevel.at(kLevels[level]);
  return kind && !s.kinds.empty() ? s.kinds[kind] : s.layer;
}

/// Each layer kind's forward and backward time (none when the layers are
/// alike).
std::vector<double> kindTimes(const SliceProfile &s) {
  std::vector<double> times;
  for (const PartCost &k : s.kinds)
    times.push_back(k.forward + k.backward);
  return times;
}

/// Of every layer of `model` (at its profile's cheapest level), `field`
/// summed.
template <typename Field>
double allLayers(const ModelShape &model, const Profiles &p, Field field) {
  if (model.layerKinds.empty())
    return double(model.layers) * field(layerAt(p, p.minLevel));
  double sum = 0;
  for (int64_t kind : model.layerKinds)
    sum += field(layerAt(p, p.minLevel, kind));
  return sum;
}

/// How many of a rank's `n` layers sit at each level for ladder step `j`
/// (see Planner.h): {none, selective, full}.
std::array<int64_t, 3> ladderCounts(int64_t n, int64_t j, int minLevel) {
  if (minLevel == 2)
    return {0, 0, n};
  if (minLevel == 1)
    j += n; // Selective everywhere at step 0.
  if (j <= n)
    return {n - j, j, 0};
  return {0, 2 * n - j, j - n};
}

/// Per pipeline rank, the most micro-batches (interleaved: entries of one
/// virtual stage) whose activations are held at once, and with ZB-H1 the
/// most whose B ran and whose W has not: from Weft's own schedule tables.
struct Held {
  std::vector<int64_t> inFlight, awaitingW;
};

class InFlight {
public:
  Expected<Held> of(const std::string &schedule, int64_t p, int64_t m,
                    int64_t v) {
    Held out{std::vector<int64_t>(p, 1), std::vector<int64_t>(p, 0)};
    if (p == 1)
      return out;
    if (schedule == "gpipe") {
      std::fill(out.inFlight.begin(), out.inFlight.end(), m);
      return out;
    }
    if (schedule == "1f1b") { // Warms up p - r.
      for (int64_t r = 0; r < p; ++r)
        out.inFlight[r] = std::min(p - r, m);
      return out;
    }
    // The warm-up depends on m only up to a few rounds of p.
    int64_t simulated = std::min(m, 4 * p);
    if (schedule == "interleaved")
      simulated -= simulated % p;
    auto key = std::make_tuple(schedule, p, simulated, v);
    if (auto it = cache.find(key); it != cache.end())
      return it->second;
    Expected<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(schedule);
    if (!kind)
      return kind.takeError();
    Expected<pipeline::ScheduleTable> table =
        pipeline::buildSchedule(*kind, p, simulated, v);
    if (!table)
      return table.takeError();
    Expected<pipeline::Timeline> line = pipeline::simulateSchedule(*table);
    if (!line)
      return line.takeError();
    out.inFlight = line->peakInFlight;
    if (!line->peakAwaitingW.empty())
      out.awaitingW = line->peakAwaitingW;
    return cache[key] = out;
  }

private:
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, Held> cache;
};

/// The search's state: profiles fetched once, stage cuts and in-flight
/// counts memoized.
class Evaluator {
public:
  Evaluator(const ModelShape &model, const Topology &topology,
            const ProfileFn &profile)
      : model(model), topology(topology), profile(profile) {}

  Expected<const SliceProfile *> slice(const SliceKey &key) {
    auto it = slices.find(key);
    if (it == slices.end()) {
      Expected<SliceProfile> p = profile(key);
      if (!p) {
        failures[key] = toString(p.takeError());
        it = slices.emplace(key, std::nullopt).first;
      } else {
        ++profiled;
        it = slices.emplace(key, *p).first;
      }
    }
    if (!it->second)
      return fail(key.str() + ": " + failures[key]);
    return &*it->second;
  }

  /// The profiles of (tp, sp, fp8) at the levels in `levels` (a contiguous
  /// run of none, selective, full).
  Expected<Profiles> profiles(const Candidate &c,
                              const std::vector<std::string> &levels) {
    Profiles out;
    out.fp8 = c.fp8;
    out.minLevel = 3;
    out.maxLevel = -1;
    for (int level = 0; level < 3; ++level) {
      if (!llvm::is_contained(levels, kLevels[level]))
        continue;
      Expected<const SliceProfile *> p =
          slice({c.tp, c.sequenceParallel, c.ep, c.cp, kLevels[level], c.fp8,
                 c.microbatchSize, c.pp > 1, model.capacityLimited ? c.dp : 1});
      if (!p)
        return p.takeError();
      out.byLevel[kLevels[level]] = **p;
      out.minLevel = std::min(out.minLevel, level);
      out.maxLevel = std::max(out.maxLevel, level);
    }
    // `levels` is one policy (evaluate) or a run that search() checked, so
    // layerAt finds every level the ladder climbs.
    assert(out.maxLevel >= 0 && "no recomputation policy");
    return out;
  }

  /// Layer ranges of `stages` stages over layers of cost `layer` (with
  /// `kindTimes`, each layer its kind's), the last stage also paying
  /// `rest`; with `scales`, stage k's layers cost that many times theirs
  /// (its recipe's speed).
  std::vector<std::pair<int64_t, int64_t>>
  cut(int64_t stages, double layer, double rest, ArrayRef<double> scales = {},
      ArrayRef<double> kindTimes = {}) {
    if (!kindTimes.empty() && layer > 0) {
      std::vector<double> costs;
      for (int64_t kind : model.layerKinds)
        costs.push_back(kindTimes[kind] / layer);
      return balanceStages(costs, 0, rest / layer, stages, scales);
    }
    // Uniform layers: only the head's weight in layers matters, to a
    // quarter of a layer.
    int64_t restInLayers = layer > 0 ? std::lround(4 * rest / layer) : 0;
    auto key = std::make_pair(stages, restInLayers);
    if (auto it = cuts.find(key); scales.empty() && it != cuts.end())
      return it->second;
    std::vector<double> costs(model.layers, 1.0);
    auto ranges =
        balanceStages(costs, 0, double(restInLayers) / 4, stages, scales);
    if (scales.empty())
      cuts[key] = ranges;
    return ranges;
  }

  /// `c` with each pipeline rank's layers in the FP8 recipe of the
  /// `choices` (each its recipe's profiles) that is fastest on that rank,
  /// fitting if any does, or in the one `fixed` names for it (an index of
  /// `choices` per rank); one choice: that recipe everywhere.
  Expected<Estimate> estimate(Candidate c, ArrayRef<Profiles> choices,
                              bool chooseLadder, ArrayRef<size_t> fixed = {});

  /// `c` (its micro-batch size and pipeline set) with each pipeline
  /// rank's layers in the recipe of `options.fp8` fastest there that fits
  /// (the first stage, holding the most micro-batches, may keep one whose
  /// copies take less memory), its stages cut again for the ranks' speeds;
  /// none when every rank takes the same recipe (one of the uniform
  /// plans) or fewer than two recipes build.
  Expected<std::optional<Estimate>> mixedRecipes(const Candidate &c,
                                                 const SearchOptions &options);

  int64_t profiledCount() const { return profiled; }
  const std::map<SliceKey, std::string> &failed() const { return failures; }

private:
  const ModelShape &model;
  const Topology &topology;
  const ProfileFn &profile;
  std::map<SliceKey, std::optional<SliceProfile>> slices;
  std::map<SliceKey, std::string> failures;
  std::map<std::pair<int64_t, int64_t>,
           std::vector<std::pair<int64_t, int64_t>>>
      cuts;
  InFlight inFlight;
  int64_t profiled = 0;
};

Expected<std::optional<Estimate>>
Evaluator::mixedRecipes(const Candidate &c, const SearchOptions &options) {
  std::vector<Profiles> each;
  for (const std::string &recipe : options.fp8) {
    Candidate other = c;
    other.fp8 = recipe;
    Expected<Profiles> q = profiles(other, options.recompute);
    if (!q) {
      consumeError(q.takeError());
      continue;
    }
    each.push_back(std::move(*q));
  }
  if (each.size() < 2)
    return std::nullopt;
  Expected<Estimate> mixed = estimate(c, each, true);
  if (!mixed)
    return mixed.takeError();
  if (mixed->candidate.rankFp8.empty())
    return std::nullopt;
  // The stages were cut for the first recipe's layers: cut again for each
  // rank's recipe's (a faster rank takes more layers), the recipes kept;
  // that plan wins if it fits and is faster, or fits where the first cut
  // does not.
  auto layerTime = [](const Profiles &q) {
    const PartCost &l = q.byLevel.at(kLevels[q.minLevel]).layer;
    return l.forward + l.backward;
  };
  const Profiles &first = each.front();
  if (c.chunks > 1 || layerTime(first) <= 0)
    return std::optional<Estimate>(std::move(*mixed));
  std::vector<size_t> pick;
  std::vector<double> scales;
  for (const std::string &recipe : mixed->candidate.rankFp8) {
    size_t i = 0;
    while (each[i].fp8 != recipe)
      ++i;
    pick.push_back(i);
    scales.push_back(layerTime(each[i]) / layerTime(first));
  }
  const PartCost &rest = first.byLevel.at(kLevels[first.minLevel]).rest;
  Candidate again = c;
  again.stageRanges =
      cut(c.pp, layerTime(first), rest.forward + rest.backward, scales,
          kindTimes(first.byLevel.at(kLevels[first.minLevel])));
  Expected<Estimate> rebalanced = estimate(again, each, true, pick);
  if (!rebalanced)
    return rebalanced.takeError();
  if (rebalanced->fits &&
      (!mixed->fits || rebalanced->stepSeconds < mixed->stepSeconds))
    return std::optional<Estimate>(std::move(*rebalanced));
  return std::optional<Estimate>(std::move(*mixed));
}

/// Does a group of `size` ranks `stride` apart (consecutive ranks share a
/// node, devices_per_node of them) cross a node boundary?
bool spansNodes(int64_t stride, int64_t size, int64_t devicesPerNode) {
  return size > 1 && stride * size > devicesPerNode;
}

Expected<Estimate> Evaluator::estimate(Candidate c, ArrayRef<Profiles> choices,
                                       bool chooseLadder,
                                       ArrayRef<size_t> fixed) {
  const int64_t pp = c.pp, v = c.chunks, b = c.microbatchSize;
  const int64_t m = c.microbatches;
  const DeviceSpec &device = topology.device;
  // Stage cuts on the first recipe's cheapest level's time (the ladder
  // moves it little; a recipe moves every layer alike).
  const SliceProfile &cutBase =
      choices.front().byLevel.at(kLevels[choices.front().minLevel]);
  // Interleaved, the last rank's chunks are every pp-th stage, not the
  // last ones: chunks as even as the layers allow (the head's time lands on
  // that rank either way).
  if (c.stageRanges.empty() && v > 1) {
    int64_t stages = pp * v;
    for (int64_t k = 0; k < stages; ++k)
      c.stageRanges.push_back(
          {k * model.layers / stages, (k + 1) * model.layers / stages - 1});
  } else if (c.stageRanges.empty()) {
    c.stageRanges =
        pp > 1
            ? cut(pp, cutBase.layer.forward + cutBase.layer.backward,
                  cutBase.rest.forward + cutBase.rest.backward, {},
                  kindTimes(cutBase))
            : std::vector<std::pair<int64_t, int64_t>>{{0, model.layers - 1}};
  }
  if (int64_t(c.stageRanges.size()) != pp * v)
    return fail(formatv("{0} stage ranges for pp={1} x virtual={2}",
                        c.stageRanges.size(), pp, v));
  // Layers per pipeline rank: its chunks r, r + pp, ...
  std::vector<int64_t> layersOn(pp, 0);
  for (int64_t s = 0; s < pp * v; ++s)
    layersOn[s % pp] += c.stageRanges[s].second - c.stageRanges[s].first + 1;
  Expected<Held> held = inFlight.of(c.schedule, pp, m, v);
  if (!held)
    return held.takeError();

  Estimate e;
  // The link between consecutive pipeline ranks (pp is the outermost axis)
  // and inside the group that reduces gradients: dp x ep x cp, tp ranks
  // apart (an expert's gradient reduces over dp alone; counted over the
  // whole group, an upper bound).
  const int64_t inner = c.stageRanks();
  const int64_t reducers = c.dp * c.ep * c.cp;
  // Some stage boundary crosses nodes once the pipeline does.
  const LinkSpec &ppLink = spansNodes(inner, pp, topology.devicesPerNode)
                               ? topology.interNode
                               : topology.intraNode;
  const LinkSpec &dpLink = spansNodes(c.tp, reducers, topology.devicesPerNode)
                               ? topology.interNode
                               : topology.intraNode;
  // What pipeline rank r costs with the profiles `p` (its recipe's).
  struct RankEstimate {
    StageMemory mem;
    int64_t ladder = 0;
    double compute = 0, send = 0, hardwareFlops = 0, modelFlops = 0;
    double dp = 0, optimizer = 0;
  };
  auto rankWith = [&](int64_t r, const Profiles &p) {
    RankEstimate out;
    const SliceProfile &base = p.byLevel.at(kLevels[p.minLevel]);
    const PartCost &rest = base.rest, &l0 = base.layer;
    const int64_t n = layersOn[r];
    // The rank's layers in order, by kind (one kind: all of them).
    std::vector<int64_t> kindsHere;
    if (!model.layerKinds.empty())
      for (int64_t layer : c.layersOf(r))
        kindsHere.push_back(model.kindOf(layer));
    // Of the rank's layers after the first `skip`, `field` summed at the
    // cheapest level.
    auto layers = [&](auto field, int64_t skip = 0) {
      if (kindsHere.empty())
        return double(std::max<int64_t>(n - skip, 0)) * field(l0);
      double t = 0;
      for (size_t k = skip; k < kindsHere.size(); ++k)
        t += field(layerAt(p, p.minLevel, kindsHere[k]));
      return t;
    };
    // The largest of the rank's layers' `field`.
    auto largest = [&](auto field) {
      double most = field(l0);
      for (int64_t kind : kindsHere)
        most = std::max(most, field(layerAt(p, p.minLevel, kind)));
      return most;
    };
    const bool first = r == 0, last = r == pp - 1;
    // The model outside the layers: its parameters half on the first rank
    // (embedding) and half on the last (head), both on one without pp; its
    // time (the head and the loss) on the last.
    double restShare = pp == 1 ? 1.0 : (first || last ? 0.5 : 0.0);
    double params = layers([](const PartCost &x) { return x.paramBytes; }) +
                    restShare * rest.paramBytes;
    double grads = layers([](const PartCost &x) { return x.gradBytes; }) +
                   restShare * rest.gradBytes;
    double states = layers([](const PartCost &x) { return x.optimizerBytes; }) +
                    restShare * rest.optimizerBytes;
    StageMemory mem;
    mem.inFlight = held->inFlight[r];
    mem.paramBytes = c.zero == 3 ? params / c.dp : params;
    mem.gradBytes = c.zero >= 2 ? grads / c.dp : grads;
    mem.optimizerBytes = c.zero >= 1 ? states / c.dp : states;
    mem.reserveBytes = double(device.runtimeReserveBytes);
    // Interleaved: an entry in flight is one chunk, 1/v of the rank's
    // layers.
    // ZB-H1: what B hands W waits too; counted as a micro-batch's whole
    // activations (an upper bound: W needs the GEMMs' inputs).
    double heldLayers = c.schedule == "interleaved" && pp > 1
                            ? double(mem.inFlight) / double(v)
                            : double(mem.inFlight + held->awaitingW[r]);
    // The head's logits and their gradient (f32) are the last rank's; the
    // others' working set is a layer's.
    double headWorking = 2.0 * 4 * double(b) * double(model.seq) /
                         double(c.cp) * double(model.vocab) / double(c.tp);
    double working = last ? rest.workingBytes
                          : std::max(rest.workingBytes - headWorking, 0.0);
    // A field summed over the rank's layers at ladder step `j` (its first
    // layers the most recomputed, as Candidate::recompute spreads them).
    auto sum = [&](int64_t j, auto field) {
      std::array<int64_t, 3> counts = ladderCounts(n, j, p.minLevel);
      double t = 0;
      if (kindsHere.empty()) {
        for (int level = 0; level < 3; ++level)
          if (counts[level])
            t += double(counts[level]) * field(layerAt(p, level));
        return t;
      }
      for (int64_t k = 0; k < n; ++k) {
        int level = k < counts[2] ? 2 : k < counts[2] + counts[1] ? 1 : 0;
        t += field(layerAt(p, level, kindsHere[k]));
      }
      return t;
    };
    // The optimizer step's arena, sharded with the state from ZeRO-1, and
    // with gradients all-reduced over ranks (zero=0, 1), the reduced
    // gradients: the global norm needs every one before any update.
    double update = layers([](const PartCost &x) { return x.updateBytes; }) +
                    restShare * rest.updateBytes;
    if (c.zero >= 1)
      update /= double(c.dp);
    double reduced = c.zero <= 1 && reducers > 1 ? grads : 0;
    update += reduced;
    // ZeRO-2 reduce-scatters a micro-batch's gradients together at its end:
    // the whole gradients are in its arena until then. ZeRO-3 holds a
    // layer's gathered parameters there instead.
    // (With the GPU's prefetch, about one more layer's waits gathered.)
    double unreduced = c.zero == 2 && m > 1 ? grads
                       : c.zero == 3
                           ? (n ? largest([](const PartCost &x) {
                                    return x.paramBytes;
                                  }) * (base.overlapsCollectives ? 2 : 1)
                                : 0)
                           : 0;
    auto activationAt = [&](int64_t j) {
      // Under a pipeline, measured as stages: the micro-batches' stashes,
      // the stage's arena (a first or a last stage's, the largest of its
      // programs'), and the weights' copies of its other layers.
      if (pp > 1 && base.pipelined)
        return heldLayers *
                   sum(j, [](const PartCost &x) { return x.stashBytes; }) +
               (last ? base.lastStageArena : base.firstStageArena) +
               layers([](const PartCost &x) { return x.workingBytes; }, 1) +
               unreduced + reduced;
      double forward =
          heldLayers *
              sum(j, [](const PartCost &x) { return x.activationBytes; }) +
          working + layers([](const PartCost &x) { return x.workingBytes; }) +
          unreduced;
      // The forward and backward's arena and the update's are one (a
      // rank's programs share the largest of theirs).
      return std::max(forward, update);
    };
    int64_t steps = p.maxLevel - p.minLevel; // Ladder steps per layer.
    int64_t j = 0; // Uniform (not chosen): the profiles hold one level.
    if (chooseLadder && device.memoryBytes > 0)
      while (j < steps * n &&
             mem.total() + activationAt(j) > double(device.memoryBytes))
        ++j;
    out.ladder = j;
    mem.activationBytes = activationAt(j);
    out.mem = mem;
    double f = sum(j, [](const PartCost &x) { return x.forward; }) +
               (last ? rest.forward : 0);
    double bw = sum(j, [](const PartCost &x) { return x.backward; }) +
                (last ? rest.backward : 0);
    // A send of the boundary activation (or its gradient) per chunk.
    double send = 0;
    if (pp > 1)
      send =
          double(v) * (base.boundaryBytes / ppLink.bandwidth + ppLink.latency);
    out.send = send;
    out.compute = f + bw + 2 * send;
    out.hardwareFlops = double(inner) * m *
                        (sum(j, [](const PartCost &x) { return x.flops; }) +
                         (last ? rest.flops : 0));
    out.modelFlops = double(inner) * m *
                     (layers([](const PartCost &x) { return x.modelFlops; }) +
                      (last ? rest.modelFlops : 0));
    // Data parallelism: what this rank's gradients and parameters move.
    // Each tensor's collective pays the ring's latencies; with one
    // micro-batch all-reduced gradients go in buckets
    // (weft-bucket-all-reduce's 25 MiB), else each on its own. The experts'
    // gradients reduce over dp alone, the others over dp x ep x cp; ZeRO
    // shards over dp.
    using Kind = sched::CollectiveKind;
    // Gradients reduce-scattered each micro-batch (@accumulate): ZeRO-2/3,
    // and ZeRO-1 of a narrow model with micro-batches, whose f32 masters
    // are stored split, so each micro-batch's gradient is reduced onto them.
    bool scattered = c.zero >= 2 || (c.zero == 1 && model.narrow && m > 1);
    auto reduce = [&](double bytes, double tensors, int64_t group) {
      if (bytes <= 0 || group <= 1)
        return 0.0;
      // Only all-reduces are bucketed (weft-bucket-all-reduce): in the step
      // program, or in @accumulate_last (ZeRO-0/1 with micro-batches; with
      // a pipeline, each stage's last backward).
      bool bucketed = !scattered;
      double count = bucketed
                         ? std::max(1.0, std::ceil(bytes / (25.0 * (1 << 20))))
                         : std::max(1.0, tensors);
      // ZeRO-1 all-reduces the whole gradient too, then updates its part.
      Kind kind = scattered ? Kind::reduce_scatter : Kind::all_reduce;
      double each = bytes / count;
      return count * collectiveSeconds(kind, each,
                                       scattered ? each / double(group) : each,
                                       group, dpLink);
    };
    double expertGrads =
               layers([](const PartCost &x) { return x.expertGradBytes; }),
           expertTensors =
               layers([](const PartCost &x) { return x.expertTensors; });
    double tensors = layers([](const PartCost &x) { return x.tensors; }) +
                     restShare * rest.tensors;
    double gradSync =
        reduce(grads - expertGrads, tensors - expertTensors, reducers) +
        reduce(expertGrads, expertTensors, c.dp);
    double dp = 0;
    auto gather = [&]() {
      double count = std::max(1.0, tensors);
      return count * collectiveSeconds(Kind::all_gather, params / c.dp / count,
                                       params / count, c.dp, dpLink);
    };
    // ZeRO-1 and 2 gather the updated shards back after the step; ZeRO-3
    // keeps them sharded and gathers each micro-batch's parameters in its
    // forward and again in its backward.
    if (c.zero == 1 || c.zero == 2)
      dp += gather();
    // ZeRO-2's gradient norm: the shards' partial sums of squares add up
    // locally and are all-reduced once (a latency).
    if (c.zero == 2)
      dp += collectiveSeconds(Kind::all_reduce, 4, 4, c.dp, dpLink);
    if (scattered) {
      // Each micro-batch reduce-scatters its gradients (@accumulate). With
      // the GPU's overlap passes, the gathers move ahead of their readers
      // (weft-sched-prefetch-gathers) and each reduction is read one later
      // (weft-sched-defer-reduction-readers): a pass's collectives, one
      // after another on the comm stream, hide under its compute but for
      // the first tensor's gather and the last tensor's reduction.
      double gathered = c.zero == 3 ? gather() : 0;
      double first = gathered / std::max(1.0, tensors),
             last = gradSync / std::max(1.0, tensors);
      auto exposed = [&](double comm, double edges, double compute) {
        return base.overlapsCollectives
                   ? edges + std::max(0.0, comm - edges - compute)
                   : comm;
      };
      dp += double(m) * (exposed(gathered, first, f) +
                         exposed(gathered + gradSync, first + last, bw));
      gradSync = 0; // Counted.
    } else if (base.overlapsCommunication) {
      // The gradients' buckets reduce under the (last micro-batch's)
      // backward: on the GPU, the step program's, @accumulate_last's or
      // the stage's backward_last's comm stream. (A later pipeline stage
      // finishes early and could hide more in the cool-down; not counted.)
      // Under ZB-H1 they are W's (wgrad_last), which is about the weight
      // gradients' half of the backward.
      double under = pp > 1 && c.schedule == "zb-h1" ? bw / 2 : bw;
      gradSync = std::max(0.0, gradSync - under);
    }
    out.dp = dp + gradSync;
    double optimizer = layers([](const PartCost &x) { return x.optimizer; }) +
                       restShare * rest.optimizer;
    out.optimizer = c.zero >= 1 ? optimizer / double(c.dp) : optimizer;
    return out;
  };

  double slowest = 0, worstOptimizer = 0, worstDp = 0, p2p = 0;
  double hardwareFlops = 0, modelFlops = 0;
  bool fits = true;
  std::string over;
  c.ladder.assign(pp, 0);
  c.ladderBase = choices.front().minLevel;
  c.rankFp8.assign(pp, choices.front().fp8);
  auto fitsDevice = [&](const StageMemory &mem) {
    return device.memoryBytes <= 0 || mem.total() <= double(device.memoryBytes);
  };
  for (int64_t r = 0; r < pp; ++r) {
    // The fastest recipe that fits (the least memory if none does). The
    // ladder's base level is the search's, the same in every choice.
    std::optional<RankEstimate> best;
    for (size_t i = 0; i < choices.size(); ++i) {
      if (!fixed.empty() && fixed[r] != i)
        continue;
      const Profiles &p = choices[i];
      RankEstimate got = rankWith(r, p);
      // Fitting before not, then the faster; among misfits the smaller.
      auto rankKey = [&](const RankEstimate &e) {
        bool fit = fitsDevice(e.mem);
        return std::pair{!fit, fit ? e.compute : e.mem.total()};
      };
      bool better = !best || rankKey(got) < rankKey(*best);
      if (better) {
        best = got;
        c.rankFp8[r] = p.fp8;
      }
    }
    const StageMemory &mem = best->mem;
    c.ladder[r] = best->ladder;
    if (!fitsDevice(mem)) {
      if (fits)
        over = formatv("pipeline rank {0} needs {1:F1} GiB, more than the "
                       "{2:F1} GiB of a {3}",
                       r, mem.total() / kGiB, device.memoryBytes / kGiB,
                       device.name);
      fits = false;
    }
    e.stages.push_back(mem);
    p2p = std::max(p2p, 2 * best->send);
    slowest = std::max(slowest, best->compute);
    hardwareFlops += best->hardwareFlops;
    modelFlops += best->modelFlops;
    worstDp = std::max(worstDp, best->dp);
    worstOptimizer = std::max(worstOptimizer, best->optimizer);
  }
  // One recipe on every rank is that recipe's plan.
  c.fp8 = c.rankFp8.front();
  if (llvm::all_equal(c.rankFp8))
    c.rankFp8.clear();
  double bubble = 0;
  if (pp > 1) {
    Expected<pipeline::ScheduleKind> kind =
        pipeline::parseScheduleKind(c.schedule);
    if (!kind)
      return kind.takeError();
    bubble = pipeline::formulaBubbleFraction(*kind, pp, m, v);
  }
  e.computeSeconds = double(m) * slowest;
  e.bubbleSeconds = bubble * e.computeSeconds;
  e.dpSeconds = worstDp;
  e.optimizerSeconds = worstOptimizer;
  e.p2pSeconds = double(m) * p2p;
  e.stepSeconds =
      e.computeSeconds + e.bubbleSeconds + e.dpSeconds + e.optimizerSeconds;
  int64_t world = inner * pp;
  e.tokensPerSecond = double(model.batch * model.seq) / e.stepSeconds;
  double peak = 0;
  if (auto it = device.peakFlops.find(model.narrow ? "bf16" : "f32");
      it != device.peakFlops.end())
    peak = it->second;
  e.flopsPerDevice = hardwareFlops / double(world) / e.stepSeconds;
  if (peak > 0) {
    e.mfu = modelFlops / double(world) / e.stepSeconds / peak;
    e.hfu = e.flopsPerDevice / peak;
  }
  e.fits = fits;
  e.why = over;
  e.candidate = std::move(c);
  return e;
}

std::string gib(double bytes) {
  if (bytes < kGiB)
    return formatv("{0:F1} MiB", bytes / double(1 << 20)).str();
  return formatv("{0:F1} GiB", bytes / kGiB).str();
}

} // namespace

std::string SliceKey::str() const {
  std::string s = "tp=" + std::to_string(tp);
  if (sequenceParallel)
    s += ",sp=on";
  if (ep > 1)
    s += ",ep=" + std::to_string(ep);
  if (cp > 1)
    s += ",cp=" + std::to_string(cp);
  s += " recompute=" + recompute;
  if (fp8 != "none")
    s += " fp8=" + fp8;
  if (microbatch != 1)
    s += " micro-batch=" + std::to_string(microbatch);
  if (routing != 1)
    s += " routed over " + std::to_string(routing) + " dp ranks";
  if (pipelined)
    s += " (as pipeline stages)";
  return s;
}

Plan Candidate::toPlan() const {
  Plan p;
  for (auto [axis, size] : {std::pair<const char *, int64_t>{"pp", pp},
                            {"dp", dp},
                            {"ep", ep},
                            {"cp", cp},
                            {"tp", tp}})
    if (size > 1)
      p.axes.push_back({axis, size});
  p.zero = zero;
  p.sequenceParallel = sequenceParallel;
  p.microbatches = microbatches;
  p.schedule = schedule;
  p.chunks = chunks;
  std::vector<std::string> ranges;
  for (auto [from, to] : stageRanges)
    ranges.push_back(std::to_string(from) + "-" + std::to_string(to));
  if (pp > 1)
    p.stages = join(ranges, ",");
  if (zero == 3 && microbatches > 1)
    p.gather = "microbatch";
  return p;
}

std::string Candidate::plan() const { return toPlan().str(); }

std::vector<int64_t> Candidate::layersOf(int64_t rank) const {
  std::vector<int64_t> mine;
  for (size_t s = rank; s < stageRanges.size(); s += pp)
    for (int64_t l = stageRanges[s].first; l <= stageRanges[s].second; ++l)
      mine.push_back(l);
  return mine;
}

std::string Candidate::recompute(int64_t layers) const {
  if (!uniformRecompute.empty())
    return uniformRecompute;
  // Each rank's layers in order, its ladder step spread over them.
  std::vector<std::string> policy(layers, "none");
  int64_t ranks = int64_t(ladder.size());
  for (int64_t r = 0; r < ranks; ++r) {
    std::vector<int64_t> mine = layersOf(r);
    auto [none, sel, full] =
        ladderCounts(int64_t(mine.size()), ladder[r], ladderBase);
    for (size_t k = 0; k < mine.size(); ++k)
      policy[mine[k]] = int64_t(k) < full         ? "full"
                        : int64_t(k) < full + sel ? "selective"
                                                  : "none";
    (void)none;
  }
  // Runs collapsed: "full*2,none*6"; one run is the uniform policy.
  std::string runs = printLayerRuns(policy);
  return llvm::is_contained(runs, ',') ? runs : policy.front();
}

std::string Candidate::fp8Choice(int64_t layers) const {
  if (rankFp8.empty())
    return fp8;
  std::vector<std::string> recipe(layers, fp8);
  for (int64_t r = 0; r < int64_t(rankFp8.size()); ++r)
    for (int64_t l : layersOf(r))
      recipe[l] = rankFp8[r];
  return printLayerRuns(recipe);
}

double Estimate::peakBytes() const {
  double peak = 0;
  for (const StageMemory &s : stages)
    peak = std::max(peak, s.total());
  return peak;
}

json::Object Estimate::toJSON(int64_t layers) const {
  json::Array memory;
  for (const StageMemory &s : stages)
    memory.push_back(json::Object{{"param_bytes", s.paramBytes},
                                  {"grad_bytes", s.gradBytes},
                                  {"optimizer_bytes", s.optimizerBytes},
                                  {"activation_bytes", s.activationBytes},
                                  {"reserve_bytes", s.reserveBytes},
                                  {"in_flight", s.inFlight}});
  return json::Object{{"plan", candidate.plan()},
                      {"recompute", candidate.recompute(layers)},
                      {"fp8", candidate.fp8Choice(layers)},
                      {"step_seconds", stepSeconds},
                      {"tokens_per_second", tokensPerSecond},
                      {"mfu", mfu},
                      {"hfu", hfu},
                      {"flops_per_device", flopsPerDevice},
                      {"compute_seconds", computeSeconds},
                      {"bubble_seconds", bubbleSeconds},
                      {"dp_seconds", dpSeconds},
                      {"optimizer_seconds", optimizerSeconds},
                      {"fits", fits},
                      {"why", why},
                      {"stages", std::move(memory)}};
}

Expected<Estimate> evaluate(const ModelShape &model, const Topology &topology,
                            Candidate candidate, const ProfileFn &profile) {
  Evaluator evaluator(model, topology, profile);
  std::vector<std::string> levels = {candidate.uniformRecompute.empty()
                                         ? std::string("none")
                                         : candidate.uniformRecompute};
  Expected<Profiles> p = evaluator.profiles(candidate, levels);
  if (!p)
    return p.takeError();
  return evaluator.estimate(std::move(candidate), ArrayRef<Profiles>(*p),
                            /*chooseLadder=*/false);
}

Expected<SearchResult> search(const ModelShape &model, const Topology &topology,
                              const SearchOptions &options,
                              const ProfileFn &profile) {
  // The ladder climbs a run of levels: none, selective, full.
  int lowest = 3, highest = -1;
  for (int level = 0; level < 3; ++level)
    if (llvm::is_contained(options.recompute, kLevels[level])) {
      lowest = std::min(lowest, level);
      highest = std::max(highest, level);
    }
  for (int level = lowest; level <= highest; ++level)
    if (!llvm::is_contained(options.recompute, kLevels[level]))
      return fail(Twine("the recomputation policies searched must be a run "
                        "of none, selective, full; ") +
                  kLevels[level] + " is missing");
  if (highest < 0)
    return fail("no recomputation policy to search");
  Evaluator evaluator(model, topology, profile);
  SearchResult result;
  const int64_t world = topology.worldSize();
  std::vector<Estimate> fitting;
  std::optional<Estimate> closest; // The least memory among misfits.
  std::set<std::string> mixedDone; // Plans whose recipe mix was tried.
  // The least state per rank among pruned placements.
  double leastState = std::numeric_limits<double>::infinity();
  // Expert parallelism for a mixture of experts (dividing the experts);
  // context parallelism for long sequences (an even split of each
  // sequence into 2 cp chunks, at least minContextPerRank tokens a rank).
  std::vector<int64_t> eps = {1}, cps = {1};
  if (model.experts > 1)
    eps = divisorsOf(model.experts);
  for (int64_t cp = 2; cp <= topology.devicesPerNode; cp *= 2)
    if (model.seq % (2 * cp) == 0 &&
        model.seq / cp >= options.minContextPerRank)
      cps.push_back(cp);
  struct Layout {
    int64_t tp, ep, cp;
    bool sp;
  };
  std::vector<Layout> layouts;
  for (int64_t tp : divisorsOf(topology.devicesPerNode)) {
    if (model.heads % tp || model.kvHeads % tp)
      continue;
    for (int64_t ep : eps)
      for (int64_t cp : cps)
        for (bool sp : {false, true}) {
          // sp needs tp; cp composes with neither sp nor ep (Plan.cpp).
          if ((sp && tp == 1) || (cp > 1 && (sp || ep > 1)) ||
              world % (tp * ep * cp))
            continue;
          layouts.push_back({tp, ep, cp, sp});
        }
  }
  for (const Layout &layout : layouts) {
    const int64_t tp = layout.tp, ep = layout.ep, cp = layout.cp;
    {
      for (const std::string &fp8 : options.fp8) {
        Candidate shape;
        shape.tp = tp;
        shape.sequenceParallel = layout.sp;
        shape.ep = ep;
        shape.cp = cp;
        shape.fp8 = fp8;
        Expected<Profiles> p = evaluator.profiles(shape, options.recompute);
        if (!p) {
          consumeError(p.takeError());
          continue;
        }
        for (int64_t pp : divisorsOf(world / (tp * ep * cp))) {
          if (pp > model.layers)
            break;
          int64_t dp = world / (tp * ep * cp * pp);
          // The batch splits over dp x ep (each ep rank routes its own).
          int64_t groups = dp * ep;
          if (model.batch % groups)
            continue;
          // What no recomputation or micro-batch size can shrink: skip the
          // placement if even ZeRO's most sharded state does not fit.
          const PartCost &r0 = p->byLevel.begin()->second.rest;
          double perRank =
              allLayers(model, *p,
                        [](const PartCost &l) {
                          return l.paramBytes + l.gradBytes + l.optimizerBytes;
                        }) /
                  double(pp) / double(dp) +
              (pp == 1 ? 1.0 : 0.5) *
                  (r0.paramBytes + r0.gradBytes + r0.optimizerBytes) /
                  double(dp);
          if (topology.device.memoryBytes > 0 &&
              perRank + double(topology.device.runtimeReserveBytes) >
                  double(topology.device.memoryBytes)) {
            ++result.pruned;
            leastState = std::min(leastState, perRank);
            continue;
          }
          for (int64_t b : divisorsOf(model.batch / groups)) {
            if (b > options.maxMicrobatchSize ||
                (b > 1 && b * model.seq / cp > options.maxMicrobatchTokens))
              break;
            int64_t m = model.batch / (groups * b);
            // The slices at this micro-batch (one size may not build where
            // another does, e.g. an attention scratch past its limit).
            Candidate sized = shape;
            sized.microbatchSize = b;
            sized.pp = pp;
            sized.dp = dp; // A capacity's routing group.
            Expected<Profiles> atB =
                b == shape.microbatchSize && pp == 1 &&
                        (dp == 1 || !model.capacityLimited)
                    ? Expected<Profiles>(*p)
                    : evaluator.profiles(sized, options.recompute);
            if (!atB) {
              consumeError(atB.takeError());
              continue;
            }
            std::vector<std::pair<std::string, int64_t>> schedules;
            if (pp == 1) {
              schedules.push_back({"1f1b", 1});
            } else {
              for (const std::string &s : options.schedules) {
                if (m < pp)
                  continue;
                if (s != "interleaved") {
                  schedules.push_back({s, 1});
                  continue;
                }
                for (int64_t v : {2, 4})
                  if (m % pp == 0 && model.layers >= pp * v)
                    schedules.push_back({s, v});
              }
            }
            for (const auto &[schedule, v] : schedules)
              for (int zero : options.zero) {
                if (zero > 0 && dp < 2)
                  continue;
                Candidate c = shape;
                c.pp = pp;
                c.dp = dp;
                c.zero = zero;
                c.microbatchSize = b;
                c.microbatches = m;
                c.schedule = schedule;
                c.chunks = v;
                Expected<Estimate> e =
                    evaluator.estimate(c, ArrayRef<Profiles>(*atB), true);
                if (!e)
                  return e.takeError();
                ++result.evaluated;
                if (e->fits) {
                  fitting.push_back(std::move(*e));
                } else if (!closest || e->peakBytes() < closest->peakBytes()) {
                  closest = std::move(*e);
                }
                // Each pipeline rank's layers in the recipe fastest there
                // (once per plan, whichever recipe's loop gets here: one
                // whose slices fail must not keep the others' mix out).
                if (pp == 1 || options.fp8.size() < 2 ||
                    !mixedDone.insert(c.plan()).second)
                  continue;
                Expected<std::optional<Estimate>> mixed =
                    evaluator.mixedRecipes(c, options);
                if (!mixed)
                  return mixed.takeError();
                if (!*mixed)
                  continue;
                ++result.evaluated;
                if ((*mixed)->fits)
                  fitting.push_back(std::move(**mixed));
                else if (!closest ||
                         (*mixed)->peakBytes() < closest->peakBytes())
                  closest = std::move(**mixed);
              }
          }
        }
      }
    }
  }
  result.profiles = evaluator.profiledCount();
  for (const auto &[key, error] : evaluator.failed())
    result.unbuilt.push_back(key.str() + ": " + error);
  if (fitting.empty()) {
    // What did not build, after whatever else is said: a compiler failure
    // must not pass for a plan that does not fit.
    std::string unbuilt;
    for (const std::string &why : result.unbuilt)
      unbuilt += "\n  " + why;
    if (!unbuilt.empty())
      unbuilt = "\nslice configurations that did not build (their plans "
                "were not searched):" +
                unbuilt;
    if (closest)
      return fail("no plan fits " + topology.name + " (" +
                  std::to_string(result.evaluated) +
                  " evaluated); the closest, " + closest->candidate.plan() +
                  " with --recompute " +
                  closest->candidate.recompute(model.layers) + ": " +
                  closest->why + unbuilt);
    if (result.pruned > 0)
      return fail(formatv("no plan fits {0}: the parameters, gradients and "
                          "optimizer state alone need at least {1} a device "
                          "however they are split ({2} placements pruned); "
                          "a device has {3}{4}",
                          topology.name, gib(leastState), result.pruned,
                          gib(double(topology.device.memoryBytes)), unbuilt));
    return fail("no plan could be built for " + topology.name +
                (unbuilt.empty() ? std::string(" (no tp divides the heads and "
                                               "the node's devices)")
                                 : unbuilt));
  }
  // Equally fast: the one that leaves more memory free.
  llvm::stable_sort(fitting, [](const Estimate &a, const Estimate &b) {
    return a.stepSeconds != b.stepSeconds ? a.stepSeconds < b.stepSeconds
                                          : a.peakBytes() < b.peakBytes();
  });
  const Estimate &winner = fitting.front();
  // Runners-up: the best plan that differs from the winner in each
  // choice, with what it lost on.
  auto lostBy = [&](const Estimate &e) {
    double slower = e.stepSeconds / winner.stepSeconds - 1;
    if (slower < 5e-4) {
      double more = e.peakBytes() - winner.peakBytes();
      return "as fast (within 0.05%), " + gib(std::abs(more)) +
             (more >= 0 ? " more memory" : " less memory");
    }
    struct Part {
      const char *name;
      double delta;
    } parts[] = {
        {"compute", e.computeSeconds - winner.computeSeconds},
        {"pipeline bubble", e.bubbleSeconds - winner.bubbleSeconds},
        {"data-parallel communication", e.dpSeconds - winner.dpSeconds},
        {"optimizer", e.optimizerSeconds - winner.optimizerSeconds}};
    const Part *worst = &parts[0];
    for (const Part &part : parts)
      if (part.delta > worst->delta)
        worst = &part;
    return formatv("{0:F1}% slower: {1} +{2:F1} ms", 100 * slower, worst->name,
                   1e3 * worst->delta)
        .str();
  };
  struct Dimension {
    const char *name;
    std::function<bool(const Candidate &, const Candidate &)> differs;
  } dimensions[] = {
      {"tp", [](auto &a, auto &b) { return a.tp != b.tp; }},
      {"ep", [](auto &a, auto &b) { return a.ep != b.ep; }},
      {"cp", [](auto &a, auto &b) { return a.cp != b.cp; }},
      {"pp", [](auto &a, auto &b) { return a.pp != b.pp; }},
      {"sp", [](auto &a,
                auto &b) { return a.sequenceParallel != b.sequenceParallel; }},
      {"zero", [](auto &a, auto &b) { return a.zero != b.zero; }},
      {"micro-batch",
       [](auto &a, auto &b) { return a.microbatchSize != b.microbatchSize; }},
      {"schedule",
       [](auto &a, auto &b) {
         return a.schedule != b.schedule || a.chunks != b.chunks;
       }},
      {"fp8", [](auto &a,
                 auto &b) { return a.fp8 != b.fp8 || a.rankFp8 != b.rankFp8; }},
      {"recompute", [](auto &a, auto &b) { return a.ladder != b.ladder; }},
  };
  std::set<std::string> shown;
  for (size_t i = 0; i < fitting.size() && i < size_t(options.topK); ++i) {
    result.best.push_back(fitting[i]);
    shown.insert(fitting[i].candidate.plan() +
                 fitting[i].candidate.recompute(model.layers));
  }
  for (size_t i = 1; i < result.best.size(); ++i)
    result.best[i].why = lostBy(result.best[i]);
  for (const Dimension &d : dimensions) {
    for (const Estimate &e : fitting) {
      if (!d.differs(e.candidate, winner.candidate))
        continue;
      std::string key =
          e.candidate.plan() + e.candidate.recompute(model.layers);
      if (shown.insert(key).second) {
        Estimate loser = e;
        loser.why = std::string("best other ") + d.name + ": " + lostBy(e);
        result.runnersUp.push_back(std::move(loser));
      }
      break;
    }
  }
  if (closest && closest->stepSeconds < winner.stepSeconds) {
    Estimate loser = *closest;
    loser.why = formatv("{0:F1}% faster but does not fit: {1}",
                        100 * (1 - closest->stepSeconds / winner.stepSeconds),
                        closest->why);
    result.runnersUp.push_back(std::move(loser));
  }
  return result;
}

std::string table(const std::vector<Estimate> &estimates,
                  const ModelShape &model, const Topology &topology) {
  std::string out =
      "| # | plan | recompute | fp8 | step (ms) | tokens/s | MFU | memory "
      "(fullest rank) | why not first |\n|---|---|---|---|---|---|---|---|---|"
      "\n";
  int64_t i = 0;
  for (const Estimate &e : estimates)
    out += formatv("| {0} | {1} | {2} | {3} | {4:F1} | {5:F0} | {6:F1}% | "
                   "{7} of {8} | {9} |\n",
                   ++i, e.candidate.plan(), e.candidate.recompute(model.layers),
                   e.candidate.fp8Choice(model.layers), 1e3 * e.stepSeconds,
                   e.tokensPerSecond, 100 * e.mfu, gib(e.peakBytes()),
                   gib(double(topology.device.memoryBytes)), e.why)
               .str();
  return out;
}

} // namespace weft::planner
