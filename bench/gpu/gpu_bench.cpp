//===- gpu_bench.cpp - the GPU runtime's GEMMs and attention, timed -------===//
//
//   weft-gpu-bench gemm M N K [iterations] [none|bias|gelu|bias_gelu|dgelu]
//   weft-gpu-bench gemm-fp8 M N K [iterations] [tensor|rows|blockwise|mxfp8]
//                  [experts]
//   weft-gpu-bench wgrad-fp8 N P Q [iterations] [rows|blockwise|mxfp8]
//                  [experts]
//   weft-gpu-bench attention B H S D [gemm|fused] [iterations]
//
// gemm: C = A B (bf16 in and out, f32 accumulation, row-major) through the
// runtime's own GEMM path (CudaDevice + CublasLt: the descriptors and the
// heuristic's algorithm that weft.matmul uses), with an epilogue as
// weft.matmul_epilogue asks for one; its first rows are checked against a
// host reference (Weft's tanh-form GELU) and the largest error relative to
// the output's scale is printed ("max_error"; over 2e-2 fails).
// gemm-fp8: the same for an FP8 GEMM as an FP8 weft.matmul runs it
// (sched.gemm with FP8 operands): A [M, K] and B [N, K] E4M3 codes of
// normal draws (weft_fp8_code, the runtime's cast) by per-tensor scales,
// per-row scales (cuBLASLt's outer vectors: rowwise) or 1 x 128 tiles of A
// by 128 x 128 blocks of B (blockwise, DeepSeek-V3's), the inverses behind
// cuBLASLt's scale pointers in the layouts of runtime/support/Fp8Scaling.h,
// or 1 x 32 blocks of both with power-of-two scales (mxfp8), which runs in
// the runtime's own kernel (ops.cu's weft_fp8_block_gemm: no cuBLASLt mode
// before Blackwell); C bf16; checked against the decoded codes' partial
// sums times their scales. With `experts` E > 1, as an expert layer's FP8
// grouped_matmul runs (any scaling, in that kernel, the group sizes read
// on the device): the M rows in E equal groups, group e times expert e's
// [N, K] of B [E * N, K].
// wgrad-fp8: an expert layer's FP8 weight gradient as a training step with
// FP8 storage runs it: A [N, P] and B [N, Q] (f32 normal draws; N rows in
// `experts` groups, default 8, of unequal sizes none a multiple of 32)
// cast on the device by the runtime's weft_fp8_group_cast (E4M3 codes
// transposed and expert-major, a scale per tile of an expert's rows and
// column: all its rows for rows, 128 for blockwise, 32 with power-of-two
// scales for mxfp8), then out [E, P, Q] f32 = per expert A_e^T B_e by
// weft_fp8_group_wgrad. The casts' codes and scales are checked against
// the CPU runtime's (cpu::fp8GroupQuantize) byte for byte, out against the
// decoded codes' 32-row partial sums times their tiles' scales; the GEMM
// alone is timed (TFLOP/s from 2 N P Q), the two casts' median printed
// beside it.
// attention: one causal bf16 attention forward + backward (q, k, v
// [B, S, H, D]) as the runtime runs it inside a training step: a
// two-instruction sched program (attention, attention_grad) with the
// algorithm the compiler would name, gemm_softmax (cuBLASLt GEMMs around a
// softmax, "gemm") or flash (the fused kernels of attention.cu, "fused"),
// run by GpuBackend and replayed as a CUDA graph; TFLOP/s counted as
// FlashAttention does (causal forward 2 B H S^2 D, backward 2.5 times that).
// gemm and attention each print one JSON line with the median milliseconds
// over `iterations`
// runs after three warm-ups. bench/gpu/run.sh runs PyTorch (torch.matmul,
// SDPA) on the same shapes beside them. Links the runtime only.
//
//===----------------------------------------------------------------------===//

#include "dialects/sched/IR/ScratchLayout.h"
#include "runtime/exec/BundleData.h"
#include "runtime/exec/CpuMath.h"
#include "runtime/gpu/CublasLt.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/GpuBackend.h"
#include "runtime/gpu/GpuProgram.h"
#include "runtime/gpu/Nvrtc.h"
#include "runtime/gpu/kernels/OpsAbi.h"
#include "runtime/support/Fp8Scaling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace weft::runtime;

namespace {
int fail(const absl::Status &s) {
  std::fprintf(stderr, "weft-gpu-bench: error: %s\n",
               std::string(s.message()).c_str());
  return 1;
}

/// `n` random bf16 values (normal draws, rounded).
std::vector<uint16_t> randomBf16(int64_t n, std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  std::vector<uint16_t> out(n);
  for (uint16_t &x : out)
    encode(normal(rng), DType::BF16, reinterpret_cast<uint8_t *>(&x));
  return out;
}

/// The median wall-clock milliseconds of `run` (which waits for the GPU)
/// over `iterations` runs after three warm-ups.
absl::StatusOr<double> medianMs(int iterations,
                                const std::function<absl::Status()> &run) {
  std::vector<double> ms;
  for (int i = 0; i < iterations + 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (absl::Status s = run(); !s.ok())
      return s;
    double elapsed = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (i >= 3)
      ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// The program: inputs q, k, v, dout; o, lse, dq, dk, dv and the scratch
/// the algorithm needs (dialects/sched/IR/ScratchLayout.h) in the arena,
/// 256-byte aligned, each live throughout.
sched::SchedBundle attentionBundle(int64_t b, int64_t h, int64_t s, int64_t d,
                                   bool flash) {
  sched::SchedBundle bundle;
  bundle.dir = "attention";
  sched::Program p;
  p.name = "attention";
  p.align = 256;
  p.streams = {"compute"};
  auto add = [&](sched::Buffer::Kind kind, std::vector<int64_t> shape,
                 DType type) {
    sched::Buffer buffer;
    buffer.kind = kind;
    buffer.type = {shape, type};
    if (kind == sched::Buffer::Kind::Input) {
      buffer.index = static_cast<int64_t>(p.inputs.size());
      p.inputs.push_back({buffer.type, std::nullopt});
    } else {
      buffer.offset = p.arena;
      buffer.first = 0, buffer.last = 1;
      p.arena += (buffer.type.bytes() + 255) / 256 * 256;
    }
    p.buffers.push_back(buffer);
    return static_cast<int64_t>(p.buffers.size()) - 1;
  };
  using K = sched::Buffer::Kind;
  std::vector<int64_t> rows = {b, s, h, d}, lse = {b, h, s};
  int64_t q = add(K::Input, rows, DType::BF16),
          k = add(K::Input, rows, DType::BF16),
          v = add(K::Input, rows, DType::BF16),
          dout = add(K::Input, rows, DType::BF16),
          o = add(K::Alloc, rows, DType::BF16),
          l = add(K::Alloc, lse, DType::F32),
          dq = add(K::Alloc, rows, DType::BF16),
          dk = add(K::Alloc, rows, DType::BF16),
          dv = add(K::Alloc, rows, DType::BF16);
  int64_t scratchBytes =
      ::weft::sched::scratch::attentionLayout(!flash, true, b, s, h, s, 2)
          ->bytes;
  int64_t scratch = add(K::Alloc, {(scratchBytes + 3) / 4}, DType::F32);
  sched::AttentionAttrs attrs;
  attrs.scale = 1.0 / std::sqrt(static_cast<double>(d));
  attrs.causal = true;
  attrs.algorithm = flash ? sched::AttentionAlgorithm::Flash
                          : sched::AttentionAlgorithm::GemmSoftmax;
  sched::Instruction forward, backward;
  forward.op = sched::Op::Attention;
  forward.operands = {q, k, v, o, l};
  forward.hasScratch = !flash;
  if (!flash)
    forward.operands.push_back(scratch);
  forward.attrs = attrs;
  backward.op = sched::Op::AttentionGrad;
  backward.operands = {q, k, v, o, l, dout, dq, dk, dv, scratch};
  backward.hasScratch = true;
  backward.attrs = attrs;
  p.instructions = {forward, backward};
  bundle.programs.push_back(std::move(p));
  return bundle;
}

double bf16At(const std::vector<uint16_t> &v, int64_t i) {
  return decode(reinterpret_cast<const uint8_t *>(&v[i]), DType::BF16);
}

/// The largest |C - reference| over C's first `rows` rows, relative to the
/// largest |reference|, reading A, B, bias and aux from `host` (bf16).
double epilogueError(const GemmShape &g, int64_t rows,
                     const std::vector<uint16_t> *host,
                     const std::vector<uint16_t> &c) {
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < g.k; ++p)
        sum += bf16At(host[0], i * g.k + p) * bf16At(host[1], p * g.n + j);
      double aux = 0;
      double value = epilogueElement(
          g.epilogue, roundToF32(sum), g.hasBias() ? bf16At(host[3], j) : 0.0,
          g.epilogue == GemmEpilogue::DGelu ? bf16At(host[4], i * g.n + j)
                                            : 0.0,
          &aux, roundToF32);
      worst = std::max(worst, std::fabs(bf16At(c, i * g.n + j) - value));
      scale = std::max(scale, std::fabs(value));
    }
  return worst / scale;
}

/// The GPU, and the runtime's cuBLASLt on it with a 32 MiB workspace.
struct GemmRig {
  std::unique_ptr<CudaDevice> gpu;
  std::unique_ptr<CublasLt> blas;
  void *stream = nullptr;
};

absl::StatusOr<GemmRig> openGemmRig() {
  GemmRig rig;
  auto device = CudaDevice::open(0);
  if (!device.ok())
    return device.status();
  rig.gpu = std::move(*device);
  constexpr size_t kWorkspace = 32u << 20;
  auto workspace = rig.gpu->allocate(kWorkspace);
  if (!workspace.ok())
    return workspace.status();
  auto blas = CublasLt::open(*rig.gpu, workspace->address, kWorkspace);
  if (!blas.ok())
    return blas.status();
  rig.blas = std::move(*blas);
  auto stream = rig.gpu->createStream();
  if (!stream.ok())
    return stream.status();
  rig.stream = *stream;
  return rig;
}

/// Loads the runtime's own kernels (ops.cu, through NVRTC, as GpuBackend
/// does).
absl::Status loadOps(CudaDevice &gpu) {
  absl::StatusOr<std::string> image =
      compileCudaSource(gpuOpsSource(), gpu.arch(), "ops.cu");
  if (!image.ok())
    return image.status();
  return gpu.loadImage(*image);
}

/// `bytes` of `host` in a new device buffer.
absl::StatusOr<DeviceBuffer> upload(CudaDevice &gpu, const void *host,
                                    size_t bytes) {
  auto b = gpu.allocate(bytes);
  if (!b.ok())
    return b.status();
  if (absl::Status s = gpu.copyToDevice(*b, host, bytes); !s.ok())
    return s;
  return *b;
}

/// Prepares `g`, runs it once (then `check` reads C) and times it: one
/// JSON line; fails past an error of 2e-2.
/// Times `g` on `operands` through cuBLASLt, or through `launch` (which
/// queues it on the rig's stream) where given, and checks it once.
int runGemm(GemmRig &rig, const GemmShape &g, const GemmOperands &operands,
            int iterations, const std::string &label,
            const std::function<absl::StatusOr<double>()> &check,
            const std::function<absl::Status()> &launch = nullptr) {
  if (!launch)
    if (absl::Status s = rig.blas->prepare(g); !s.ok())
      return fail(s);
  auto once = [&] {
    absl::Status s =
        launch ? launch() : rig.blas->matmul(g, operands, rig.stream);
    return s.ok() ? rig.gpu->synchronize(rig.stream) : s;
  };
  // Checked once, before the timed runs (DGelu reads the aux; the GELU
  // kinds overwrite it, which the reference does not read).
  if (absl::Status s = once(); !s.ok())
    return fail(s);
  absl::StatusOr<double> error = check();
  if (!error.ok())
    return fail(error.status());
  absl::StatusOr<double> median = medianMs(iterations, once);
  if (!median.ok())
    return fail(median.status());
  std::printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"epilogue\": "
              "\"%s\", \"median_ms\": %.4f, \"tflops\": %.1f, "
              "\"max_error\": %.2e, \"device\": \"%s\"}\n",
              static_cast<long long>(g.m), static_cast<long long>(g.n),
              static_cast<long long>(g.k), label.c_str(), *median,
              g.flops() / (*median * 1e-3) / 1e12, *error,
              rig.gpu->name().c_str());
  return *error <= 2e-2 ? 0 : 1;
}

int gemm(int argc, char **argv) {
  GemmShape g;
  g.m = std::atoll(argv[0]);
  g.n = std::atoll(argv[1]);
  g.k = std::atoll(argv[2]);
  g.type = DType::BF16;
  int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  std::string epilogue = argc > 4 ? argv[4] : "none";
  g.epilogue = gemmEpilogueNamed(epilogue);
  if (g.epilogue == GemmEpilogue::None && epilogue != "none")
    return fail(
        absl::InvalidArgumentError("unknown epilogue '" + epilogue + "'"));
  absl::StatusOr<GemmRig> rig = openGemmRig();
  if (!rig.ok())
    return fail(rig.status());
  CudaDevice &gpu = *rig->gpu;
  std::mt19937 rng(1);
  // A, B, C, bias, aux.
  DeviceBuffer buffers[5];
  std::vector<uint16_t> host[5];
  int64_t sizes[5] = {g.m * g.k, g.k * g.n, g.m * g.n, g.n, g.m * g.n};
  for (int i = 0; i < 5; ++i) {
    host[i] = randomBf16(sizes[i], rng);
    auto b = upload(gpu, host[i].data(), host[i].size() * 2);
    if (!b.ok())
      return fail(b.status());
    buffers[i] = *b;
  }
  GemmOperands operands{buffers[0].address, buffers[1].address,
                        buffers[2].address,
                        g.hasBias() ? buffers[3].address : 0,
                        g.hasAux() ? buffers[4].address : 0};
  return runGemm(
      *rig, g, operands, iterations, epilogue, [&]() -> absl::StatusOr<double> {
        std::vector<uint16_t> c(g.m * g.n);
        if (absl::Status s = gpu.copyToHost(c.data(), buffers[2], c.size() * 2);
            !s.ok())
          return s;
        return epilogueError(g, std::min<int64_t>(g.m, 4), host, c);
      });
}

int gemmFp8(int argc, char **argv) {
  GemmShape g;
  g.m = std::atoll(argv[0]);
  g.n = std::atoll(argv[1]);
  g.k = std::atoll(argv[2]);
  int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  std::string scaling = argc > 4 ? argv[4] : "tensor";
  // Experts: the m rows in `experts` equal groups, group e times expert e's
  // [n, k] of B [experts * n, k], as an expert layer's FP8 grouped_matmul
  // runs (Weft's kernel, the sizes on the device).
  int64_t experts = argc > 5 ? std::atoll(argv[5]) : 1;
  if (experts < 1 || g.m % experts != 0)
    return fail(absl::InvalidArgumentError(
        "gemm-fp8 experts must be positive and divide m"));
  if (scaling == "tensor")
    g.scaleModeA = g.scaleModeB = WEFT_FP8_SCALE_TENSOR;
  else if (scaling == "rows")
    g.scaleModeA = g.scaleModeB = WEFT_FP8_SCALE_ROWS;
  else if (scaling == "blockwise")
    g.scaleModeA = WEFT_FP8_SCALE_VEC128, g.scaleModeB = WEFT_FP8_SCALE_BLK128;
  else if (scaling == "mxfp8")
    g.scaleModeA = g.scaleModeB = WEFT_FP8_SCALE_VEC32;
  else
    return fail(absl::InvalidArgumentError(
        "gemm-fp8 scaling is tensor, rows, blockwise or mxfp8, not " +
        scaling));
  // MXFP8's scales are powers of two (E8M0's).
  int pow2 = scaling == "mxfp8";
  g.type = DType::BF16; // C.
  g.fp8A = g.fp8B = DType::F8E4M3FN;
  g.transB = true; // B [n, k]: cuBLASLt's FP8 layout.
  absl::StatusOr<GemmRig> rig = openGemmRig();
  if (!rig.ok())
    return fail(rig.status());
  CudaDevice &gpu = *rig->gpu;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  // Each operand [rows, k]: its codes by its blocks' scales (the mode's
  // blocks, as sched.fp8_cast casts them), and their inverses in the
  // mode's layout (Fp8Scaling.h).
  std::vector<uint8_t> codes[2];
  std::vector<float> inverse[2];
  int modes[2] = {g.scaleModeA, g.scaleModeB};
  DeviceBuffer buffers[5];
  for (int i = 0; i < 2; ++i) {
    int64_t rows = i == 0 ? g.m : experts * g.n, k = g.k;
    int64_t blockRows = weft_fp8_scale_block_rows(modes[i], rows),
            blockK = weft_fp8_scale_block_k(modes[i], k);
    std::vector<float> x(rows * k);
    for (float &v : x)
      v = normal(rng);
    // The maxima by block, row-major over the grid.
    int64_t gridK = k / blockK;
    std::vector<float> amax((rows + blockRows - 1) / blockRows * gridK);
    for (int64_t e = 0; e < rows * k; ++e) {
      float &m = amax[e / k / blockRows * gridK + e % k / blockK];
      m = std::max(m, std::fabs(x[e]));
    }
    inverse[i].assign(weft_fp8_scale_count(modes[i], rows, k), 0.0f);
    for (int64_t e = 0; e < rows * k; ++e) {
      int64_t r = e / k, c = e % k;
      float scale =
          weft_fp8_scale(amax[r / blockRows * gridK + c / blockK], 1, pow2);
      codes[i].push_back(weft_fp8_code(x[e], scale, 1));
      inverse[i][weft_fp8_scale_index(modes[i], r, c, rows, k)] = 1.0f / scale;
    }
    auto b = upload(gpu, codes[i].data(), codes[i].size());
    auto sb = upload(gpu, inverse[i].data(), inverse[i].size() * sizeof(float));
    if (!b.ok() || !sb.ok())
      return fail(b.ok() ? sb.status() : b.status());
    buffers[i] = *b, buffers[3 + i] = *sb;
  }
  auto c = gpu.allocate(g.m * g.n * 2);
  if (!c.ok())
    return fail(c.status());
  buffers[2] = *c;
  GemmOperands operands{
      buffers[0].address, buffers[1].address, buffers[2].address, 0, 0,
      buffers[3].address, buffers[4].address};
  // Each partial sum along k (the whole k, or each 128- or 32-element
  // block) times its scales, as cuBLASLt (and Weft's MXFP8 kernel) promote
  // them.
  int64_t step = weft_fp8_scale_block_k(g.scaleModeA, g.k);
  // MXFP8 and experts run in the runtime's own kernel (ops.cu, through
  // NVRTC), with the arguments GpuProgram gives it; the others in cuBLASLt.
  std::vector<int32_t> groupSizes(experts, static_cast<int32_t>(g.m / experts));
  auto sizes = upload(gpu, groupSizes.data(), groupSizes.size() * 4);
  if (!sizes.ok())
    return fail(sizes.status());
  std::function<absl::Status()> launch;
  struct {
    uint64_t a, b, scaleA, scaleB, c, sizes = 0;
    long groups = 1, experts = 1, m = 0, n = 0, k = 0, lda = 0, ldb = 0,
         ldc = 0;
    int modeA = WEFT_FP8_SCALE_VEC32, modeB = WEFT_FP8_SCALE_VEC32;
    int e4m3A = 1, e4m3B = 1, bf16Out = 1, accumulate = 0;
  } args{buffers[0].address, buffers[1].address, buffers[3].address,
         buffers[4].address, buffers[2].address};
  args.m = g.m, args.n = g.n, args.k = g.k;
  args.lda = g.k, args.ldb = g.k, args.ldc = g.n;
  args.modeA = g.scaleModeA, args.modeB = g.scaleModeB;
  if (experts > 1)
    args.sizes = sizes->address, args.groups = args.experts = experts;
  void *kernelArgs[] = {
      &args.a,     &args.b,     &args.scaleA,  &args.scaleB,
      &args.c,     &args.sizes, &args.groups,  &args.experts,
      &args.m,     &args.n,     &args.k,       &args.lda,
      &args.ldb,   &args.ldc,   &args.modeA,   &args.modeB,
      &args.e4m3A, &args.e4m3B, &args.bf16Out, &args.accumulate};
  if (pow2 || experts > 1) {
    if (absl::Status s = loadOps(gpu); !s.ok())
      return fail(s);
    absl::StatusOr<void *> fn = gpu.function("weft_fp8_block_gemm");
    if (!fn.ok())
      return fail(fn.status());
    void *kernel = *fn;
    unsigned grid[3] = {static_cast<unsigned>((g.n + WEFT_FP8_GEMM_TILE - 1) /
                                              WEFT_FP8_GEMM_TILE),
                        static_cast<unsigned>((g.m + WEFT_FP8_GEMM_TILE - 1) /
                                                  WEFT_FP8_GEMM_TILE +
                                              (experts > 1 ? experts : 0)),
                        1};
    launch = [&gpu, &rig, kernel, grid, &kernelArgs] {
      return gpu.launchAsync(kernel, grid, WEFT_FP8_GEMM_THREADS, kernelArgs,
                             rig->stream);
    };
  }
  return runGemm(
      *rig, g, operands, iterations,
      "fp8-" + scaling +
          (experts > 1 ? "-" + std::to_string(experts) + "-experts" : ""),
      [&]() -> absl::StatusOr<double> {
        std::vector<uint16_t> out(g.m * g.n);
        if (absl::Status s =
                gpu.copyToHost(out.data(), buffers[2], out.size() * 2);
            !s.ok())
          return s;
        // Every row of a small product (every fragment register, warp and
        // partial tile of a hand-written kernel); of a large one, the first
        // and last four (a host check of every row would take minutes).
        std::vector<int64_t> rows;
        for (int64_t i = 0; i < g.m; ++i)
          if (g.m * g.n * g.k <= (int64_t(1) << 31) || i < 4 || i >= g.m - 4)
            rows.push_back(i);
        double worst = 0, scale = 1e-30;
        for (int64_t i : rows)
          for (int64_t j = 0; j < g.n; ++j) {
            // Row i's expert's row j of B.
            int64_t bj = i / (g.m / experts) * g.n + j;
            double sum = 0;
            for (int64_t first = 0; first < g.k; first += step) {
              double partial = 0;
              for (int64_t p = first; p < first + step; ++p)
                partial += fp8Value(codes[0][i * g.k + p], DType::F8E4M3FN) *
                           fp8Value(codes[1][bj * g.k + p], DType::F8E4M3FN);
              sum += partial *
                     inverse[0][weft_fp8_scale_index(modes[0], i, first, g.m,
                                                     g.k)] *
                     inverse[1][weft_fp8_scale_index(modes[1], bj, first,
                                                     experts * g.n, g.k)];
            }
            worst = std::max(worst, std::fabs(bf16At(out, i * g.n + j) - sum));
            scale = std::max(scale, std::fabs(sum));
          }
        return worst / scale;
      },
      launch);
}

int wgradFp8(int argc, char **argv) {
  int64_t n = std::atoll(argv[0]), p = std::atoll(argv[1]),
          q = std::atoll(argv[2]);
  int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  std::string scaling = argc > 4 ? argv[4] : "rows";
  int64_t experts = argc > 5 ? std::atoll(argv[5]) : 8;
  int64_t tile = scaling == "rows"        ? 0
                 : scaling == "blockwise" ? 128
                 : scaling == "mxfp8"     ? 32
                                          : -1;
  if (tile < 0)
    return fail(absl::InvalidArgumentError(
        "wgrad-fp8 scaling is rows, blockwise or mxfp8, not " + scaling));
  if (experts < 1 || p < 1 || q < 1 || n < 64 * experts)
    return fail(absl::InvalidArgumentError(
        "wgrad-fp8 needs P, Q and experts positive and N >= 64 * experts"));
  int pow2 = scaling == "mxfp8";
  // Expert e's share of the rows, 40 more (even e) or fewer (odd e), the
  // last taking what is left: each expert's last 32-row block partial.
  std::vector<int32_t> sizes(experts);
  int64_t left = n;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t size =
        e + 1 == experts ? left : n / experts + (e % 2 == 0 ? 40 : -40);
    sizes[e] = static_cast<int32_t>(size);
    left -= size;
  }
  absl::StatusOr<GemmRig> rig = openGemmRig();
  if (!rig.ok())
    return fail(rig.status());
  CudaDevice &gpu = *rig->gpu;
  if (absl::Status s = loadOps(gpu); !s.ok())
    return fail(s);
  absl::StatusOr<void *> castFn = gpu.function("weft_fp8_group_cast"),
                         wgradFn = gpu.function("weft_fp8_group_wgrad");
  if (!castFn.ok() || !wgradFn.ok())
    return fail(castFn.ok() ? wgradFn.status() : castFn.status());
  int64_t tiles = weft_fp8_group_tiles(experts, n, tile);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  // Operand i: its values [n, cols] on the device, and the buffers its
  // cast writes: codes [cols, n] and 1 / s [tiles, cols].
  struct Operand {
    int64_t cols;
    std::vector<float> x;
    DeviceBuffer values, codes, scales;
  } ops[2];
  ops[0].cols = p, ops[1].cols = q;
  auto sizesOnGpu = upload(gpu, sizes.data(), sizes.size() * 4);
  auto out = gpu.allocate(experts * p * q * 4);
  if (!sizesOnGpu.ok() || !out.ok())
    return fail(sizesOnGpu.ok() ? out.status() : sizesOnGpu.status());
  for (Operand &o : ops) {
    o.x.resize(n * o.cols);
    for (float &v : o.x)
      v = normal(rng);
    auto values = upload(gpu, o.x.data(), o.x.size() * 4);
    std::vector<uint8_t> zeros(o.cols * n, 0);
    std::vector<float> zeroScales(tiles * o.cols, 0.0f);
    auto codes = upload(gpu, zeros.data(), zeros.size());
    auto scales = upload(gpu, zeroScales.data(), zeroScales.size() * 4);
    if (!values.ok() || !codes.ok() || !scales.ok())
      return fail(!values.ok()  ? values.status()
                  : !codes.ok() ? codes.status()
                                : scales.status());
    o.values = *values, o.codes = *codes, o.scales = *scales;
  }
  // The kernels' arguments, as GpuProgram passes them.
  struct CastArgs {
    uint64_t x, sizes;
    long groups, experts, n, cols, tile;
    int e4m3, pow2;
    uint64_t values, codes, scaleInv;
  } cast[2];
  for (int i = 0; i < 2; ++i)
    cast[i] = {ops[i].values.address,
               sizesOnGpu->address,
               static_cast<long>(experts),
               static_cast<long>(experts),
               static_cast<long>(n),
               static_cast<long>(ops[i].cols),
               static_cast<long>(tile),
               1,
               pow2,
               0,
               ops[i].codes.address,
               ops[i].scales.address};
  auto castOnce = [&]() -> absl::Status {
    for (CastArgs &c : cast) {
      void *args[] = {&c.x,    &c.sizes,  &c.groups, &c.experts,
                      &c.n,    &c.cols,   &c.tile,   &c.e4m3,
                      &c.pow2, &c.values, &c.codes,  &c.scaleInv};
      unsigned grid[3] = {static_cast<unsigned>((c.cols + 255) / 256),
                          static_cast<unsigned>(experts), 1};
      if (absl::Status s =
              gpu.launchAsync(*castFn, grid, 256, args, rig->stream);
          !s.ok())
        return s;
    }
    return gpu.synchronize(rig->stream);
  };
  if (absl::Status s = castOnce(); !s.ok())
    return fail(s);
  // The casts against the CPU runtime's, byte for byte (both start from
  // zeros: codes of rows after the groups, and scales of tile numbers no
  // expert has, are never written).
  std::vector<uint8_t> codes[2];
  std::vector<float> inverse[2];
  int64_t castMismatches = 0;
  for (int i = 0; i < 2; ++i) {
    int64_t cols = ops[i].cols;
    codes[i].resize(cols * n);
    inverse[i].resize(tiles * cols);
    std::vector<uint8_t> cpuCodes(cols * n, 0);
    std::vector<float> cpuInverse(tiles * cols, 0.0f);
    if (absl::Status s = cpu::fp8GroupQuantize(
            ops[i].x.data(), sizes.data(), experts, experts, n, cols, tile,
            true, pow2, nullptr, cpuCodes.data(), cpuInverse.data(),
            "wgrad-fp8");
        !s.ok())
      return fail(s);
    if (absl::Status s =
            gpu.copyToHost(codes[i].data(), ops[i].codes, codes[i].size());
        !s.ok())
      return fail(s);
    if (absl::Status s = gpu.copyToHost(inverse[i].data(), ops[i].scales,
                                        inverse[i].size() * 4);
        !s.ok())
      return fail(s);
    for (int64_t j = 0; j < cols * n; ++j)
      castMismatches += codes[i][j] != cpuCodes[j];
    castMismatches += std::memcmp(inverse[i].data(), cpuInverse.data(),
                                  inverse[i].size() * 4) != 0;
  }
  absl::StatusOr<double> castMs = medianMs(iterations, castOnce);
  if (!castMs.ok())
    return fail(castMs.status());
  std::printf("{\"casts\": \"weft_fp8_group_cast %s\", \"n\": %lld, \"p\": "
              "%lld, \"q\": %lld, \"experts\": %lld, \"median_ms\": %.4f, "
              "\"mismatches_vs_cpu\": %lld}\n",
              scaling.c_str(), static_cast<long long>(n),
              static_cast<long long>(p), static_cast<long long>(q),
              static_cast<long long>(experts), *castMs,
              static_cast<long long>(castMismatches));
  struct {
    uint64_t a, b, scaleA, scaleB, c, sizes;
    long groups, experts, p, q, n, tile;
    int e4m3A = 1, e4m3B = 1, bf16Out = 0;
  } args{ops[0].codes.address,
         ops[1].codes.address,
         ops[0].scales.address,
         ops[1].scales.address,
         out->address,
         sizesOnGpu->address,
         static_cast<long>(experts),
         static_cast<long>(experts),
         static_cast<long>(p),
         static_cast<long>(q),
         static_cast<long>(n),
         static_cast<long>(tile)};
  void *kernelArgs[] = {&args.a,     &args.b,     &args.scaleA, &args.scaleB,
                        &args.c,     &args.sizes, &args.groups, &args.experts,
                        &args.p,     &args.q,     &args.n,      &args.tile,
                        &args.e4m3A, &args.e4m3B, &args.bf16Out};
  unsigned grid[3] = {
      static_cast<unsigned>((q + WEFT_FP8_GEMM_TILE - 1) / WEFT_FP8_GEMM_TILE),
      static_cast<unsigned>((p + WEFT_FP8_GEMM_TILE - 1) / WEFT_FP8_GEMM_TILE),
      static_cast<unsigned>(experts)};
  GemmShape g;
  g.m = p, g.n = q, g.k = n;
  return runGemm(
      *rig, g, {}, iterations,
      "fp8-wgrad-" + scaling + "-" + std::to_string(experts) + "-experts",
      [&]() -> absl::StatusOr<double> {
        std::vector<float> got(experts * p * q);
        if (absl::Status s = gpu.copyToHost(got.data(), *out, got.size() * 4);
            !s.ok())
          return s;
        if (castMismatches)
          return 1.0; // Fails: the casts are not the CPU's.
        // Every row of P of a small product; of a large one, the first and
        // last four of each expert's.
        double worst = 0, scale = 1e-30;
        for (int64_t e = 0; e < experts; ++e) {
          long first, count;
          weft_fp8_expert_span(sizes.data(), experts, experts, n, e, &first,
                               &count);
          for (int64_t i = 0; i < p; ++i) {
            if (p * q * n > (int64_t(1) << 31) && i >= 4 && i < p - 4)
              continue;
            for (int64_t j = 0; j < q; ++j) {
              double sum = 0;
              for (int64_t k0 = 0; k0 < count; k0 += 32) {
                double partial = 0;
                for (int64_t v = k0; v < std::min<int64_t>(k0 + 32, count); ++v)
                  partial +=
                      fp8Value(codes[0][i * n + first + v], DType::F8E4M3FN) *
                      fp8Value(codes[1][j * n + first + v], DType::F8E4M3FN);
                long t = weft_fp8_expert_tile(first, e, k0, tile);
                sum += partial * inverse[0][t * p + i] * inverse[1][t * q + j];
              }
              worst =
                  std::max(worst, std::fabs(got[(e * p + i) * q + j] - sum));
              scale = std::max(scale, std::fabs(sum));
            }
          }
        }
        return worst / scale;
      },
      [&] {
        return gpu.launchAsync(*wgradFn, grid, WEFT_FP8_GEMM_THREADS,
                               kernelArgs, rig->stream);
      });
}

int attention(int argc, char **argv) {
  int64_t b = std::atoll(argv[0]), h = std::atoll(argv[1]),
          s = std::atoll(argv[2]), d = std::atoll(argv[3]);
  std::string mode = argc > 4 ? argv[4] : "gemm";
  int iterations = argc > 5 ? std::atoi(argv[5]) : 10;
  sched::SchedBundle bundle = attentionBundle(b, h, s, d, mode == "fused");
  auto backend = GpuBackend::create(bundle, {});
  if (!backend.ok())
    return fail(backend.status());
  std::mt19937 rng(1);
  std::vector<std::vector<uint16_t>> inputs;
  std::vector<const void *> data;
  for (int i = 0; i < 4; ++i)
    inputs.push_back(randomBf16(b * s * h * d, rng));
  for (auto &in : inputs)
    data.push_back(in.data());
  absl::StatusOr<double> median =
      medianMs(iterations, [&] { return (*backend)->run("attention", data); });
  if (!median.ok())
    return fail(median.status());
  double flops = 3.5 * 2.0 * b * h * s * s * d;
  std::printf("{\"mode\": \"%s\", \"median_ms\": %.3f, \"tflops\": %.1f, "
              "\"device\": \"%s\"}\n",
              mode.c_str(), *median, flops / (*median * 1e-3) / 1e12,
              (*backend)->describe().c_str());
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  std::string what = argc > 1 ? argv[1] : "";
  if (what == "gemm" && argc >= 5)
    return gemm(argc - 2, argv + 2);
  if (what == "gemm-fp8" && argc >= 5)
    return gemmFp8(argc - 2, argv + 2);
  if (what == "wgrad-fp8" && argc >= 5)
    return wgradFp8(argc - 2, argv + 2);
  if (what == "attention" && argc >= 6)
    return attention(argc - 2, argv + 2);
  std::fprintf(stderr, "usage: weft-gpu-bench gemm M N K [iterations] "
                       "[none|bias|gelu|bias_gelu|dgelu]\n"
                       "       weft-gpu-bench gemm-fp8 M N K [iterations] "
                       "[tensor|rows|blockwise|mxfp8] [experts]\n"
                       "       weft-gpu-bench wgrad-fp8 N P Q [iterations] "
                       "[rows|blockwise|mxfp8] [experts]\n"
                       "       weft-gpu-bench attention B H S D [gemm|fused] "
                       "[iterations]\n");
  return 2;
}
