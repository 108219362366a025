//===- Json.h - parse untrusted JSON text -----------------------*- C++ -*-===//
//
// nlohmann::json keeps the last of two equal keys and builds any nesting it
// is given (llvm::json too, and overflows the stack on deep nesting). For
// files a program must not trust (bundle manifests, configs, topologies)
// both are refused before the document is built: a repeated key would let
// two readers of one file see different values, and deep nesting costs
// stack.
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

/// Checks that `text` is one JSON document with no object holding a key
/// twice and no nesting deeper than `maxDepth` arrays or objects, building
/// nothing: the compiler's readers (configs, topologies, manifests) run it
/// before their own parser. Errors say what and at which byte or key.
absl::Status checkUntrustedJson(std::string_view text,
                                int maxDepth = kMaxJsonDepth);

/// checkUntrustedJson, then the document.
absl::StatusOr<nlohmann::json> parseUntrustedJson(std::string_view text,
                                                  int maxDepth = kMaxJsonDepth);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_SUPPORT_JSON_H
