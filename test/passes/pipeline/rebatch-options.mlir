// RUN: not weft-opt %s -weft-rebatch 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not weft-opt %s '-weft-rebatch=batch=2 func=nope' 2>&1 | FileCheck %s --check-prefix=NAME
// ZERO: error: weft-rebatch: a micro-batch of 0 sequences; it takes at least 1
// NAME: error: weft-rebatch: no function named @nope
func.func @forward(%tokens: tensor<2x8xi32>) -> tensor<2x8xi32> {
  return %tokens : tensor<2x8xi32>
}
