//===- Mesh.h - ranks laid out on a named grid ------------------*- C++ -*-===//
//
// The runtime's view of a `weft.mesh`: axis names and sizes, first axis
// major, so with dp x tp the tp ranks of one dp replica are consecutive (and
// share a node). A group of axes A is the set of ranks that agree on every
// other axis; a rank's index in its group counts over A in the listed order.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DIST_MESH_H
#define WEFT_RUNTIME_DIST_MESH_H

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

/// The axes splitting each dimension of a tensor (empty: whole).
using Sharding = std::vector<std::vector<std::string>>;

struct MeshSpec {
  std::vector<std::string> axes;
  std::vector<int64_t> sizes;

  bool empty() const { return axes.empty(); }
  int64_t size() const {
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    return n;
  }
  /// The index of `axis`, or -1.
  int axisIndex(const std::string &axis) const {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] == axis)
        return static_cast<int>(i);
    return -1;
  }
  /// The coordinates of `rank`, one per axis.
  std::vector<int64_t> coords(int64_t rank) const {
    std::vector<int64_t> c(axes.size());
    for (size_t i = axes.size(); i-- > 0;) {
      c[i] = rank % sizes[i];
      rank /= sizes[i];
    }
    return c;
  }
  int64_t rankOf(const std::vector<int64_t> &c) const {
    int64_t rank = 0;
    for (size_t i = 0; i < axes.size(); ++i)
      rank = rank * sizes[i] + c[i];
    return rank;
  }
  /// The product of the sizes of `names` (unknown axes count as 1).
  int64_t groupSize(const std::vector<std::string> &names) const {
    int64_t n = 1;
    for (const std::string &a : names)
      if (int i = axisIndex(a); i >= 0)
        n *= sizes[i];
    return n;
  }
  /// `rank`'s index within its group of `names`.
  int64_t groupRank(int64_t rank, const std::vector<std::string> &names) const {
    std::vector<int64_t> c = coords(rank);
    int64_t index = 0;
    for (const std::string &a : names)
      if (int i = axisIndex(a); i >= 0)
        index = index * sizes[i] + c[i];
    return index;
  }
  /// The ranks of `rank`'s group of `names`, in group order.
  std::vector<int64_t>
  groupMembers(int64_t rank, const std::vector<std::string> &names) const {
    std::vector<int64_t> members;
    std::vector<int64_t> base = coords(rank);
    int64_t n = groupSize(names);
    for (int64_t g = 0; g < n; ++g) {
      std::vector<int64_t> c = base;
      int64_t rest = g;
      for (size_t k = names.size(); k-- > 0;)
        if (int i = axisIndex(names[k]); i >= 0) {
          c[i] = rest % sizes[i];
          rest /= sizes[i];
        }
      members.push_back(rankOf(c));
    }
    return members;
  }
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_MESH_H
