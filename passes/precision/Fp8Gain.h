//===- Fp8Gain.h - whether a GEMM gains from FP8 on a device -----*- C++
//-*-===//
//
// FP8 halves a GEMM's time where it is compute-bound (twice the tensor-core
// rate) but adds the quantizations: each FP8 operand is read twice in the
// model's precision (its maximum, then its codes) and written once as one
// byte an element. A GEMM too small to gain pays more for those passes
// than its three GEMMs (forward, input gradient, weight gradient) save.
// weft-fp8 asks this for each weight GEMM at the shapes one rank runs it
// at; the times are the cost model's roofline (DeviceSpec::rooflineSeconds:
// the GEMM efficiency curve, the memory bandwidth), without a measured
// profile's per-kind efficiencies, which the report's step also divides
// its reductions and norms by. torchao's float8 roofline
// (benchmarks/float8/float8_roofline.py) reasons the same way for its
// auto filter.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_PASSES_PRECISION_FP8GAIN_H
#define WEFT_PASSES_PRECISION_FP8GAIN_H

#include "passes/costmodel/Topology.h"

namespace weft {

/// A weight GEMM y = x w as one rank runs it: the elements of its input,
/// weight and output, and the length of its contraction (each GEMM of the
/// three does 2 * y * k FLOPs).
struct Fp8GemmShape {
  double input = 0, weight = 0, output = 0, k = 0;
};

/// The three GEMMs of a weight timed on a device in the model's precision
/// and in FP8, and the quantization passes FP8 adds, in seconds.
struct Fp8GemmTimes {
  double model = 0;
  double fp8 = 0;
  double quantize = 0;

  /// What FP8 saves a step (negative: it costs).
  double gain() const { return model - fp8 - quantize; }
};

/// Times `shape`'s forward, input-gradient and weight-gradient GEMMs with
/// operands of `modelBytes` an element at `modelPeak` FLOP/s, and
/// with FP8 operands (their outputs still `modelBytes`) at its fp8 peak;
/// `quantized` elements (every quantization this GEMM makes or shares, in
/// the forward and the backward) each cost 2 * modelBytes + 1 bytes. The
/// device must have both peaks.
Fp8GemmTimes timeFp8Gemm(const DeviceSpec &device, const Fp8GemmShape &shape,
                         double modelPeak, double modelBytes, double quantized);

} // namespace weft

#endif // WEFT_PASSES_PRECISION_FP8GAIN_H
