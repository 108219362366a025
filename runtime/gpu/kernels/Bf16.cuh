// bf16 for the GPU kernels (attention.cu, ops.cu, and the generated
// kernels.cu, whose prelude codegen copies this file into): a value is its
// 16 bits, so no CUDA header is needed under NVRTC. weft_load widens to f32;
// weft_store rounds f32 to nearest even, NaN to the canonical quiet NaN, as
// the CPU runtime (runtime/support/Float.cpp) does; both also take float.
#ifndef WEFT_RUNTIME_GPU_KERNELS_BF16_CUH
#define WEFT_RUNTIME_GPU_KERNELS_BF16_CUH

struct weft_bf16 {
  unsigned short bits;
};
static __device__ inline float weft_load(float x) { return x; }
static __device__ inline float weft_load(weft_bf16 x) {
  return __uint_as_float((unsigned)x.bits << 16);
}
static __device__ inline void weft_store(float &to, float x) { to = x; }
static __device__ inline void weft_store(weft_bf16 &to, float x) {
  unsigned bits = __float_as_uint(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    to.bits = 0x7fc0;
    return;
  }
  bits += 0x7fffu + ((bits >> 16) & 1u);
  to.bits = (unsigned short)(bits >> 16);
}

#endif // WEFT_RUNTIME_GPU_KERNELS_BF16_CUH
