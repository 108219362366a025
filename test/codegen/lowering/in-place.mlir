// RUN: weft-opt %s -split-input-file -weft-lower-to-sched | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-sched-arenas | FileCheck %s --check-prefix=PLAN

// The optimizer's update of a parameter and its moment, each read by the
// update alone: computed into their own storage, with no arena buffer and
// no assign (held to the step's end, every update would fill the arena).
// CHECK-LABEL: sched.program @update
// CHECK-DAG: %[[P:.*]] = sched.get @p
// CHECK-DAG: %[[M:.*]] = sched.get @m
// CHECK: sched.launch @{{.*}} ins(%[[P]], %[[M]] : {{.*}}) outs(%[[P]], %[[M]] : {{.*}})
// CHECK-NOT: sched.assign
// CHECK: sched.return
// PLAN: func.func @update() attributes {weft.arena_bytes = 0 : i64}
func.func @update() {
  %p = weft.param "p" init(zeros) : tensor<1024xf32>
  %m = weft.param "m" init(zeros) state : tensor<1024xf32>
  %0:2 = weft.fused(%p, %m) : (tensor<1024xf32>, tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>) {
  ^bb0(%a: tensor<1024xf32>, %b: tensor<1024xf32>):
    %s = weft.add %a, %b : tensor<1024xf32>
    %t = weft.mul %b, %b : tensor<1024xf32>
    weft.yield %s, %t : tensor<1024xf32>, tensor<1024xf32>
  }
  weft.assign "p", %0#0 : tensor<1024xf32>
  weft.assign "m", %0#1 : tensor<1024xf32>
  return
}

// -----

// A parameter something else reads keeps its old value until the step
// ends: assigned, as before.
// CHECK-LABEL: sched.program @read_again
// CHECK: sched.launch
// CHECK: sched.assign @p =
func.func @read_again() -> tensor<1024xf32> {
  %p = weft.param "p" init(zeros) : tensor<1024xf32>
  %0 = weft.fused(%p) : (tensor<1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: tensor<1024xf32>):
    %s = weft.add %a, %a : tensor<1024xf32>
    weft.yield %s : tensor<1024xf32>
  }
  weft.assign "p", %0 : tensor<1024xf32>
  return %p : tensor<1024xf32>
}

// -----

// A program that reads token ids (checked on the device as it runs) must
// leave every parameter as it was when they fail it: assigned.
// CHECK-LABEL: sched.program @checked
// CHECK: sched.assign @p =
func.func @checked(%ids: tensor<4xi32>) -> tensor<4x8xf32> {
  %table = weft.param "table" init(zeros) : tensor<16x8xf32>
  %e = weft.embedding %table, %ids : tensor<16x8xf32>, tensor<4xi32>
  %p = weft.param "p" init(zeros) : tensor<1024xf32>
  %0 = weft.fused(%p) : (tensor<1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: tensor<1024xf32>):
    %s = weft.add %a, %a : tensor<1024xf32>
    weft.yield %s : tensor<1024xf32>
  }
  weft.assign "p", %0 : tensor<1024xf32>
  return %e : tensor<4x8xf32>
}
