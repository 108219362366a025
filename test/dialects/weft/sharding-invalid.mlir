// RUN: weft-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'weft.mesh' op unknown axis name 'xp' (axes: dp, tp, pp, ep, cp)}}
weft.mesh @mesh axes ["dp", "xp"] sizes [2, 4]

// -----

// expected-error @+1 {{'weft.mesh' op axis 'dp' appears twice}}
weft.mesh @mesh axes ["dp", "dp"] sizes [2, 4]

// -----

// expected-error @+1 {{'weft.mesh' op axis 'tp' has size 0; sizes must be positive}}
weft.mesh @mesh axes ["dp", "tp"] sizes [2, 0]

// -----

// expected-error @+1 {{'weft.mesh' op has 2 axes but 1 sizes}}
weft.mesh @mesh axes ["dp", "tp"] sizes [2]

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @not_divisible() {
  // expected-error @+1 {{result 0: dimension 1 of size 30 is not divisible by mesh axis 'tp' (splitting it 4 ways)}}
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [[], ["tp"]]>]} : tensor<64x30xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @unknown_axis() {
  // expected-error @+1 {{result 0: unknown mesh axis "ep" of @mesh}}
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [["ep"], []]>]} : tensor<64x32xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @axis_twice() {
  // expected-error @+1 {{result 0: mesh axis 'tp' splits more than one dimension}}
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [["tp"], ["tp"]]>]} : tensor<64x32xf32>
  return
}

// -----

func.func @unknown_mesh() {
  // expected-error @+1 {{result 0: unknown mesh @nowhere}}
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@nowhere, [[], []]>]} : tensor<64x32xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @rank() {
  // expected-error @+1 {{result 0: sharding has 1 dimension entries for a value of rank 2}}
  %w = weft.param "w" init(zeros) {weft.sharding = [#weft.sharding<@mesh, [[]]>]} : tensor<64x32xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
func.func @per_result() {
  // expected-error @+1 {{weft.sharding needs one #weft.sharding per result (1)}}
  %w = weft.param "w" init(zeros) {weft.sharding = #weft.sharding<@mesh, [[], []]>} : tensor<64x32xf32>
  return
}

// -----

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 4]
// expected-error @+1 {{argument 0: dimension 0 of size 3 is not divisible by mesh axis 'dp' (splitting it 2 ways)}}
func.func @argument(%x: tensor<3x8xf32> {weft.sharding = #weft.sharding<@mesh, [["dp"], []]>}) {
  return
}
