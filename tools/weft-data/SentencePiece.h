//===- SentencePiece.h - libsentencepiece behind a plain interface -*- C++
//-*-===//
//
// Debian's sentencepiece_processor.h declares its own absl::string_view,
// which collides with Abseil's: so only SentencePiece.cpp includes it, and
// the rest of weft-data (which uses Abseil) sees std types only.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TOOLS_WEFT_DATA_SENTENCEPIECE_H
#define WEFT_TOOLS_WEFT_DATA_SENTENCEPIECE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weft::data {

/// Trains a unigram model of `vocab` pieces on `inputs` into
/// `prefix`.model; "" on success, else SentencePiece's error.
std::string trainSentencePiece(const std::vector<std::string> &inputs,
                               const std::string &prefix, int64_t vocab);

class SentencePiece {
public:
  /// Loads `model`; on failure `error` says why and null is returned.
  static std::unique_ptr<SentencePiece> load(const std::string &model,
                                             std::string &error);
  ~SentencePiece();
  /// `text`'s ids; false (with `error`) when it cannot be encoded.
  bool encode(const std::string &text, std::vector<uint32_t> &ids,
              std::string &error) const;
  int64_t vocab() const;
  int64_t eos() const; // -1: none.

private:
  SentencePiece() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace weft::data

#endif // WEFT_TOOLS_WEFT_DATA_SENTENCEPIECE_H
