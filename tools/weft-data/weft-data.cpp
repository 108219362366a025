//===- weft-data.cpp - prepare training datasets --------------------------===//
//
//   weft-data prepare TEXT... -o DIR [--tokenizer bytes]
//   weft-data prepare TEXT... -o DIR --sentencepiece MODEL.model
//   weft-data prepare TEXT... -o DIR --train-sentencepiece VOCAB
//   [--shard-tokens N]
//
// Tokenizes each text file (one document) offline, joins the documents
// with the tokenizer's end-of-sequence id and writes token shards and
// their dataset.json (runtime/data/Dataset.h), which weft-run --data reads.
// The byte tokenizer has no spare id, so its EOS is byte 0 (NUL, which text
// does not contain). SentencePiece models come from Debian's
// libsentencepiece; --train-sentencepiece trains one on the inputs first
// (DIR/tokenizer.model), so nothing is downloaded.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Dataset.h"
#include "runtime/support/Files.h"

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "tools/weft-data/SentencePiece.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

ABSL_FLAG(std::string, o, "", "The dataset directory to write (new)");
ABSL_FLAG(std::string, tokenizer, "bytes",
          "bytes: one token per byte (vocabulary 256)");
ABSL_FLAG(std::string, sentencepiece, "",
          "Tokenize with this SentencePiece model (.model)");
ABSL_FLAG(int64_t, train_sentencepiece, 0,
          "Train a SentencePiece model of this vocabulary on the inputs "
          "(DIR/tokenizer.model), then tokenize with it");
ABSL_FLAG(int64_t, shard_tokens, int64_t(1) << 24,
          "Tokens per shard (the last one may hold fewer)");

namespace {
int fail(const std::string &message) {
  std::cerr << "weft-data: error: " << message << "\n";
  return 1;
}

/// Each input file's ids, one document each, through `encode`.
template <typename Encode>
int prepare(const std::vector<std::string> &inputs,
            weft::runtime::DatasetWriter &writer, int64_t eos, Encode encode) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::StatusOr<std::string> text = weft::runtime::readWholeFile(inputs[i]);
    if (!text.ok())
      return fail(std::string(text.status().message()));
    absl::StatusOr<std::vector<uint32_t>> ids = encode(*text);
    if (!ids.ok())
      return fail(absl::StrCat(inputs[i], ": ", ids.status().message()));
    if (i > 0 && eos >= 0)
      ids->insert(ids->begin(), static_cast<uint32_t>(eos));
    if (absl::Status s = writer.append(*ids); !s.ok())
      return fail(absl::StrCat(inputs[i], ": ", s.message()));
  }
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  absl::SetProgramUsageMessage(
      "prepare training datasets\n\n"
      "  weft-data prepare TEXT... -o DIR [--tokenizer bytes | "
      "--sentencepiece M.model | --train-sentencepiece VOCAB] "
      "[--shard-tokens N]");
  // Flags are spelled with dashes like the other tools' (--shard-tokens);
  // Abseil's names have underscores.
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char *> raw;
  for (std::string &arg : spelled) {
    if (arg.rfind("--", 0) == 0)
      for (size_t i = 2; i < arg.size() && arg[i] != '='; ++i)
        if (arg[i] == '-')
          arg[i] = '_';
    raw.push_back(arg.data());
  }
  std::vector<char *> args =
      absl::ParseCommandLine(static_cast<int>(raw.size()), raw.data());
  if (args.size() < 2 || std::string(args[1]) != "prepare")
    return fail("expected a command: prepare (see --help)");
  std::vector<std::string> inputs(args.begin() + 2, args.end());
  if (inputs.empty())
    return fail("prepare needs one or more text files");
  std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty())
    return fail("prepare needs -o DIR");
  std::string model = absl::GetFlag(FLAGS_sentencepiece);
  int64_t train = absl::GetFlag(FLAGS_train_sentencepiece);
  std::string tokenizer = absl::GetFlag(FLAGS_tokenizer);
  if (!model.empty() && train > 0)
    return fail("give --sentencepiece MODEL or --train-sentencepiece VOCAB, "
                "not both");
  if (model.empty() && train == 0 && tokenizer != "bytes")
    return fail("unknown --tokenizer '" + tokenizer +
                "' (supported: bytes; SentencePiece with --sentencepiece)");
  if (train < 0)
    return fail("--train-sentencepiece needs a vocabulary of 1 or more");
  int64_t shardTokens = absl::GetFlag(FLAGS_shard_tokens);

  // The tokenizer: its vocabulary, EOS id and encoding.
  int64_t vocab = 256, eos = 0;
  std::string what = "byte ids";
  std::function<absl::StatusOr<std::vector<uint32_t>>(const std::string &)>
      encode =
          [](const std::string &text) -> absl::StatusOr<std::vector<uint32_t>> {
    const auto *bytes = reinterpret_cast<const uint8_t *>(text.data());
    return std::vector<uint32_t>(bytes, bytes + text.size());
  };
  std::unique_ptr<weft::data::SentencePiece> spm;
  if (train > 0) {
    std::error_code error;
    std::filesystem::create_directories(out, error);
    for (const std::string &input : inputs)
      if (!std::filesystem::is_regular_file(input, error))
        return fail(input + ": is not a readable file");
    if (std::string why =
            weft::data::trainSentencePiece(inputs, out + "/tokenizer", train);
        !why.empty())
      return fail("training a SentencePiece model of " + std::to_string(train) +
                  " pieces: " + why);
    model = out + "/tokenizer.model";
    std::cerr << "weft-data: trained " << model << "\n";
  }
  if (!model.empty()) {
    std::string why;
    spm = weft::data::SentencePiece::load(model, why);
    if (!spm)
      return fail(model + ": " + why);
    vocab = spm->vocab();
    eos = spm->eos();
    what = absl::StrCat(vocab, "-piece SentencePiece ids");
    encode =
        [&](const std::string &text) -> absl::StatusOr<std::vector<uint32_t>> {
      std::vector<uint32_t> ids;
      std::string error;
      if (!spm->encode(text, ids, error))
        return absl::InvalidArgumentError(error);
      return ids;
    };
  }
  absl::StatusOr<weft::runtime::DatasetWriter> writer =
      weft::runtime::DatasetWriter::create(out, vocab, eos, shardTokens);
  if (!writer.ok())
    return fail(std::string(writer.status().message()));
  writer->setTokenizer(model.empty() ? "bytes" : "sentencepiece");
  if (int rc = prepare(inputs, *writer, eos, encode))
    return rc;
  absl::StatusOr<weft::runtime::Dataset> done = writer->finish();
  if (!done.ok())
    return fail(std::string(done.status().message()));
  std::cerr << "weft-data: wrote " << done->shards.size() << " shards of "
            << what << " (EOS " << eos << ") to " << done->index << "\n";
  return 0;
}
