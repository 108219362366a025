//===- Shapes.h - products and strides of tensor shapes ---------*- C++ -*-===//
//
// The two shape computations both executors need: how many elements a run
// of dimensions holds, and a shape's row-major strides.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_SHAPES_H
#define WEFT_RUNTIME_SUPPORT_SHAPES_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace weft::runtime {

/// The product of dimensions [from, to) of `shape` (clamped to its rank).
inline int64_t product(const std::vector<int64_t> &shape, size_t from = 0,
                       size_t to = static_cast<size_t>(-1)) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, shape.size()); ++i)
    n *= shape[i];
  return n;
}

/// Row-major strides of `shape`, in elements.
inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_SHAPES_H
