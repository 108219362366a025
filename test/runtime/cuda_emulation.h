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
