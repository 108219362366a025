// RUN: not weft-opt %s -weft-decompose=ops=weft.nope 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not weft-opt %s -weft-decompose=ops=weft.silu,weft.matmul 2>&1 | FileCheck %s --check-prefix=PRIMITIVE

// An ops= name that is not an op, or an op with no decomposition, is an
// error naming it and listing the composites (it used to expand nothing).
// UNKNOWN: error: weft-decompose: ops names 'weft.nope', which is not a registered op (the composites: {{.*}}weft.attention{{.*}}weft.softmax
// PRIMITIVE: error: weft-decompose: ops names 'weft.matmul', which has no decomposition (the composites: {{.*}}weft.silu

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = weft.silu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
