"""Prints a @forward with a chain of N elementwise ops (for the fusion pass's scaling).

usage: gen_chain.py N
"""
import sys

n = int(sys.argv[1])
print('func.func @forward(%t: tensor<1x4xi32> {weft.input = "tokens"}, %l: tensor<1x4xi32> {weft.input = "labels"}) -> (tensor<f32> {weft.output = "loss"}) {')
print('  %w = weft.param "w" init(normal, 0.02) : tensor<16x8xf32>')
print('  %e0 = weft.embedding %w, %t : tensor<16x8xf32>, tensor<1x4xi32>')
for i in range(1, n + 1):
    print('  %%e%d = weft.%s %%e%d : tensor<1x4x8xf32>' % (i, 'tanh' if i % 2 else 'neg', i - 1))
print('  %%x = weft.matmul %%e%d, %%w transpose_rhs : tensor<1x4x8xf32>, tensor<16x8xf32>' % n)
print('  %loss = weft.cross_entropy %x, %l : tensor<1x4x16xf32>, tensor<1x4xi32>')
print('  return %loss : tensor<f32>')
print('}')
