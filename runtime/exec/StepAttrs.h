//===- StepAttrs.h - decoding a step's attributes and shapes ----*- C++ -*-===//
//
// What the CPU kernels (Kernels.cpp) and the GPU planner (gpu/GpuPlan.cpp)
// both read off a step: typed attributes with defaults, and the element
// walk of the data-movement ops.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_EXEC_STEPATTRS_H
#define WEFT_RUNTIME_EXEC_STEPATTRS_H

#include "runtime/exec/Bundle.h"
#include "runtime/support/Epilogue.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace weft::runtime {

inline double attrF(const StepSpec &s, const char *key, double fallback = 0) {
  auto it = s.attrs.find(key);
  return it != s.attrs.end() && it->is_number() ? it->get<double>() : fallback;
}
inline int64_t attrI(const StepSpec &s, const char *key, int64_t fallback = 0) {
  auto it = s.attrs.find(key);
  return it != s.attrs.end() && it->is_number() ? it->get<int64_t>() : fallback;
}
inline bool attrB(const StepSpec &s, const char *key) {
  auto it = s.attrs.find(key);
  return it != s.attrs.end() && it->is_boolean() && it->get<bool>();
}
inline std::vector<int64_t> attrInts(const StepSpec &s, const char *key) {
  std::vector<int64_t> out;
  auto it = s.attrs.find(key);
  if (it != s.attrs.end() && it->is_array())
    for (const auto &v : *it)
      out.push_back(v.get<int64_t>());
  return out;
}

/// weft.matmul_epilogue's kind (None when missing or unknown).
inline GemmEpilogue attrEpilogue(const StepSpec &s) {
  auto it = s.attrs.find("epilogue");
  return it != s.attrs.end() && it->is_string()
             ? gemmEpilogueNamed(it->get<std::string>())
             : GemmEpilogue::None;
}

/// Whether a weft.matmul_epilogue step of `kind` has the operands (lhs,
/// rhs, then the bias or the DGelu preactivation) and results (result,
/// then the GELU kinds' aux) its kind needs.
inline absl::Status checkEpilogueArity(const StepSpec &s, GemmEpilogue kind) {
  if (kind == GemmEpilogue::None) {
    auto it = s.attrs.find("epilogue");
    return absl::InvalidArgumentError(absl::StrCat(
        "weft.matmul_epilogue: 'epilogue' is ",
        it == s.attrs.end() ? std::string("missing") : it->dump(),
        "; expected \"bias\", \"gelu\", \"bias_gelu\" or \"dgelu\""));
  }
  bool dgelu = kind == GemmEpilogue::DGelu;
  size_t operands = 2 + (epilogueHasBias(kind) || dgelu);
  size_t results = epilogueHasAux(kind) && !dgelu ? 2 : 1;
  if (s.operands.size() == operands && s.results.size() == results)
    return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("weft.matmul_epilogue '", gemmEpilogueName(kind), "' has ",
                   s.operands.size(), " operands and ", s.results.size(),
                   " results; its kind needs ", operands, " and ", results));
}

/// The product of dims [from, to) of `s`.
inline int64_t product(const std::vector<int64_t> &s, size_t from = 0,
                       size_t to = SIZE_MAX) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, s.size()); ++i)
    n *= s[i];
  return n;
}

/// Row-major strides of `shape`, in elements.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Where weft.transpose, weft.broadcast and weft.slice read: result element
/// (i0, i1, ...) is operand element base + sum(i_d * strides[d]).
struct CopySource {
  std::vector<int64_t> strides;
  int64_t base = 0;
};
inline CopySource copySource(const StepSpec &s,
                             const std::vector<int64_t> &operand,
                             size_t resultRank) {
  std::vector<int64_t> inStrides = stridesOf(operand);
  CopySource src{std::vector<int64_t>(resultRank, 0), 0};
  if (s.op == "weft.transpose") {
    std::vector<int64_t> perm = attrInts(s, "permutation");
    for (size_t d = 0; d < perm.size() && d < resultRank; ++d)
      src.strides[d] = inStrides[perm[d]];
  } else if (s.op == "weft.broadcast") {
    std::vector<int64_t> dims = attrInts(s, "dims");
    for (size_t d = 0; d < dims.size(); ++d)
      src.strides[dims[d]] = operand[d] == 1 ? 0 : inStrides[d];
  } else { // weft.slice
    std::vector<int64_t> starts = attrInts(s, "starts");
    src.strides = inStrides;
    for (size_t d = 0; d < starts.size(); ++d)
      src.base += starts[d] * inStrides[d];
  }
  return src;
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_EXEC_STEPATTRS_H
