//===- cuda_emulation.h - run CUDA kernel sources on the CPU ----*- C++ -*-===//
//
// Force-included (-include) ahead of a .cu file compiled as C++ into a
// shared library, so tests can run the GPU runtime's kernels without a GPU
// (EmulatedGpu). A launch runs blocks one after another on the calling
// thread; the threads of a block are fibers (ucontext), each run until it
// reaches __syncthreads() or returns, round after round, so a barrier is
// where every thread of the block has arrived, and __shared__ memory
// (static here) belongs to one block at a time. Only what Weft's kernels
// use is provided.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_CUDA_EMULATION_H
#define WEFT_TEST_RUNTIME_CUDA_EMULATION_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

#include "../../runtime/support/Fp8Scaling.h" // weft_fp8_value, for mma.

// ops.cu runs its emulated forms (the tensor cores' mma) under this.
#define WEFT_CUDA_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __forceinline__ inline

struct weft_dim3 {
  unsigned x = 0, y = 0, z = 0;
};
// Per OS thread: tests run ranks as threads, each with its own device.
static thread_local weft_dim3 threadIdx, blockIdx, blockDim, gridDim;

struct alignas(16) float4 {
  float x, y, z, w;
};

using std::max;
using std::min;

template <typename To, typename From> inline To weft_emu_bits(From v) {
  To out;
  std::memcpy(&out, &v, sizeof(out));
  return out;
}
inline float __int_as_float(int v) { return weft_emu_bits<float>(v); }
inline float __uint_as_float(unsigned v) { return weft_emu_bits<float>(v); }
inline unsigned __float_as_uint(float v) { return weft_emu_bits<unsigned>(v); }
inline double __longlong_as_double(long long v) {
  return weft_emu_bits<double>(v);
}
// Blocks and their threads take turns on one OS thread, so a read-modify-
// write is atomic as it stands.
inline int atomicCAS(int *at, int compare, int value) {
  int old = *at;
  if (old == compare)
    *at = value;
  return old;
}
inline float atomicAdd(float *at, float value) {
  float old = *at;
  *at = old + value;
  return old;
}
inline unsigned atomicMax(unsigned *at, unsigned value) {
  unsigned old = *at;
  *at = std::max(old, value);
  return old;
}

namespace weft_emu {
/// Kernels keep a few KiB of locals per thread (attention: four rows).
constexpr size_t kStackBytes = 64 * 1024;
/// One CUDA thread of the running block.
struct Fiber {
  ucontext_t context;
  std::unique_ptr<char[]> stack{new char[kStackBytes]}; // Left unwritten.
  bool done = false;
};
struct Launch {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  unsigned current = 0;
  void (*thunk)(void **) = nullptr;
  void **args = nullptr;
};
/// This thread's launch state; never destroyed (no exit-time order).
static Launch &launch() {
  static thread_local Launch *state = new Launch;
  return *state;
}

static void run() {
  Launch &l = launch();
  l.thunk(l.args);
  l.fibers[l.current].done = true;
  // Returning goes to uc_link, the scheduler.
}
} // namespace weft_emu

inline void __syncthreads() {
  weft_emu::Launch &l = weft_emu::launch();
  swapcontext(&l.fibers[l.current].context, &l.scheduler);
}

/// A warp's `ms` x `ns` products mma.sync.aligned.m16n8k32.row.col.f32.
/// <A>.<B>.f32 with C = 0 over FP8 codes (E4M3 or E5M2 each): d[m][n][..]
/// from A fragment a[m][..] and B fragment b[n][..]. Modelled from the PTX
/// ISA's element tables ("Matrix Fragments for mma.m16n8k32"),
/// independently of the kernel that issues it: with lane = 4 groupID + t,
///   a[r] byte j: A row groupID + 8 (r & 1), column 16 (r >> 1) + 4t + j;
///   b[r] byte j: B row (k) 16 r + 4t + j, column groupID;
///   d[i]: D row groupID + 8 (i >> 1), column 2t + (i & 1).
/// Each lane decodes its own fragments; the warp's lanes exchange them at
/// two barriers (the block's here: every warp of the kernel reaches each
/// call together), and each lane sums its own outputs. Products are exact
/// in f32 and summed in order of k.
inline void weft_emulated_mma_fp8(int ms, int ns, float *d, const unsigned *a,
                                  const unsigned *b, int e4m3A, int e4m3B) {
  constexpr int kMs = 4, kNs = 8;
  if (ms > kMs || ns > kNs)
    std::abort(); // More than this model stages.
  // Element i = 4 r + j of a lane's fragment: byte j of word r.
  static thread_local float A[1024][kMs][16], B[1024][kNs][8];
  unsigned me = threadIdx.x, first = me / 32 * 32, lane = me % 32;
  for (int m = 0; m < ms; ++m)
    for (int i = 0; i < 16; ++i)
      A[me][m][i] = weft_fp8_value(
          static_cast<unsigned char>(a[4 * m + i / 4] >> (8 * (i % 4))), e4m3A);
  for (int n = 0; n < ns; ++n)
    for (int i = 0; i < 8; ++i)
      B[me][n][i] = weft_fp8_value(
          static_cast<unsigned char>(b[2 * n + i / 4] >> (8 * (i % 4))), e4m3B);
  __syncthreads();
  // The lane and fragment element holding A[row][p] and B[p][col]: the
  // tables above, inverted.
  auto atA = [&](int m, unsigned row, unsigned p) {
    return A[first + 4 * (row % 8) + p % 16 / 4][m]
            [4 * (row / 8 + 2 * (p / 16)) + p % 4];
  };
  auto atB = [&](int n, unsigned p, unsigned col) {
    return B[first + 4 * col + p % 16 / 4][n][4 * (p / 16) + p % 4];
  };
  unsigned group = lane / 4, t = lane % 4;
  for (int m = 0; m < ms; ++m)
    for (int n = 0; n < ns; ++n)
      for (unsigned i = 0; i < 4; ++i) {
        unsigned row = group + 8 * (i >> 1), col = 2 * t + (i & 1);
        float sum = 0;
        for (unsigned p = 0; p < 32; ++p)
          sum += atA(m, row, p) * atB(n, p, col);
        d[(m * ns + n) * 4 + i] = sum;
      }
  __syncthreads(); // No lane restages before every lane has read.
}

/// Runs `thunk(args)` as a `grid` of `block`-thread blocks; returns when done.
extern "C" void weft_emulator_launch(void (*thunk)(void **), void **args,
                                     const unsigned grid[3], unsigned block) {
  weft_emu::Launch &l = weft_emu::launch();
  if (l.fibers.size() < block)
    l.fibers.resize(block);
  l.thunk = thunk;
  l.args = args;
  blockDim = {block, 1, 1};
  gridDim = {grid[0], grid[1], grid[2]};
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        blockIdx = {x, y, z};
        for (unsigned t = 0; t < block; ++t) {
          weft_emu::Fiber &f = l.fibers[t];
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.get();
          f.context.uc_stack.ss_size = weft_emu::kStackBytes;
          f.context.uc_link = &l.scheduler;
          f.done = false;
          makecontext(&f.context, weft_emu::run, 0);
        }
        // Round after round, each live thread runs to its next barrier.
        for (bool live = true; live;) {
          live = false;
          for (unsigned t = 0; t < block; ++t) {
            if (l.fibers[t].done)
              continue;
            l.current = t;
            threadIdx = {t, 0, 0};
            swapcontext(&l.scheduler, &l.fibers[t].context);
            live |= !l.fibers[t].done;
          }
        }
      }
}

/// Calls `fn` with the argument values `a` points at, cuLaunchKernel-style.
template <typename... P, size_t... I>
void weft_emu_call(void (*fn)(P...), void **a, std::index_sequence<I...>) {
  fn(*static_cast<std::remove_reference_t<P> *>(a[I])...);
}
template <typename... P> void weft_emu_call(void (*fn)(P...), void **a) {
  weft_emu_call(fn, a, std::index_sequence_for<P...>{});
}

#endif // WEFT_TEST_RUNTIME_CUDA_EMULATION_H
