// RUN: not weft-opt %s -weft-rebatch 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not weft-opt %s '-weft-rebatch=batch=2 func=nope' 2>&1 | FileCheck %s --check-prefix=NAME
// ZERO: error: weft-rebatch: a micro-batch of 0 sequences; it takes at least 1
// NAME: error: weft-rebatch: no function named @nope
func.func @forward(%tokens: tensor<2x8xi32>) -> tensor<2x8xi32> {
  return %tokens : tensor<2x8xi32>
}

// A batch whose sizes pass 64 bits: the op is named.
// RUN: not weft-opt %s '-weft-rebatch=batch=4611686018427387904 func=big' 2>&1 | FileCheck %s --check-prefix=BIG
// BIG: error: weft-rebatch: at 4611686018427387904 sequences a result's size passes 64 bits
func.func @big(%tokens: tensor<2x8xi32>) -> tensor<16xi32> {
  %r = weft.reshape %tokens : tensor<2x8xi32> -> tensor<16xi32>
  return %r : tensor<16xi32>
}
