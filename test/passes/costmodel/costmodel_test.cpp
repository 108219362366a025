//===- costmodel_test.cpp - sched instructions and programs, timed --------===//
//
// Hand-written sched programs on datasheet topologies, against the figures
// CostModel.h's rules give when worked out by hand.

#include "passes/costmodel/CostModel.h"

#include "dialects/sched/IR/SchedDialect.h"
#include "dialects/weft/IR/WeftDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace weft;
using namespace mlir;

namespace {
// A [1024 x 1024] bf16 GEMM on "compute" and an all-reduce of 4 MiB on
// "comm" over `axes` of a dp=2 x tp=8 mesh; `ordered` makes the collective
// wait for the GEMM.
std::string program(const std::string &axes, bool ordered) {
  std::string buffer = "!sched.buffer<1024x1024xbf16>";
  std::string order = ordered ? "  sched.record 0 on \"compute\"\n"
                                "  sched.wait 0 on \"comm\"\n"
                              : "";
  return R"(sched.mesh @mesh axes ["dp", "tp"] sizes [2, 8]
sched.program @step arena(8388608) align(256) events(1) streams ["compute", "comm"] {
^bb0(%a: )" +
         buffer + ", %b: " + buffer + R"(, %g: !sched.buffer<1048576xf32>):
  %c = sched.alloc offset(0) live(0, )" +
         std::string(ordered ? "4" : "2") + ") : " + buffer + R"(
  sched.gemm %a, %b -> %c mnk [1024, 1024, 1024] batch 1 ld [1024, 1024, 1024] strides [0, 0, 0] epilogue none : )" +
         buffer + ", " + buffer + " -> " + buffer + "\n" + order +
         R"(  sched.collective all_reduce sum %g -> %g over @mesh [)" + axes +
         R"(] on "comm" : !sched.buffer<1048576xf32> -> !sched.buffer<1048576xf32>
  sched.return ["c"] %c : )" +
         buffer + "\n}\n";
}

struct Parsed {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::string diagnostics;
  sched::ProgramOp step() {
    return module ? module->lookupSymbol<sched::ProgramOp>("step")
                  : sched::ProgramOp();
  }
};

std::unique_ptr<Parsed> parse(const std::string &text) {
  auto p = std::make_unique<Parsed>();
  p->context.loadDialect<sched::SchedDialect>();
  p->context.getDiagEngine().registerHandler(
      [q = p.get()](Diagnostic &d) { q->diagnostics += d.str() + "\n"; });
  p->module = parseSourceString<ModuleOp>(text, &p->context);
  EXPECT_TRUE(p->module) << p->diagnostics << text;
  return p;
}

Topology preset(const char *name) {
  llvm::Expected<Topology> t = Topology::preset(name);
  EXPECT_TRUE(static_cast<bool>(t));
  return t ? *t : Topology();
}

// H100: 989e12 bf16 FLOP/s, 3350e9 B/s; NVLink 450e9 B/s and 2 us, the
// inter-node link 50e9 B/s and 5 us. A GEMM of F FLOPs reaches the
// preset's curve, 0.72 F / (F + 3e9) of the peak.
double h100Gemm(double flops) {
  return flops / (989e12 * 0.72 * flops / (flops + 3e9));
}
const double kGemm = h100Gemm(2.0 * 1024 * 1024 * 1024);
constexpr double kBytes = 4.0 * 1024 * 1024;

TEST(CostModel, GemmsRunAtPeakAndCollectivesOverTheirLink) {
  auto p = parse(program("\"tp\"", /*ordered=*/false));
  ASSERT_TRUE(p->step());
  FailureOr<ProgramEstimate> e =
      estimateProgram(p->step(), preset("dgx-h100:2"));
  ASSERT_TRUE(succeeded(e)) << p->diagnostics;
  EXPECT_EQ(e->instructions, 2);
  // A tp group is 8 ranks of one node: 2 * 7/8 of 4 MiB over NVLink in 14
  // steps of 2 us.
  double ring = 2 * 7.0 / 8 * kBytes / 450e9 + 14 * 2e-6;
  EXPECT_NEAR(e->streamBusy.at("compute"), kGemm, 1e-12);
  EXPECT_NEAR(e->streamBusy.at("comm"), ring, 1e-12);
  // Nothing orders them: the streams overlap.
  EXPECT_NEAR(e->seconds, std::max(kGemm, ring), 1e-12);
  ASSERT_EQ(e->rows.size(), 2u);
  EXPECT_EQ(e->rows[0].category, "all_reduce over tp");
  EXPECT_DOUBLE_EQ(e->rows[0].linkBytes, 2 * 7.0 / 8 * kBytes);
  EXPECT_EQ(e->rows[1].category, "GEMM bf16");
  EXPECT_DOUBLE_EQ(e->rows[1].flops, 2.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(e->rows[1].bytes, 3 * 2.0 * 1024 * 1024);
}

// The presets' GEMM curve: half its ceiling at half_gflop, and a
// topology file's own curve replaces it; absent, the peak as given.
TEST(CostModel, GemmsFollowTheDevicesEfficiencyCurve) {
  Topology h100 = preset("dgx-h100:2");
  EXPECT_DOUBLE_EQ(h100.device.gemmShare(3e9), 0.36);
  EXPECT_NEAR(h100.device.gemmShare(3e15), 0.72, 1e-6);
  Topology a100 = preset("dgx-a100:1");
  EXPECT_DOUBLE_EQ(a100.device.gemmShare(1e9), 0.4);
  EXPECT_DOUBLE_EQ(preset("cpu:1").device.gemmShare(1e3), 1.0);
  auto p = parse(program("\"tp\"", /*ordered=*/false));
  ASSERT_TRUE(p->step());
  Topology flat = h100;
  flat.device.gemmEfficiency = 1;
  flat.device.gemmHalfFlops = 0;
  FailureOr<ProgramEstimate> e = estimateProgram(p->step(), flat);
  ASSERT_TRUE(succeeded(e)) << p->diagnostics;
  EXPECT_NEAR(e->streamBusy.at("compute"), 2.0 * 1024 * 1024 * 1024 / 989e12,
              1e-15);
}

TEST(CostModel, AnEventSerialisesTheStreams) {
  auto p = parse(program("\"tp\"", /*ordered=*/true));
  ASSERT_TRUE(p->step());
  FailureOr<ProgramEstimate> e =
      estimateProgram(p->step(), preset("dgx-h100:2"));
  ASSERT_TRUE(succeeded(e)) << p->diagnostics;
  double ring = 2 * 7.0 / 8 * kBytes / 450e9 + 14 * 2e-6;
  EXPECT_NEAR(e->seconds, kGemm + ring, 1e-12);
}

TEST(CostModel, AGroupAcrossNodesTakesTheInterNodeLink) {
  // dp is the outer axis: its two ranks sit on two nodes of eight.
  auto p = parse(program("\"dp\"", /*ordered=*/false));
  ASSERT_TRUE(p->step());
  FailureOr<ProgramEstimate> e =
      estimateProgram(p->step(), preset("dgx-h100:2"));
  ASSERT_TRUE(succeeded(e)) << p->diagnostics;
  EXPECT_NEAR(e->streamBusy.at("comm"), kBytes / 50e9 + 2 * 5e-6, 1e-12);
  // Sixteen devices of one node: the same group stays on NVLink.
  Topology wide = preset("dgx-h100:2");
  wide.nodes = 1, wide.devicesPerNode = 16;
  e = estimateProgram(p->step(), wide);
  ASSERT_TRUE(succeeded(e));
  EXPECT_NEAR(e->streamBusy.at("comm"), kBytes / 450e9 + 2 * 2e-6, 1e-12);
}

TEST(CostModel, RingTrafficPerCollective) {
  using K = sched::CollectiveKind;
  EXPECT_DOUBLE_EQ(collectiveSendBytes(K::all_reduce, 800, 800, 4), 1200);
  EXPECT_DOUBLE_EQ(collectiveSendBytes(K::all_gather, 200, 800, 4), 600);
  EXPECT_DOUBLE_EQ(collectiveSendBytes(K::reduce_scatter, 800, 200, 4), 600);
  EXPECT_DOUBLE_EQ(collectiveSendBytes(K::all_to_all, 800, 800, 4), 600);
  EXPECT_DOUBLE_EQ(collectiveSendBytes(K::all_reduce, 800, 800, 1), 0);
}

/// A program @f running one attention (B 1, S = T 256, one head of 64,
/// bf16) by `algorithm`, with the GPU scratch gemm_softmax needs.
std::string attentionProgram(const std::string &algorithm) {
  std::string q = "!sched.buffer<1x256x1x64xbf16>";
  bool gemms = algorithm == "gemm_softmax";
  return R"(sched.program @f arena(1048576) align(256) events(0) streams ["compute"] {
^bb0(%q: )" +
         q + ", %k: " + q + ", %v: " + q + R"():
  %o = sched.alloc offset(0) live(0, 1) : )" +
         q + R"(
  %lse = sched.alloc offset(32768) live(0, 1) : !sched.buffer<1x1x256xf32>
)" +
         (gemms ? "  %s = sched.alloc offset(65536) live(0, 0) : "
                  "!sched.buffer<98304xf32>\n"
                : "") +
         "  sched.attention %q, %k, %v -> %o, %lse " +
         (gemms ? "scratch(%s : !sched.buffer<98304xf32>) " : "") +
         "scale 1.250000e-01 causal algorithm " + algorithm + " : " + q + ", " +
         q + ", " + q + " -> " + q + R"(, !sched.buffer<1x1x256xf32>
  sched.return ["o", "lse"] %o, %lse : )" +
         q + R"(, !sched.buffer<1x1x256xf32>
}
)";
}

TEST(CostModel, AttentionThroughGemmsPaysEachPass) {
  // Scores 256 x 256 f32, probabilities bf16; the GPU scratch is those
  // two planes.
  std::string text = attentionProgram("gemm_softmax");
  auto p = parse(text);
  auto f = p->module ? p->module->lookupSymbol<sched::ProgramOp>("f")
                     : sched::ProgramOp();
  ASSERT_TRUE(f) << p->diagnostics;
  auto attention = *f.getBody().front().getOps<sched::AttentionOp>().begin();
  InstructionCost c = instructionCost(
      cast<sched::InstructionOpInterface>(attention.getOperation()));
  double products = 256.0 * 256, qkv = 256.0 * 64 * 2;
  EXPECT_DOUBLE_EQ(c.flops, 2 * 2 * products * 64);
  ASSERT_EQ(c.passes.size(), 3u);
  // QK^T writes the f32 scores; the softmax reads them and writes bf16
  // probabilities and the lse; PV reads those and v and writes out.
  EXPECT_DOUBLE_EQ(c.passes[0].bytes, 2 * qkv + 4 * products);
  EXPECT_DOUBLE_EQ(c.passes[1].bytes, 4 * products + 2 * products + 256 * 4);
  EXPECT_DOUBLE_EQ(c.passes[2].bytes, 2 * products + 2 * qkv);
  EXPECT_DOUBLE_EQ(c.bytes,
                   c.passes[0].bytes + c.passes[1].bytes + c.passes[2].bytes);
}

// A measured profile's efficiency divides an instruction's roofline: the
// attention above on an H200 whose profile says its attention reaches a
// quarter of the peak takes four times as long.
TEST(CostModel, AProfilesEfficiencyDividesTheRoofline) {
  std::string text = attentionProgram("flash");
  auto p = parse(text);
  auto f = p->module ? p->module->lookupSymbol<sched::ProgramOp>("f")
                     : sched::ProgramOp();
  ASSERT_TRUE(f) << p->diagnostics;
  Topology plain = preset("h200:1"), profiled = plain;
  profiled.device.efficiency["attention"] = 0.25;
  FailureOr<ProgramEstimate> a = estimateProgram(f, plain),
                             b = estimateProgram(f, profiled);
  ASSERT_TRUE(succeeded(a) && succeeded(b)) << p->diagnostics;
  // So small a product reaches a sliver of the peak on the preset's curve,
  // which makes it slower than moving q, k, v, out (bf16) and the lse over
  // 4800 GB/s.
  EXPECT_DOUBLE_EQ(a->seconds,
                   std::max(h100Gemm(2 * 2 * 256.0 * 256 * 64),
                            (4 * 256.0 * 64 * 2 + 256 * 4) / 4800e9));
  EXPECT_DOUBLE_EQ(b->seconds, 4 * a->seconds);
}

// A generated kernel whose body computes a GELU is at least its elements
// over the profile's transcendental rate; without a rate it is
// memory-bound.
TEST(CostModel, AKernelsTranscendentalsTakeTheirRate) {
  std::string t = "tensor<1024xf32>", b = "!sched.buffer<1024xf32>";
  std::string text = R"(sched.kernel @k inputs [)" + b + R"(] outputs [)" + b +
                     R"(] scalars [i64] {
^bb0(%x: )" + t + R"():
  %y = weft.fused(%x) {weft.kernel = "k"} : ()" +
                     t + ") -> " + t + R"( {
  ^bb0(%a: )" + t + R"():
    %g = weft.gelu %a : )" +
                     t + R"(
    weft.yield %g : )" +
                     t + R"(
  }
}
sched.program @f arena(4096) align(256) events(0) streams ["compute"] {
^bb0(%in: )" + b + R"():
  %out = sched.alloc offset(0) live(0, 1) : )" +
                     b + R"(
  sched.launch @k grid [1, 1, 1] block 256 ins(%in : )" +
                     b + R"() outs(%out : )" + b + R"() scalars [1024]
  sched.return ["y"] %out : )" +
                     b + R"(
}
)";
  auto p = std::make_unique<Parsed>();
  p->context.loadDialect<sched::SchedDialect, WeftDialect>();
  p->context.getDiagEngine().registerHandler(
      [q = p.get()](Diagnostic &d) { q->diagnostics += d.str() + "\n"; });
  p->module = parseSourceString<ModuleOp>(text, &p->context);
  ASSERT_TRUE(p->module) << p->diagnostics;
  auto f = p->module->lookupSymbol<sched::ProgramOp>("f");
  Topology cpu = preset("cpu:1");
  FailureOr<ProgramEstimate> bound = estimateProgram(f, cpu);
  ASSERT_TRUE(succeeded(bound)) << p->diagnostics;
  EXPECT_DOUBLE_EQ(bound->seconds, 2 * 4096.0 / cpu.device.memoryBandwidth);
  cpu.device.transcendentalsPerSecond = 1e6;
  FailureOr<ProgramEstimate> slow = estimateProgram(f, cpu);
  ASSERT_TRUE(succeeded(slow));
  EXPECT_DOUBLE_EQ(slow->seconds, 1024 / 1e6);
}

TEST(CostModel, SaysWhatTheTopologyLacks) {
  auto p = parse(program("\"tp\"", /*ordered=*/false));
  ASSERT_TRUE(p->step());
  // A device without a bf16 rate cannot time a bf16 GEMM.
  Topology noBf16 = preset("dgx-h100:2");
  noBf16.device.peakFlops.erase("bf16");
  EXPECT_TRUE(failed(estimateProgram(p->step(), noBf16)));
  EXPECT_NE(p->diagnostics.find("cannot estimate program 'step' on topology "
                                "'dgx-h100:2': its device has no peak for "
                                "bf16 (GEMM bf16)"),
            std::string::npos)
      << p->diagnostics;
  p->diagnostics.clear();
  EXPECT_TRUE(failed(estimateProgram(p->step(), preset("h200:1"))));
  EXPECT_NE(p->diagnostics.find("the mesh has 16 ranks but the topology 8 "
                                "devices"),
            std::string::npos)
      << p->diagnostics;
}
} // namespace
