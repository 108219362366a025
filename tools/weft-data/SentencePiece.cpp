//===- SentencePiece.cpp - libsentencepiece behind a plain interface ------===//

#include "tools/weft-data/SentencePiece.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

namespace weft::data {

std::string trainSentencePiece(const std::vector<std::string> &inputs,
                               const std::string &prefix, int64_t vocab) {
  std::string files;
  for (const std::string &input : inputs)
    files += (files.empty() ? "" : ",") + input;
  // Byte fallback keeps every input representable; no BOS; EOS id 2.
  std::string options =
      "--input=" + files + " --model_prefix=" + prefix +
      " --vocab_size=" + std::to_string(vocab) +
      " --model_type=unigram --character_coverage=1.0 --byte_fallback=true"
      " --bos_id=-1 --eos_id=2 --unk_id=0 --pad_id=-1 --minloglevel=2";
  sentencepiece::util::Status s =
      sentencepiece::SentencePieceTrainer::Train(options);
  return s.ok() ? "" : s.ToString();
}

struct SentencePiece::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

std::unique_ptr<SentencePiece> SentencePiece::load(const std::string &model,
                                                   std::string &error) {
  std::unique_ptr<SentencePiece> spm(new SentencePiece);
  spm->impl = std::make_unique<Impl>();
  sentencepiece::util::Status s = spm->impl->processor.Load(model);
  if (!s.ok()) {
    error = s.ToString();
    return nullptr;
  }
  return spm;
}

SentencePiece::~SentencePiece() = default;

bool SentencePiece::encode(const std::string &text, std::vector<uint32_t> &ids,
                           std::string &error) const {
  std::vector<int> pieces;
  sentencepiece::util::Status s = impl->processor.Encode(text, &pieces);
  if (!s.ok()) {
    error = s.ToString();
    return false;
  }
  ids.assign(pieces.begin(), pieces.end());
  return true;
}

int64_t SentencePiece::vocab() const { return impl->processor.GetPieceSize(); }
int64_t SentencePiece::eos() const { return impl->processor.eos_id(); }

} // namespace weft::data
