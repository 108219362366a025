//===- Job.cpp - one rank's training job ----------------------------------===//

#include "runtime/train/Job.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/data/TokenFile.h"
#include "runtime/exec/Blas.h"
#include "runtime/exec/BundleData.h"
#include "runtime/io/Safetensors.h"
#include "runtime/train/FaultInjection.h"
#include "runtime/train/Metrics.h"
#include "runtime/train/Replay.h"
#include "runtime/train/ReplicaCheck.h"
#include "runtime/train/Trace.h"
#include "runtime/train/TrainLoop.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>
#include <unistd.h>

namespace weft::runtime {
namespace {
absl::Status invalid(const std::string &message) {
  return absl::InvalidArgumentError(message);
}

/// Writes every parameter (not optimizer state) gathered whole from its
/// shards to `path`, without its padding rows (checkpoint_rows): a
/// collective on every rank; rank 0 writes.
absl::Status save(SchedExecutor &ex, const std::string &path, bool leader,
                  const Log &log) {
  std::vector<TensorToWrite> out;
  MeshSpec mesh = meshSpecOf(ex.bundle());
  for (const sched::Param &p : ex.bundle().params)
    if (!p.state) {
      auto whole = ex.gatherParam(p.name);
      if (!whole.ok())
        return whole.status();
      std::vector<int64_t> shape = consolidatedShape(
          mesh.globalShape(p.type.shape, p.split ? *p.split : Sharding()),
          p.checkpointRows.value_or(-1),
          p.checkpointShape.value_or(std::vector<int64_t>()));
      appendCheckpointTensor(out, p.name, p.checkpointStack.value_or(""), shape,
                             whole->data());
    }
  if (!leader)
    return absl::OkStatus();
  if (absl::Status s = writeSafetensors(path, out, {{"format", "pt"}}); !s.ok())
    return s;
  log.say("saved " + std::to_string(out.size()) + " tensors to " + path);
  return absl::OkStatus();
}
} // namespace

static int64_t metaInt(const sched::SchedBundle &bundle, const char *key);

namespace {
/// A bundle's mesh against the job's ranks.
absl::Status checkRanks(const sched::SchedBundle &bundle, int64_t worldSize) {
  int64_t ranks = meshSpecOf(bundle).size();
  if (ranks == worldSize)
    return absl::OkStatus();
  if (ranks == 1)
    return invalid(bundle.dir +
                   ": the bundle runs on one rank but this job "
                   "has " +
                   std::to_string(worldSize) +
                   "; compile it with --plan to place it on several");
  if (worldSize == 1)
    return absl::FailedPreconditionError(
        bundle.dir + ": the bundle is placed on " + std::to_string(ranks) +
        " ranks; run it with weft-run --nproc " + std::to_string(ranks) +
        " (or under torchrun)");
  MeshSpec mesh = meshSpecOf(bundle);
  std::string axes;
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    axes += (i ? "," : "") + mesh.axes[i] + "=" + std::to_string(mesh.sizes[i]);
  return invalid(bundle.dir + ": the bundle is placed on " +
                 std::to_string(ranks) + " ranks (" + axes +
                 ") but this job has " + std::to_string(worldSize) +
                 "; launch it with weft-run --nproc " + std::to_string(ranks));
}
} // namespace

/// Whether --data names a dataset index (a directory holding dataset.json,
/// or a .json file) rather than one flat token or text file.
static bool isDatasetIndex(const std::string &path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) ||
         absl::EndsWith(path, ".json");
}

namespace {
/// One source of --data: a path and its weight in the mixture.
struct DataSource {
  std::string path;
  double weight = 1;
};

/// --data's comma-separated sources, each PATH or PATH:WEIGHT.
absl::StatusOr<std::vector<DataSource>> dataSources(const std::string &data) {
  std::vector<DataSource> sources;
  for (absl::string_view part : absl::StrSplit(data, ',')) {
    DataSource source{std::string(part)};
    size_t colon = part.rfind(':');
    if (colon != absl::string_view::npos &&
        absl::SimpleAtod(part.substr(colon + 1), &source.weight)) {
      source.path = std::string(part.substr(0, colon));
      if (!(source.weight > 0) || !std::isfinite(source.weight))
        return invalid(absl::StrCat("--data: '", part,
                                    "' has a weight that is not a positive "
                                    "number"));
    }
    if (source.path.empty())
      return invalid("--data names an empty path ('" + data + "')");
    sources.push_back(std::move(source));
  }
  return sources;
}
/// The size of --data or --eval-data as ranks compare it: a dataset by
/// its shards' token counts (its index's bytes may differ in spacing), one
/// file by its size, each with its weight.
std::string dataSizeFact(const std::string &spec) {
  std::string dataSize;
  absl::StatusOr<std::vector<DataSource>> sources = dataSources(spec);
  for (const DataSource &source :
       sources.ok() ? *sources : std::vector<DataSource>()) {
    std::string size = "unreadable";
    if (isDatasetIndex(source.path)) {
      if (absl::StatusOr<Dataset> d = Dataset::open(source.path); d.ok()) {
        size = absl::StrCat(d->shards.size(), " shards:");
        for (const DatasetShard &shard : d->shards)
          absl::StrAppend(&size, " ", shard.tokens);
      }
    } else {
      std::error_code error;
      uintmax_t bytes = std::filesystem::file_size(source.path, error);
      if (!error)
        size = absl::StrCat(bytes);
    }
    absl::StrAppend(&dataSize, dataSize.empty() ? "" : ", ", size, " x",
                    source.weight);
  }
  return dataSize;
}
} // namespace

// Paths are compared by whether they are given (--metrics adds a
/// gather of peak memory; --save and --init-from gather and scatter
/// weights), the data by its size: hosts may keep the same file in
/// different places (held-out data too: ranks that count its batches
/// differently would wait on each other's forward). --timeout and
/// --stop-grace change no step.
JobFacts jobFacts(const JobOptions &options, const sched::SchedBundle &bundle) {
  auto given = [](const std::string &path) {
    return std::string(path.empty() ? "not given" : "given");
  };
  return {
      {"the bundle's manifest hash", bundle.manifestXxh3},
      {"--data's size", dataSizeFact(options.data)},
      {"--tokenizer", options.tokenizer},
      {"--token-bytes", absl::StrCat(options.tokenBytes)},
      {"--steps", absl::StrCat(options.steps)},
      {"--lr", absl::StrCat(options.lr)},
      {"--warmup", absl::StrCat(options.warmup)},
      {"--min-lr-ratio", absl::StrCat(options.minLrRatio)},
      {"--seed", absl::StrCat(options.seed)},
      {"--init-from", given(options.initFrom)},
      {"--save", given(options.save)},
      {"--checkpoint-dir", given(options.checkpointDir)},
      {"--checkpoint-every", options.checkpointAuto
                                 ? std::string("auto")
                                 : absl::StrCat(options.checkpointEvery)},
      {"--mttf-hours", absl::StrCat(options.mttfHours)},
      {"--keep", absl::StrCat(options.keep)},
      {"--resume", given(options.resume)},
      {"--sdc-check",
       absl::StrCat(options.sdcEvery, options.sdcReplay ? ",replay" : "")},
      {"--metrics", given(options.metrics)},
      {"--eval-data's size", dataSizeFact(options.evalData)},
      {"--eval-every", absl::StrCat(options.evalEvery)},
      {"--eval-batches", absl::StrCat(options.evalBatches)},
      {"--sample", absl::StrCat(options.sample)},
      {"--temperature", absl::StrCat(options.temperature)},
      {"--device", options.device},
  };
}

absl::Status checkJobBundle(const std::string &dir, int64_t worldSize) {
  auto bundle = sched::loadSchedBundle(dir);
  if (!bundle.ok())
    return bundle.status();
  return checkRanks(*bundle, worldSize);
}

absl::StatusOr<int64_t> dataParallelSize(const std::string &dir) {
  auto bundle = sched::loadSchedBundle(dir);
  if (!bundle.ok())
    return bundle.status();
  MeshSpec mesh = meshSpecOf(*bundle);
  int64_t axis = mesh.axisIndex("dp");
  return axis < 0 ? 1 : mesh.sizes[axis];
}

absl::StatusOr<ElasticBundle> smallerBundle(const std::string &dir,
                                            int64_t belowDp, int64_t minDp) {
  auto bundle = sched::loadSchedBundle(dir);
  if (!bundle.ok())
    return bundle.status();
  std::string where = dir + "/manifest.json: meta.elastic";
  auto table = bundle->meta.find("elastic");
  if (table == bundle->meta.end())
    return absl::FailedPreconditionError(
        dir + ": the bundle has no bundles for fewer data-parallel replicas; "
              "compile it with weftc compile --elastic MIN");
  if (!table->is_array())
    return invalid(where + " is not a list");
  std::optional<ElasticBundle> best;
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < table->size(); ++i) {
    const nlohmann::json &entry = (*table)[i];
    std::string at = absl::StrCat(where, "[", i, "]");
    if (!entry.is_object() || !entry.contains("dp") ||
        !entry["dp"].is_number_integer() || !entry.contains("bundle") ||
        !entry["bundle"].is_string())
      return invalid(at + " is not {\"dp\": N, \"bundle\": \"elastic/dpN\"}");
    int64_t dp = entry["dp"].get<int64_t>();
    std::string sub = entry["bundle"].get<std::string>();
    // Inside the bundle, so a manifest cannot point a job elsewhere.
    if (sub.empty() || sub[0] == '/' || sub.find("..") != std::string::npos)
      return invalid(at + ": bundle '" + sub +
                     "' is not a directory inside the bundle");
    sizes.push_back(dp);
    if (dp < minDp || dp >= belowDp || (best && best->dp >= dp))
      continue;
    best = ElasticBundle{dir + "/" + sub, dp, 0};
  }
  if (!best)
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": no bundle for fewer than ", belowDp,
        " data-parallel replicas and at least ", minDp, " (--elastic) ",
        sizes.empty()
            ? std::string("(none was compiled)")
            : "among those compiled (dp=" + absl::StrJoin(sizes, ", ") + ")"));
  auto smaller = sched::loadSchedBundle(best->dir);
  if (!smaller.ok())
    return smaller.status();
  MeshSpec mesh = meshSpecOf(*smaller);
  int64_t axis = mesh.axisIndex("dp");
  if ((axis < 0 ? 1 : mesh.sizes[axis]) != best->dp ||
      metaInt(*smaller, "batch") != metaInt(*bundle, "batch"))
    return invalid(absl::StrCat(
        best->dir, ": not the bundle ", where, " says (dp=", best->dp,
        " and a global batch of ", metaInt(*bundle, "batch"), " sequences)"));
  best->ranks = mesh.size();
  return *best;
}

absl::StatusOr<JobResult> runJob(const JobOptions &options,
                                 const RankInfo &rank, const Log &log) {
  if (!(options.timeoutSeconds > 0))
    return invalid("--timeout must be positive");
  // Held in int64 milliseconds and added to clocks: inf or 1e300 would not
  // fit (undefined behaviour); 1e7 s (four months) is beyond any wait.
  if (options.timeoutSeconds > 1e7)
    return invalid(absl::StrCat("--timeout must be at most 1e7 seconds, got ",
                                options.timeoutSeconds));
  // Before joining the job or loading anything.
  if (absl::Status s = checkJobOptions(options); !s.ok())
    return s;
  // The bundle is checked before the rendezvous, so a job started with
  // more or fewer ranks than the bundle's mesh fails on every rank at once
  // instead of waiting out --timeout for a rank that will never come.
  auto bundle = sched::loadSchedBundle(options.bundle);
  if (!bundle.ok())
    return bundle.status();
  if (absl::Status s = TrainLoop::check(*bundle); !s.ok())
    return s;
  if (!options.evalData.empty())
    if (absl::Status s = TrainLoop::checkEvaluate(*bundle); !s.ok())
      return s;
  if (options.sample > 0 && !bundle->program("forward"))
    return absl::InvalidArgumentError(absl::StrCat(
        options.bundle,
        ": --sample needs the whole model's 'forward' program, which this "
        "bundle does not have (pipelined bundles, --plan pp=..., have none "
        "yet: sample from a --save checkpoint with a bundle compiled without "
        "pp)"));
  if (const sched::Program *forward = bundle->program("forward");
      options.sample > 0 && forward && !forward->inputs.empty() &&
      forward->inputs[0].split && forward->inputs[0].split->size() > 1 &&
      !(*forward->inputs[0].split)[1].empty())
    return absl::InvalidArgumentError(absl::StrCat(
        options.bundle,
        ": --sample continues one sequence on every rank, but this bundle "
        "splits the sequence (sp=on or cp): sample from a --save checkpoint "
        "with a bundle compiled without them"));
  if (absl::Status s = checkRanks(*bundle, rank.worldSize); !s.ok())
    return s;
  std::unique_ptr<Communicator> comm;
  if (rank.worldSize > 1) {
    auto joined =
        Communicator::create(rank,
                             std::chrono::milliseconds(static_cast<int64_t>(
                                 options.timeoutSeconds * 1000)),
                             jobFacts(options, *bundle));
    if (!joined.ok())
      return joined.status();
    comm = std::move(*joined);
  }
  if (options.device != "cpu" && options.device != "cuda")
    return invalid("unknown --device '" + options.device +
                   "' (supported: cpu, cuda)");
  SchedExecutor::Options executorOptions;
  executorOptions.comm = comm.get();
  executorOptions.cuda = options.device == "cuda";
  executorOptions.checkFinite = options.checkFinite;
  if (options.cudaGraphs)
    executorOptions.cudaGraphs = *options.cudaGraphs;
  auto executor = SchedExecutor::create(std::move(*bundle), executorOptions);
  if (!executor.ok())
    return executor.status();
  SchedExecutor &ex = **executor;
  if (rank.rank == 0)
    log.say(log.program() + ": on " + ex.device() + "; GEMMs " +
            (executorOptions.cuda ? std::string("through cuBLASLt")
                                  : "on " + gemmBackend()));
  ex.initialize(options.seed);
  if (!options.initFrom.empty()) {
    auto weights = SafetensorsFile::read(options.initFrom);
    if (!weights.ok())
      return weights.status();
    if (absl::Status s = ex.load(*weights, /*requireAll=*/true); !s.ok())
      return s;
  }
  return trainJob(ex, comm.get(), options, log);
}

/// An integer of the bundle's meta (0 when it has none).
static int64_t metaInt(const sched::SchedBundle &bundle, const char *key) {
  auto it = bundle.meta.find(key);
  return it != bundle.meta.end() && it->is_number_integer() ? it->get<int64_t>()
                                                            : 0;
}

/// One source of --data as training windows.
static absl::StatusOr<ShuffledWindows> openSource(const std::string &path,
                                                  const JobOptions &options,
                                                  int64_t seq, int64_t vocab) {
  bool bytes = options.tokenizer == "bytes";
  absl::StatusOr<Dataset> data;
  std::error_code error;
  if (std::filesystem::is_directory(path, error) &&
      !std::filesystem::exists(std::filesystem::path(path) / "dataset.json",
                               error))
    return invalid(path + ": is a directory, not a file (nor a dataset: it "
                          "holds no dataset.json)");
  if (isDatasetIndex(path)) {
    if (bytes)
      return invalid(path + ": a dataset index has its own token type; "
                            "--tokenizer bytes is for one text file");
    data = Dataset::open(path);
  } else {
    // One file, its ids checked once here (a dataset's are checked as its
    // windows are read).
    auto tokens =
        bytes ? readByteTokens(path) : readTokenFile(path, options.tokenBytes);
    if (!tokens.ok())
      return tokens.status();
    if (absl::Status s =
            checkTokenRange(*tokens, static_cast<uint32_t>(vocab), path);
        !s.ok())
      return s;
    data = Dataset::fromFile(path, bytes ? 1 : options.tokenBytes, vocab);
  }
  if (!data.ok())
    return data.status();
  return ShuffledWindows::create(std::move(*data), seq, vocab, options.seed);
}

/// Whether every --data source holds bytes: --tokenizer bytes, or
/// datasets whose index says the byte tokenizer made them.
static bool bytesData(const JobOptions &options) {
  if (options.tokenizer == "bytes")
    return true;
  absl::StatusOr<std::vector<DataSource>> sources = dataSources(options.data);
  if (!sources.ok())
    return false;
  return std::all_of(sources->begin(), sources->end(), [](const DataSource &s) {
    if (!isDatasetIndex(s.path))
      return false;
    absl::StatusOr<Dataset> d = Dataset::open(s.path);
    return d.ok() && d->tokenizer == "bytes";
  });
}

absl::StatusOr<DataMixture> openTrainingData(const JobOptions &options,
                                             int64_t seq, int64_t vocab) {
  absl::StatusOr<std::vector<DataSource>> sources = dataSources(options.data);
  if (!sources.ok())
    return sources.status();
  std::vector<ShuffledWindows> windows;
  std::vector<double> weights;
  for (const DataSource &source : *sources) {
    absl::StatusOr<ShuffledWindows> w =
        openSource(source.path, options, seq, vocab);
    if (!w.ok())
      return w.status();
    windows.push_back(std::move(*w));
    weights.push_back(source.weight);
  }
  return DataMixture::create(std::move(windows), std::move(weights),
                             options.seed);
}

absl::StatusOr<std::vector<ShuffledWindows>>
openHeldOutData(const JobOptions &options, int64_t seq, int64_t vocab) {
  absl::StatusOr<std::vector<DataSource>> sources =
      dataSources(options.evalData);
  if (!sources.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("--eval-data: ", sources.status().message()));
  std::vector<ShuffledWindows> windows;
  for (const DataSource &source : *sources) {
    if (source.weight != 1)
      return absl::InvalidArgumentError(absl::StrCat(
          "--eval-data: ", source.path, ": a weight (:", source.weight,
          ") means nothing here: held-out data is read whole, in order"));
    absl::StatusOr<ShuffledWindows> w =
        openSource(source.path, options, seq, vocab);
    if (!w.ok())
      return w.status();
    windows.push_back(std::move(*w));
  }
  return windows;
}

absl::Status checkJobOptions(const JobOptions &options) {
  auto number = [](double v) { return absl::StrCat(v); };
  if (!options.inject.empty())
    if (absl::StatusOr<std::vector<Fault>> faults = parseFaults(options.inject);
        !faults.ok())
      return faults.status();
  // The step takes the rate as f32: past its range it would be inf.
  if (!(std::isfinite(options.lr) && options.lr > 0 &&
        options.lr <= std::numeric_limits<float>::max()))
    return invalid("--lr must be a positive number, got " + number(options.lr) +
                   " (the step takes it as f32: at most 3.4e38)");
  if (options.warmup < -1)
    return invalid("--warmup must be at least 0 (or -1: a tenth of --steps), "
                   "got " +
                   std::to_string(options.warmup));
  if (!(options.minLrRatio >= 0 && options.minLrRatio <= 1))
    return invalid("--min-lr-ratio must be between 0 and 1, got " +
                   number(options.minLrRatio));
  if (!(std::isfinite(options.temperature) && options.temperature >= 0))
    return invalid("--temperature must be 0 or more, got " +
                   number(options.temperature));
  if (options.sample < 0)
    return invalid("--sample must be non-negative");
  if (options.steps < 0)
    return invalid("--steps must be non-negative");
  for (auto [flag, value] : {std::pair{"--eval-every", options.evalEvery},
                             std::pair{"--eval-batches", options.evalBatches}})
    if (value < 0)
      return invalid(absl::StrCat(flag, " must be 0 or more, got ", value));
  if (options.evalData.empty() &&
      (options.evalEvery > 0 || options.evalBatches > 0))
    return invalid(
        absl::StrCat(options.evalEvery > 0 ? "--eval-every" : "--eval-batches",
                     " needs --eval-data (the held-out data)"));
  if (options.tokenBytes != 2 && options.tokenBytes != 4)
    return invalid("--token-bytes must be 2 or 4, got " +
                   std::to_string(options.tokenBytes));
  if (options.checkpointEvery < 0)
    return invalid("--checkpoint-every must be 0 (after the last step) or "
                   "more, got " +
                   std::to_string(options.checkpointEvery));
  if (options.keep < 1)
    return invalid("--keep must be at least 1, got " +
                   std::to_string(options.keep));
  if (absl::StatusOr<std::pair<int64_t, int64_t>> steps =
          parseProfileSteps(options.profileSteps);
      !steps.ok())
    return steps.status();
  if (!options.profileSteps.empty() && options.trace.empty())
    return invalid("--profile-steps chooses the steps --trace records: give "
                   "--trace");
  if (!(std::isfinite(options.gradSpike) &&
        (options.gradSpike == 0 || options.gradSpike > 1)))
    return invalid("--grad-spike must be a factor above 1 (0: off), got " +
                   number(options.gradSpike));
  if (!(std::isfinite(options.stallSeconds) && options.stallSeconds >= 0 &&
        options.stallSeconds <= 1e7))
    return invalid("--stall-seconds must be from 0 (off) to 1e7, got " +
                   number(options.stallSeconds));
  if (!(std::isfinite(options.peakTflops) && options.peakTflops >= 0))
    return invalid("--peak-tflops must be a positive number of TFLOP/s, got " +
                   number(options.peakTflops));
  if (options.sdcEvery < 0)
    return invalid("--sdc-check every=N needs N >= 1");
  if (!(std::isfinite(options.mttfHours) && options.mttfHours > 0))
    return invalid("--mttf-hours must be a positive number of hours, got " +
                   number(options.mttfHours));
  if (options.checkpointAuto && options.checkpointDir.empty())
    return invalid("--checkpoint-every auto needs --checkpoint-dir");
  if (options.checkpointEvery > 0 && options.checkpointDir.empty())
    return invalid("--checkpoint-every needs --checkpoint-dir");
  if (options.tokenizer == "bytes" && options.tokenBytes != 2)
    return invalid("--token-bytes is the width of a token file's ids; "
                   "--tokenizer bytes reads text (one token per byte): give "
                   "one or the other");
  return absl::OkStatus();
}

absl::StatusOr<JobResult> trainJob(SchedExecutor &ex, Communicator *comm,
                                   const JobOptions &options, const Log &log) {
  if (absl::Status s = checkJobOptions(options); !s.ok())
    return s;
  if (options.data.empty())
    return invalid("--data is required");
  // Where --save writes must be writable before any step runs, or the run
  // is lost at its end.
  if (!options.save.empty()) {
    std::string dir = std::filesystem::path(options.save).parent_path();
    if (dir.empty())
      dir = ".";
    if (access(dir.c_str(), W_OK) != 0)
      return invalid(absl::StrCat(options.save, ": cannot write here (", dir,
                                  ": ", std::strerror(errno), ")"));
  }
  if (!options.checkpointDir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.checkpointDir, error);
    if (error || access(options.checkpointDir.c_str(), W_OK) != 0)
      return invalid(absl::StrCat(
          options.checkpointDir, ": cannot write checkpoints here (",
          error ? error.message() : std::string(std::strerror(errno)), ")"));
  }
  bool bytes = options.tokenizer == "bytes";
  if (!options.tokenizer.empty() && !bytes)
    return invalid("unknown --tokenizer '" + options.tokenizer +
                   "' (supported: bytes)");
  int64_t batch = metaInt(ex.bundle(), "batch"),
          seq = metaInt(ex.bundle(), "seq"),
          vocab = metaInt(ex.bundle(), "vocab");
  // The loader checked those present; a bundle for training has all three.
  for (auto [value, key] : {std::pair{batch, "batch"}, std::pair{seq, "seq"},
                            std::pair{vocab, "vocab"}})
    if (value <= 0)
      return invalid(ex.bundle().dir + "/manifest.json: meta lacks field '" +
                     key +
                     "' (a training bundle says its batch, seq and "
                     "vocab; weftc compile writes them)");
  absl::StatusOr<DataMixture> windows = openTrainingData(options, seq, vocab);
  if (!windows.ok())
    return windows.status();
  // Opened before training, so a bad file fails before the first step.
  std::vector<ShuffledWindows> heldOut;
  if (!options.evalData.empty()) {
    absl::StatusOr<std::vector<ShuffledWindows>> opened =
        openHeldOutData(options, seq, vocab);
    if (!opened.ok())
      return opened.status();
    heldOut = std::move(*opened);
  }
  JobResult result;
  result.leader = !comm || comm->rank() == 0;
  // The sample continues a window from a third of the way into the data
  // (its first shard).
  absl::StatusOr<std::vector<uint32_t>> prompt = windows->source(0).readTokens(
      0, windows->source(0).dataset().shards[0].tokens / 3,
      std::min<int64_t>(seq / 2, 32));
  if (!prompt.ok())
    return prompt.status();

  if (options.steps < 0)
    return invalid("--steps must be non-negative");
  LrSchedule schedule{options.lr,
                      options.warmup >= 0 ? options.warmup : options.steps / 10,
                      options.steps, options.minLrRatio};
  TrainLoop loop(ex, std::move(*windows), schedule);
  if (!heldOut.empty())
    if (absl::Status s = loop.checkHeldOut(heldOut, options.evalBatches);
        !s.ok())
      return s;
  // The batches are drawn from the data by the seed and the step, and the
  // learning rate follows the schedule's flags: a resumed run needs them
  // as they were (the rendezvous' facts of those flags).
  constexpr const char *kResumeFacts[] = {
      "--seed", "--data's size", "--tokenizer",   "--token-bytes",
      "--lr",   "--warmup",      "--min-lr-ratio"};
  RunFacts facts;
  for (const auto &[name, value] : jobFacts(options, ex.bundle()))
    if (std::find(std::begin(kResumeFacts), std::end(kResumeFacts), name) !=
        std::end(kResumeFacts))
      facts[name] = value;
  // Another plan may resume (resharded) if the job's batch is the same:
  // the sampler draws the same rows, cut differently among the ranks.
  facts["global batch"] = absl::StrJoin(loop.globalBatchShape(), "x");
  std::unique_ptr<CheckpointWriter> writer;
  if (!options.checkpointDir.empty())
    writer = std::make_unique<CheckpointWriter>(
        options.checkpointDir, options.keep, facts, options.timeoutSeconds);
  if (!options.resume.empty()) {
    absl::StatusOr<int64_t> done =
        resumeCheckpoint(ex, comm, options.resume, facts, log);
    if (!done.ok())
      return done.status();
    if (*done > options.steps)
      return invalid(absl::StrCat(options.resume, ": the checkpoint is after ",
                                  *done, " steps, past --steps ",
                                  options.steps));
    loop.resumeAt(*done);
  }

  bool writeMetrics = !options.metrics.empty();
  std::ofstream metrics;
  if (result.leader && writeMetrics) {
    metrics.open(options.metrics, std::ios::app);
    if (!metrics)
      return invalid(options.metrics + ": cannot open for writing");
  }
  bool tty = log.isTerminal();
  int64_t ranks = comm ? comm->worldSize() : 1;
  double peakFlops = options.peakTflops * 1e12;
  if (auto peak = ex.bundle().meta.find("peak_flops_per_rank");
      peakFlops == 0 && peak != ex.bundle().meta.end() && peak->is_number())
    peakFlops = peak->get<double>();
  std::vector<Fault> faults;
  if (!options.inject.empty()) {
    absl::StatusOr<std::vector<Fault>> parsed = parseFaults(options.inject);
    if (!parsed.ok())
      return parsed.status();
    faults = std::move(*parsed);
  }
  int64_t rankNumber = comm ? comm->rank() : 0;
  std::optional<LossSpikeGuard> spikes;
  if (options.lossSpike.factor > 0) {
    spikes.emplace(options.lossSpike);
    // With skip a non-finite loss is a spike to undo, not an error.
    loop.tolerateNonFinite(spikes->skips());
    if (absl::Status s = spikes->begin(ex); !s.ok())
      return s;
  }
  // --grad-spike: the same running window as loss spikes, warning only.
  std::optional<LossSpikeDetector> gradSpikes;
  if (options.gradSpike > 0)
    gradSpikes.emplace(
        LossSpikePolicy{options.gradSpike, LossSpikePolicy::Action::Warn, 100});
  // --stall-seconds: a watchdog that says where this rank is when a step
  // makes no progress (a hung collective, a slow peer), once per step.
  std::atomic<int64_t> stepInProgress{0};
  std::atomic<int64_t> stepStartedNs{0};
  std::atomic<bool> watching{options.stallSeconds > 0};
  std::thread watchdog;
  if (watching)
    watchdog = std::thread([&] {
      int64_t reported = 0;
      while (watching) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        int64_t step = stepInProgress, started = stepStartedNs;
        double idle = std::chrono::duration<double>(
                          std::chrono::steady_clock::now().time_since_epoch() -
                          std::chrono::nanoseconds(started))
                          .count();
        if (step == 0 || step == reported || idle < options.stallSeconds)
          continue;
        reported = step;
        auto [program, index] = ex.position();
        std::string where = "between instructions";
        if (program && index >= 0 &&
            index < static_cast<int64_t>(program->instructions.size())) {
          const sched::Instruction &inst = program->instructions[index];
          where =
              absl::StrCat("in program ", program->name, ", instruction ",
                           index, " (", sched::opName(inst.op),
                           inst.layer.empty() ? "" : ", in " + inst.layer, ")");
        }
        log.say(absl::StrCat(
            "rank ", rankNumber, ": step ", step, " has made no progress for ",
            static_cast<int64_t>(idle), " s: ", where, " (--stall-seconds)"));
      }
    });
  // Stops the watchdog on every way out of the loop.
  struct StopWatching {
    std::atomic<bool> &watching;
    std::thread &thread;
    ~StopWatching() {
      watching = false;
      if (thread.joinable())
        thread.join();
    }
  } stopWatching{watching, watchdog};
  std::optional<Trace> trace;
  if (!options.trace.empty()) {
    std::pair<int64_t, int64_t> steps =
        *parseProfileSteps(options.profileSteps);
    trace.emplace(options.trace, rankNumber, ranks, steps.first, steps.second);
    ex.setInstructionHook(trace->instructionHook());
  }
  // --checkpoint-every auto: the first save after step 1 measures the cost.
  int64_t nextAutoSave = 1;
  for (int64_t s = loop.stepsDone(); s < options.steps; ++s) {
    Trace::Clock::time_point stepStart = Trace::Clock::now();
    stepStartedNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        stepStart.time_since_epoch())
                        .count();
    stepInProgress = s + 1;
    bool traced = trace && trace->startStep(s + 1);
    if (absl::Status injected =
            injectFaults(ex, faults, rankNumber, s + 1, options.attempt);
        !injected.ok())
      return injected;
    bool sdcDue = options.sdcEvery > 0 && (s + 1) % options.sdcEvery == 0;
    auto afterStep = [&] {
      return injectFaults(ex, faults, rankNumber, s + 1, options.attempt,
                          /*afterStep=*/true);
    };
    absl::StatusOr<StepReport> report =
        sdcDue && options.sdcReplay
            ? replayedStep(loop, ex, comm, afterStep, log, result.leader)
            : loop.step();
    if (!report.ok())
      return report.status();
    stepInProgress = 0;
    if (gradSpikes && !report->skipped) {
      if (gradSpikes->isSpike(report->gradNorm)) {
        report->gradNormSpike = true;
        if (result.leader)
          log.say(absl::StrCat("step ", s + 1,
                               ": gradient-norm spike: ", report->gradNorm,
                               " against ", gradSpikes->mean(),
                               ", the mean of the last steps (--grad-spike ",
                               options.gradSpike, ")"));
      } else {
        gradSpikes->record(report->gradNorm);
      }
    }
    if (traced) {
      trace->span("steps", absl::StrCat("step ", s + 1), "step", stepStart,
                  Trace::Clock::now(), {{"loss", report->loss}});
      trace->span(
          "data", "wait for data", "data", stepStart,
          stepStart +
              std::chrono::duration_cast<Trace::Clock::duration>(
                  std::chrono::duration<double>(report->dataWaitSeconds)));
    }
    if (!(sdcDue && options.sdcReplay))
      if (absl::Status injected = afterStep(); !injected.ok())
        return injected;
    if (spikes) {
      absl::StatusOr<bool> spiked =
          spikes->afterStep(ex, comm, s + 1, report->loss, log, result.leader);
      if (!spiked.ok())
        return spiked.status();
      report->lossSpike = *spiked;
    }
    if (sdcDue)
      if (absl::Status same = checkReplicas(ex, comm, s + 1, options.sdcReplay);
          !same.ok())
        return same;
    bool last = s + 1 == options.steps;
    bool autoDue = options.checkpointAuto && s + 1 >= nextAutoSave;
    if (writer && (last || autoDue ||
                   (options.checkpointEvery > 0 &&
                    (s + 1) % options.checkpointEvery == 0))) {
      // The step waits for the snapshot only; the files are written
      // behind the next steps.
      auto start = std::chrono::steady_clock::now();
      if (absl::Status saved =
              writer->save(ex, comm, s + 1, /*async=*/true, log);
          !saved.ok())
        return saved;
      report->checkpointSeconds = std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - start)
                                      .count();
      if (traced)
        trace->span("checkpoint", absl::StrCat("snapshot for step ", s + 1),
                    "checkpoint", start, std::chrono::steady_clock::now());
      if (autoDue) {
        // The first save measures what one costs (waited for); the ranks
        // agree on the longest interval any of them computes.
        if (nextAutoSave == 1)
          if (absl::Status done = writer->finish(log); !done.ok())
            return done;
        float steps = static_cast<float>(
            checkpointInterval(writer->lastSaveSeconds(), report->seconds,
                               options.mttfHours * 3600));
        if (comm)
          if (absl::Status agreed = comm->allReduce({}, &steps, 1, true);
              !agreed.ok())
            return agreed;
        if (nextAutoSave == 1 && result.leader)
          log.say(absl::StrCat(
              "checkpointing every ", static_cast<int64_t>(steps),
              " steps (auto: a save takes ", writer->lastSaveSeconds(),
              " s, a step ", report->seconds, " s, MTTF ", options.mttfHours,
              " h)"));
        nextAutoSave = s + 1 + static_cast<int64_t>(steps);
      }
    }
    // The held-out loss, on every rank (the forward has collectives).
    std::optional<EvalReport> evaluated;
    if (!heldOut.empty() && options.evalEvery > 0 &&
        (s + 1) % options.evalEvery == 0) {
      absl::StatusOr<EvalReport> e =
          loop.evaluate(heldOut, options.evalBatches);
      if (!e.ok())
        return e.status();
      evaluated = result.eval = *e;
    }
    // Every rank's peak memory, gathered to all — a collective every rank
    // runs, so only when metrics are written (the same on every rank).
    std::vector<int64_t> peaks;
    if (writeMetrics) {
      auto gathered = peakMemoryOfRanks(comm);
      if (!gathered.ok())
        return gathered.status();
      peaks = std::move(*gathered);
    }
    if (!result.leader)
      continue;
    if (std::string text = progressText(*report, options.steps, tty);
        !text.empty())
      log.write(text);
    if (metrics.is_open())
      metrics << metricsLine(*report, ranks, peaks, peakFlops) << "\n";
    if (evaluated) {
      // On a terminal the progress bar's line is still open.
      log.write((tty && s + 1 < options.steps ? "\n" : "") +
                evalText(*evaluated));
      if (metrics.is_open())
        metrics << evalLine(*evaluated) << "\n";
    }
  }
  result.steps = loop.stepsDone();
  // After the last step, unless --eval-every just measured it.
  if (!heldOut.empty() &&
      (!result.eval || result.eval->step != loop.stepsDone())) {
    absl::StatusOr<EvalReport> e = loop.evaluate(heldOut, options.evalBatches);
    if (!e.ok())
      return e.status();
    result.eval = *e;
    if (result.leader) {
      log.write(evalText(*e));
      if (metrics.is_open())
        metrics << evalLine(*e) << "\n";
    }
  }
  if (trace) {
    ex.setInstructionHook(nullptr);
    if (absl::Status s = trace->write(); !s.ok())
      return s;
    if (result.leader)
      log.say("wrote the trace " + trace->path() +
              (ranks > 1 ? " (and one per rank beside it)" : ""));
  }
  if (writer)
    if (absl::Status s = writer->finish(log); !s.ok())
      return s;

  if (!options.save.empty())
    if (absl::Status s = save(ex, options.save, result.leader, log); !s.ok())
      return s;
  if (options.sample > 0) {
    // Every rank runs the forward program (it has collectives).
    auto generated =
        loop.sample(*prompt, options.sample, options.temperature, options.seed);
    if (!generated.ok())
      return generated.status();
    result.prompt = std::move(*prompt);
    result.generated = std::move(*generated);
    result.textSample = bytesData(options);
  }
  return result;
}

} // namespace weft::runtime
