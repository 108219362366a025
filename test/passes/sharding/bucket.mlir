// RUN: weft-opt %s -weft-bucket-all-reduce | FileCheck %s
// RUN: weft-opt %s -weft-bucket-all-reduce=bucket-mb=0.0001 | FileCheck %s --check-prefix=SMALL

weft.mesh @mesh axes ["dp", "tp"] sizes [2, 2]

// CHECK-LABEL: func.func @merge
func.func @merge(%a: tensor<16xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>, %d: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  // Same group: one bucket where the last member was.
  // CHECK: %[[AB:.*]]:2 = weft.all_reduce sum %arg0, %arg1 over @mesh ["dp"]
  %ra = weft.all_reduce sum %a over @mesh ["dp"] : tensor<16xf32>
  %rb = weft.all_reduce sum %b over @mesh ["dp"] : tensor<16xf32>
  // Another group or reduction closes the bucket.
  // CHECK: weft.all_reduce sum %arg2 over @mesh ["tp"]
  %rc = weft.all_reduce sum %c over @mesh ["tp"] : tensor<16xf32>
  // CHECK: weft.all_reduce mean %arg3 over @mesh ["tp"]
  %rd = weft.all_reduce mean %d over @mesh ["tp"] : tensor<16xf32>
  // CHECK: return %[[AB]]#0, %[[AB]]#1
  return %ra, %rb, %rc, %rd : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// SMALL-LABEL: func.func @merge
// 64-byte operands in a 104-byte bucket: each alone.
// SMALL-COUNT-4: weft.all_reduce {{sum|mean}} %arg{{[0-3]}} over

// CHECK-LABEL: func.func @used_between
func.func @used_between(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  // The first result is read before the second all-reduce: no merging, or
  // the read would come before its value.
  // CHECK: %[[A:.*]] = weft.all_reduce sum %arg0
  // CHECK: %[[X:.*]] = weft.add %[[A]], %arg1
  // CHECK: weft.all_reduce sum %[[X]]
  %ra = weft.all_reduce sum %a over @mesh ["dp"] : tensor<16xf32>
  %x = weft.add %ra, %b : tensor<16xf32>
  %rx = weft.all_reduce sum %x over @mesh ["dp"] : tensor<16xf32>
  return %rx : tensor<16xf32>
}
