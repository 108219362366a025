//===- CollectiveKernels.cpp - bundle steps that communicate --------------===//
//
// Collectives along a tensor dimension d move contiguous blocks: a tensor
// [outer, n, inner] split along d is g blocks [outer, n/g, inner]. The
// kernels pack those blocks one after another, call the flat Gloo
// collective, and unpack. Reduce-scatter is an all-reduce of the packed
// blocks keeping this rank's block (Communicator::reduceScatter).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Kernels.h"

#include "runtime/dist/Communicator.h"

#include "absl/strings/str_cat.h"

#include <cstring>
#include <memory>

namespace weft::runtime {
namespace {
/// A shape seen around dimension `dim`: outer x size x inner.
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
  Around(const std::vector<int64_t> &shape, int64_t dim) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < dim ? outer : d == dim ? size : inner) *= shape[d];
  }
};

/// block = in[:, j*b:(j+1)*b, :], block j of the g blocks of b = a.size / g.
void packBlock(const float *in, const Around &a, int64_t g, int64_t j,
               float *block) {
  int64_t b = a.size / g, row = b * a.inner;
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(block + o * row, in + (o * a.size + j * b) * a.inner,
                row * sizeof(float));
}

/// Every block, one after another.
void pack(const float *in, const Around &a, int64_t g, float *blocks) {
  int64_t block = a.outer * (a.size / g) * a.inner;
  for (int64_t j = 0; j < g; ++j)
    packBlock(in, a, g, j, blocks + j * block);
}

/// The inverse: out[:, j*b:(j+1)*b, :] = blocks[j], a.size = g * b.
void unpack(const float *blocks, const Around &a, int64_t g, float *out) {
  int64_t b = a.size / g, row = b * a.inner;
  for (int64_t j = 0; j < g; ++j)
    for (int64_t o = 0; o < a.outer; ++o)
      std::memcpy(out + (o * a.size + j * b) * a.inner,
                  blocks + (j * a.outer + o) * row, row * sizeof(float));
}

absl::StatusOr<std::vector<std::string>> axesOf(const StepSpec &step) {
  auto it = step.attrs.find("axes");
  if (it == step.attrs.end() || !it->is_array() || it->empty())
    return absl::InvalidArgumentError("needs attribute 'axes'");
  std::vector<std::string> axes;
  for (const auto &a : *it) {
    if (!a.is_string())
      return absl::InvalidArgumentError("'axes' must hold names");
    axes.push_back(a.get<std::string>());
  }
  return axes;
}

absl::StatusOr<int64_t> dimOf(const StepSpec &step, const char *key,
                              const Buf &buf) {
  auto it = step.attrs.find(key);
  if (it == step.attrs.end() || !it->is_number_integer())
    return absl::InvalidArgumentError(
        absl::StrCat("needs integer attribute '", key, "'"));
  int64_t d = it->get<int64_t>();
  if (d < 0 || d >= static_cast<int64_t>(buf.shape().size()))
    return absl::InvalidArgumentError(
        absl::StrCat("'", key, "' ", d, " is out of range"));
  return d;
}
} // namespace

bool isCollective(const std::string &op) {
  return op == "weft.all_reduce" || op == "weft.copy_to_group" ||
         op == "weft.all_gather" || op == "weft.reduce_scatter" ||
         op == "weft.all_to_all" || op == "weft.shard_slice";
}

absl::StatusOr<Kernel> bindCollective(const StepSpec &step,
                                      const std::vector<Buf> &in,
                                      const std::vector<Buf> &out,
                                      Communicator *comm) {
  if (step.op == "weft.copy_to_group") {
    // Identity in the forward; its gradient is an all_reduce step.
    if (in.size() != 1 || out.size() != 1 || in[0].size() != out[0].size())
      return absl::InvalidArgumentError("copy_to_group needs one operand and "
                                        "one result of the same size");
    Buf x = in[0], y = out[0];
    return Kernel([=] {
      if (x.data != y.data)
        std::memmove(y.data, x.data, y.size() * sizeof(float));
      return absl::OkStatus();
    });
  }
  if (!comm)
    return absl::FailedPreconditionError(
        absl::StrCat(step.op, " needs a multi-rank job (weft-run --nproc)"));
  absl::StatusOr<std::vector<std::string>> axesOr = axesOf(step);
  if (!axesOr.ok())
    return axesOr.status();
  std::vector<std::string> axes = *axesOr;
  const MeshSpec &mesh = comm->mesh();
  for (const std::string &a : axes)
    if (mesh.axisIndex(a) < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("names axis '", a, "', which the mesh lacks"));
  int64_t g = mesh.groupSize(axes);
  int64_t me = mesh.groupRank(comm->rank(), axes);

  if (step.op == "weft.all_reduce") {
    if (in.size() != out.size() || in.empty())
      return absl::InvalidArgumentError(
          "all_reduce needs one result per operand");
    int64_t total = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].size() != out[i].size())
        return absl::InvalidArgumentError(
            "all_reduce results must match their operands");
      total += in[i].size();
    }
    auto it = step.attrs.find("reduction");
    std::string kind =
        it != step.attrs.end() && it->is_string() ? it->get<std::string>() : "";
    if (kind != "sum" && kind != "mean")
      return absl::InvalidArgumentError("all_reduce needs reduction sum|mean");
    float scale = kind == "mean" ? 1.0f / static_cast<float>(g) : 1.0f;
    // One buffer per bucket: the operands packed back to back.
    auto bucket = std::make_shared<std::vector<float>>(total);
    return Kernel([=] {
      float *p = bucket->data();
      for (const Buf &b : in) {
        std::memcpy(p, b.f(), b.size() * sizeof(float));
        p += b.size();
      }
      if (absl::Status s = comm->allReduce(axes, bucket->data(), total);
          !s.ok())
        return s;
      p = bucket->data();
      for (const Buf &b : out) {
        for (int64_t i = 0; i < b.size(); ++i)
          b.f()[i] = p[i] * scale;
        p += b.size();
      }
      return absl::OkStatus();
    });
  }

  if (in.size() != 1 || out.size() != 1)
    return absl::InvalidArgumentError(
        absl::StrCat(step.op, " needs one operand and one result"));
  Buf x = in[0], y = out[0];
  auto scratch = std::make_shared<std::vector<float>>(
      std::max(x.size(), y.size()) * (step.op == "weft.all_gather" ? g : 1));
  if (step.op == "weft.all_gather") {
    absl::StatusOr<int64_t> dim = dimOf(step, "dim", x);
    if (!dim.ok())
      return dim.status();
    if (y.size() != x.size() * g)
      return absl::InvalidArgumentError("all_gather result has the wrong size");
    Around a(y.shape(), *dim);
    return Kernel([=] {
      if (absl::Status s =
              comm->allGather(axes, x.f(), scratch->data(), x.size());
          !s.ok())
        return s;
      unpack(scratch->data(), a, g, y.f());
      return absl::OkStatus();
    });
  }
  if (step.op == "weft.reduce_scatter" || step.op == "weft.shard_slice") {
    // Both keep this rank's block along dim; reduce_scatter sums first.
    bool reduce = step.op == "weft.reduce_scatter";
    absl::StatusOr<int64_t> dim = dimOf(step, "dim", x);
    if (!dim.ok())
      return dim.status();
    if (x.size() != y.size() * g)
      return absl::InvalidArgumentError(
          absl::StrCat(step.op, " result has the wrong size"));
    Around a(x.shape(), *dim);
    if (!reduce) // No data moves: copy this rank's block only.
      return Kernel([=] {
        packBlock(x.f(), a, g, me, y.f());
        return absl::OkStatus();
      });
    return Kernel([=] {
      pack(x.f(), a, g, scratch->data());
      return comm->reduceScatter(axes, scratch->data(), y.f(), y.size());
    });
  }
  if (step.op == "weft.all_to_all") {
    absl::StatusOr<int64_t> split = dimOf(step, "split_dim", x),
                            concat = dimOf(step, "concat_dim", x);
    if (!split.ok())
      return split.status();
    if (!concat.ok())
      return concat.status();
    if (x.size() != y.size())
      return absl::InvalidArgumentError("all_to_all changes the size");
    Around from(x.shape(), *split), to(y.shape(), *concat);
    auto received = std::make_shared<std::vector<float>>(y.size());
    return Kernel([=] {
      pack(x.f(), from, g, scratch->data());
      if (absl::Status s = comm->allToAll(axes, scratch->data(),
                                          received->data(), x.size() / g);
          !s.ok())
        return s;
      unpack(received->data(), to, g, y.f());
      return absl::OkStatus();
    });
  }
  return absl::UnimplementedError(absl::StrCat("unknown collective ", step.op));
}

} // namespace weft::runtime
