//===- Metrics.cpp - what a training job reports per step -----------------===//

#include "runtime/train/Metrics.h"

#include "runtime/dist/Communicator.h"

#include "absl/strings/str_format.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sys/resource.h>

namespace weft::runtime {

double peakRssBytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;
}

absl::StatusOr<std::vector<int64_t>> peakMemoryOfRanks(Communicator *comm) {
  // Gathered as float kibibytes: the communicator moves floats.
  float mine = static_cast<float>(peakRssBytes() / 1024.0);
  std::vector<float> peaks(comm ? comm->worldSize() : 1, mine);
  if (comm)
    if (absl::Status st = comm->allGather({}, &mine, peaks.data(), 1); !st.ok())
      return st;
  std::vector<int64_t> bytes;
  for (float kb : peaks)
    bytes.push_back(static_cast<int64_t>(kb) * 1024);
  return bytes;
}

std::string progressText(const StepReport &r, int64_t total, bool tty) {
  double tps = r.tokens / r.seconds;
  auto step = static_cast<long long>(r.step);
  auto steps = static_cast<long long>(total);
  if (tty) {
    int width = 30, done = static_cast<int>(width * r.step / total);
    return absl::StrFormat("\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0f tok/s%s",
                           std::string(done, '#'),
                           std::string(width - done, '.'), step, steps, r.loss,
                           r.lr, tps, r.step == total ? "\n" : "");
  }
  std::string scale =
      r.lossScale ? absl::StrFormat(" loss_scale %g%s", *r.lossScale,
                                    r.skipped ? " (overflow: skipped)" : "")
                  : "";
  if (r.step == 1 || r.step == total || r.skipped ||
      r.step % std::max<int64_t>(1, total / 20) == 0)
    return absl::StrFormat(
        "step %lld/%lld loss %.4f grad_norm %.3f lr %.2e %.0f tok/s%s\n", step,
        steps, r.loss, r.gradNorm, r.lr, tps, scale);
  return "";
}

std::string metricsLine(const StepReport &r, int64_t ranks,
                        const std::vector<int64_t> &peakMemoryBytes,
                        double peakFlops) {
  nlohmann::json line{{"step", r.step},
                      {"loss", r.loss},
                      {"grad_norm", r.gradNorm},
                      {"lr", r.lr},
                      {"tokens_per_s", r.tokens / r.seconds},
                      {"step_s", r.seconds},
                      {"ranks", ranks},
                      {"peak_memory_bytes", peakMemoryBytes}};
  if (!r.expertPairs.empty())
    line["expert_pairs"] = r.expertPairs;
  if (r.lossScale) {
    line["loss_scale"] = *r.lossScale;
    line["skipped"] = r.skipped;
  }
  if (r.checkpointSeconds > 0)
    line["checkpoint_s"] = r.checkpointSeconds;
  line["data_wait_s"] = r.dataWaitSeconds;
  // Per rank, as Megatron-LM reports TFLOP/s per GPU: the FLOPs every
  // rank computed in the step, over the step's time and the ranks.
  if (r.modelFlops > 0 && r.seconds > 0) {
    double perRank = r.modelFlops / r.seconds / static_cast<double>(ranks);
    line["tflops"] = perRank / 1e12;
    if (peakFlops > 0) {
      line["mfu"] = perRank / peakFlops;
      line["hfu"] =
          r.hardwareFlops / r.seconds / static_cast<double>(ranks) / peakFlops;
    }
  }
  // The health probes, one key per metric ("transformer.h.0/act_rms"): a
  // number, or a list (a router's load per expert). A non-finite value
  // is written as null.
  if (!r.probes.empty()) {
    nlohmann::json probes = nlohmann::json::object();
    for (const auto &[name, value] : r.probes)
      probes[name] = value.size() == 1 ? nlohmann::json(value.front())
                                       : nlohmann::json(value);
    line["probes"] = std::move(probes);
  }
  if (r.lossSpike)
    line["loss_spike"] = true;
  if (r.gradNormSpike)
    line["grad_norm_spike"] = true;
  return line.dump();
}

std::string evalText(const EvalReport &r) {
  return absl::StrFormat("eval after step %lld: loss %.6f over %lld held-out "
                         "tokens (%lld batches)\n",
                         static_cast<long long>(r.step), r.loss,
                         static_cast<long long>(r.tokens),
                         static_cast<long long>(r.batches));
}

std::string evalLine(const EvalReport &r) {
  return nlohmann::json{{"step", r.step},
                        {"eval_loss", r.loss},
                        {"eval_tokens", r.tokens},
                        {"eval_s", r.seconds}}
      .dump();
}

} // namespace weft::runtime
