//===- Fp8Scaling.h - FP8 block scales and rounding, C++ and CUDA -*- C++
//-*-===//
//
// weft.fp8_quantize's arithmetic (see its description in WeftOps.td): the
// scale of a block from its amax and the FP8 rounding of a scaled value,
// returned as the f32 it stands for. Plain C, as CounterRng.h is, so the
// CPU executor, ops.cu (under nvcc and NVRTC) and the test emulator share
// one definition; the reference evaluator rounds with APFloat instead.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_FP8SCALING_H
#define WEFT_RUNTIME_SUPPORT_FP8SCALING_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WEFT_FP8_FN static __host__ __device__ inline
#else
#include <cmath>
#include <cstring>
#define WEFT_FP8_FN static inline
#endif

/// Rounds to an integer, ties to even (the default rounding mode).
WEFT_FP8_FN float weft_fp8_rint(float x) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return rintf(x);
#else
  return std::nearbyint(x);
#endif
}

WEFT_FP8_FN unsigned weft_fp8_bits_of(float x) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return __float_as_uint(x);
#else
  unsigned u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

WEFT_FP8_FN float weft_fp8_float_of(unsigned u) {
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

/// The largest finite value: 448 (E4M3FN) or 57344 (E5M2).
WEFT_FP8_FN float weft_fp8_largest(int e4m3) {
  return e4m3 ? 448.0f : 57344.0f;
}

/// The scale of a block whose largest magnitude is `amax`: F / max(amax,
/// 1e-12), or with `pow2` the E8M0 power of two 2^(E - floor(log2 amax))
/// (E = 8 or 15, the exponent clamped to [-127, 127]). NaN for a NaN or
/// infinite amax, so the block quantizes to NaN.
WEFT_FP8_FN float weft_fp8_scale(float amax, int e4m3, int pow2) {
  if (!(amax <= 3.4028234663852886e38f))
    return weft_fp8_float_of(0x7FC00000u);
  if (amax < 1e-12f)
    amax = 1e-12f;
  if (!pow2)
    return weft_fp8_largest(e4m3) / amax;
  // amax is a normal float here: floor(log2) is its biased exponent - 127.
  int exponent = (int)((weft_fp8_bits_of(amax) >> 23) & 0xFFu) - 127;
  int shift = (e4m3 ? 8 : 15) - exponent;
  shift = shift < -127 ? -127 : shift > 127 ? 127 : shift;
  // 2^shift: a normal float's bits from 2^-126 up; 2^-127 is subnormal.
  return shift == -127 ? weft_fp8_float_of(0x00400000u)
                       : weft_fp8_float_of((unsigned)(shift + 127) << 23);
}

/// x saturated to the format's finite range and rounded to it, to nearest
/// with ties to even (subnormals included), as an f32. NaN stays NaN.
WEFT_FP8_FN float weft_fp8_round(float x, int e4m3) {
  float largest = weft_fp8_largest(e4m3);
  if (!(x == x))
    return x;
  if (x > largest)
    x = largest;
  if (x < -largest)
    x = -largest;
  unsigned u = weft_fp8_bits_of(x), sign = u & 0x80000000u;
  u &= 0x7FFFFFFFu;
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  unsigned minNormal = (unsigned)(127 + 1 - bias) << 23;
  if (u < minNormal) {
    // Below the smallest normal the quantum is fixed, 2^(1 - bias -
    // mantissa): count quanta (an exact scaling by a power of two), round
    // the count to nearest even, scale back.
    float quanta = weft_fp8_rint(
        weft_fp8_float_of(u) *
        weft_fp8_float_of((unsigned)(127 + bias - 1 + mantissa) << 23));
    float value = quanta * weft_fp8_float_of(
                               (unsigned)(127 - (bias - 1 + mantissa)) << 23);
    return weft_fp8_float_of(weft_fp8_bits_of(value) | sign);
  }
  // A normal: round the f32 mantissa to `mantissa` bits, ties to even; a
  // carry moves into the exponent, as it should.
  int drop = 23 - mantissa;
  u += (1u << (drop - 1)) - 1u + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  return weft_fp8_float_of(u | sign);
}

/// One element of a block with scale `scale`: fp8(x * scale) / scale.
WEFT_FP8_FN float weft_fp8_quantize(float x, float scale, int e4m3) {
  return weft_fp8_round(x * scale, e4m3) / scale;
}

/// The FP8 code of fp8(x * scale) (weft_fp8_round's value, so only
/// exact encoding is left): sign, biased exponent and mantissa, or a count
/// of the smallest subnormal for values below the smallest normal; NaN is
/// 0x7F (E4M3FN) or 0x7E (E5M2), as runtime::fp8Bits writes it.
WEFT_FP8_FN unsigned char weft_fp8_code(float x, float scale, int e4m3) {
  float r = weft_fp8_round(x * scale, e4m3);
  unsigned u = weft_fp8_bits_of(r), sign = (u >> 24) & 0x80u;
  u &= 0x7FFFFFFFu;
  if (u > 0x7F800000u)
    return (unsigned char)(e4m3 ? 0x7F : 0x7E);
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  unsigned minNormal = (unsigned)(127 + 1 - bias) << 23;
  if (u < minNormal) // An exact count of quanta 2^(1 - bias - mantissa).
    return (unsigned char)(sign |
                           (unsigned)(weft_fp8_float_of(u) *
                                      weft_fp8_float_of(
                                          (unsigned)(127 + bias - 1 + mantissa)
                                          << 23)));
  unsigned exponent = (u >> 23) - 127 + bias,
           fraction = (u >> (23 - mantissa)) & ((1u << mantissa) - 1u);
  return (unsigned char)(sign | (exponent << mantissa) | fraction);
}

/// The f32 value of FP8 code `code` (exact): E4M3FN (no infinities, 0x7F
/// and 0xFF NaN) or E5M2 (IEEE-like). What weft_fp8_code encodes.
WEFT_FP8_FN float weft_fp8_value(unsigned char code, int e4m3) {
  unsigned sign = (unsigned)(code & 0x80u) << 24;
  int mantissa = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  unsigned exponent = (code & 0x7Fu) >> mantissa,
           fraction = code & ((1u << mantissa) - 1u);
  unsigned top = e4m3 ? 15u : 31u;
  // E4M3FN's top exponent holds finite values but for its NaN.
  if (exponent == top && (!e4m3 || fraction == (1u << mantissa) - 1u))
    return weft_fp8_float_of(sign | (fraction ? 0x7FC00000u : 0x7F800000u));
  if (exponent == 0) // A count of quanta 2^(1 - bias - mantissa).
    return weft_fp8_float_of(
        sign |
        weft_fp8_bits_of(
            (float)fraction *
            weft_fp8_float_of((unsigned)(127 - (bias - 1 + mantissa)) << 23)));
  return weft_fp8_float_of(sign | ((exponent - bias + 127) << 23) |
                           (fraction << (23 - mantissa)));
}

/// The value of code `code`, which weft_fp8_code wrote for an element x by
/// `scale`, as weft_fp8_quantize dequantizes x: fp8(x * scale) / scale,
/// to the bit.
WEFT_FP8_FN float weft_fp8_decode(unsigned char code, float scale, int e4m3) {
  return weft_fp8_value(code, e4m3) / scale;
}

/// How an FP8 GEMM operand is scaled, and where its scales are: the
/// operand is a matrix [rows, k] with k contiguous (the layout cuBLASLt's
/// FP8 GEMMs read, A [m, k] and B [n, k]), and its scale buffer holds the
/// inverse scales (1 / s) of its blocks in cuBLASLt's layout for the mode
/// (as torch._scaled_mm takes them):
///  - TENSOR, one block: one f32 (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F);
///  - ROWS, 1 x k blocks (row-wise): one per row, [rows] (OUTER_VEC_32F);
///  - VEC128, 1 x 128 tiles (DeepSeek-V3's activations): [k/128][rows],
///    rows contiguous ("outer-dim-major", VEC128_32F);
///  - BLK128, 128 x 128 blocks (its weights): [ceil(rows/128)][ld] with ld
///    = k/128 rounded up to a multiple of 4, so each row of scales starts
///    16-byte aligned (BLK128x128_32F); the padding is never read;
///  - VEC32, 1 x 32 blocks (MXFP8): [k/32][rows] as VEC128's. Their scales
///    are powers of two (E8M0's values) kept as f32: no cuBLASLt mode
///    before Blackwell's VEC32_UE8M0 (whose E8M0 bytes lie in a swizzled
///    layout) reads them, so Weft's own kernel (weft_fp8_block_gemm in
///    ops.cu) multiplies them, on any GPU with FP8 tensor cores.
/// VEC128 and BLK128 need k % 128 == 0, VEC32 k % 32 == 0.
enum {
  WEFT_FP8_SCALE_TENSOR = 0,
  WEFT_FP8_SCALE_ROWS = 1,
  WEFT_FP8_SCALE_VEC128 = 2,
  WEFT_FP8_SCALE_BLK128 = 3,
  WEFT_FP8_SCALE_VEC32 = 4,
  WEFT_FP8_SCALE_MODES = 5 // How many there are.
};

/// The block extent of `mode` along rows and along k of an operand [rows, k].
WEFT_FP8_FN long weft_fp8_scale_block_rows(int mode, long rows) {
  return mode == WEFT_FP8_SCALE_TENSOR   ? rows
         : mode == WEFT_FP8_SCALE_BLK128 ? 128
                                         : 1;
}
WEFT_FP8_FN long weft_fp8_scale_block_k(int mode, long k) {
  return mode == WEFT_FP8_SCALE_TENSOR || mode == WEFT_FP8_SCALE_ROWS ? k
         : mode == WEFT_FP8_SCALE_VEC32                               ? 32
                                                                      : 128;
}

/// Where the scale of element (r, c) of an operand [rows, k] is.
WEFT_FP8_FN long weft_fp8_scale_index(int mode, long r, long c, long rows,
                                      long k) {
  switch (mode) {
  case WEFT_FP8_SCALE_ROWS:
    return r;
  case WEFT_FP8_SCALE_VEC128:
    return c / 128 * rows + r;
  case WEFT_FP8_SCALE_VEC32:
    return c / 32 * rows + r;
  case WEFT_FP8_SCALE_BLK128:
    return r / 128 * ((k / 128 + 3) / 4 * 4) + c / 128;
  default:
    return 0;
  }
}

/// A scale buffer of `mode` for an operand [rows, k] as the row-major grid
/// [*outer, *inner] weft_fp8_scale_index lays it out in: [1, rows] per row,
/// [k / 128 or k / 32, rows] for 1 x 128 or 1 x 32 tiles, [ceil(rows / 128),
/// ld] for 128 x 128 blocks, [1, 1] for one scale.
WEFT_FP8_FN void weft_fp8_scale_grid(int mode, long rows, long k, long *outer,
                                     long *inner) {
  *outer = 1;
  *inner = 1;
  switch (mode) {
  case WEFT_FP8_SCALE_ROWS:
    *inner = rows;
    break;
  case WEFT_FP8_SCALE_VEC128:
  case WEFT_FP8_SCALE_VEC32:
    *outer = k / weft_fp8_scale_block_k(mode, k);
    *inner = rows;
    break;
  case WEFT_FP8_SCALE_BLK128:
    *outer = (rows + 127) / 128;
    *inner = (k / 128 + 3) / 4 * 4;
    break;
  default:
    break;
  }
}

/// How many f32 a scale buffer of `mode` for an operand [rows, k] holds.
WEFT_FP8_FN long weft_fp8_scale_count(int mode, long rows, long k) {
  long outer, inner;
  weft_fp8_scale_grid(mode, rows, k, &outer, &inner);
  return outer * inner;
}

/// The blocks of a tensor `shape` (rank n >= 1) cut by `grid` (its block
/// maxima's shape: shape[d] / grid[d] elements a block along d) as a
/// matrix [rows, cols]: the last dimension is cols, the others flattened
/// into rows. Sets the block extents and returns 1 when every block is a
/// rectangle of that matrix (the leading dimensions cut one element
/// thick, then one cut anyhow, then whole ones), else 0.
WEFT_FP8_FN int weft_fp8_matrix_blocks(const long *shape, const long *grid,
                                       int rank, long *blockRows,
                                       long *blockCols) {
  if (rank < 1)
    return 0;
  *blockCols = shape[rank - 1] / grid[rank - 1];
  // From the innermost leading dimension out: whole ones, then at most one
  // cut anyhow, then one element thick.
  long extent = 1;
  int d = rank - 2;
  for (; d >= 0 && grid[d] == 1; --d)
    extent *= shape[d];
  if (d >= 0) {
    extent *= shape[d] / grid[d];
    for (--d; d >= 0; --d)
      if (grid[d] != shape[d])
        return 0;
  }
  *blockRows = extent;
  return 1;
}

/// The scale modes whose blocks in an operand [rows, k] are [blockRows,
/// blockK], as a mask (bit WEFT_FP8_SCALE_*): several where blocks
/// coincide (a 128 x 128 tensor is one block and one 128 x 128 block; a
/// row of 128 is one 1 x 128 tile), none when no GEMM reads them.
WEFT_FP8_FN int weft_fp8_scale_modes_of(long rows, long k, long blockRows,
                                        long blockK) {
  int modes = 0;
  if (blockRows == rows && blockK == k)
    modes |= 1 << WEFT_FP8_SCALE_TENSOR;
  if (blockRows == 1 && blockK == k)
    modes |= 1 << WEFT_FP8_SCALE_ROWS;
  if (k % 128 == 0 && blockK == 128) {
    if (blockRows == 1)
      modes |= 1 << WEFT_FP8_SCALE_VEC128;
    if (blockRows == 128 || (blockRows == rows && rows < 128))
      modes |= 1 << WEFT_FP8_SCALE_BLK128;
  }
  if (k % 32 == 0 && blockK == 32 && blockRows == 1)
    modes |= 1 << WEFT_FP8_SCALE_VEC32;
  return modes;
}

/// Whether a GEMM multiplies an A scaled by `a` by a B scaled by `b`:
/// cuBLASLt per tensor by per tensor, rows by rows, DeepSeek-V3's 1 x 128
/// by 128 x 128 either way round, or 1 x 128 by 1 x 128 (its weight
/// gradient); Weft's own kernel MXFP8's 1 x 32 by 1 x 32.
WEFT_FP8_FN int weft_fp8_scale_modes_pair(int a, int b) {
  return (a == WEFT_FP8_SCALE_TENSOR && b == WEFT_FP8_SCALE_TENSOR) ||
         (a == WEFT_FP8_SCALE_ROWS && b == WEFT_FP8_SCALE_ROWS) ||
         (a == WEFT_FP8_SCALE_VEC128 &&
          (b == WEFT_FP8_SCALE_VEC128 || b == WEFT_FP8_SCALE_BLK128)) ||
         (a == WEFT_FP8_SCALE_BLK128 && b == WEFT_FP8_SCALE_VEC128) ||
         (a == WEFT_FP8_SCALE_VEC32 && b == WEFT_FP8_SCALE_VEC32);
}

/// Where sched.fp8_cast keeps the 1 / scale of element (b, r, c) of x
/// [batch, rows, cols] cut into blocks [blockRows, blockCols] of the
/// matrix [batch * rows, cols], in out's matrix (the operand [operandRows,
/// k]: x's, or with `transpose` each matrix transposed): the index `mode`
/// lays it out at when the element is its block's first there, else -1.
WEFT_FP8_FN long weft_fp8_cast_scale_slot(long b, long r, long c, long batch,
                                          long rows, long cols, int transpose,
                                          int mode, long blockRows,
                                          long blockCols) {
  long operandRow = transpose ? b * cols + c : b * rows + r,
       column = transpose ? r : c,
       operandRows = batch * (transpose ? cols : rows),
       k = transpose ? rows : cols;
  long alongRows = transpose ? blockCols : blockRows,
       alongK = transpose ? blockRows : blockCols;
  return operandRow % alongRows == 0 && column % alongK == 0
             ? weft_fp8_scale_index(mode, operandRow, column, operandRows, k)
             : -1;
}

/// sched.fp8_cast of element i of x (viewed [batch, rows, cols], its
/// blocks [blockRows, blockCols] of the matrix [batch * rows, cols], their
/// maxima row-major in amax): its code at i or, with `transpose`, at its
/// place in [batch, cols, rows]; the first element of a block in the
/// operand's layout (out's matrix) writes 1 / scale where `mode` keeps it.
/// `pow2` takes MXFP8's power-of-two scales, as weft_fp8_quantize's.
WEFT_FP8_FN void weft_fp8_cast_element(float x, long i, const float *amax,
                                       unsigned char *out, float *scaleInv,
                                       long batch, long rows, long cols,
                                       int transpose, int e4m3, int pow2,
                                       int mode, long blockRows,
                                       long blockCols) {
  long b = i / (rows * cols), r = i / cols % rows, c = i % cols;
  long row = b * rows + r;
  float scale = weft_fp8_scale(
      amax[row / blockRows * (cols / blockCols) + c / blockCols], e4m3, pow2);
  out[transpose ? (b * cols + c) * rows + r : i] =
      weft_fp8_code(x, scale, e4m3);
  long slot = weft_fp8_cast_scale_slot(b, r, c, batch, rows, cols, transpose,
                                       mode, blockRows, blockCols);
  if (slot >= 0)
    scaleInv[slot] = 1.0f / scale;
}

/// sched.fp8_scale_inv of block `blk` (row-major in amax): the 1 / scale
/// weft_fp8_cast_element writes for it, from the same arguments. Its codes
/// are the same bytes in either layout (an element's code depends on its
/// block's scale only), so codes that already are a cast's by these maxima
/// (a weight's FP8 state), as they are or transposed, get the GEMM's
/// scales without the values.
WEFT_FP8_FN void weft_fp8_block_scale_inv(long blk, const float *amax,
                                          float *scaleInv, long batch,
                                          long rows, long cols, int transpose,
                                          int e4m3, int pow2, int mode,
                                          long blockRows, long blockCols) {
  long across = cols / blockCols;
  long row = blk / across * blockRows, c = blk % across * blockCols;
  long slot =
      weft_fp8_cast_scale_slot(row / rows, row % rows, c, batch, rows, cols,
                               transpose, mode, blockRows, blockCols);
  if (slot >= 0)
    scaleInv[slot] = 1.0f / weft_fp8_scale(amax[blk], e4m3, pow2);
}

/// An expert weight gradient's FP8 blocks (weft.fp8_group_quantize): rows
/// [0, n) hold consecutive groups of sizes[g] rows (a negative size counts
/// as 0, one past the rows left as the rows left), group g of expert
/// g mod `experts`. An expert's rows are its groups' in order; they are
/// cut into tiles of `tile` rows from its first (0: all its rows), and a
/// tile times a column is a block. In expert-major order (the experts' rows
/// one after another, as an FP8 weight gradient reads them) expert e's rows
/// begin at `first`; its tile j is numbered first / tile + e + j (e for
/// whole experts), so no two experts share a number and every number is
/// below weft_fp8_group_tiles(experts, n, tile), the scales' rows.
WEFT_FP8_FN long weft_fp8_group_tiles(long experts, long n, long tile) {
  return tile > 0 ? (n + tile - 1) / tile + experts : experts;
}

/// Group g's size, clamped to the rows left after `start`.
WEFT_FP8_FN long weft_fp8_group_size(const int *sizes, long g, long start,
                                     long n) {
  long size = sizes[g] < 0 ? 0 : sizes[g];
  return size > n - start ? n - start : size;
}

/// Expert e's first row in expert-major order and how many it has.
WEFT_FP8_FN void weft_fp8_expert_span(const int *sizes, long groups,
                                      long experts, long n, long e, long *first,
                                      long *count) {
  long start = 0;
  *first = 0;
  *count = 0;
  for (long g = 0; g < groups; ++g) {
    long size = weft_fp8_group_size(sizes, g, start, n);
    if (g % experts < e)
      *first += size;
    else if (g % experts == e)
      *count += size;
    start += size;
  }
}

/// The number of the tile holding row v of an expert whose rows begin at
/// `first` in expert-major order.
WEFT_FP8_FN long weft_fp8_expert_tile(long first, long e, long v, long tile) {
  return tile > 0 ? first / tile + e + v / tile : e;
}

/// Moves to expert e's next non-empty group after *g (or its first, for
/// *g < 0): its index, first row and size; 0 when none is left.
WEFT_FP8_FN int weft_fp8_next_group(const int *sizes, long groups, long experts,
                                    long n, long e, long *g, long *start,
                                    long *size) {
  long h = 0, at = 0;
  if (*g >= 0) {
    h = *g + 1;
    at = *start + *size;
  }
  for (; h < groups; ++h) {
    long s = weft_fp8_group_size(sizes, h, at, n);
    if (h % experts == e && s > 0) {
      *g = h;
      *start = at;
      *size = s;
      return 1;
    }
    at += s;
  }
  return 0;
}

/// weft.fp8_group_quantize of column c of expert e's rows of x [n, cols]:
/// each tile's maximum (a NaN counting as infinity) gives its scale, as
/// weft_fp8_scale does. Writes the dequantized values at their rows,
/// values[r * cols + c] (if `values`), or the codes in expert-major order,
/// codes[c * n + first + v] for the expert's row v, with the tile's 1 / s
/// in scaleInv[tile number * cols + c] (if `codes`). The CPU runs it for
/// every expert and column, a GPU thread for one.
WEFT_FP8_FN void weft_fp8_expert_column(const float *x, const int *sizes,
                                        long groups, long experts, long n,
                                        long cols, long tile, long e, long c,
                                        int e4m3, int pow2, float *values,
                                        unsigned char *codes, float *scaleInv) {
  long first, count;
  weft_fp8_expert_span(sizes, groups, experts, n, e, &first, &count);
  long g = -1, start = 0, size = 0;
  if (!weft_fp8_next_group(sizes, groups, experts, n, e, &g, &start, &size))
    return;
  long at = 0; // The next row, start + at, of group g.
  for (long v0 = 0; v0<count; v0 += tile> 0 ? tile : count) {
    long rows = tile > 0 && count - v0 > tile ? tile : count - v0;
    // Two passes over the tile's rows, which may span groups: its maximum,
    // then its codes or values.
    long g0 = g, start0 = start, size0 = size, at0 = at;
    float amax = 0.0f;
    for (int pass = 0; pass < 2; ++pass) {
      g = g0, start = start0, size = size0, at = at0;
      float scale = weft_fp8_scale(amax, e4m3, pow2);
      for (long v = v0; v < v0 + rows; ++v) {
        float xv = x[(start + at) * cols + c];
        if (pass == 0) {
          float a = xv < 0 ? -xv : xv;
          amax =
              a != a ? weft_fp8_float_of(0x7F800000u) : (a > amax ? a : amax);
        } else if (codes) {
          codes[c * n + first + v] = weft_fp8_code(xv, scale, e4m3);
        } else {
          values[(start + at) * cols + c] = weft_fp8_quantize(xv, scale, e4m3);
        }
        if (++at == size) {
          at = 0;
          weft_fp8_next_group(sizes, groups, experts, n, e, &g, &start, &size);
        }
      }
      if (pass == 1 && codes)
        scaleInv[weft_fp8_expert_tile(first, e, v0, tile) * cols + c] =
            1.0f / scale;
    }
  }
}

#endif // WEFT_RUNTIME_SUPPORT_FP8SCALING_H
