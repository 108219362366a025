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

#include "runtime/support/SequenceChunks.h"

#include <algorithm>
#include <cstdint>
#include <optional>
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
  /// The rank whose coordinate along `axis` is `rank`'s plus `delta` mod the
  /// axis size (either sign: the ring wraps), every other coordinate
  /// equal: a sched.send's or sched.recv's peer. -1 for an unknown axis.
  int64_t neighbour(int64_t rank, const std::string &axis,
                    int64_t delta) const {
    int i = axisIndex(axis);
    if (i < 0)
      return -1;
    std::vector<int64_t> c = coords(rank);
    int64_t n = sizes[i];
    c[i] = ((c[i] + delta % n) % n + n) % n; // No overflow for any delta.
    return rankOf(c);
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
  /// The global shape of which `local` is one block under `sharding`.
  std::vector<int64_t> globalShape(const std::vector<int64_t> &local,
                                   const Sharding &sharding) const {
    std::vector<int64_t> shape = local;
    for (size_t d = 0; d < sharding.size() && d < shape.size(); ++d)
      shape[d] *= groupSize(sharding[d]);
    return shape;
  }
  /// Where `rank`'s block of a tensor split by `sharding` starts, per dim:
  /// dimension d is cut in blocks over its axes, major to minor.
  std::vector<int64_t> blockStart(int64_t rank,
                                  const std::vector<int64_t> &local,
                                  const Sharding &sharding) const {
    std::vector<int64_t> start(local.size(), 0);
    for (size_t d = 0; d < sharding.size() && d < local.size(); ++d)
      start[d] = local[d] * groupRank(rank, sharding[d]);
    return start;
  }
  /// Every axis `sharding` splits over, in dimension order.
  static std::vector<std::string> axesOf(const Sharding &sharding) {
    std::vector<std::string> axes;
    for (const auto &dim : sharding)
      axes.insert(axes.end(), dim.begin(), dim.end());
    return axes;
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

/// Calls `visit(localIndex, globalIndex)` for every element of the block of
/// shape `local` starting at `start` in a row-major tensor of shape `global`.
template <typename Visit>
void forEachInBlock(const std::vector<int64_t> &local,
                    const std::vector<int64_t> &global,
                    const std::vector<int64_t> &start, Visit visit) {
  int64_t count = 1;
  for (int64_t n : local)
    count *= n;
  std::vector<int64_t> index(local.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < local.size(); ++d)
      g = g * global[d] + start[d] + index[d];
    visit(i, g);
    for (size_t d = local.size(); d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
}

/// Where a rank's block of a tensor lies in the global tensor a dropout
/// mask is drawn for, as CounterRng.h's weft_global_index takes it: four
/// dimensions (leading ones added; a dimension merged into the one before
/// it where the later one is whole). The tensor's dimension 0 is
/// `microbatchDim` of these; micro-batch k's block of it starts
/// `microbatchStep` * k further on.
struct MaskBlock {
  long long local[4] = {1, 1, 1, 1}, start[4] = {0, 0, 0, 0},
            global[4] = {1, 1, 1, 1};
  int microbatchDim = 0;
  long long microbatchStep = 0;
  /// Where the tensor's dimension 1 is among the four (for positions).
  int positionsDim = 1;
};

/// `local` split by `split` over `mesh` (empty: unsplit), dimension 0 cut
/// further into `microbatches` outside the split; nullopt when more than
/// four dimensions are left after merging, or when a tensor indexed by
/// positions (dimension 1: `positioned`) would need merging at all.
inline std::optional<MaskBlock> maskBlock(const MeshSpec &mesh, int64_t rank,
                                          const std::vector<int64_t> &local,
                                          const Sharding &split,
                                          int64_t microbatches,
                                          bool positioned = false) {
  if (positioned && local.size() > 4)
    return std::nullopt;
  std::vector<long long> l(local.begin(), local.end()), start(l.size(), 0),
      global = l;
  long long step = 0;
  if (!split.empty()) {
    std::vector<int64_t> s = mesh.blockStart(rank, local, split),
                         g = mesh.globalShape(local, split);
    start.assign(s.begin(), s.end());
    global.assign(g.begin(), g.end());
  }
  if (!global.empty()) {
    step = global[0];
    global[0] *= microbatches;
  }
  // Merge dimension d + 1 into d while there are too many: the index of a
  // whole dimension after d is the merged dimension's remainder.
  for (size_t d = l.size(); l.size() > 4 && d-- > 1;) {
    if (start[d] != 0 || l[d] != global[d])
      continue;
    if (d == 1)
      step *= global[1];
    l[d - 1] *= l[d];
    start[d - 1] *= global[d];
    global[d - 1] *= global[d];
    l.erase(l.begin() + d);
    start.erase(start.begin() + d);
    global.erase(global.begin() + d);
  }
  if (l.size() > 4)
    return std::nullopt;
  MaskBlock b;
  size_t pad = 4 - l.size();
  for (size_t d = 0; d < l.size(); ++d) {
    b.local[pad + d] = l[d];
    b.start[pad + d] = start[d];
    b.global[pad + d] = global[d];
  }
  b.microbatchDim = static_cast<int>(pad) < 4 ? static_cast<int>(pad) : 0;
  b.positionsDim = static_cast<int>(pad) + 1;
  b.microbatchStep = l.empty() ? 0 : step;
  return b;
}

/// Attention dropout's block: its [B, Hq, S, T] probabilities placed as
/// maskBlock places a tensor, from the query's `split` ([B, S, Hq, D]:
/// batch, heads and, under context parallelism's ring, the sequence, which
/// is queries' and keys' alike; the verifiers refuse the head dimension).
inline std::optional<MaskBlock>
attentionMaskBlock(const MeshSpec &mesh, int64_t rank, int64_t batch,
                   int64_t heads, int64_t s, int64_t t, const Sharding &split,
                   int64_t microbatches) {
  Sharding probs;
  if (split.size() == 4)
    probs = {split[0], split[2], split[1], split[1]};
  return maskBlock(mesh, rank, {batch, heads, s, t}, probs, microbatches);
}

/// Reorders one sequence of `n` elements, cut into `chunks` (2N) equal
/// chunks, into context parallelism's load-balanced order: chunks 0, 2N-1,
/// 1, 2N-2, ..., N-1, N, so rank i of N holds chunks i and 2N-1-i (Megatron
/// and TransformerEngine balance the causal mask's work so). `scratch`
/// holds a copy.
inline void reorderChunks(int32_t *data, int64_t n, int64_t chunks,
                          std::vector<int32_t> &scratch) {
  scratch.assign(data, data + n);
  int64_t size = n / chunks;
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t from = heldChunk(k, chunks);
    std::copy(scratch.begin() + from * size,
              scratch.begin() + (from + 1) * size, data + k * size);
  }
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_MESH_H
