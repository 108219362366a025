//===- gpu_bench.cpp - the GPU runtime's GEMMs and attention, timed -------===//
//
//   weft-gpu-bench gemm M N K [iterations]
//   weft-gpu-bench attention B H S D [gemm|fused] [iterations]
//
// gemm: C = A B (bf16 in and out, f32 accumulation, row-major) through the
// runtime's own GEMM path (CudaDevice + CublasLt: the descriptors and the
// heuristic's algorithm that weft.matmul uses).
// attention: one causal bf16 attention forward + backward (q, k, v
// [B, S, H, D]) as the runtime runs it inside a training step: a two-step
// program (weft.attention, weft.attention_grad) planned by GpuPlan and run by
// GpuBackend, through cuBLASLt GEMMs ("gemm") or the fused kernels of
// attention.cu ("fused"), replayed as a CUDA graph; TFLOP/s counted as
// FlashAttention does (causal forward 2 B H S^2 D, backward 2.5 times that).
// Each prints one JSON line with the median milliseconds over `iterations`
// runs after three warm-ups. bench/gpu/run.sh runs PyTorch (torch.matmul,
// SDPA) on the same shapes beside them. Links the runtime only.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/CublasLt.h"
#include "runtime/gpu/CudaDevice.h"
#include "runtime/gpu/GpuBackend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

/// `n` random bf16 values (the top halves of normal floats).
std::vector<uint16_t> randomBf16(int64_t n, std::mt19937 &rng) {
  std::normal_distribution<float> normal;
  std::vector<uint16_t> out(n);
  for (uint16_t &x : out) {
    float f = normal(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    x = static_cast<uint16_t>(bits >> 16);
  }
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

/// The program: inputs q, k, v, dout; o and lse, then dq, dk, dv in the
/// arena.
Bundle attentionBundle(int64_t b, int64_t h, int64_t s, int64_t d) {
  Bundle bundle;
  bundle.path = "attention";
  ProgramSpec &p = bundle.programs["attention"];
  std::vector<int64_t> rows = {b, s, h, d}, lse = {b, h, s};
  auto add = [&](ValueSpec::Kind kind, std::vector<int64_t> shape, DType type) {
    ValueSpec v;
    v.kind = kind;
    v.shape = shape;
    v.dtype = type;
    if (kind == ValueSpec::Kind::Input) {
      v.index = static_cast<int64_t>(p.inputs.size());
      p.inputs.push_back(static_cast<int64_t>(p.values.size()));
    } else {
      v.offset = p.arenaBytes;
      p.arenaBytes += (v.bytes() + 255) / 256 * 256;
    }
    p.values.push_back(v);
    return static_cast<int64_t>(p.values.size()) - 1;
  };
  int64_t q = add(ValueSpec::Kind::Input, rows, DType::BF16),
          k = add(ValueSpec::Kind::Input, rows, DType::BF16),
          v = add(ValueSpec::Kind::Input, rows, DType::BF16),
          dout = add(ValueSpec::Kind::Input, rows, DType::BF16),
          o = add(ValueSpec::Kind::Arena, rows, DType::BF16),
          l = add(ValueSpec::Kind::Arena, lse, DType::F32),
          dq = add(ValueSpec::Kind::Arena, rows, DType::BF16),
          dk = add(ValueSpec::Kind::Arena, rows, DType::BF16),
          dv = add(ValueSpec::Kind::Arena, rows, DType::BF16);
  nlohmann::json attrs = {{"scale", 1.0 / std::sqrt(static_cast<double>(d))},
                          {"causal", true}};
  p.steps.push_back({"weft.attention", {q, k, v}, {o, l}, attrs});
  p.steps.push_back(
      {"weft.attention_grad", {q, k, v, o, l, dout}, {dq, dk, dv}, attrs});
  return bundle;
}

int gemm(int argc, char **argv) {
  GemmShape g;
  g.m = std::atoll(argv[0]);
  g.n = std::atoll(argv[1]);
  g.k = std::atoll(argv[2]);
  g.type = DType::BF16;
  int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  auto device = CudaDevice::open(0);
  if (!device.ok())
    return fail(device.status());
  CudaDevice &gpu = **device;
  constexpr size_t kWorkspace = 32u << 20;
  auto workspace = gpu.allocate(kWorkspace);
  if (!workspace.ok())
    return fail(workspace.status());
  auto blas = CublasLt::open(workspace->address, kWorkspace);
  if (!blas.ok())
    return fail(blas.status());
  std::mt19937 rng(1);
  DeviceBuffer buffers[3];
  int64_t sizes[3] = {g.m * g.k, g.k * g.n, g.m * g.n};
  for (int i = 0; i < 3; ++i) {
    std::vector<uint16_t> host = randomBf16(sizes[i], rng);
    auto b = gpu.allocate(host.size() * 2);
    if (!b.ok())
      return fail(b.status());
    if (absl::Status s = gpu.copyToDevice(*b, host.data(), host.size() * 2);
        !s.ok())
      return fail(s);
    buffers[i] = *b;
  }
  auto stream = gpu.createStream();
  if (!stream.ok())
    return fail(stream.status());
  if (absl::Status s = (*blas)->prepare(g); !s.ok())
    return fail(s);
  absl::StatusOr<double> median = medianMs(iterations, [&] {
    absl::Status s = (*blas)->matmul(
        g, {buffers[0].address, buffers[1].address, buffers[2].address},
        *stream);
    return s.ok() ? gpu.synchronize(*stream) : s;
  });
  if (!median.ok())
    return fail(median.status());
  std::printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"median_ms\": %.4f, "
              "\"tflops\": %.1f, \"device\": \"%s\"}\n",
              static_cast<long long>(g.m), static_cast<long long>(g.n),
              static_cast<long long>(g.k), *median,
              g.flops() / (*median * 1e-3) / 1e12, gpu.name().c_str());
  return 0;
}

int attention(int argc, char **argv) {
  int64_t b = std::atoll(argv[0]), h = std::atoll(argv[1]),
          s = std::atoll(argv[2]), d = std::atoll(argv[3]);
  std::string mode = argc > 4 ? argv[4] : "gemm";
  int iterations = argc > 5 ? std::atoi(argv[5]) : 10;
  Bundle bundle = attentionBundle(b, h, s, d);
  GpuBackend::Options options;
  // 0: always the fused kernels; else always GEMMs.
  options.plan.attentionScratchBytes = mode == "fused" ? 0 : int64_t(1) << 40;
  auto backend = GpuBackend::create(bundle, {}, options);
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
  if (what == "attention" && argc >= 6)
    return attention(argc - 2, argv + 2);
  std::fprintf(stderr, "usage: weft-gpu-bench gemm M N K [iterations]\n"
                       "       weft-gpu-bench attention B H S D [gemm|fused] "
                       "[iterations]\n");
  return 2;
}
