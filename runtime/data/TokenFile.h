//===- TokenFile.h - token streams from files -------------------*- C++ -*-===//
//
// Two inputs: a flat little-endian array of uint16 or uint32 token ids (the
// `.bin` layout nanoGPT's prepare scripts write), or any text file under the
// byte tokenizer (each byte is one token, vocabulary 256).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DATA_TOKENFILE_H
#define WEFT_RUNTIME_DATA_TOKENFILE_H

#include "absl/status/statusor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft::runtime {

/// Reads a flat token file of `bytesPerToken` (2 or 4) little-endian ids.
absl::StatusOr<std::vector<uint32_t>> readTokenFile(const std::string &path,
                                                    int bytesPerToken);
/// Reads a text file as byte tokens.
absl::StatusOr<std::vector<uint32_t>> readByteTokens(const std::string &path);
/// Fails, naming `label` and the first offending position, if any id >= vocab.
absl::Status checkTokenRange(const std::vector<uint32_t> &tokens,
                             uint32_t vocab, const std::string &label);
/// Decodes byte tokens back to text (ids >= 256 become U+FFFD).
std::string decodeByteTokens(const std::vector<uint32_t> &tokens);

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DATA_TOKENFILE_H
