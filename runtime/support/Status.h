//===- Status.h - early returns on absl::Status(Or) -------------*- C++ -*-===//

#ifndef WEFT_RUNTIME_SUPPORT_STATUS_H
#define WEFT_RUNTIME_SUPPORT_STATUS_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

/// `lhs = *expr` for an absl::StatusOr `expr`, or returns its error.
#define WEFT_ASSIGN(lhs, expr)                                                 \
  do {                                                                         \
    auto weftValue = (expr);                                                   \
    if (!weftValue.ok())                                                       \
      return weftValue.status();                                               \
    lhs = std::move(*weftValue);                                               \
  } while (false)

/// Returns the absl::Status `expr` unless it is OK.
#define WEFT_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    if (absl::Status weftStatus = (expr); !weftStatus.ok())                    \
      return weftStatus;                                                       \
  } while (false)

#endif // WEFT_RUNTIME_SUPPORT_STATUS_H
