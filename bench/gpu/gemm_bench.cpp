//===- gemm_bench.cpp - Weft's GEMM path on a GPU, timed ------------------===//
//
//   weft-gemm-bench M N K [iterations]
//
// Times C = A B (bf16 in and out, f32 accumulation, row-major) through the
// runtime's own GEMM path (CudaDevice + CublasLt: the descriptors and the
// heuristic's algorithm that weft.matmul uses) and prints one JSON line
// with the median milliseconds over `iterations` timed runs (after three
// warm-ups) and the TFLOP/s. bench/gpu/run.sh runs PyTorch's matmul on the
// same shape beside it. Links the runtime only.
//
//===----------------------------------------------------------------------===//

#include "runtime/gpu/CublasLt.h"
#include "runtime/gpu/CudaDevice.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

using namespace weft::runtime;

namespace {
int fail(const absl::Status &s) {
  std::fprintf(stderr, "weft-gemm-bench: error: %s\n",
               std::string(s.message()).c_str());
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: weft-gemm-bench M N K [iterations]\n");
    return 2;
  }
  GemmShape g;
  g.m = std::atoll(argv[1]);
  g.n = std::atoll(argv[2]);
  g.k = std::atoll(argv[3]);
  g.type = DType::BF16;
  g.strideC = g.m * g.n;
  int iterations = argc > 4 ? std::atoi(argv[4]) : 20;
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
  // Random bf16 operands (the top halves of random floats in [-1, 1)).
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  DeviceBuffer buffers[3];
  int64_t sizes[3] = {g.m * g.k, g.k * g.n, g.m * g.n};
  for (int i = 0; i < 3; ++i) {
    std::vector<uint16_t> host(sizes[i]);
    for (uint16_t &x : host) {
      float f = uniform(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      x = static_cast<uint16_t>(bits >> 16);
    }
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
  std::vector<double> ms;
  for (int i = 0; i < iterations + 3; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (absl::Status s =
            (*blas)->matmul(g, buffers[0].address, buffers[1].address,
                            buffers[2].address, *stream);
        !s.ok())
      return fail(s);
    if (absl::Status s = gpu.synchronize(*stream); !s.ok())
      return fail(s);
    double elapsed = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    if (i >= 3)
      ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  std::printf("{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"median_ms\": %.4f, "
              "\"tflops\": %.1f, \"device\": \"%s\"}\n",
              static_cast<long long>(g.m), static_cast<long long>(g.n),
              static_cast<long long>(g.k), median,
              g.flops() / (median * 1e-3) / 1e12, gpu.name().c_str());
  return 0;
}
