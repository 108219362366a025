// The argument structures the runtime passes by value to the kernels of
// ops.cu: plain C, so the host (GpuBackend.cpp) and NVRTC (which receives
// this file's text ahead of ops.cu) see one definition and one layout.
#ifndef WEFT_RUNTIME_GPU_KERNELS_OPSABI_H
#define WEFT_RUNTIME_GPU_KERNELS_OPSABI_H

#define WEFT_MAX_RANK 8

// Walks `dims` in row-major order; element i is read at
// inBase + sum(index[d] * inStrides[d]) and written at
// outBase + sum(index[d] * outStrides[d]) (in elements). Transpose,
// broadcast (stride 0), slice (a base) and each part of a concat (an output
// base) are all one such walk.
struct WeftStridedIndex {
  long rank;
  long dims[WEFT_MAX_RANK];
  long inStrides[WEFT_MAX_RANK];
  long outStrides[WEFT_MAX_RANK];
  long inBase, outBase;
};

// A reduction: output element o (row-major over keptDims) combines the
// input elements at sum(kept index * keptStrides) + sum(reduced index *
// reducedStrides), visiting the reduced ones in row-major order.
struct WeftReduceIndex {
  long keptRank;
  long keptDims[WEFT_MAX_RANK];
  long keptStrides[WEFT_MAX_RANK];
  long reducedRank;
  long reducedDims[WEFT_MAX_RANK];
  long reducedStrides[WEFT_MAX_RANK];
};

// weft_fp8_block_gemm's tile of C a block makes (square) and its threads:
// four warps, 2 x 2, each making 32 x 32 of the tile.
#define WEFT_FP8_GEMM_TILE 64
#define WEFT_FP8_GEMM_THREADS 128

// Element types of weft_convert.
#define WEFT_TYPE_F32 0
#define WEFT_TYPE_BF16 1
#define WEFT_TYPE_I32 2
#define WEFT_TYPE_F16 3

// What a kernel found wrong with its data, in the program's error word:
// {code, step, position, value}. The first error wins.
#define WEFT_ERROR_TOKEN_ID 1
#define WEFT_ERROR_LABEL 2
#define WEFT_ERROR_EXPERT_ID 3
#define WEFT_ERROR_POSITION 4 // A routing position outside the rows.
#define WEFT_ERROR_GROUP 5    // Group sizes that do not fit the rows.

#endif // WEFT_RUNTIME_GPU_KERNELS_OPSABI_H
