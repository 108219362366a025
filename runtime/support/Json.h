//===- Json.h - parse untrusted JSON text -----------------------*- C++ -*-===//
//
// nlohmann::json keeps the last of two equal keys and builds any nesting it
// is given. For files a runtime must not trust (bundle manifests) both are
// refused before the document is built: a repeated key would let two
// readers of one file see different values, and deep nesting costs stack.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_SUPPORT_JSON_H
#define WEFT_RUNTIME_SUPPORT_JSON_H

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include <string_view>

namespace weft::runtime {

/// Nesting deeper than any manifest needs.
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text` as one JSON document, refusing malformed text, an object
/// with a key twice and nesting deeper than `maxDepth` arrays or objects.
/// Errors say what and at which byte or key.
absl::StatusOr<nlohmann::json> parseUntrustedJson(std::string_view text,
                                                  int maxDepth = kMaxJsonDepth);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_JSON_H
