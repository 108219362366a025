// RUN: weft-opt %s -split-input-file -verify-diagnostics

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @unknown_mesh(%x: tensor<8xf32>) {
  // expected-error @+1 {{'weft.all_reduce' op unknown mesh @nope}}
  %y = weft.all_reduce sum %x over @nope ["dp"] : tensor<8xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @unknown_axis(%x: tensor<8xf32>) {
  // expected-error @+1 {{'weft.copy_to_group' op unknown mesh axis 'ep' of @mesh}}
  %y = weft.copy_to_group %x over @mesh ["ep"] : tensor<8xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @axis_twice(%x: tensor<8xf32>) {
  // expected-error @+1 {{'weft.all_reduce' op mesh axis 'tp' appears twice}}
  %y = weft.all_reduce sum %x over @mesh ["tp", "tp"] : tensor<8xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @no_axes(%x: tensor<8xf32>) {
  // expected-error @+1 {{'weft.all_reduce' op needs at least one mesh axis}}
  %y = weft.all_reduce sum %x over @mesh [] : tensor<8xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @gather_shape(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.all_gather' op result type 'tensor<16x4xf32>' should be 'tensor<32x4xf32>' for a group of 4}}
  %y = weft.all_gather %x over @mesh ["tp"] dim 0 : tensor<8x4xf32> -> tensor<16x4xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @gather_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.all_gather' op dim 2 is out of range for rank 2}}
  %y = weft.all_gather %x over @mesh ["tp"] dim 2 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @scatter_indivisible(%x: tensor<6x4xf32>) {
  // expected-error @+1 {{'weft.reduce_scatter' op dimension 0 of size 6 does not split into 4 blocks}}
  %y = weft.reduce_scatter %x over @mesh ["tp"] dim 0 : tensor<6x4xf32> -> tensor<1x4xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @all_to_all_shape(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.all_to_all' op result type 'tensor<8x4xf32>' should be 'tensor<2x16xf32>' for a group of 4}}
  %y = weft.all_to_all %x over @mesh ["tp"] split 0 concat 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @all_to_all_dim(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.all_to_all' op concat -1 is out of range for rank 2}}
  %y = weft.all_to_all %x over @mesh ["tp"] split 0 concat -1 : tensor<8x4xf32> -> tensor<2x16xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @shard_slice_shape(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'weft.shard_slice' op result type 'tensor<8x4xf32>' should be 'tensor<4x4xf32>' for a group of 2}}
  %y = weft.shard_slice %x over @mesh ["dp"] dim 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

weft.mesh @mesh axes ["cp"] sizes [2]
func.func @ring_self(%x: tensor<4xf32>) {
  // expected-error @+1 {{offset 2 along 'cp' (size 2) names this rank itself}}
  %0 = weft.ring_shift %x over @mesh "cp" offset 2 : tensor<4xf32>
  return
}

// -----

weft.mesh @mesh axes ["cp"] sizes [2]
func.func @ring_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown mesh axis 'tp' of @mesh}}
  %0 = weft.ring_shift %x over @mesh "tp" offset 1 : tensor<4xf32>
  return
}
