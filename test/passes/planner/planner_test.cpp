//===- planner_test.cpp - the planner's composition and search ------------===//
//
// With made-up slice profiles, whose every number is known, so each rule of
// Planner.h is checked against a value computed here by hand.
//
//===----------------------------------------------------------------------===//

#include "dialects/sched/IR/SchedOps.h"
#include "passes/costmodel/CostModel.h"
#include "passes/planner/Planner.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace weft;
using namespace weft::planner;

namespace {

constexpr double kGiB = double(int64_t(1) << 30);

/// A layer of 1 ms forward, 2 ms backward per sequence of the micro-batch
/// (plus 0.1 ms of fixed cost each), 1 GiB of parameters, 0.5 GiB of
/// activations per sequence; selective keeps half of that at +0.2 ms, full
/// a tenth at +1 ms. tp divides all of it.
ProfileFn toyProfiles(int *calls = nullptr) {
  return [calls](const SliceKey &key) -> llvm::Expected<SliceProfile> {
    if (calls)
      ++*calls;
    if (key.tp == 3)
      return llvm::createStringError("tp=3 does not divide the heads");
    double t = double(key.tp);
    double keep = key.recompute == "full"        ? 0.1
                  : key.recompute == "selective" ? 0.5
                                                 : 1.0;
    double extra = key.recompute == "full"        ? 1e-3
                   : key.recompute == "selective" ? 2e-4
                                                  : 0;
    auto part = [&](int64_t b) {
      PartCost c;
      c.forward = (1e-4 + b * 1e-3) / t;
      c.backward = (1e-4 + b * 2e-3) / t + b * extra / t;
      c.optimizer = 1e-3 / t;
      c.paramBytes = kGiB / t;
      c.gradBytes = kGiB / t;
      c.optimizerBytes = 2 * kGiB / t;
      c.activationBytes = b * keep * 0.5 * kGiB / t;
      c.flops = b * 3e12 / t;
      c.modelFlops = b * 3e12 / t;
      c.tensors = 4;
      return c;
    };
    SliceProfile p;
    int64_t b = key.microbatch;
    p.layer = part(b);
    p.rest = part(b);
    p.rest.activationBytes = 0;
    p.rest.workingBytes = b * 0.25 * kGiB;
    p.boundaryBytes = b * (16 << 20);
    p.overlapsCommunication = true; // As the GPU's lowering.
    p.overlapsCollectives = true;
    return p;
  };
}

ModelShape toyModel() {
  ModelShape m;
  m.name = "toy";
  m.layers = 8;
  m.heads = m.kvHeads = 8;
  m.hidden = 1024;
  m.vocab = 1000;
  m.batch = 16;
  m.seq = 1024;
  return m;
}

Topology toyTopology(double memoryGiB, int64_t nodes = 1) {
  Topology t;
  t.name = "toy";
  t.nodes = nodes;
  t.devicesPerNode = 4;
  t.device.name = "toy-gpu";
  t.device.memoryBytes = int64_t(memoryGiB * kGiB);
  t.device.memoryBandwidth = 1e12;
  t.device.peakFlops["bf16"] = 1e15;
  t.device.runtimeReserveBytes = int64_t(kGiB);
  t.intraNode = {100e9, 1e-6};
  t.interNode = {10e9, 5e-6};
  return t;
}

/// `microbatches` micro-batches of one sequence, no recomputation.
Candidate oneSequenceMicrobatches(int64_t microbatches) {
  Candidate c;
  c.microbatchSize = 1;
  c.microbatches = microbatches;
  c.uniformRecompute = "none";
  return c;
}

TEST(Planner, OneRankIsItsSlicesSummed) {
  Candidate c;
  c.microbatchSize = 2;
  c.microbatches = 8;
  c.uniformRecompute = "none";
  ModelShape m = toyModel();
  auto e = evaluate(m, toyTopology(1000), c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  // Per micro-batch of two: 9 parts (8 layers and the rest), each
  // 0.1 + 2 ms forward and 0.1 + 4 ms backward; eight micro-batches.
  EXPECT_NEAR(e->computeSeconds, 8 * 9 * (2.1e-3 + 4.1e-3), 1e-9);
  EXPECT_NEAR(e->optimizerSeconds, 9e-3, 1e-12);
  EXPECT_EQ(e->dpSeconds, 0);
  EXPECT_EQ(e->bubbleSeconds, 0);
  // Memory: 9 GiB each of parameters and gradients, 18 of Adam, the kept
  // activations of one micro-batch (8 x 1 GiB), the rest's working set at
  // two sequences (0.5 GiB), the reserve.
  ASSERT_EQ(e->stages.size(), 1u);
  EXPECT_DOUBLE_EQ(e->stages[0].activationBytes, 8.5 * kGiB);
  EXPECT_DOUBLE_EQ(e->peakBytes(), (9 + 9 + 18 + 8.5 + 1) * kGiB);
  // Micro-batches alone run on one rank.
  EXPECT_EQ(c.plan(), "microbatches=8");
}

TEST(Planner, DataParallelGradientsReduceInBucketsUnderTheLastBackward) {
  Candidate c;
  c.dp = 4;
  c.microbatchSize = 1;
  c.microbatches = 4;
  c.uniformRecompute = "none";
  Topology topology = toyTopology(1000);
  auto e = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  // 9 GiB of gradients in 25 MiB buckets, each all-reduced over four ranks
  // of one node, under the last micro-batch's backward (@accumulate_last:
  // 9 parts of 0.1 + 2 ms), which hides that much.
  double buckets = std::ceil(9 * 1024 / 25.0);
  double bucket =
      collectiveSeconds(sched::CollectiveKind::all_reduce, 9 * kGiB / buckets,
                        9 * kGiB / buckets, 4, topology.intraNode);
  EXPECT_NEAR(e->dpSeconds, buckets * bucket - 9 * 2.1e-3, 1e-9);
  EXPECT_EQ(c.plan(), "dp=4,microbatches=4");
  // With one micro-batch of four the backward is 9 parts of 0.1 + 4 x 2 ms.
  c.microbatches = 1;
  c.microbatchSize = 4;
  auto hidden = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(hidden));
  EXPECT_NEAR(hidden->dpSeconds, buckets * bucket - 9 * 8.1e-3, 1e-9);
  // ZeRO-1 divides the optimizer's state and time by dp.
  c.zero = 1;
  auto zero = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(zero));
  EXPECT_DOUBLE_EQ(zero->stages[0].optimizerBytes, 18 * kGiB / 4);
  EXPECT_NEAR(zero->optimizerSeconds, 9e-3 / 4, 1e-12);
  // Under a pipeline each stage reduces its own 4.5 GiB (four layers and
  // half the rest) in buckets over dp=2 in its last backward: stage 0's
  // (4 layers of 0.1 + 2 ms) hides the least.
  Candidate piped = oneSequenceMicrobatches(4);
  piped.pp = 2;
  piped.dp = 2;
  piped.stageRanges = {{0, 3}, {4, 7}};
  auto staged = evaluate(toyModel(), topology, piped, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(staged)) << llvm::toString(staged.takeError());
  double stageBuckets = std::ceil(4.5 * 1024 / 25.0);
  double stageBucket = collectiveSeconds(
      sched::CollectiveKind::all_reduce, 4.5 * kGiB / stageBuckets,
      4.5 * kGiB / stageBuckets, 2, topology.intraNode);
  EXPECT_NEAR(staged->dpSeconds, stageBuckets * stageBucket - 4 * 2.1e-3, 1e-9);
}

// Expert parallelism: the experts' gradients reduce over dp alone, the
// rest over dp x ep; the batch splits over dp x ep.
TEST(Planner, ExpertGradientsReduceOverDataParallelRanksOnly) {
  ProfileFn experts = [](const SliceKey &key) -> llvm::Expected<SliceProfile> {
    llvm::Expected<SliceProfile> p = toyProfiles()(key);
    if (p) // Half of each layer's gradients (2 of its 4 tensors) experts'.
      p->layer.expertGradBytes = p->layer.gradBytes / 2,
      p->layer.expertTensors = 2;
    return p;
  };
  Candidate c = oneSequenceMicrobatches(8);
  c.dp = 2;
  c.ep = 2;
  Topology topology = toyTopology(1000);
  auto e = evaluate(toyModel(), topology, c, experts);
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  auto reduce = [&](double bytes, int64_t group) {
    double buckets = std::ceil(bytes / (25.0 * (1 << 20)));
    return buckets * collectiveSeconds(sched::CollectiveKind::all_reduce,
                                       bytes / buckets, bytes / buckets, group,
                                       topology.intraNode);
  };
  // 8 layers: 4 GiB of experts' gradients over dp=2; 4 GiB of the layers'
  // others and the rest's 1 GiB over 4 ranks; in 25 MiB buckets under the
  // last micro-batch's backward (9 parts of 0.1 + 2 ms).
  EXPECT_NEAR(e->dpSeconds,
              reduce(4 * kGiB, 2) + reduce(5 * kGiB, 4) - 9 * 2.1e-3, 1e-9);
  EXPECT_EQ(c.plan(), "dp=2,ep=2,microbatches=8");
  EXPECT_EQ(c.stageRanks(), 4);
}

TEST(Planner, PipelineBubbleAndInFlightFollowTheSchedule) {
  Candidate c;
  c.pp = 4;
  c.microbatchSize = 1;
  c.microbatches = 8;
  c.uniformRecompute = "none";
  c.stageRanges = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  Topology topology = toyTopology(1000);
  auto e = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  // The last stage is slowest (two layers and the rest): 3 parts of
  // 1.1 + 2.1 ms, plus a boundary send each way per micro-batch.
  double send = 16.0 * (1 << 20) / topology.intraNode.bandwidth +
                topology.intraNode.latency;
  double stage = 3 * 3.2e-3 + 2 * send;
  EXPECT_NEAR(e->computeSeconds, 8 * stage, 1e-9);
  EXPECT_NEAR(e->bubbleSeconds, 3.0 / 8 * 8 * stage, 1e-9); // (p-1)/m.
  // 1F1B keeps p - s micro-batches on stage s.
  ASSERT_EQ(e->stages.size(), 4u);
  EXPECT_EQ(e->stages[0].inFlight, 4);
  EXPECT_EQ(e->stages[3].inFlight, 1);
  // Stage 0: 4 micro-batches of 2 layers, and the rest's working set
  // without the head's logits and their gradient (2 x 4 bytes x 1024
  // positions x 1000 words), which only the last stage holds.
  double logits = 2 * 4 * 1024 * 1000.0;
  EXPECT_DOUBLE_EQ(e->stages[0].activationBytes,
                   (4 * 2 * 0.5 + 0.25) * kGiB - logits);
  EXPECT_DOUBLE_EQ(e->stages[3].activationBytes, (1 * 2 * 0.5 + 0.25) * kGiB);
  // ZB-H1's bubble is a third of that.
  c.schedule = "zb-h1";
  auto zb = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(zb));
  EXPECT_NEAR(zb->bubbleSeconds, e->bubbleSeconds / 3, 1e-9);
  EXPECT_EQ(c.plan(),
            "pp=4,microbatches=8,schedule=zb-h1,stages=0-1,2-3,4-5,6-7");
}

/// The toy with one head (no tp) and a batch of 4.
ModelShape oneHeadModel() {
  ModelShape m = toyModel();
  m.heads = m.kvHeads = 1;
  m.batch = 4;
  return m;
}

/// 1F1B, micro-batches of one sequence, no ZeRO.
SearchOptions oneScheduleOptions() {
  SearchOptions options;
  options.schedules = {"1f1b"};
  options.maxMicrobatchSize = 1;
  options.zero = {0};
  return options;
}

TEST(Planner, EachStageRecomputesOnlyWhatItMustToFit) {
  // Two devices of 27 GiB and one head (no tp): dp=2 cannot hold the
  // state, so pp=2. Stage 0 holds layers 0-4 (the head's time on stage 1)
  // and two micro-batches in flight, stage 1 layers 5-7 and one.
  Topology topology = toyTopology(27);
  topology.devicesPerNode = 2;
  auto result =
      search(oneHeadModel(), topology, oneScheduleOptions(), toyProfiles());
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  const Estimate &best = result->best.front();
  ASSERT_EQ(best.candidate.pp, 2);
  // Stage 0: 5.5 + 5.5 + 11 GiB of state, 1 reserve, 0.25 working: 3.75
  // GiB left for 2 micro-batches x 5 layers of 0.5 GiB (none) or 0.25
  // (selective): three selective layers (3.5 GiB) fit, two do not (4).
  // Stage 1 has room for all without.
  EXPECT_EQ(best.candidate.stageRanges,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {5, 7}}));
  EXPECT_EQ(best.candidate.ladder, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(best.candidate.recompute(8), "selective*3,none*5");
  EXPECT_TRUE(best.fits);
  EXPECT_LE(best.peakBytes(), 27 * kGiB);
}

// An FP8 recipe per layer group: the toy's tensorwise halves a layer's
// time and keeps half again as much for the backward (the FP8 copies
// beside the bf16 values). Two devices of 29 GiB, pp=2, 1F1B over four
// micro-batches: stage 0 (two in flight) fits its five layers only in
// bf16, stage 1 takes FP8, and the stages are cut again for the ranks'
// speeds: stage 0 three layers (9.6 ms), stage 1 five at half time and
// the rest (5 x 1.6 + 3.2 = 11.2 ms), where bf16 everywhere is bound by
// stage 0's 16 ms and FP8 everywhere does not fit.
TEST(Planner, EachPipelineRankTakesTheFastestFp8RecipeThatFits) {
  ProfileFn toy = toyProfiles();
  ProfileFn profile =
      [toy](const SliceKey &key) -> llvm::Expected<SliceProfile> {
    llvm::Expected<SliceProfile> p = toy(key);
    if (p && key.fp8 == "tensorwise") {
      p->layer.forward /= 2;
      p->layer.backward /= 2;
      p->layer.activationBytes *= 1.5;
    }
    return p;
  };
  Topology topology = toyTopology(29);
  topology.devicesPerNode = 2;
  SearchOptions options = oneScheduleOptions();
  options.recompute = {"none"};
  options.fp8 = {"none", "tensorwise"};
  auto result = search(oneHeadModel(), topology, options, profile);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  const Estimate &best = result->best.front();
  ASSERT_EQ(best.candidate.pp, 2);
  EXPECT_EQ(best.candidate.rankFp8,
            (std::vector<std::string>{"none", "tensorwise"}));
  EXPECT_EQ(best.candidate.fp8Choice(8), "none*3,tensorwise*5");
  EXPECT_EQ(best.candidate.stageRanges,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {3, 7}}));
  double send = 16.0 * (1 << 20) / topology.intraNode.bandwidth +
                topology.intraNode.latency;
  EXPECT_NEAR(best.computeSeconds, 4 * (11.2e-3 + 2 * send), 1e-9);
  EXPECT_TRUE(best.fits);
  // Stage 1: 22 GiB of state, the reserve, five FP8 layers' 0.75 GiB and
  // the working set.
  ASSERT_EQ(best.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(best.stages[1].activationBytes, (5 * 0.75 + 0.25) * kGiB);
  // bf16 everywhere is among the plans, slower by stage 0's 16 ms.
  auto bf16 = llvm::find_if(result->best, [](const Estimate &e) {
    return e.candidate.fp8Choice(8) == "none";
  });
  ASSERT_NE(bf16, result->best.end());
  EXPECT_NEAR(bf16->computeSeconds, 4 * (16e-3 + 2 * send), 1e-9);
}

TEST(Planner, SearchSkipsWhatCannotBuildAndNamesTheClosestMisfit) {
  int calls = 0;
  SearchOptions options;
  options.recompute = {"none"};
  options.zero = {0};
  ModelShape m = toyModel();
  m.heads = m.kvHeads = 12;
  // A node of 6: tp=3 divides it and the heads, and its slices do not
  // build (the toy says so), which leaves it out. 7.5 GiB devices: state
  // sharded over tp=6 (6 GiB and the reserve) passes the pruning, but the
  // activations do not fit, and without recomputation nothing does.
  Topology topology = toyTopology(7.5);
  topology.devicesPerNode = 6;
  auto none = search(m, topology, options, toyProfiles(&calls));
  ASSERT_FALSE(static_cast<bool>(none));
  std::string error = llvm::toString(none.takeError());
  EXPECT_NE(error.find("no plan fits toy ("), std::string::npos) << error;
  EXPECT_NE(error.find("the closest, "), std::string::npos) << error;
  EXPECT_NE(error.find("with --recompute none: pipeline rank"),
            std::string::npos)
      << error;
  EXPECT_GT(calls, 0);
  // With room, the winner is first; every runner-up is no faster and says
  // why.
  auto found = search(m, toyTopology(1000), options, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(found)) << llvm::toString(found.takeError());
  ASSERT_FALSE(found->runnersUp.empty());
  for (const Estimate &e : found->runnersUp) {
    EXPECT_GE(e.stepSeconds, found->best.front().stepSeconds);
    EXPECT_NE(e.why.find("best other "), std::string::npos) << e.why;
  }
  EXPECT_TRUE(found->unbuilt.empty());
  // On nodes of 6 with room, the tp=3 slices that did not build are named
  // with why (weftc plan prints them): their plans were not searched.
  Topology roomy = toyTopology(1000);
  roomy.devicesPerNode = 6;
  auto without = search(m, roomy, options, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(without))
      << llvm::toString(without.takeError());
  ASSERT_FALSE(without->unbuilt.empty());
  EXPECT_NE(without->unbuilt.front().find(
                "tp=3 recompute=none: tp=3 does not divide the heads"),
            std::string::npos)
      << without->unbuilt.front();
  for (const Estimate &e : without->best)
    EXPECT_NE(e.candidate.tp, 3);
  // Policies that skip a level are not a ladder.
  options.recompute = {"none", "full"};
  auto gap = search(m, toyTopology(1000), options, toyProfiles());
  ASSERT_FALSE(static_cast<bool>(gap));
  EXPECT_EQ(llvm::toString(gap.takeError()),
            "the recomputation policies searched must be a run of none, "
            "selective, full; selective is missing");
}

/// A collective over dp=4 of the toy's 36 tensors (9 parts of 4), each on
/// its own: `bytes` in, `out` out, all of them together.
double perTensor(const Topology &topology, sched::CollectiveKind kind,
                 double bytes, double out) {
  return 36 *
         collectiveSeconds(kind, bytes / 36, out / 36, 4, topology.intraNode);
}

// As Weft's programs run them, for this bf16 toy: ZeRO-1's f32 masters are
// stored split, so it reduce-scatters each micro-batch's gradients onto
// them as ZeRO-2 does (an f32 model's ZeRO-1 would all-reduce once, under
// the last micro-batch's backward); ZeRO-2 reduce-scatters each micro-batch's
// (@accumulate), under its backward on the toy's comm stream (read one
// later: all but what the backward, 9 parts of 0.1 + 2 ms, cannot cover),
// and all-reduces each tensor's partial norm; both gather the updated
// parameters back.
TEST(Planner, ZeroTwoReducesEveryMicrobatch) {
  Topology topology = toyTopology(1000);
  using Kind = sched::CollectiveKind;
  auto per = [&](Kind kind, double bytes, double out) {
    return perTensor(topology, kind, bytes, out);
  };
  double scatter = per(Kind::reduce_scatter, 9 * kGiB, 9 * kGiB / 4);
  double gather = per(Kind::all_gather, 9 * kGiB / 4, 9 * kGiB);
  // The norm's partial sums of squares add up locally: one all-reduce.
  double norms =
      collectiveSeconds(Kind::all_reduce, 4, 4, 4, topology.intraNode);
  double backward = 9 * (1e-4 + 2e-3);
  ASSERT_GT(scatter, backward + scatter / 36);
  for (int zero : {1, 2}) {
    Candidate c;
    c.dp = 4;
    c.zero = zero;
    c.microbatches = 4;
    c.uniformRecompute = "none";
    auto e = evaluate(toyModel(), topology, c, toyProfiles());
    ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
    EXPECT_NEAR(e->dpSeconds,
                4 * (scatter - backward) + (zero == 2 ? norms : 0) + gather,
                1e-9)
        << "zero=" << zero;
  }
  // An f32 model's ZeRO-1 keeps whole gradients: one bucketed all-reduce,
  // under the last micro-batch's backward (@accumulate_last).
  ModelShape f32 = toyModel();
  f32.narrow = false;
  Candidate c;
  c.dp = 4;
  c.zero = 1;
  c.microbatches = 4;
  c.uniformRecompute = "none";
  auto e = evaluate(f32, topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  double buckets = std::ceil(9 * 1024 / 25.0);
  double reduce =
      buckets * collectiveSeconds(Kind::all_reduce, 9 * kGiB / buckets,
                                  9 * kGiB / buckets, 4, topology.intraNode);
  EXPECT_NEAR(e->dpSeconds, reduce - backward + gather, 1e-9);
}

// ZeRO-3 gathers each micro-batch's parameters in its forward and again in
// its backward, and reduce-scatters its gradients there. With the GPU's
// overlap passes a pass's collectives, one after another on the comm
// stream, hide under its compute but for the first tensor's gather and the
// last tensor's reduction; without them every one is waited for.
TEST(Planner, ZeroThreeHidesItsCollectivesUnderCompute) {
  Topology topology = toyTopology(1000);
  using Kind = sched::CollectiveKind;
  auto per = [&](Kind kind, double bytes, double out) {
    return perTensor(topology, kind, bytes, out);
  };
  double scatter = per(Kind::reduce_scatter, 9 * kGiB, 9 * kGiB / 4);
  double gather = per(Kind::all_gather, 9 * kGiB / 4, 9 * kGiB);
  // One sequence a micro-batch: 9 parts of 0.1 + 1 ms forward, 0.1 + 2 ms
  // backward.
  double forward = 9 * 1.1e-3, backward = 9 * 2.1e-3;
  auto exposed = [](double comm, double edges, double compute) {
    return edges + std::max(0.0, comm - edges - compute);
  };
  Candidate c;
  c.dp = 4;
  c.zero = 3;
  c.microbatches = 4;
  c.uniformRecompute = "none";
  auto overlapped = evaluate(toyModel(), topology, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(overlapped))
      << llvm::toString(overlapped.takeError());
  EXPECT_NEAR(
      overlapped->dpSeconds,
      4 * (exposed(gather, gather / 36, forward) +
           exposed(gather + scatter, gather / 36 + scatter / 36, backward)),
      1e-12);
  ProfileFn plain = [](const SliceKey &key) -> llvm::Expected<SliceProfile> {
    llvm::Expected<SliceProfile> p = toyProfiles()(key);
    if (p)
      p->overlapsCollectives = false;
    return p;
  };
  auto waited = evaluate(toyModel(), topology, c, plain);
  ASSERT_TRUE(static_cast<bool>(waited)) << llvm::toString(waited.takeError());
  EXPECT_NEAR(waited->dpSeconds, 4 * (2 * gather + scatter), 1e-12);
  EXPECT_LT(overlapped->dpSeconds, waited->dpSeconds);
}

// A pipeline that spans nodes sends over the inter-node link; ZB-H1 also
// holds what waits for W.
TEST(Planner, PipelineLinksAndZeroBubbleMemory) {
  Candidate c;
  c.pp = 4;
  c.microbatches = 8;
  c.uniformRecompute = "none";
  c.stageRanges = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  Topology within = toyTopology(1000), across = within;
  across.nodes = 2;
  across.devicesPerNode = 2;
  auto near = evaluate(toyModel(), within, c, toyProfiles());
  auto far = evaluate(toyModel(), across, c, toyProfiles());
  ASSERT_TRUE(near && far);
  double send = [](const LinkSpec &l) {
    return 16.0 * (1 << 20) / l.bandwidth + l.latency;
  }(across.interNode);
  EXPECT_NEAR(far->computeSeconds, 8 * (3 * 3.2e-3 + 2 * send), 1e-9);
  EXPECT_GT(far->computeSeconds, near->computeSeconds);
  c.schedule = "zb-h1";
  auto zb = evaluate(toyModel(), within, c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(zb)) << llvm::toString(zb.takeError());
  // At least one more micro-batch's activations on the first stage.
  EXPECT_GE(zb->stages[0].activationBytes,
            near->stages[0].activationBytes + 2 * 0.5 * kGiB);
}

TEST(Planner, InterleavedChunksAreEvenAndTheRecomputationFollowsTheRanks) {
  Candidate c;
  c.pp = 2;
  c.chunks = 2;
  c.schedule = "interleaved";
  c.microbatches = 4;
  c.uniformRecompute = "none";
  auto e = evaluate(toyModel(), toyTopology(1000), c, toyProfiles());
  ASSERT_TRUE(static_cast<bool>(e)) << llvm::toString(e.takeError());
  EXPECT_EQ(e->candidate.plan(),
            "pp=2,microbatches=4,schedule=interleaved,virtual=2,"
            "stages=0-1,2-3,4-5,6-7");
  // Rank 0 holds chunks 0 and 2: layers 0-1 and 4-5; a ladder of 3 there
  // recomputes its first three (0, 1 and 4) selectively; rank 1 (2-3,
  // 6-7) none.
  Candidate laddered = e->candidate;
  laddered.uniformRecompute.clear();
  laddered.ladder = {3, 0};
  laddered.ladderBase = 0;
  EXPECT_EQ(laddered.recompute(8), "selective*2,none*2,selective,none*3");
}

} // namespace
