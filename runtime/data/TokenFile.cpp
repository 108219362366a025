//===- TokenFile.cpp - token streams from files ---------------------------===//

#include "runtime/data/TokenFile.h"

#include "runtime/support/Files.h"

#include "absl/strings/str_cat.h"

namespace weft::runtime {
namespace {
absl::StatusOr<std::string> slurp(const std::string &path) {
  return readWholeFile(path);
}
} // namespace

absl::StatusOr<std::vector<uint32_t>> readTokenFile(const std::string &path,
                                                    int bytesPerToken) {
  if (bytesPerToken != 2 && bytesPerToken != 4)
    return absl::InvalidArgumentError(
        absl::StrCat("token width must be 2 or 4 bytes, got ", bytesPerToken));
  absl::StatusOr<std::string> bytes = slurp(path);
  if (!bytes.ok())
    return bytes.status();
  if (bytes->size() % bytesPerToken != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": size ", bytes->size(), " bytes is not a multiple of the ",
        bytesPerToken, "-byte token width"));
  std::vector<uint32_t> tokens(bytes->size() / bytesPerToken);
  const auto *p = reinterpret_cast<const uint8_t *>(bytes->data());
  for (size_t i = 0; i < tokens.size(); ++i) {
    uint32_t v = 0;
    for (int b = bytesPerToken - 1; b >= 0; --b)
      v = (v << 8) | p[i * bytesPerToken + b];
    tokens[i] = v;
  }
  return tokens;
}

absl::StatusOr<std::vector<uint32_t>> readByteTokens(const std::string &path) {
  absl::StatusOr<std::string> bytes = slurp(path);
  if (!bytes.ok())
    return bytes.status();
  return std::vector<uint32_t>(
      reinterpret_cast<const uint8_t *>(bytes->data()),
      reinterpret_cast<const uint8_t *>(bytes->data()) + bytes->size());
}

absl::Status checkTokenRange(const std::vector<uint32_t> &tokens,
                             uint32_t vocab, const std::string &label) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": token id ", tokens[i], " at position ", i,
                       " is not below the vocabulary size ", vocab));
  return absl::OkStatus();
}

std::string decodeByteTokens(const std::vector<uint32_t> &tokens) {
  std::string text;
  for (uint32_t t : tokens)
    text += t < 256 ? std::string(1, static_cast<char>(t)) : "\xEF\xBF\xBD";
  return text;
}

} // namespace weft::runtime
