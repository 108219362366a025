// RUN: weft-opt %s -split-input-file -weft-lower-to-sched -verify-diagnostics
// RUN: not weft-opt %s -split-input-file '-weft-lower-to-sched=target=tpu' 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not weft-opt %S/Inputs/wide-heads.mlir '-weft-lower-to-sched=target=cuda attention-scratch-mb=0' 2>&1 | FileCheck %s --check-prefix=HEADS
// RUN: weft-opt %S/Inputs/wide-heads.mlir '-weft-lower-to-sched=target=cuda' | FileCheck %s --check-prefix=WIDE
// RUN: not weft-opt %S/Inputs/huge.mlir -weft-lower-to-sched 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not weft-opt %S/Inputs/huge-reduce.mlir '-weft-lower-to-sched=target=cuda' 2>&1 | FileCheck %s --check-prefix=SCRATCH

// HEADS: error: 'weft.attention' op FlashAttention's GPU kernels take head dimensions of at most 128, got 160 and 160; attention through GEMMs takes any, but its scores need 1 MiB of scratch here, more than --attention-scratch-mb allows
// Through GEMMs, a head of 160 (GPT-3 530B's and 1T's) is no limit.
// WIDE: sched.attention {{.*}} algorithm gemm_softmax
// HUGE: error: buffer of shape [4611686018427387904, 4] is larger than 2^62 bytes
// SCRATCH: error: 'weft.reduce_sum' op needs more than 2^63 bytes of GPU scratch

// TARGET: weft-lower-to-sched: target must be 'cpu' or 'cuda', not 'tpu'

// An elementwise op left unfused has no sched instruction.
func.func @unfused(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.add' op has no lowering to sched (elementwise ops and norms must be fused first: weft-fusion-group single-ops)}}
  %0 = weft.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A parameter must be one tensor in every program.
func.func @forward() -> tensor<4xf32> {
  %w = weft.param "w" init(zeros) : tensor<4xf32>
  return %w : tensor<4xf32>
}
func.func @step() -> tensor<8xf32> {
  // expected-error @+1 {{parameter 'w' is '!sched.buffer<8xf32>' here but '!sched.buffer<4xf32>' in an earlier program}}
  %w = weft.param "w" init(zeros) : tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// A parameter named like another symbol of the module.
weft.mesh @mesh axes ["dp"] sizes [2]
func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{parameter 'mesh' has the name of another symbol of the module}}
  %w = weft.param "mesh" init(zeros) : tensor<4xf32>
  return %w : tensor<4xf32>
}

