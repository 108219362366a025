//===- weft-run.cpp - train a compiled bundle -----------------------------===//
//
//   weft-run bundle/ --data FILE [--tokenizer bytes | --token-bytes 2|4]
//            --steps N [--lr X] [--warmup N] [--seed S]
//            [--init-from W.safetensors] [--save W.safetensors]
//            [--metrics out.jsonl] [--sample N]
//
// Links the runtime only (no MLIR): this is what runs on a cluster node.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Batches.h"
#include "runtime/data/TokenFile.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/train/TrainLoop.h"

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

ABSL_FLAG(std::string, data, "",
          "Training data: a token file or, with --tokenizer bytes, text");
ABSL_FLAG(std::string, tokenizer, "",
          "'bytes' reads --data as text, one token per byte");
ABSL_FLAG(int, token_bytes, 2,
          "Width of a token id in a flat token file: 2 or 4");
ABSL_FLAG(int64_t, steps, 100, "Training steps to run");
ABSL_FLAG(double, lr, 1e-3, "Peak learning rate");
ABSL_FLAG(int64_t, warmup, -1, "Linear warm-up steps (default: steps / 10)");
ABSL_FLAG(double, min_lr_ratio, 0.1,
          "Cosine decay floor as a fraction of --lr");
ABSL_FLAG(uint64_t, seed, 0, "Seed of the initialisation and the batch order");
ABSL_FLAG(std::string, init_from, "", "Start from these weights (safetensors)");
ABSL_FLAG(std::string, save, "",
          "Write the trained weights here (safetensors, "
          "Hugging Face names)");
ABSL_FLAG(std::string, metrics, "",
          "Append one JSON line per step to this file");
ABSL_FLAG(int64_t, sample, 0,
          "After training, print this many generated tokens");
ABSL_FLAG(double, temperature, 0.8, "Sampling temperature (0 = greedy)");

namespace {
int fail(const std::string &message) {
  std::cerr << "weft-run: error: " << message << "\n";
  return 1;
}
int fail(const absl::Status &status) {
  return fail(std::string(status.message()));
}

void progress(const weft::runtime::StepReport &r, int64_t total, bool tty) {
  double tps = r.tokens / r.seconds;
  if (tty) {
    int width = 30, done = static_cast<int>(width * r.step / total);
    std::fprintf(stderr, "\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0f tok/s",
                 std::string(done, '#').c_str(),
                 std::string(width - done, '.').c_str(),
                 static_cast<long long>(r.step), static_cast<long long>(total),
                 r.loss, r.lr, tps);
    if (r.step == total)
      std::fprintf(stderr, "\n");
  } else if (r.step == 1 || r.step == total ||
             r.step % std::max<int64_t>(1, total / 20) == 0) {
    std::fprintf(stderr,
                 "step %lld/%lld loss %.4f grad_norm %.3f lr %.2e %.0f tok/s\n",
                 static_cast<long long>(r.step), static_cast<long long>(total),
                 r.loss, r.gradNorm, r.lr, tps);
  }
}
} // namespace

int main(int argc, char **argv) {
  absl::SetProgramUsageMessage("train a compiled Weft bundle on the CPU\n\n"
                               "  weft-run bundle/ --data FILE [--tokenizer "
                               "bytes | --token-bytes 2|4] --steps N\n"
                               "           [--lr X] [--seed S] [--init-from "
                               "W.safetensors] [--save W.safetensors]\n"
                               "           [--metrics out.jsonl] [--sample N]");
  // Flags are spelled with dashes (--init-from) like the other tools;
  // Abseil's names use underscores, so translate the name part.
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char *> translated;
  for (std::string &arg : args) {
    if (arg.rfind("--", 0) == 0)
      std::replace(arg.begin() + 2, std::find(arg.begin(), arg.end(), '='), '-',
                   '_');
    translated.push_back(arg.data());
  }
  std::vector<char *> positional = absl::ParseCommandLine(
      static_cast<int>(translated.size()), translated.data());
  if (positional.size() != 2)
    return fail("expected exactly one bundle directory (see --help)");
  auto bundle = weft::runtime::Bundle::load(positional[1]);
  if (!bundle.ok())
    return fail(bundle.status());
  if (absl::Status s = weft::runtime::TrainLoop::check(*bundle); !s.ok())
    return fail(s);
  auto executor = weft::runtime::Executor::create(std::move(*bundle));
  if (!executor.ok())
    return fail(executor.status());
  weft::runtime::Executor &ex = **executor;
  ex.initialize(absl::GetFlag(FLAGS_seed));
  if (std::string init = absl::GetFlag(FLAGS_init_from); !init.empty()) {
    auto weights = weft::runtime::SafetensorsFile::read(init);
    if (!weights.ok())
      return fail(weights.status());
    if (absl::Status s = ex.load(*weights, /*requireAll=*/true); !s.ok())
      return fail(s);
  }

  std::string data = absl::GetFlag(FLAGS_data),
              tokenizer = absl::GetFlag(FLAGS_tokenizer);
  if (data.empty())
    return fail("--data is required");
  if (!tokenizer.empty() && tokenizer != "bytes")
    return fail("unknown --tokenizer '" + tokenizer + "' (supported: bytes)");
  auto tokens = tokenizer == "bytes"
                    ? weft::runtime::readByteTokens(data)
                    : weft::runtime::readTokenFile(
                          data, absl::GetFlag(FLAGS_token_bytes));
  if (!tokens.ok())
    return fail(tokens.status());
  int64_t batch = ex.bundle().metaInt("batch"),
          seq = ex.bundle().metaInt("seq"),
          vocab = ex.bundle().metaInt("vocab");
  if (batch <= 0 || seq <= 0 || vocab <= 0)
    return fail(positional[1] +
                std::string(": manifest meta lacks batch, seq or vocab"));
  auto sampler = weft::runtime::BatchSampler::create(
      std::move(*tokens), batch, seq, vocab, absl::GetFlag(FLAGS_seed), data);
  if (!sampler.ok())
    return fail(sampler.status());
  // The sample continues a window from a third of the way into the data.
  const std::vector<uint32_t> &stream = sampler->stream();
  size_t promptStart = stream.size() / 3;
  std::vector<uint32_t> prompt(
      stream.begin() + promptStart,
      stream.begin() +
          std::min(stream.size(), promptStart + std::min<size_t>(seq / 2, 32)));

  int64_t steps = absl::GetFlag(FLAGS_steps);
  if (steps < 0)
    return fail("--steps must be non-negative");
  int64_t warmup = absl::GetFlag(FLAGS_warmup);
  weft::runtime::LrSchedule schedule{absl::GetFlag(FLAGS_lr),
                                     warmup >= 0 ? warmup : steps / 10, steps,
                                     absl::GetFlag(FLAGS_min_lr_ratio)};
  weft::runtime::TrainLoop loop(ex, std::move(*sampler), schedule);

  std::ofstream metrics;
  if (std::string path = absl::GetFlag(FLAGS_metrics); !path.empty()) {
    metrics.open(path, std::ios::app);
    if (!metrics)
      return fail(path + ": cannot open for writing");
  }
  bool tty = isatty(fileno(stderr));
  for (int64_t s = 0; s < steps; ++s) {
    auto report = loop.step();
    if (!report.ok())
      return fail(report.status());
    progress(*report, steps, tty);
    if (metrics.is_open())
      metrics << nlohmann::json{{"step", report->step},
                                {"loss", report->loss},
                                {"grad_norm", report->gradNorm},
                                {"lr", report->lr},
                                {"tokens_per_s",
                                 report->tokens / report->seconds},
                                {"step_s", report->seconds}}
                     .dump()
              << "\n";
  }

  if (std::string path = absl::GetFlag(FLAGS_save); !path.empty()) {
    std::vector<weft::runtime::TensorToWrite> out;
    for (const weft::runtime::ParamSpec &p : ex.bundle().params)
      if (!p.state) {
        const std::vector<float> &v = ex.param(p.name);
        out.push_back({p.name, weft::runtime::DType::F32, p.shape,
                       std::vector<double>(v.begin(), v.end())});
      }
    if (absl::Status s =
            weft::runtime::writeSafetensors(path, out, {{"format", "pt"}});
        !s.ok())
      return fail(s);
    std::cerr << "saved " << out.size() << " tensors to " << path << "\n";
  }
  if (int64_t n = absl::GetFlag(FLAGS_sample); n > 0) {
    auto generated = loop.sample(prompt, n, absl::GetFlag(FLAGS_temperature),
                                 absl::GetFlag(FLAGS_seed));
    if (!generated.ok())
      return fail(generated.status());
    if (tokenizer == "bytes") {
      std::cout << "--- sample ---\n"
                << weft::runtime::decodeByteTokens(prompt) << "|"
                << weft::runtime::decodeByteTokens(*generated) << "\n";
    } else {
      for (uint32_t t : *generated)
        std::cout << t << " ";
      std::cout << "\n";
    }
  }
  return 0;
}
