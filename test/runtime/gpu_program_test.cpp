//===- gpu_program_test.cpp - sched programs as GPU launches, no GPU ------===//
//
// The GPU runtime turns every instruction of a bundle v2 program into
// launches before it touches a device. These tests translate the GPT-2,
// Llama and Mixtral tiny training bundles (f32 and bf16, compiled for
// sm_90) and check that each launch names a kernel that exists in the
// source it comes from, with as many arguments as that kernel takes, that
// GEMMs and attention become the cuBLASLt calls they should, that a bundle
// compiled for the CPU is refused with the fix, and that the runtime's own
// kernels compile with NVRTC. On a GPU, gpu_kernels_test.cpp runs them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline.h"
#include "passes/sharding/Passes.h"
#include "runtime/exec/BundleData.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/gpu/GpuProgram.h"
#include "runtime/gpu/Nvrtc.h"
#include "test/compiler/TestUtils.h"
#include "test/runtime/EmulatedGpu.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

using namespace weft;
using runtime::GpuLaunch;
namespace rs = runtime::sched;

namespace {
rs::SchedBundle load(const std::string &dir) {
  absl::StatusOr<rs::SchedBundle> bundle = rs::loadSchedBundle(dir);
  EXPECT_TRUE(bundle.ok()) << bundle.status();
  return bundle.ok() ? std::move(*bundle) : rs::SchedBundle();
}

std::string compile(const std::string &model, const std::string &dtype,
                    bool cuda, int64_t attentionScratchMb = 4096,
                    const std::string &plan = "") {
  TrainingOptions options;
  if (cuda)
    options.cudaArchs = {"sm_90"};
  options.attentionScratchMb = attentionScratchMb;
  if (!plan.empty())
    options.plan = *parsePlan(plan);
  return testutil::compileExampleBundle(
      model, dtype, options,
      (cuda ? "-cuda" : "-cpu") + std::to_string(attentionScratchMb) + plan);
}

/// The first instruction of `program` that `pred` holds for (-1: none).
int64_t
firstInstruction(const rs::Program &program,
                 const std::function<bool(const rs::Instruction &)> &pred) {
  for (size_t i = 0; i < program.instructions.size(); ++i)
    if (pred(program.instructions[i]))
      return static_cast<int64_t>(i);
  return -1;
}

/// GEMM epilogues of a program's launches, by name and count.
using EpilogueCounts = std::map<std::string, int>;

void checkLaunches(const std::string &model, const std::string &dtype,
                   bool fused = false,
                   std::map<std::string, EpilogueCounts> epilogues = {}) {
  SCOPED_TRACE(model + " " + dtype + (fused ? " fused attention" : ""));
  std::string dir = compile(model, dtype, /*cuda=*/true, fused ? 0 : 4096);
  rs::SchedBundle bundle = load(dir);
  std::ifstream generated(dir + "/kernels.cu");
  std::stringstream text;
  text << generated.rdbuf();
  std::map<std::string, int> arity =
      testutil::cudaKernelArity(runtime::gpuOpsSource());
  arity.merge(testutil::cudaKernelArity(runtime::gpuAttentionSource()));
  arity.merge(testutil::cudaKernelArity(text.str()));
  for (const std::string name : {"step", "forward"}) {
    const rs::Program *program = bundle.program(name);
    ASSERT_NE(program, nullptr);
    absl::StatusOr<runtime::GpuProgram> launches =
        runtime::gpuProgram(bundle, *program, runtime::meshSpecOf(bundle), 0);
    ASSERT_TRUE(launches.ok()) << launches.status();
    std::map<std::string, int> used;
    std::map<int64_t, int> gemmsOf; // By instruction.
    EpilogueCounts epilogueCounts;
    for (const GpuLaunch &l : launches->launches) {
      ASSERT_GE(l.instruction, 0);
      ASSERT_LT(l.instruction,
                static_cast<int64_t>(program->instructions.size()));
      const rs::Instruction &ins = program->instructions[l.instruction];
      EXPECT_EQ(l.stream, ins.stream);
      if (l.kind == GpuLaunch::Kind::Gemm) {
        ++gemmsOf[l.instruction];
        if (ins.op == rs::Op::Gemm) {
          const rs::TensorType &c = program->buffers[ins.operands[2]].type;
          EXPECT_EQ(l.gemm.batch * l.gemm.m * l.gemm.n, c.numElements());
          EXPECT_EQ(l.gemm.outType(), c.dtype);
        }
        // The epilogue's bias and aux are passed exactly when it has them.
        EXPECT_EQ(l.args[3].kind != runtime::GpuArg::Kind::Null,
                  l.gemm.hasBias());
        EXPECT_EQ(l.args[4].kind != runtime::GpuArg::Kind::Null,
                  l.gemm.hasAux());
        if (l.gemm.epilogue != runtime::GemmEpilogue::None)
          ++epilogueCounts[runtime::gemmEpilogueName(l.gemm.epilogue)];
        continue;
      }
      if (l.kind != GpuLaunch::Kind::Kernel)
        continue;
      auto it = arity.find(l.kernel);
      ASSERT_NE(it, arity.end())
          << "instruction " << l.instruction << " (" << rs::opName(ins.op)
          << ") launches '" << l.kernel << "', which no source defines";
      EXPECT_EQ(static_cast<int>(l.args.size()), it->second) << l.kernel;
      EXPECT_GE(l.grid[0] * l.grid[1] * l.grid[2], 1u) << l.kernel;
      ++used[l.kernel];
    }
    // Every sched.gemm is one cuBLASLt GEMM; gemm_softmax attention is
    // cuBLASLt around a softmax kernel (2 GEMMs forward, 5 backward, per
    // batch and query head of a kv group), flash attention none.
    for (size_t i = 0; i < program->instructions.size(); ++i) {
      const rs::Instruction &ins = program->instructions[i];
      int expected = ins.op == rs::Op::Gemm ? 1 : 0;
      if (ins.op == rs::Op::Attention || ins.op == rs::Op::AttentionGrad) {
        const auto &a = ins.as<rs::AttentionAttrs>();
        EXPECT_EQ(a.algorithm, fused ? rs::AttentionAlgorithm::Flash
                                     : rs::AttentionAlgorithm::GemmSoftmax);
        const auto &q = program->buffers[ins.operands[0]].type.shape,
                   &k = program->buffers[ins.operands[1]].type.shape;
        if (!fused)
          expected =
              (ins.op == rs::Op::Attention ? 2 : 5) * q[0] * (q[2] / k[2]);
      }
      EXPECT_EQ(gemmsOf[i], expected)
          << "instruction " << i << " (" << rs::opName(ins.op) << ")";
    }
    EXPECT_EQ(epilogueCounts, epilogues[name]);
    EXPECT_GT(used[fused ? "weft_attention_forward" +
                               std::string(dtype == "bf16" ? "_bf16" : "")
                         : "weft_attention_probs"],
              0);
    if (name == "step") {
      EXPECT_GT(used["weft_cross_entropy_grad"], 0);
      EXPECT_GT(used["weft_norm_grad_rows"], 0);
      // Mixed precision widens and rounds around f32 kernels.
      EXPECT_EQ(used["weft_convert"] > 0, dtype == "bf16");
    }
  }
}
} // namespace

// GPT-2's two blocks each have five GEMMs with a bias alone (q, k and v,
// c_attn's three column blocks; attention out; MLP out) and one with bias
// and GELU (MLP in), whose gradient is the one dgelu; Llama has no biases
// and uses SiLU.
const std::map<std::string, EpilogueCounts> kGpt2TinyEpilogues = {
    {"step", {{"bias", 10}, {"bias_gelu", 2}, {"dgelu", 2}}},
    {"forward", {{"bias", 10}, {"bias_gelu", 2}}}};

TEST(GpuProgram, Gpt2TinyF32InstructionsAllHaveKernels) {
  checkLaunches("gpt2-tiny", "f32", false, kGpt2TinyEpilogues);
}
TEST(GpuProgram, Gpt2TinyBf16InstructionsAllHaveKernels) {
  checkLaunches("gpt2-tiny", "bf16", false, kGpt2TinyEpilogues);
}
TEST(GpuProgram, LlamaTinyF32InstructionsAllHaveKernels) {
  checkLaunches("llama-tiny", "f32");
}
TEST(GpuProgram, LlamaTinyBf16InstructionsAllHaveKernels) {
  checkLaunches("llama-tiny", "bf16");
}
TEST(GpuProgram, MixtralTinyF32InstructionsAllHaveKernels) {
  checkLaunches("mixtral-tiny", "f32");
}
namespace {
/// The buffer whose memory `buffer` is (itself, or what it views).
int64_t memoryOf(const rs::Program &program, int64_t buffer) {
  while (program.buffers[buffer].kind == rs::Buffer::Kind::View)
    buffer = program.buffers[buffer].of;
  return buffer;
}
bool isGrouped(rs::Op op) {
  return op == rs::Op::GroupedMatmul || op == rs::Op::GroupedMatmulWgrad;
}
} // namespace

// A mixture of experts' grouped matmuls are cuBLAS grouped GEMMs sized on
// the host: each is one GroupedGemm launch reading the sizes a HostRead
// brought back from its sizes operand's memory, which no instruction other
// than a grouped matmul names in between (it could have changed them).
// The forward's and the backward's matmuls of a routing share one read.
TEST(GpuProgram, GroupedMatmulsReadTheirSizesBackOncePerRouting) {
  rs::SchedBundle bundle = load(compile("mixtral-tiny", "f32", /*cuda=*/true));
  const rs::Program &program = *bundle.program("step");
  absl::StatusOr<runtime::GpuProgram> launches =
      runtime::gpuProgram(bundle, program, runtime::meshSpecOf(bundle), 0);
  ASSERT_TRUE(launches.ok()) << launches.status();
  struct Read {
    int64_t memory, instruction;
  };
  std::vector<Read> reads; // By slot.
  std::map<int64_t, int> gemmsOf;
  for (const GpuLaunch &l : launches->launches) {
    const rs::Instruction &ins = program.instructions[l.instruction];
    if (l.kind == GpuLaunch::Kind::HostRead) {
      EXPECT_EQ(l.slot, static_cast<int64_t>(reads.size()));
      EXPECT_EQ(l.args[0].buffer.id, ins.operands[2]);
      EXPECT_EQ(l.bytes, program.buffers[ins.operands[2]].type.bytes());
      reads.push_back({memoryOf(program, ins.operands[2]), l.instruction});
      continue;
    }
    if (l.kind != GpuLaunch::Kind::GroupedGemm)
      continue;
    ASSERT_TRUE(isGrouped(ins.op)) << rs::opName(ins.op);
    ++gemmsOf[l.instruction];
    ASSERT_LT(l.slot, static_cast<int64_t>(reads.size()));
    const Read &read = reads[l.slot];
    EXPECT_EQ(memoryOf(program, ins.operands[2]), read.memory);
    for (int64_t j = read.instruction + 1; j < l.instruction; ++j) {
      const rs::Instruction &between = program.instructions[j];
      if (isGrouped(between.op))
        continue;
      for (int64_t operand : between.operands)
        EXPECT_NE(memoryOf(program, operand), read.memory)
            << "instruction " << j << " (" << rs::opName(between.op)
            << ") may change the sizes instruction " << l.instruction
            << " read at " << read.instruction;
    }
    const auto &g = l.grouped;
    EXPECT_EQ(g.wgrad, ins.op == rs::Op::GroupedMatmulWgrad);
    EXPECT_EQ(g.rows, program.buffers[ins.operands[0]].type.shape[0]);
    EXPECT_EQ(g.groups, program.buffers[ins.operands[2]].type.numElements());
    EXPECT_EQ(g.wgrad ? g.experts * g.k * g.m : g.rows * g.m,
              program.buffers[ins.operands[3]].type.numElements());
  }
  int grouped = 0;
  for (size_t i = 0; i < program.instructions.size(); ++i)
    if (isGrouped(program.instructions[i].op)) {
      ++grouped;
      EXPECT_EQ(gemmsOf[i], 1) << "instruction " << i;
    }
  EXPECT_EQ(launches->hostSlots, static_cast<int64_t>(reads.size()));
  // Mixtral-tiny: two MoE layers, three matmuls forward and six backward
  // each, over one routing per layer: one read per layer.
  EXPECT_EQ(grouped, 18);
  EXPECT_EQ(reads.size(), 2u);
}

// What a GroupedGemm launch queues: one product per non-empty group at its
// rows and its expert's weight, the rows past the groups (a wgrad's whole
// output) zeroed first; sizes that do not fit are refused by group.
TEST(GpuProgram, GroupedGemmWorkCutsTheRowsBySize) {
  runtime::GroupedGemmSpec spec;
  spec.transposeRhs = true;
  spec.rows = 10;
  spec.k = 3;
  spec.m = 5;
  spec.experts = 2;
  spec.groups = 4;
  const int32_t sizes[] = {2, 0, 3, 1};
  auto work = runtime::groupedGemmWork(spec, sizes, 1000, 2000, 3000, "x");
  ASSERT_TRUE(work.ok()) << work.status();
  ASSERT_EQ(work->problems.size(), 3u);
  const runtime::GemmProblem &third = work->problems[1]; // Group 2.
  EXPECT_EQ(third.shape.m, 3);
  EXPECT_EQ(third.shape.n, 5);
  EXPECT_EQ(third.shape.k, 3);
  EXPECT_TRUE(third.shape.transB);
  EXPECT_EQ(third.operands.a, 1000u + 2 * 3 * 4);
  EXPECT_EQ(third.operands.b, 2000u); // Expert 2 mod 2.
  EXPECT_EQ(third.operands.c, 3000u + 2 * 5 * 4);
  EXPECT_EQ(work->problems[2].operands.b, 2000u + 3 * 5 * 4); // Expert 1.
  EXPECT_EQ(work->zeroFrom, 3000u + 6 * 5 * 4);
  EXPECT_EQ(work->zeroBytes, 4u * 5 * 4);

  spec.wgrad = true;
  work = runtime::groupedGemmWork(spec, sizes, 1000, 2000, 3000, "x");
  ASSERT_TRUE(work.ok()) << work.status();
  ASSERT_EQ(work->problems.size(), 3u);
  const runtime::GemmProblem &last = work->problems[2]; // Group 3.
  EXPECT_TRUE(last.shape.transA);
  EXPECT_EQ(last.shape.m, 3);
  EXPECT_EQ(last.shape.n, 5);
  EXPECT_EQ(last.shape.k, 1);
  EXPECT_EQ(last.shape.beta, 1.0f);
  EXPECT_EQ(last.operands.a, 1000u + 5 * 3 * 4);
  EXPECT_EQ(last.operands.b, 2000u + 5 * 5 * 4);
  EXPECT_EQ(last.operands.c, 3000u + 3 * 5 * 4);
  EXPECT_EQ(work->zeroFrom, 3000u);
  EXPECT_EQ(work->zeroBytes, 2u * 3 * 5 * 4);

  const int32_t negative[] = {2, -1, 0, 0}, overrun[] = {6, 5, 0, 0};
  work = runtime::groupedGemmWork(spec, negative, 1000, 2000, 3000, "x");
  ASSERT_FALSE(work.ok());
  EXPECT_EQ(work.status().message(),
            "x: group 1 of -1 rows does not fit the 10 rows after the 2 "
            "before it");
  work = runtime::groupedGemmWork(spec, overrun, 1000, 2000, 3000, "x");
  ASSERT_FALSE(work.ok());
  EXPECT_EQ(work.status().message(),
            "x: group 1 of 5 rows does not fit the 10 rows after the 6 "
            "before it");
}

// attention-scratch-mb=0: the compiler chose FlashAttention's kernels.
TEST(GpuProgram, FlashAttentionKernelsWhenTheCompilerChoseThem) {
  checkLaunches("gpt2-tiny", "f32", /*fused=*/true, kGpt2TinyEpilogues);
  checkLaunches("llama-tiny", "bf16", /*fused=*/true);
}

TEST(GpuProgram, ABundleBuiltForTheCpuIsRefusedWithTheFix) {
  rs::SchedBundle bundle = load(compile("gpt2-tiny", "f32", /*cuda=*/false));
  absl::StatusOr<runtime::GpuProgram> launches = runtime::gpuProgram(
      bundle, *bundle.program("step"), runtime::meshSpecOf(bundle), 0);
  ASSERT_FALSE(launches.ok());
  std::string message(launches.status().message());
  EXPECT_NE(message.find("program step"), std::string::npos) << message;
  EXPECT_NE(message.find("--target cuda"), std::string::npos) << message;
}

// What a GPU cannot run of a bundle otherwise fit for it is named with its
// instruction: a reduce whose scratch was taken away.
TEST(GpuProgram, AnInstructionWithoutItsScratchIsRefusedByName) {
  rs::SchedBundle bundle = load(compile("gpt2-tiny", "f32", /*cuda=*/true));
  rs::Program program = *bundle.program("step");
  int64_t index = firstInstruction(
      program, [](const rs::Instruction &i) { return i.op == rs::Op::Reduce; });
  ASSERT_GE(index, 0);
  rs::Instruction &reduce = program.instructions[index];
  ASSERT_TRUE(reduce.hasScratch);
  reduce.hasScratch = false;
  reduce.operands.pop_back();
  absl::StatusOr<runtime::GpuProgram> launches =
      runtime::gpuProgram(bundle, program, runtime::meshSpecOf(bundle), 0);
  ASSERT_FALSE(launches.ok());
  std::string message(launches.status().message());
  EXPECT_NE(message.find("instruction " + std::to_string(index) + " (reduce)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("has no scratch"), std::string::npos) << message;
}

// cuBLASLt writes a GELU epilogue's aux matrix with C's leading dimension
// and batch stride, where the instruction's aux is packed: a C with wider
// rows would write past the aux buffer, so the GPU refuses it.
TEST(GpuProgram, AGeluGemmWithUnpackedCIsRefused) {
  rs::SchedBundle bundle = load(compile("gpt2-tiny", "f32", /*cuda=*/true));
  rs::Program program = *bundle.program("step");
  int64_t index = firstInstruction(program, [](const rs::Instruction &i) {
    return i.op == rs::Op::Gemm && i.as<rs::GemmAttrs>().hasAux;
  });
  ASSERT_GE(index, 0);
  ASSERT_TRUE(
      runtime::gpuProgram(bundle, program, runtime::meshSpecOf(bundle), 0)
          .ok());
  auto &attrs = std::get<rs::GemmAttrs>(program.instructions[index].attrs);
  attrs.ld[2] = attrs.mnk[1] + 8;
  absl::StatusOr<runtime::GpuProgram> launches =
      runtime::gpuProgram(bundle, program, runtime::meshSpecOf(bundle), 0);
  ASSERT_FALSE(launches.ok());
  EXPECT_NE(launches.status().message().find(
                "instruction " + std::to_string(index) +
                " (gemm): a GELU epilogue on the GPU needs C packed"),
            std::string::npos)
      << launches.status();
}

TEST(GpuProgram, TheRuntimesOwnKernelsCompileWithNvrtc) {
  for (auto [source, label] :
       {std::pair{runtime::gpuOpsSource(), "ops.cu"},
        std::pair{runtime::gpuAttentionSource(), "attention.cu"}}) {
    absl::StatusOr<std::string> cubin =
        runtime::compileCudaSource(source, "sm_90", label);
    if (!cubin.ok() && cubin.status().code() == absl::StatusCode::kUnavailable)
      GTEST_SKIP() << cubin.status().message();
    ASSERT_TRUE(cubin.ok()) << cubin.status();
    EXPECT_EQ(cubin->substr(0, 4), "\x7f"
                                   "ELF");
  }
}

// A placed bundle's collectives run on the stream the compiler gave them
// (weft-sched-assign-streams: not the first), and a vocabulary-parallel
// cross-entropy combines its row statistics inside its instruction.
TEST(GpuProgram, CollectivesRunOnTheirInstructionsStreams) {
  for (const char *plan : {"dp=2", "dp=2,zero=3", "tp=2"}) {
    SCOPED_TRACE(plan);
    rs::SchedBundle bundle =
        load(compile("llama-tiny", "f32", /*cuda=*/true, 4096, plan));
    const rs::Program &step = *bundle.program("step");
    for (int64_t rank = 0; rank < 2; ++rank) {
      absl::StatusOr<runtime::GpuProgram> launches =
          runtime::gpuProgram(bundle, step, runtime::meshSpecOf(bundle), rank);
      ASSERT_TRUE(launches.ok()) << launches.status();
      int collectives = 0, offStream = 0;
      for (const GpuLaunch &l : launches->launches) {
        if (l.kind != GpuLaunch::Kind::Collective)
          continue;
        ++collectives;
        const rs::Instruction &ins = step.instructions[l.instruction];
        offStream += ins.op == rs::Op::Collective && l.stream != 0;
        EXPECT_TRUE(ins.op == rs::Op::Collective ||
                    ins.op == rs::Op::CrossEntropy ||
                    ins.op == rs::Op::CrossEntropyGrad)
            << rs::opName(ins.op);
      }
      EXPECT_GT(collectives, 0);
      EXPECT_GT(offStream, 0);
    }
  }
}

// Every kernel spreads its work over the GPU: it either launches enough
// threads to fill one (half a million), or gives no thread more than 4 KiB
// of its buffers. A kernel that looped over a whole tensor on one thread
// (as the gradient norm's sums and LayerNorm's parameter gradients once
// did: one thread summing GPT-2's 38.6M-element embedding) fails this. The
// emulator runs such a kernel correctly, only slowly, so this is where it
// shows. GPT-2 124M (its real sizes) in f32 and bf16.
TEST(GpuProgram, EveryKernelSpreadsItsWorkOverTheGpu) {
  for (const char *dtype : {"f32", "bf16"}) {
    rs::SchedBundle bundle = load(compile("gpt2-124m", dtype, /*cuda=*/true));
    for (const std::string name : {"step", "forward"}) {
      SCOPED_TRACE(std::string(dtype) + " " + name);
      const rs::Program &program = *bundle.program(name);
      absl::StatusOr<runtime::GpuProgram> launches =
          runtime::gpuProgram(bundle, program, runtime::meshSpecOf(bundle), 0);
      ASSERT_TRUE(launches.ok()) << launches.status();
      int checked = 0;
      for (const GpuLaunch &l : launches->launches) {
        if (l.kind != GpuLaunch::Kind::Kernel)
          continue;
        double threads =
            static_cast<double>(l.grid[0]) * l.grid[1] * l.grid[2] * l.block;
        // The bytes it touches: as the launch says, else each buffer
        // argument (a region of one, or the rest of it from its offset).
        double bytes = static_cast<double>(l.bytes);
        for (const runtime::GpuArg &a : l.args)
          if (l.bytes == 0 && a.kind == runtime::GpuArg::Kind::Buffer &&
              a.buffer.kind == runtime::GpuBuffer::Kind::Buffer)
            bytes += static_cast<double>(
                a.buffer.bytes > 0 ? a.buffer.bytes
                                   : program.buffers[a.buffer.id].type.bytes() -
                                         a.buffer.offset);
        EXPECT_TRUE(threads >= (1 << 19) || bytes <= 4096 * threads)
            << l.kernel << " (instruction " << l.instruction << ", "
            << rs::opName(program.instructions[l.instruction].op)
            << "): " << bytes / 1e6 << " MB over " << threads << " threads";
        ++checked;
      }
      EXPECT_GT(checked, 20);
    }
  }
}
