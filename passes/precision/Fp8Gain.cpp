//===- Fp8Gain.cpp - whether a GEMM gains from FP8 on a device -----------===//

#include "passes/precision/Fp8Gain.h"

using namespace weft;

Fp8GemmTimes weft::timeFp8Gemm(const DeviceSpec &device,
                               const Fp8GemmShape &shape, double modelPeak,
                               double modelBytes, double quantized) {
  double flops = 2 * shape.output * shape.k;
  double fp8Peak = device.peakFlops.at("fp8");
  double b = modelBytes;
  Fp8GemmTimes t;
  // Each GEMM reads two of x, w and dy and writes the third: the forward
  // writes y, the input gradient dx, the weight gradient dw. In FP8 the two
  // it reads are one byte an element; what it writes stays in the model's
  // precision.
  double elements[3] = {shape.input, shape.weight, shape.output};
  for (int written = 0; written < 3; ++written) {
    double read = 0;
    for (int i = 0; i < 3; ++i)
      read += i == written ? 0 : elements[i];
    double writtenElements = elements[written];
    t.model +=
        device.rooflineSeconds(b * (read + writtenElements), flops, modelPeak);
    t.fp8 += device.rooflineSeconds(read + b * writtenElements, flops, fp8Peak);
  }
  t.quantize = device.rooflineSeconds(quantized * (2 * b + 1), 0, fp8Peak);
  return t;
}
