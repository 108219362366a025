//===- GroupedRows.h - the row groups of a grouped matmul -------*- C++ -*-===//
//
// weft.grouped_matmul and its weight gradient take their rows in groups of
// `sizes` (i32, one per group, consecutive rows); the sizes come from the
// routing, so they are data and are checked where they are used. The CPU
// executor (one OpenBLAS call per group) and the GPU runtime (one cuBLAS
// grouped GEMM over the groups, its sizes read back to the host) both cut
// the rows here, so both refuse the same sizes with the same message.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_GROUPEDROWS_H
#define WEFT_RUNTIME_SUPPORT_GROUPEDROWS_H

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#include "absl/strings/string_view.h"
#include <cstdint>
#include <vector>

namespace weft::runtime {

/// The first row of each of the `groups` groups of `sizes`, and one past
/// the last group's end, checked to fit `n` rows; `what` names the
/// instruction in the error.
inline absl::StatusOr<std::vector<int64_t>>
groupStarts(const int32_t *sizes, int64_t groups, int64_t n,
            absl::string_view what) {
  std::vector<int64_t> starts(groups + 1, 0);
  for (int64_t g = 0; g < groups; ++g) {
    if (sizes[g] < 0 || starts[g] + sizes[g] > n)
      return absl::OutOfRangeError(absl::StrCat(
          what, ": group ", g, " of ", sizes[g], " rows does not fit the ", n,
          " rows after the ", starts[g], " before it"));
    starts[g + 1] = starts[g] + sizes[g];
  }
  return starts;
}

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_GROUPEDROWS_H
