// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Every verifier and shape-inference error of the weft dialect.

func.func @param_empty_name() -> tensor<4xf32> {
  // expected-error @+1 {{parameter name must not be empty}}
  %0 = weft.param "" init(zeros) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_normal_needs_scale() -> tensor<4xf32> {
  // expected-error @+1 {{initializer 'normal' needs a scale}}
  %0 = weft.param "w" init(normal) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_zeros_takes_no_scale() -> tensor<4xf32> {
  // expected-error @+1 {{initializer 'zeros' takes no scale}}
  %0 = weft.param "w" init(zeros, 1.0) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_negative_scale() -> tensor<4xf32> {
  // expected-error @+1 {{initializer scale must be positive, got -1}}
  %0 = weft.param "w" init(uniform, -1.0) : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @param_duplicate() -> tensor<4xf32> {
  %0 = weft.param "w" init(zeros) : tensor<4xf32>
  // expected-error @+1 {{parameter 'w' is declared twice}}
  %1 = weft.param "w" init(ones) : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

func.func @param_int() -> tensor<4xi32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor with positive dimensions and at most 2^62 bytes of}}
  %0 = weft.param "w" init(zeros) : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = weft.exp %x : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// expected-note @+1 {{prior use here}}
func.func @elementwise_type_mismatch(%x: tensor<4xf32>, %y: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{use of value '%y' expects different type than prior uses}}
  %0 = weft.add %x, %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @elementwise_shape_mismatch(%x: tensor<4xf32>, %y: tensor<5xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "weft.mul"(%x, %y) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @elementwise_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor with positive dimensions and at most 2^62 bytes of}}
  %0 = weft.exp %x : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @reshape_count(%x: tensor<2x6xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{cannot reshape [2, 6] (12 elements) into [5, 2] (10 elements)}}
  %0 = weft.reshape %x : tensor<2x6xf32> -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

func.func @reshape_element_type(%x: tensor<2x6xf32>) -> tensor<12xbf16> {
  // expected-error @+1 {{element type changes from 'f32' to 'bf16'}}
  %0 = weft.reshape %x : tensor<2x6xf32> -> tensor<12xbf16>
  return %0 : tensor<12xbf16>
}

// -----

func.func @matmul_rank(%x: tensor<8xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{matmul operands must have rank >= 2, got 1 and 2}}
  %0 = weft.matmul %x, %w : tensor<8xf32>, tensor<8x4xf32>
  return
}

// -----

func.func @matmul_contraction(%x: tensor<2x8x64xf32>, %w: tensor<256x64xf32>) {
  // expected-error @+1 {{matmul contraction sizes differ: lhs has 64, rhs has 256}}
  %0 = weft.matmul %x, %w : tensor<2x8x64xf32>, tensor<256x64xf32>
  return
}

// -----

func.func @matmul_element_types(%x: tensor<8x4xf32>, %w: tensor<4x8xbf16>) {
  // expected-error @+1 {{matmul operand element types differ: 'f32' vs 'bf16'}}
  %0 = weft.matmul %x, %w : tensor<8x4xf32>, tensor<4x8xbf16>
  return
}

// -----

func.func @matmul_batch(%x: tensor<2x8x4xf32>, %w: tensor<3x4x8xf32>) {
  // expected-error @+1 {{matmul batch dimensions differ: [2] vs [3]}}
  %0 = weft.matmul %x, %w : tensor<2x8x4xf32>, tensor<3x4x8xf32>
  return
}

// -----

func.func @matmul_wrong_result(%x: tensor<8x4xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+2 {{'weft.matmul' op inferred type(s) 'tensor<8x8xf32>' are incompatible with return type(s) of operation 'tensor<8x9xf32>'}}
  // expected-error @+1 {{'weft.matmul' op failed to infer returned types}}
  %0 = "weft.matmul"(%x, %w) : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x9xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{permutation [0] has 1 entries for a tensor of rank 2}}
  %0 = weft.transpose %x [0] : tensor<2x3xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{[0, 0] is not a permutation of 0..1}}
  %0 = weft.transpose %x [0, 0] : tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_length(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{dims [0, 1] has 2 entries for an input of rank 1}}
  %0 = weft.broadcast %x dims [0, 1] : tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_dim_range(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{broadcast dim 2 is out of range for rank 2}}
  %0 = weft.broadcast %x dims [2] : tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_dims_order(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{broadcast dims [1, 0] must be strictly increasing}}
  %0 = weft.broadcast %x dims [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @broadcast_size(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{input dimension 0 of size 3 cannot broadcast to result dimension 1 of size 4}}
  %0 = weft.broadcast %x dims [1] : tensor<3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_element_type(%x: tensor<4xf32>) -> tensor<2x4xf16> {
  // expected-error @+1 {{element type changes from 'f32' to 'f16'}}
  %0 = weft.broadcast %x dims [1] : tensor<4xf32> -> tensor<2x4xf16>
  return %0 : tensor<2x4xf16>
}

// -----

func.func @slice_rank(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{slice starts [0] and limits [2] must both have rank 2 entries}}
  %0 = weft.slice %x [0] to [2] : tensor<4x4xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{slice of dimension 1 [2, 5) is outside [0, 4]}}
  %0 = weft.slice %x [0, 2] to [4, 5] : tensor<4x4xf32>
  return
}

// -----

func.func @concat_empty() -> tensor<4xf32> {
  // expected-error @+2 {{concat needs at least one input}}
  // expected-error @+1 {{'weft.concat' op failed to infer returned types}}
  %0 = "weft.concat"() {dim = 0 : i64} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_dim(%x: tensor<4xf32>) {
  // expected-error @+1 {{concat dim 1 is out of range for rank 1}}
  %0 = weft.concat %x, %x dim 1 : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @concat_types(%x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{concat input 1 has type 'tensor<4xbf16>', unlike input 0 of type 'tensor<4xf32>'}}
  %0 = weft.concat %x, %y dim 0 : tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @concat_sizes(%x: tensor<2x4xf32>, %y: tensor<2x5xf32>) {
  // expected-error @+1 {{concat input 1 has size 5 in dimension 1, input 0 has 4}}
  %0 = weft.concat %x, %y dim 0 : tensor<2x4xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @reduce_no_dims(%x: tensor<4xf32>) {
  // expected-error @+1 {{reduction needs at least one dim}}
  %0 = weft.reduce_sum %x dims [] : tensor<4xf32>
  return
}

// -----

func.func @reduce_dim_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{reduction dim 1 is out of range for rank 1}}
  %0 = weft.reduce_max %x dims [1] : tensor<4xf32>
  return
}

// -----

func.func @reduce_dim_order(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{reduction dims [1, 1] must be strictly increasing}}
  %0 = weft.reduce_mean %x dims [1, 1] : tensor<4x4xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<256xf32>, %ids: tensor<2x8xi32>) {
  // expected-error @+1 {{embedding table must be [vocab, dim], got [256]}}
  %0 = weft.embedding %t, %ids : tensor<256xf32>, tensor<2x8xi32>
  return
}

// -----

func.func @embedding_float_ids(%t: tensor<256x8xf32>, %ids: tensor<2x8xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor with positive dimensions and at most 2^62 bytes of 32-bit signless integer or 64-bit signless integer values}}
  %0 = weft.embedding %t, %ids : tensor<256x8xf32>, tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<2x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{weight must be [64] to match the last input dimension, got [32]}}
  %0 = weft.layer_norm %x, %g, %g : tensor<2x64xf32>, tensor<32xf32>, tensor<32xf32>
  return
}

// -----

func.func @layer_norm_bias_type(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %b: tensor<64xbf16>) {
  // expected-error @+1 {{bias element type 'bf16' differs from the input's 'f32'}}
  %0 = weft.layer_norm %x, %g, %b : tensor<2x64xf32>, tensor<64xf32>, tensor<64xbf16>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = weft.layer_norm %x, %g, %g {epsilon = -1.0 : f64} : tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<1xf32>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %0 = weft.layer_norm %x, %g, %g : tensor<f32>, tensor<1xf32>, tensor<1xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<2x64xf32>, %g: tensor<2x64xf32>) {
  // expected-error @+1 {{weight must be [64] to match the last input dimension, got [2, 64]}}
  %0 = weft.rms_norm %x, %g : tensor<2x64xf32>, tensor<2x64xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<2x64xf32>, %g: tensor<64xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = weft.rms_norm %x, %g {epsilon = -1.0e-6 : f64} : tensor<2x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @softmax_dim(%x: tensor<2x64xf32>) {
  // expected-error @+1 {{softmax dim 2 is out of range for rank 2}}
  %0 = weft.softmax %x dim 2 : tensor<2x64xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<2x8x64xf32>) {
  // expected-error @+1 {{input must be [batch, seq, heads, head_dim], got [2, 8, 64]}}
  %0 = weft.rope %x : tensor<2x8x64xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<2x8x4x15xf32>) {
  // expected-error @+1 {{head_dim 15 must be even}}
  %0 = weft.rope %x : tensor<2x8x4x15xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{theta must be positive}}
  %0 = weft.rope %x {theta = 0.0 : f64} : tensor<2x8x4x16xf32>
  return
}

// -----

func.func @rope_positions(%x: tensor<2x8x4x16xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{positions must be [8] (one per row of the sequence), got [4]}}
  %0 = weft.rope %x positions %p : tensor<2x8x4x16xf32>, tensor<4xi32>
  return
}

// -----

func.func @attention_positions_noncausal(%q: tensor<2x8x4x16xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{positions only mask a causal attention}}
  %0:2 = weft.attention %q, %q, %q positions(%p, %p) scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<8xi32>, tensor<8xi32>
  return
}

// -----

func.func @attention_positions_shape(%q: tensor<2x8x4x16xf32>, %k: tensor<2x4x4x16xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{key positions must be [4], got [8]}}
  %0:2 = weft.attention %q, %k, %k positions(%p, %p) scale = 1.0 causal : tensor<2x8x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<8xi32>, tensor<8xi32>
  return
}

// -----

func.func @attention_entropy_lse(%q: tensor<2x8x4x16xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @+1 {{lse must be 'tensor<2x4x8xf32>' ([batch, heads, seq] of the query), got 'tensor<2x8x4xf32>'}}
  %0 = weft.attention_entropy %q, %q, %lse scale = 1.0 causal : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_entropy_positions(%q: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{positions only mask a causal attention}}
  %0 = weft.attention_entropy %q, %q, %lse positions(%p, %p) scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>, tensor<8xi32>, tensor<8xi32>
  return
}

// -----

func.func @attention_entropy_heads(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{query heads 4 are not a multiple of key/value heads 3}}
  %0 = weft.attention_entropy %q, %k, %lse scale = 1.0 causal : tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_grad_lse_grad(%q: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>, %g: tensor<2x8x4xf32>) {
  // expected-error @+1 {{lse_grad must have type 'tensor<2x4x8xf32>'}}
  %0:3 = weft.attention_grad %q, %q, %q, %q, %lse, %q lse_grad(%g : tensor<2x8x4xf32>) scale = 1.0 causal : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_dropout_rate(%q: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{dropout rate must be in [0, 1), got 1}}
  %0:2 = weft.attention %q, %q, %q scale = 1.0 causal dropout = 1.0 {seed = 1 : i64} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_dropout_seed(%q: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{dropout needs a seed}}
  %0:2 = weft.attention %q, %q, %q scale = 1.0 causal dropout = 0.1 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_seed_without_dropout(%q: tensor<2x8x4x16xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{has a seed, step, micro-batch or split but no dropout}}
  %0:2 = weft.attention %q, %q, %q scale = 1.0 causal step %s : tensor<f32> : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
  return
}

// -----

weft.mesh @mesh axes ["tp"] sizes [2]
func.func @attention_dropout_split_head_dim(%q: tensor<2x8x4x16xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{dropout's mask splits batch, heads and (with positions) the sequence, not dimension 3 of the query}}
  %0:2 = weft.attention %q, %q, %q positions(%p, %p) scale = 1.0 causal dropout = 0.1 {seed = 1 : i64, split = [[], [], [], ["tp"]]} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<8xi32>, tensor<8xi32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "cp"] sizes [2, 2]
func.func @attention_dropout_split_sequence(%q: tensor<2x8x4x16xf32>) {
  // expected-error @+1 {{dropout's mask splits batch, heads and (with positions) the sequence, not dimension 1 of the query}}
  %0:2 = weft.attention %q, %q, %q scale = 1.0 causal dropout = 0.1 {seed = 1 : i64, split = [["dp"], ["cp"], [], []]} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
  return
}

// -----

func.func @attention_grad_dropout_microbatch(%q: tensor<2x8x4x16xf32>, %lse: tensor<2x4x8xf32>, %k: tensor<f32>) {
  // expected-error @+1 {{takes a microbatch operand exactly when it has microbatches}}
  %0:3 = weft.attention_grad %q, %q, %q, %q, %lse, %q scale = 1.0 causal dropout = 0.1 microbatch %k : tensor<f32> {seed = 1 : i64} : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x8x64xf32>) {
  // expected-error @+1 {{attention operands must be [batch, seq, heads, head_dim], got [2, 8, 64], [2, 8, 64], [2, 8, 64]}}
  %0:2 = weft.attention %q, %q, %q scale = 1.0 : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  return
}

// -----

func.func @attention_types(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xbf16>) {
  // expected-error @+1 {{attention operand element types differ}}
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xbf16>, tensor<2x8x4x16xbf16>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x8x4x16xf32>, %k: tensor<3x8x4x16xf32>) {
  // expected-error @+1 {{attention batch sizes differ: 2, 3, 3}}
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<3x8x4x16xf32>, tensor<3x8x4x16xf32>
  return
}

// -----

func.func @attention_kv(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x9x4x16xf32>) {
  // expected-error @+1 {{key [2, 8, 4, 16] and value [2, 9, 4, 16] must agree in sequence length and heads}}
  %0:2 = weft.attention %q, %k, %v scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x9x4x16xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x8xf32>) {
  // expected-error @+1 {{query head_dim 16 differs from key head_dim 8}}
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>) {
  // expected-error @+1 {{query heads 4 are not a multiple of key/value heads 3}}
  %0:2 = weft.attention %q, %k, %k scale = 1.0 : tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>, tensor<2x8x3x16xf32>
  return
}

// -----

func.func @dropout_rate(%x: tensor<4xf32>) {
  // expected-error @+1 {{rate must be in [0, 1), got 1}}
  %0 = weft.dropout %x {rate = 1.0 : f64, seed = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_microbatch_without_count(%x: tensor<4xf32>, %k: tensor<f32>) {
  // expected-error @+1 {{takes a microbatch operand exactly when it has microbatches}}
  %0 = weft.dropout %x microbatch %k : tensor<f32> {rate = 0.1 : f64, seed = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_zero_microbatches(%x: tensor<4xf32>, %k: tensor<f32>) {
  // expected-error @+1 {{microbatches must be at least 1, got 0}}
  %0 = weft.dropout %x microbatch %k : tensor<f32> {microbatches = 0 : i64, rate = 0.1 : f64, seed = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @dropout_microbatched_scalar(%x: tensor<f32>, %k: tensor<f32>) {
  // expected-error @+1 {{cuts dimension 0 into micro-batches, but its input is a scalar}}
  %0 = weft.dropout %x microbatch %k : tensor<f32> {microbatches = 2 : i64, rate = 0.1 : f64, seed = 0 : i64} : tensor<f32>
  return
}

// -----

func.func @dropout_positions_rank(%x: tensor<1x8x1x1x2xf32>, %p: tensor<8xi32>) {
  // expected-error @+1 {{positions index a tensor of rank at most 4, not 5}}
  %0 = weft.dropout %x positions %p : tensor<8xi32> {rate = 0.1 : f64, seed = 0 : i64} : tensor<1x8x1x1x2xf32>
  return
}

// -----

func.func @dropout_positions(%x: tensor<4x8xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{positions must be one per element of dimension 1 of the input, got 'tensor<4xi32>'}}
  %0 = weft.dropout %x positions %p : tensor<4xi32> {rate = 0.1 : f64, seed = 0 : i64} : tensor<4x8xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp"] sizes [2]
func.func @dropout_split_rank(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{split has 1 entries for a tensor of rank 2}}
  %0 = weft.dropout %x {rate = 0.1 : f64, seed = 0 : i64, split = [["dp"]]} : tensor<4x2xf32>
  return
}

// -----

func.func @dropout_split_without_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{split needs a weft.mesh @mesh}}
  %0 = weft.dropout %x {rate = 0.1 : f64, seed = 0 : i64, split = [["dp"]]} : tensor<4xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp"] sizes [2]
func.func @dropout_split_axis(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{split entry 1 names "tp", which is not an axis of @mesh}}
  %0 = weft.dropout %x {rate = 0.1 : f64, seed = 0 : i64, split = [["dp"], ["tp"]]} : tensor<4x2xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp"] sizes [2]
func.func @dropout_split_twice(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{split names axis 'dp' twice}}
  %0 = weft.dropout %x {rate = 0.1 : f64, seed = 0 : i64, split = [["dp"], ["dp"]]} : tensor<4x2xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp"] sizes [2]
func.func @dropout_split_entry(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{split entry 0 is not a list of axes}}
  %0 = weft.dropout %x {rate = 0.1 : f64, seed = 0 : i64, split = ["dp", []]} : tensor<4x2xf32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<2x8x256xf32>, %y: tensor<2x7xi32>) {
  // expected-error @+1 {{labels [2, 7] must be the logits shape [2, 8, 256] without its last (vocabulary) dimension}}
  %0 = weft.cross_entropy %l, %y : tensor<2x8x256xf32>, tensor<2x7xi32>
  return
}

// -----

func.func @one_hot_shape(%y: tensor<2x8xi32>) {
  // expected-error @+1 {{result [2, 256] must be the indices shape [2, 8] plus one class dimension}}
  %0 = weft.one_hot %y : tensor<2x8xi32> -> tensor<2x256xf32>
  return
}

// -----

func.func @topk_k(%x: tensor<16x8xf32>) {
  // expected-error @+1 {{k = 9 must be in [1, 8]}}
  %0:2 = weft.topk %x k = 9 : tensor<16x8xf32>
  return
}

// -----

func.func @topk_gating_rank(%x: tensor<2x16x8xf32>) {
  // expected-error @+1 {{topk input has unexpected shape [2, 16, 8]}}
  %0:2 = weft.topk_gating %x k = 2 : tensor<2x16x8xf32>
  return
}

// -----

func.func @route_shape(%e: tensor<16xi32>) {
  // expected-error @+1 {{expert_route wants indices [T, k], got [16]}}
  %p, %c = weft.expert_route %e experts = 8 : tensor<16xi32>
  return
}

// -----

func.func @route_experts(%e: tensor<16x2xi32>) {
  // expected-error @+1 {{num_experts (0) must be in [1, 1048576]}}
  %p, %c = weft.expert_route %e experts = 0 : tensor<16x2xi32>
  return
}

// -----

func.func @route_capacity(%e: tensor<16x2xi32>) {
  // expected-error @+1 {{capacity (0) must be positive (leave it out for dropless routing)}}
  %p, %c = weft.expert_route %e experts = 8 capacity = 0 : tensor<16x2xi32>
  return
}

// -----

func.func @dispatch_shapes(%x: tensor<16x64xf32>, %p: tensor<15x2xi32>) {
  // expected-error @+1 {{expert_dispatch wants input [T, D] and positions [T, k], got [16, 64] and [15, 2]}}
  %0 = weft.expert_dispatch %x, %p rows = 32 : tensor<16x64xf32>, tensor<15x2xi32>
  return
}

// -----

func.func @dispatch_rows(%x: tensor<16x64xf32>, %p: tensor<16x2xi32>) {
  // expected-error @+1 {{expert_dispatch rows (0) must be positive}}
  %0 = weft.expert_dispatch %x, %p rows = 0 : tensor<16x64xf32>, tensor<16x2xi32>
  return
}

// -----

func.func @combine_shapes(%y: tensor<32x64xf32>, %w: tensor<16x2xf32>, %p: tensor<16x3xi32>) {
  // expected-error @+1 {{expert_combine wants expert outputs [N, D] and weights, positions [T, k], got [32, 64], [16, 2], [16, 3]}}
  %0 = weft.expert_combine %y, %w, %p : tensor<32x64xf32>, tensor<16x2xf32>, tensor<16x3xi32>
  return
}

// -----

func.func @combine_types(%y: tensor<32x64xf32>, %w: tensor<16x2xbf16>, %p: tensor<16x2xi32>) {
  // expected-error @+1 {{expert_combine weights element type 'bf16' differs from 'f32'}}
  %0 = weft.expert_combine %y, %w, %p : tensor<32x64xf32>, tensor<16x2xbf16>, tensor<16x2xi32>
  return
}

// -----

func.func @expert_gather_shape(%eo: tensor<8x4x64xf32>, %p: tensor<16x2xi32>) {
  // expected-error @+1 {{expert_gather wants expert outputs [N, D] and positions [T, k], got [8, 4, 64] and [16, 2]}}
  %0 = weft.expert_gather %eo, %p : tensor<8x4x64xf32>, tensor<16x2xi32>
  return
}

// -----

func.func @expert_scatter_shape(%q: tensor<16x3x64xf32>, %p: tensor<16x2xi32>) {
  // expected-error @+1 {{expert_scatter wants pairs [T, k, D] and positions [T, k], got [16, 3, 64] and [16, 2]}}
  %0 = weft.expert_scatter %q, %p rows = 32 : tensor<16x3x64xf32>, tensor<16x2xi32>
  return
}

// -----

func.func @expert_scatter_rows(%q: tensor<16x2x64xf32>, %p: tensor<16x2xi32>) {
  // expected-error @+1 {{expert_scatter rows (-4) must be positive}}
  %0 = weft.expert_scatter %q, %p rows = -4 : tensor<16x2x64xf32>, tensor<16x2xi32>
  return
}

// -----

func.func @grouped_shapes(%x: tensor<32x64xf32>, %w: tensor<8x32x64xf32>, %c: tensor<8xi32>) {
  // expected-error @+1 {{grouped_matmul wants input [N, K], weight [E, K, M] and sizes [G], got [32, 64], [8, 32, 64], [8]}}
  %0 = weft.grouped_matmul %x, %w, %c : tensor<32x64xf32>, tensor<8x32x64xf32>, tensor<8xi32>
  return
}

// -----

func.func @grouped_groups(%x: tensor<32x64xf32>, %w: tensor<8x64x16xf32>, %c: tensor<12xi32>) {
  // expected-error @+1 {{grouped_matmul: the 8 experts do not divide the 12 groups}}
  %0 = weft.grouped_matmul %x, %w, %c : tensor<32x64xf32>, tensor<8x64x16xf32>, tensor<12xi32>
  return
}

// -----

func.func @grouped_types(%x: tensor<32x64xbf16>, %w: tensor<8x64x16xf32>, %c: tensor<8xi32>) {
  // expected-error @+1 {{grouped_matmul input element type 'bf16' differs from weight's 'f32'}}
  %0 = weft.grouped_matmul %x, %w, %c : tensor<32x64xbf16>, tensor<8x64x16xf32>, tensor<8xi32>
  return
}

// -----

func.func @wgrad_rows(%a: tensor<32x64xf32>, %b: tensor<31x16xf32>, %c: tensor<8xi32>) {
  // expected-error @+1 {{grouped_matmul_wgrad wants lhs [N, P], rhs [N, Q] and sizes [G], got [32, 64], [31, 16], [8]}}
  %0 = weft.grouped_matmul_wgrad %a, %b, %c experts = 8 : tensor<32x64xf32>, tensor<31x16xf32>, tensor<8xi32>
  return
}

// -----

func.func @wgrad_experts(%a: tensor<32x64xf32>, %b: tensor<32x16xf32>, %c: tensor<8xi32>) {
  // expected-error @+1 {{grouped_matmul_wgrad: experts = 3 must divide the 8 groups}}
  %0 = weft.grouped_matmul_wgrad %a, %b, %c experts = 3 : tensor<32x64xf32>, tensor<32x16xf32>, tensor<8xi32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "weft.cast"(%x) : (tensor<4xf32>) -> tensor<5xbf16>
  return
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{custom op 'weft.frobnicate' is unknown}}
  %0 = weft.frobnicate %x : tensor<4xf32>
  return
}

// -----

func.func @malformed(%x: tensor<4xf32>) {
  // expected-error @+1 {{expected ':'}}
  %0 = weft.exp %x tensor<4xf32>
  return
}

// -----

func.func @embedding_grad_shape(%ids: tensor<2x8xi32>, %g: tensor<2x8x32xf32>) {
  // expected-error @+1 {{grad [2, 8, 32] must be the ids shape [2, 8] plus a row of the table 'tensor<256x64xf32>'}}
  %0 = weft.embedding_grad %ids, %g : tensor<2x8xi32>, tensor<2x8x32xf32> -> tensor<256x64xf32>
  return
}

// -----

func.func @layer_norm_grad_weight(%x: tensor<2x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{weight [32] must match the last dimension of [2, 64]}}
  %0:3 = weft.layer_norm_grad %x, %w, %x : tensor<2x64xf32>, tensor<32xf32>
  return
}

// -----

func.func @rms_norm_grad_grad_type(%x: tensor<2x64xf32>, %w: tensor<64xf32>, %g: tensor<2x64xbf16>) {
  // expected-error @+1 {{failed to verify that all of {input, grad} have same type}}
  %0:2 = "weft.rms_norm_grad"(%x, %w, %g) : (tensor<2x64xf32>, tensor<64xf32>, tensor<2x64xbf16>) -> (tensor<2x64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %o: tensor<2x8x4x16xf32>, %lse: tensor<2x8x4xf32>) {
  // expected-error @+1 {{lse must have type 'tensor<2x4x8xf32>'}}
  %0:3 = weft.attention_grad %q, %kv, %kv, %o, %lse, %o scale = 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4xf32>
  return
}

// -----

func.func @attention_grad_result(%q: tensor<2x8x4x16xf32>, %kv: tensor<2x8x2x16xf32>, %o: tensor<2x8x4x8xf32>, %lse: tensor<2x4x8xf32>) {
  // expected-error @+1 {{result and grad must have the attention result type 'tensor<2x8x4x16xf32>'}}
  %0:3 = weft.attention_grad %q, %kv, %kv, %o, %lse, %o scale = 0.25 : tensor<2x8x4x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @cross_entropy_grad_labels(%l: tensor<2x8x256xf32>, %y: tensor<8xi32>, %s: tensor<f32>) {
  // expected-error @+1 {{labels [8] must be the logits shape [2, 8, 256] without its last (vocabulary) dimension}}
  %0 = weft.cross_entropy_grad %l, %y, %s : tensor<2x8x256xf32>, tensor<8xi32>
  return
}

// -----

func.func @assign_unknown(%x: tensor<4xf32>) {
  // expected-error @+1 {{no parameter named 'w' in this block}}
  weft.assign "w", %x : tensor<4xf32>
  return
}

// -----

func.func @assign_type(%x: tensor<4xf32>) {
  %w = weft.param "w" init(zeros) : tensor<5xf32>
  // expected-error @+1 {{value of type 'tensor<4xf32>' does not match parameter 'w' of type 'tensor<5xf32>'}}
  weft.assign "w", %x : tensor<4xf32>
  return
}

// -----

func.func @fused_nonelementwise(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = weft.fused(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'weft.matmul' op cannot be part of a fused elementwise group}}
    %m = weft.matmul %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
    weft.yield %m : tensor<4x4xf32>
  }
  return %0 : tensor<4x4xf32>
}

// -----

func.func @fused_yield_types(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{yielded types differ from the result types}}
  %0 = weft.fused(%x) : (tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xf32>):
    %e = weft.exp %a : tensor<4xf32>
    weft.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xbf16>
}

// -----

func.func @fused_arguments(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body argument type 'tensor<5xf32>' differs from input type 'tensor<4xf32>'}}
  %0 = weft.fused(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<5xf32>):
    weft.yield %x : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @epilogue_batched_weight(%x: tensor<2x8x64xf32>, %w: tensor<2x64x32xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{takes lhs of rank >= 2 and a rank-2 weight, got ranks 3 and 3}}
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<2x8x64xf32>, tensor<2x64x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  return %0#0 : tensor<2x8x32xf32>
}

// -----

func.func @epilogue_mixed_types(%x: tensor<8x64xbf16>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{operands and result must share one element type}}
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<8x64xbf16>, tensor<64x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0#0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_contraction(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{contraction sizes differ: lhs has 64, rhs has 32}}
  %0:2 = weft.matmul_epilogue gelu %x, %w : (tensor<8x64xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>)
  return %0#0 : tensor<8x64xf32>
}

// -----

func.func @epilogue_result_shape(%x: tensor<8x64xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{result shape [8, 64] should be [8, 32]}}
  %0:2 = weft.matmul_epilogue gelu %x, %w transpose_rhs : (tensor<8x64xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>)
  return %0#0 : tensor<8x64xf32>
}

// -----

func.func @epilogue_needs_bias(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'bias' needs bias}}
  %0 = weft.matmul_epilogue bias %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_takes_no_bias(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'gelu' takes no bias}}
  %0:2 = weft.matmul_epilogue gelu %x, %w bias %b : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0#0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_needs_preactivation(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'dgelu' needs preactivation}}
  %0 = weft.matmul_epilogue dgelu %x, %w : (tensor<8x64xf32>, tensor<64x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_takes_no_preactivation(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>, %p: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'bias' takes no preactivation}}
  %0 = weft.matmul_epilogue bias %x, %w bias %b preactivation %p : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_needs_aux(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'bias_gelu' has aux result}}
  %0 = weft.matmul_epilogue bias_gelu %x, %w bias %b : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_no_aux(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %p: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{epilogue 'dgelu' has no aux result}}
  %0:2 = weft.matmul_epilogue dgelu %x, %w preactivation %p : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0#0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_bias_shape(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{bias must be 'tensor<32xf32>', got 'tensor<64xf32>'}}
  %0 = weft.matmul_epilogue bias %x, %w bias %b : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @epilogue_preactivation_type(%x: tensor<8x64xf32>, %w: tensor<64x32xf32>, %p: tensor<8x64xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{preactivation and aux must have the result type 'tensor<8x32xf32>', got 'tensor<8x64xf32>'}}
  %0 = weft.matmul_epilogue dgelu %x, %w preactivation %p : (tensor<8x64xf32>, tensor<64x32xf32>, tensor<8x64xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @fused_broadcast_of_a_vector(%b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = weft.fused(%b) : (tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<8xf32>):
    // expected-error @+1 {{'weft.broadcast' op cannot be part of a fused elementwise group}}
    %1 = weft.broadcast %a dims [1] : tensor<8xf32> -> tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// A zero-size dimension, or a shape whose bytes overflow, is refused where it
// is written (before sharding rules or gradients compute with it).
func.func @empty(%a: tensor<4x0xf32>, %b: tensor<0x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'weft.matmul' op operand #0 must be statically shaped tensor with positive dimensions and at most 2^62 bytes}}
  %0 = weft.matmul %a, %b : tensor<4x0xf32>, tensor<0x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @huge(%a: tensor<2199023255552x1048576xf32>) -> tensor<2199023255552x1048576xf32> {
  // expected-error @+1 {{'weft.exp' op operand #0 must be statically shaped tensor with positive dimensions and at most 2^62 bytes}}
  %0 = weft.exp %a : tensor<2199023255552x1048576xf32>
  return %0 : tensor<2199023255552x1048576xf32>
}

// -----

func.func @params() {
  %a = weft.param "a" init(zeros) : tensor<4xf32>
  %b = weft.param "b" init(zeros) : tensor<4xf32>
  weft.assign "a", %a : tensor<4xf32>
  // expected-error @+1 {{'weft.param' op parameter 'b' is declared twice}}
  %c = weft.param "b" init(zeros) : tensor<4xf32>
  return
}

// -----

func.func @grouped_zero_experts(%x: tensor<4x8xf32>, %w: tensor<0x8x8xf32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{grouped_matmul: the 0 experts do not divide the 4 groups}}
  %0 = weft.grouped_matmul %x, %w, %c : tensor<4x8xf32>, tensor<0x8x8xf32>, tensor<4xi32>
  return
}

// -----

func.func @select_types_differ(%c: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "weft.select"(%c, %a, %b) : (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_fp8(%x: tensor<8x256xf32>, %a: tensor<1x1xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{format must be f8E4M3FN or f8E5M2, got 'bf16'}}
  %q = weft.fp8_quantize %x, %a {format = bf16} : tensor<8x256xf32>, tensor<1x1xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @amax_rank(%x: tensor<8x256xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{result [2] needs one size per dimension of [8, 256]}}
  %a = weft.fp8_amax %x : tensor<8x256xf32> -> tensor<2xf32>
  return %a : tensor<2xf32>
}

// -----

func.func @amax_divides(%x: tensor<8x200xf32>, %a: tensor<8x3xf32>) -> tensor<8x200xf32> {
  // expected-error @+1 {{amax size 3 of dimension 1 must be at least 1 and divide its size 200}}
  %q = weft.fp8_quantize %x, %a {format = f8E5M2} : tensor<8x200xf32>, tensor<8x3xf32>
  return %q : tensor<8x200xf32>
}

// -----

func.func @block_divides(%x: tensor<8x200xf32>) -> tensor<8x200xf32> {
  // expected-error @+1 {{block size 128 of dimension 1 must be at least 1 and divide its size 200}}
  %q = weft.fp8_quantize_grad %x {block = array<i64: 1, 128>, format = f8E5M2} : tensor<8x200xf32>
  return %q : tensor<8x200xf32>
}

// -----

func.func @backward_block_divides(%x: tensor<8x200xf32>, %a: tensor<8x1xf32>) -> tensor<8x200xf32> {
  // expected-error @+1 {{backward_block size 3 of dimension 0 must be at least 1 and divide its size 8}}
  %q = weft.fp8_quantize %x, %a {backward_block = array<i64: 3, 1>, format = f8E4M3FN} : tensor<8x200xf32>, tensor<8x1xf32>
  return %q : tensor<8x200xf32>
}

// -----

func.func @backward_block_rank(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{backward_block [8] needs one size per dimension of [8, 256]}}
  %q = weft.fp8_quantize_grad %x {backward_block = array<i64: 8>, block = array<i64: 1, 256>, format = f8E4M3FN} : tensor<8x256xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @block_zero(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{block size 0 of dimension 0 must be at least 1}}
  %q = weft.fp8_quantize_grad %x {block = array<i64: 0, 256>, format = f8E4M3FN} : tensor<8x256xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @grad_format(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{format must be f8E4M3FN or f8E5M2, got 'f16'}}
  %q = weft.fp8_quantize_grad %x {block = array<i64: 1, 256>, format = f16} : tensor<8x256xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @wide_or_narrow_float_only(%x: tensor<8x256xf8E4M3FN>) -> tensor<1x1xf32> {
  // expected-error @+1 {{operand #0 must be tensor of 32-bit float or bfloat16 type or 16-bit float values}}
  %a = weft.fp8_amax %x : tensor<8x256xf8E4M3FN> -> tensor<1x1xf32>
  return %a : tensor<1x1xf32>
}

// -----

func.func @amax_is_f32(%x: tensor<8x256xbf16>) -> tensor<1x1xbf16> {
  // expected-error @+1 {{result #0 must be tensor of 32-bit float values}}
  %a = weft.fp8_amax %x : tensor<8x256xbf16> -> tensor<1x1xbf16>
  return %a : tensor<1x1xbf16>
}

// -----

func.func @quantize_keeps_type(%x: tensor<8x256xbf16>, %a: tensor<1x1xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %q = "weft.fp8_quantize"(%x, %a) {format = f8E4M3FN} : (tensor<8x256xbf16>, tensor<1x1xf32>) -> tensor<8x256xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @group_rows_tile(%x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{group_rows must be 0 (all of an expert's rows) or a positive multiple of 32, not 48}}
  %q = weft.fp8_quantize_grad %x {block = array<i64: 1, 256>, format = f8E4M3FN, group_rows = 48 : i64} : tensor<8x256xf32>
  return %q : tensor<8x256xf32>
}

// -----

func.func @group_rows_rank(%x: tensor<2x8x256xf32>, %a: tensor<2x8x1xf32>) -> tensor<2x8x256xf32> {
  // expected-error @+1 {{group_rows tiles the rows of a matrix [N, C], not [2, 8, 256]}}
  %q = weft.fp8_quantize %x, %a {format = f8E4M3FN, group_rows = 0 : i64} : tensor<2x8x256xf32>, tensor<2x8x1xf32>
  return %q : tensor<2x8x256xf32>
}

// -----

func.func @group_quantize_rows(%x: tensor<64x96xf32>, %s: tensor<4xi32>) -> tensor<64x96xf32> {
  // expected-error @+1 {{rows must be 0 (all of an expert's rows) or a positive multiple of 32, not -32}}
  %q = weft.fp8_group_quantize %x, %s {experts = 2 : i64, format = f8E4M3FN, rows = -32 : i64} : tensor<64x96xf32>, tensor<4xi32>
  return %q : tensor<64x96xf32>
}

// -----

func.func @group_quantize_experts(%x: tensor<64x96xf32>, %s: tensor<4xi32>) -> tensor<64x96xf32> {
  // expected-error @+1 {{the 3 experts do not divide the 4 groups}}
  %q = weft.fp8_group_quantize %x, %s {experts = 3 : i64, format = f8E4M3FN, rows = 32 : i64} : tensor<64x96xf32>, tensor<4xi32>
  return %q : tensor<64x96xf32>
}

// -----

func.func @group_quantize_sizes(%x: tensor<64x96xf32>, %s: tensor<4xi64>) -> tensor<64x96xf32> {
  // expected-error @+1 {{sizes must be i32 [G], not 'tensor<4xi64>'}}
  %q = weft.fp8_group_quantize %x, %s {experts = 2 : i64, format = f8E4M3FN, rows = 32 : i64} : tensor<64x96xf32>, tensor<4xi64>
  return %q : tensor<64x96xf32>
}

// -----

func.func @group_quantize_format(%x: tensor<64x96xf32>, %s: tensor<4xi32>) -> tensor<64x96xf32> {
  // expected-error @+1 {{format}}
  %q = weft.fp8_group_quantize %x, %s {experts = 2 : i64, format = f16, rows = 32 : i64} : tensor<64x96xf32>, tensor<4xi32>
  return %q : tensor<64x96xf32>
}
