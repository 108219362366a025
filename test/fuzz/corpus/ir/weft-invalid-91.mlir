func.func @huge(%a: tensor<2199023255552x1048576xf32>) -> tensor<2199023255552x1048576xf32> {
  %0 = weft.exp %a : tensor<2199023255552x1048576xf32>
  return %0 : tensor<2199023255552x1048576xf32>
}
