//===- calibrate.cpp - this machine's rates as a topology -----------------===//
//
//   weft-calibrate --ranks N --threads T [--shapes M,N,K;...] > cpu.json
//
// Measures what the cost model (passes/costmodel/CostModel.h) needs for N
// local ranks of T OpenBLAS threads each, with all N at work at once as in
// a job, and prints a topology file (README: File formats) that
// `weftc compile --topology cpu.json --report` predicts with:
//   - peak_tflops f32 (and bf16, the same: the CPU runs both in f32):
//     the FLOP-weighted rate of cblas_sgemm over the shapes given (by
//     default the benchmark GPT's), so the efficiency at those shapes is
//     in the number;
//   - memory_bandwidth_gbps: c = a + b over 64 MiB arrays on one thread (as
//     the generated kernels run), three arrays' bytes over the time;
//   - transcendentals_per_s: elements per second of the generated kernels'
//     GELU (in double, through tanh, as codegen's weft_gelu) on one thread;
//   - efficiency attention and attention_backward: the runtime's attention
//     kernels (runtime/exec/CpuMath.h) at the benchmark GPT's shape (batch
//     8, 6 heads, 256 positions of 64, causal), their FLOPs as the cost
//     model counts them over the time, as a share of the GEMM rate;
//     reduce and norm: its reduction (a bias gradient) and norm backward,
//     their operands' bytes over the time, as a share of the bandwidth;
//   - intra_node bandwidth_gbps and latency_us: Gloo all-reduces among the
//     N ranks (threads here, over loopback TCP as processes would): the
//     latency from 4-byte ones (per ring step), the bandwidth from 16 MiB
//     ones as the ring's bus bandwidth 2(n - 1)/n · bytes / time.
// Each figure is the median of several timed repetitions.
//
//===----------------------------------------------------------------------===//

#include "runtime/dist/Communicator.h"
#include "runtime/exec/CpuMath.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int);

using namespace weft::runtime;
using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Runs `work(r)` on `ranks` threads at once and returns the median of
/// what they return.
template <typename Work> double onRanks(int ranks, Work work) {
  std::vector<double> got(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { got[r] = work(r); });
  for (std::thread &t : threads)
    t.join();
  return median(got);
}

struct Shape {
  int64_t m, n, k;
};

/// FLOP/s of sgemm over `shapes` (total FLOPs over total time), on one
/// rank while `ranks` - 1 others run the same.
double gemmRate(const std::vector<Shape> &shapes, int ranks) {
  return onRanks(ranks, [&](int) {
    std::vector<double> times;
    double flops = 0;
    for (const Shape &s : shapes)
      flops += 2.0 * s.m * s.n * s.k;
    for (int rep = 0; rep < 7; ++rep) {
      double total = 0;
      for (const Shape &s : shapes) {
        std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f),
            c(s.m * s.n);
        auto start = Clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k,
                    1.0f, a.data(), s.k, b.data(), s.n, 0.0f, c.data(), s.n);
        total += seconds(start);
      }
      times.push_back(total);
    }
    return flops / median(times);
  });
}

/// Bytes/s of c = a + b over 64 MiB arrays on one thread, with `ranks` - 1
/// others doing the same.
double memoryRate(int ranks) {
  return onRanks(ranks, [](int) {
    const size_t n = (64u << 20) / sizeof(float);
    std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
    std::vector<double> times;
    for (int rep = 0; rep < 7; ++rep) {
      auto start = Clock::now();
      for (size_t i = 0; i < n; ++i)
        c[i] = a[i] + b[i];
      times.push_back(seconds(start));
      // Keep the loop: read a result.
      if (c[rep] != 3.0f)
        std::abort();
    }
    return 3.0 * n * sizeof(float) / median(times);
  });
}

/// (seconds per ring step of a 4-byte all-reduce, bus bytes/s of a 16 MiB
/// one) among `ranks` ranks on this host.
std::pair<double, double> collectiveRates(int ranks, int port) {
  std::vector<double> latency(ranks), bandwidth(ranks);
  std::vector<std::string> failures(ranks);
  auto rank = [&](int r) {
    RankInfo info;
    info.rank = r, info.worldSize = ranks, info.masterPort = port;
    auto comm = Communicator::create(info, std::chrono::seconds(60));
    if (!comm.ok()) {
      failures[r] = std::string(comm.status().message());
      return;
    }
    MeshSpec mesh;
    mesh.axes = {"dp"};
    mesh.sizes = {ranks};
    if (absl::Status s = (*comm)->setMesh(mesh, {{"dp"}}); !s.ok()) {
      failures[r] = std::string(s.message());
      return;
    }
    auto time = [&](size_t count, int reps) {
      std::vector<float> data(count, 1.0f);
      std::vector<double> times;
      for (int rep = 0; rep < reps; ++rep) {
        auto start = Clock::now();
        absl::Status s = (*comm)->allReduce({"dp"}, data.data(), count);
        times.push_back(seconds(start));
        if (!s.ok()) {
          failures[r] = std::string(s.message());
          break; // Every later one would wait out the timeout too.
        }
      }
      return median(times);
    };
    double steps = 2.0 * (ranks - 1);
    latency[r] = time(1, 51) / steps;
    size_t big = (16u << 20) / sizeof(float);
    bandwidth[r] = steps / ranks * big * sizeof(float) / time(big, 9);
    (*comm)->barrier().IgnoreError();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back(rank, r);
  for (std::thread &t : threads)
    t.join();
  for (const std::string &f : failures)
    if (!f.empty()) {
      std::fprintf(stderr, "weft-calibrate: %s\n", f.c_str());
      std::exit(1);
    }
  return {median(latency), median(bandwidth)};
}

/// Elements per second of the generated kernels' GELU on one thread.
double transcendentalRate(int ranks) {
  return onRanks(ranks, [](int) {
    const size_t n = 1u << 22;
    std::vector<float> x(n), y(n);
    for (size_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(i % 1000) / 250.0f - 2.0f;
    std::vector<double> times;
    const double pi = 3.14159265358979323846, c = std::sqrt(2.0 / pi);
    for (int rep = 0; rep < 5; ++rep) {
      auto start = Clock::now();
      for (size_t i = 0; i < n; ++i) {
        double v = x[i];
        y[i] = static_cast<float>(
            0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
      }
      times.push_back(seconds(start));
      if (!(y[rep] <= 4.0f))
        std::abort();
    }
    return n / median(times);
  });
}

/// FLOP/s of the runtime's attention forward and backward at the
/// benchmark GPT's shape, on one rank while the others run the same.
std::pair<double, double> attentionRates(int ranks) {
  using namespace weft::runtime::cpu;
  const int64_t b = 8, s = 256, h = 6, d = 64;
  double rowsByKeys = double(b) * h * s * s;
  double forwardFlops = 4 * rowsByKeys * d, backwardFlops = 10 * rowsByKeys * d;
  std::vector<double> fw(ranks), bw(ranks);
  onRanks(ranks, [&](int r) {
    AttentionShape shape({b, s, h, d}, {b, s, h, d}, {b, s, h, d});
    AttentionMask mask;
    mask.causal = true;
    size_t n = b * s * h * d;
    std::vector<float> q(n, 0.01f), k(n, 0.02f), v(n, 0.03f), o(n),
        lse(b * h * s), dout(n, 0.001f), dq(n), dk(n), dv(n);
    float scale = 1.0f / 8.0f;
    std::vector<double> tf, tb;
    for (int rep = 0; rep < 5; ++rep) {
      auto start = Clock::now();
      attentionForward(shape, scale, mask, q.data(), k.data(), v.data(),
                       o.data(), lse.data());
      tf.push_back(seconds(start));
      start = Clock::now();
      attentionBackward(shape, scale, mask, q.data(), k.data(), v.data(),
                        o.data(), lse.data(), dout.data(), nullptr, dq.data(),
                        dk.data(), dv.data());
      tb.push_back(seconds(start));
    }
    fw[r] = forwardFlops / median(tf);
    bw[r] = backwardFlops / median(tb);
    return 0.0;
  });
  return {median(fw), median(bw)};
}

/// Bytes per second of the runtime's reduction (a bias gradient: [2048,
/// 1536] summed over rows) and norm backward ([2048, 384]), each its
/// operands' bytes over its time, on one rank while the others run the
/// same.
std::pair<double, double> libraryRates(int ranks) {
  using namespace weft::runtime::cpu;
  std::vector<double> reduce(ranks), norm(ranks);
  onRanks(ranks, [&](int r) {
    std::vector<float> x(2048 * 1536, 0.5f), y(1536);
    ReducePlan plan({2048, 1536}, {0}, ReduceKind::Sum);
    std::vector<float> nx(2048 * 384, 0.5f), w(384, 1.0f), dy(2048 * 384, 0.1f),
        dx(2048 * 384), dw(384), db(384);
    std::vector<double> tr, tn;
    for (int rep = 0; rep < 7; ++rep) {
      auto start = Clock::now();
      plan.run(x.data(), y.data());
      tr.push_back(seconds(start));
      start = Clock::now();
      normBackward(nx.data(), w.data(), dy.data(), dx.data(), dw.data(),
                   db.data(), 2048, 384, false, 1e-5);
      tn.push_back(seconds(start));
    }
    reduce[r] = (x.size() + y.size()) * 4.0 / median(tr);
    // x, dy and dx, and the weights' gradients.
    norm[r] = (3.0 * nx.size() + 3 * 384) * 4.0 / median(tn);
    return 0.0;
  });
  return {median(reduce), median(norm)};
}

/// This machine's memory over `ranks`, in GB (MemTotal of /proc/meminfo).
double memoryGB(int ranks) {
  std::ifstream info("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (info >> key) {
    if (key == "MemTotal:") {
      info >> kb;
      break;
    }
    std::getline(info, key);
  }
  return kb * 1024 / 1e9 / ranks;
}
} // namespace

int main(int argc, char **argv) {
  int ranks = 1, threads = 1, port = 29677;
  // The benchmark GPT (bench/gpt-bench.json, batch 8 x 256): its layers'
  // projections, MLP and the byte-vocabulary head, forward shapes.
  std::vector<Shape> shapes = {
      {2048, 384, 384}, {2048, 1536, 384}, {2048, 384, 1536}, {2048, 256, 384}};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ranks"))
      ranks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--port"))
      port = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--shapes")) {
      shapes.clear();
      std::stringstream list(argv[i + 1]);
      std::string item;
      while (std::getline(list, item, ';')) {
        Shape s{};
        if (std::sscanf(item.c_str(), "%ld,%ld,%ld", &s.m, &s.n, &s.k) != 3 ||
            s.m < 1 || s.n < 1 || s.k < 1) {
          std::fprintf(stderr, "weft-calibrate: bad shape '%s' (M,N,K)\n",
                       item.c_str());
          return 1;
        }
        shapes.push_back(s);
      }
    } else {
      std::fprintf(stderr, "weft-calibrate: unknown flag %s\n", argv[i]);
      return 1;
    }
  }
  if (ranks < 1 || threads < 1 || shapes.empty()) {
    std::fprintf(stderr, "usage: weft-calibrate --ranks N --threads T "
                         "[--shapes M,N,K;...] [--port P]\n");
    return 1;
  }
  openblas_set_num_threads(threads);
  double gemm = gemmRate(shapes, ranks), memory = memoryRate(ranks);
  double transcendentals = transcendentalRate(ranks);
  auto [attention, attentionBackward] = attentionRates(ranks);
  auto [reduce, norm] = libraryRates(ranks);
  double latency = 20e-6, bandwidth = 5e9;
  if (ranks > 1)
    std::tie(latency, bandwidth) = collectiveRates(ranks, port);
  std::printf(
      "{\n"
      "  \"name\": \"cpu-calibrated:%d\",\n"
      "  \"nodes\": 1,\n"
      "  \"devices_per_node\": %d,\n"
      "  \"device\": {\"name\": \"cpu\", \"memory_gb\": %.3f,\n"
      "             \"memory_bandwidth_gbps\": %.3f,\n"
      "             \"peak_tflops\": {\"f32\": %.5f, \"bf16\": %.5f},\n"
      "             \"efficiency\": {\"attention\": %.4f, "
      "\"attention_backward\": %.4f,\n"
      "                            \"reduce\": %.4f, \"norm\": %.4f},\n"
      "             \"transcendentals_per_s\": %.4g,\n"
      "             \"runtime_reserve_gb\": 0},\n"
      "  \"intra_node\": {\"bandwidth_gbps\": %.4f, \"latency_us\": %.3f},\n"
      "  \"inter_node\": {\"bandwidth_gbps\": %.4f, \"latency_us\": %.3f}\n"
      "}\n",
      ranks, ranks, memoryGB(ranks), memory / 1e9, gemm / 1e12, gemm / 1e12,
      std::min(1.0, attention / gemm), std::min(1.0, attentionBackward / gemm),
      std::min(1.0, reduce / memory), std::min(1.0, norm / memory),
      transcendentals, bandwidth / 1e9, latency * 1e6, bandwidth / 1e9,
      latency * 1e6);
  return 0;
}
