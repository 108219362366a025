//===- RunFlags.cpp - weft-run's command line, read without exiting -------===//
//
// Each flag is set through abseil's reflection API (CommandLineFlag::
// ParseFrom), which reports a bad value instead of exiting, and read back
// into the RunCommand. Every call first sets weft-run's flags to their
// defaults, so a command line means the same whatever was parsed before
// (absl::FlagSaver would do it too, but logs every flag it restores). The
// command-line forms are abseil's: --flag=value, --flag value, -flag, and
// -- ending the flags.
//
//===----------------------------------------------------------------------===//

#include "tools/weft-run/RunFlags.h"

#include "runtime/train/ReplicaCheck.h"

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

#include <algorithm>

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
ABSL_FLAG(std::string, checkpoint_dir, "",
          "Write sharded checkpoints of the whole training state here "
          "(step-<N>/: every rank's blocks, checksummed; index.json last)");
ABSL_FLAG(std::string, checkpoint_every, "0",
          "Checkpoint every N steps (0: only after the last step), or auto: "
          "Young's interval sqrt(2 save MTTF) from the first save's cost");
ABSL_FLAG(double, mttf_hours, 24,
          "With --checkpoint-every auto: the mean time to failure, in hours");
ABSL_FLAG(int64_t, keep, 2, "Checkpoints to keep (the newest)");
ABSL_FLAG(std::string, resume, "",
          "Continue from the newest good checkpoint in this directory "
          "(--steps counts from the start of the run it continues)");
ABSL_FLAG(std::string, sdc_check, "",
          "every=N[,replay]: every N steps, check that data-parallel "
          "replicas hold the same bits of every tensor not split over dp; "
          "with replay, also run those steps twice (a third time when they "
          "differ) to tell a transient fault from a persistent one");
ABSL_FLAG(bool, check_finite, false,
          "Check every instruction's values for NaN and infinity and stop at "
          "the first, naming the program, instruction and operand (slow: for "
          "finding where a non-finite loss comes from; the CPU only)");
ABSL_FLAG(std::string, loss_spike, "",
          "F[:warn|skip|stop]: a loss above F times the mean of the last 100 "
          "steps' (or not finite) is a spike: warn, undo the step and skip "
          "its batch, or stop (the default)");
ABSL_FLAG(int64_t, max_restarts, 0,
          "With --nproc and --checkpoint-dir: when a rank fails, restart "
          "the job from the newest checkpoint, at most this many times");
ABSL_FLAG(int64_t, elastic, 0,
          "With --max-restarts: when a rank's device is lost for good, "
          "continue on at least this many data-parallel replicas (the "
          "bundle's weftc compile --elastic bundles), resharding the newest "
          "checkpoint");
ABSL_FLAG(double, peak_tflops, 0,
          "Each rank's dense peak TFLOP/s, for the metrics' mfu and hfu "
          "(default: the bundle's, from weftc compile --topology)");
ABSL_FLAG(std::string, trace, "",
          "Write a Chrome trace (Perfetto) of each rank's steps here: "
          "instructions by stream, steps, data waits, checkpoint snapshots "
          "(rank r > 0 of several: NAME.rank<r>.json)");
ABSL_FLAG(std::string, profile_steps, "",
          "A:B: trace only steps A to B (with --trace)");
ABSL_FLAG(double, grad_spike, 0,
          "F: warn when the gradient norm exceeds F times the mean of the "
          "last 100 steps' (0: off); the metrics mark the step");
ABSL_FLAG(double, stall_seconds, 0,
          "T: when a step makes no progress for T seconds, each rank says "
          "which instruction it is in (0: off)");
ABSL_FLAG(std::string, metrics, "",
          "Append one JSON line per step to this file");
ABSL_FLAG(std::string, eval_data, "",
          "Held-out data (sources as --data's, without weights, read with "
          "its tokenizer): after the last step, the forward program's mean "
          "loss over its windows in file order, in batches of the job's "
          "rows");
ABSL_FLAG(int64_t, eval_every, 0,
          "With --eval-data: also evaluate every N steps (0: only after the "
          "last)");
ABSL_FLAG(int64_t, eval_batches, 0,
          "With --eval-data: evaluate its first N batches (0: every whole "
          "one)");
ABSL_FLAG(int64_t, sample, 0,
          "After training, print this many generated tokens");
ABSL_FLAG(double, temperature, 0.8, "Sampling temperature (0 = greedy)");
ABSL_FLAG(
    int, nproc, 1,
    "Start this many local ranks (the bundle's mesh size), like torchrun");
ABSL_FLAG(std::string, device, "cpu",
          "Where the programs run: cpu, or cuda (GPU 0; the bundle must be "
          "compiled with weftc compile --target cuda)");
ABSL_FLAG(double, timeout, 120,
          "Seconds a rank waits for the others (rendezvous, each collective) "
          "before it gives up with an error");
ABSL_FLAG(double, stop_grace, 10,
          "With --nproc: seconds a rank has to end after the launcher stops "
          "it (SIGTERM) before it is killed (SIGKILL)");

namespace weft::run {
namespace {
/// The flags a command line may set, by abseil name: weft-run's own, so a
/// flag some linked library defines is as unknown as a typo.
constexpr const char *kRunFlags[] = {
    "data",         "tokenizer",      "token_bytes",      "steps",
    "lr",           "warmup",         "min_lr_ratio",     "seed",
    "init_from",    "save",           "metrics",          "sample",
    "temperature",  "nproc",          "device",           "timeout",
    "stop_grace",   "checkpoint_dir", "checkpoint_every", "keep",
    "resume",       "sdc_check",      "max_restarts",     "mttf_hours",
    "check_finite", "loss_spike",     "elastic",          "peak_tflops",
    "trace",        "profile_steps",  "grad_spike",       "stall_seconds",
    "eval_data",    "eval_every",     "eval_batches"};
/// Abseil's flags that print and exit (handled by ParseCommandLine).
constexpr const char *kUsageFlags[] = {
    "help",   "helpfull",  "helpshort", "helppackage",
    "helpon", "helpmatch", "version",   "only_check_args"};

constexpr const char *kSyntaxPayload = "weft.run/flag-syntax";

bool listed(absl::Span<const char *const> names, const std::string &name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

absl::Status syntaxError(std::string message) {
  absl::Status status = absl::InvalidArgumentError(std::move(message));
  status.SetPayload(kSyntaxPayload, absl::Cord());
  return status;
}

/// The job the flags now hold.
RunCommand commandFromFlags(std::string bundle) {
  RunCommand command;
  runtime::JobOptions &job = command.job;
  job.bundle = std::move(bundle);
  job.data = absl::GetFlag(FLAGS_data);
  job.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  job.tokenBytes = absl::GetFlag(FLAGS_token_bytes);
  job.steps = absl::GetFlag(FLAGS_steps);
  job.lr = absl::GetFlag(FLAGS_lr);
  job.warmup = absl::GetFlag(FLAGS_warmup);
  job.minLrRatio = absl::GetFlag(FLAGS_min_lr_ratio);
  job.seed = absl::GetFlag(FLAGS_seed);
  job.initFrom = absl::GetFlag(FLAGS_init_from);
  job.save = absl::GetFlag(FLAGS_save);
  job.checkpointDir = absl::GetFlag(FLAGS_checkpoint_dir);
  job.mttfHours = absl::GetFlag(FLAGS_mttf_hours);
  job.keep = absl::GetFlag(FLAGS_keep);
  job.resume = absl::GetFlag(FLAGS_resume);
  job.checkFinite = absl::GetFlag(FLAGS_check_finite);
  job.metrics = absl::GetFlag(FLAGS_metrics);
  job.peakTflops = absl::GetFlag(FLAGS_peak_tflops);
  job.gradSpike = absl::GetFlag(FLAGS_grad_spike);
  job.stallSeconds = absl::GetFlag(FLAGS_stall_seconds);
  job.trace = absl::GetFlag(FLAGS_trace);
  job.profileSteps = absl::GetFlag(FLAGS_profile_steps);
  job.evalData = absl::GetFlag(FLAGS_eval_data);
  job.evalEvery = absl::GetFlag(FLAGS_eval_every);
  job.evalBatches = absl::GetFlag(FLAGS_eval_batches);
  job.sample = absl::GetFlag(FLAGS_sample);
  job.temperature = absl::GetFlag(FLAGS_temperature);
  job.device = absl::GetFlag(FLAGS_device);
  job.timeoutSeconds = absl::GetFlag(FLAGS_timeout);
  command.nproc = absl::GetFlag(FLAGS_nproc);
  command.stopGraceSeconds = absl::GetFlag(FLAGS_stop_grace);
  command.maxRestarts = absl::GetFlag(FLAGS_max_restarts);
  command.elastic = absl::GetFlag(FLAGS_elastic);
  return command;
}
} // namespace

absl::StatusOr<RunCommand> parseRunFlags(const std::vector<std::string> &argv) {
  for (const char *name : kRunFlags) {
    absl::CommandLineFlag *flag = absl::FindCommandLineFlag(name);
    std::string error;
    if (!flag || !flag->ParseFrom(flag->DefaultValue(), &error))
      return absl::InternalError(absl::StrCat("flag '", name, "': ", error));
  }
  std::vector<std::string> positional, usage;
  size_t bundleArg = 0;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string &arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argv.size())
        bundleArg = i + 1;
      positional.insert(positional.end(), argv.begin() + i + 1, argv.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      bundleArg = i;
      positional.push_back(arg);
      continue;
    }
    size_t start = arg[1] == '-' ? 2 : 1;
    size_t eq = arg.find('=', start);
    // As the user spelled it (for messages), and abseil's name.
    std::string spelled = arg.substr(start, eq - start);
    std::string name = spelled;
    std::replace(name.begin(), name.end(), '-', '_');
    bool hasValue = eq != std::string::npos;
    std::string value = hasValue ? arg.substr(eq + 1) : "";
    if (listed(kUsageFlags, name)) {
      usage.push_back("--" + name + (hasValue ? "=" + value : ""));
      continue;
    }
    absl::CommandLineFlag *flag =
        listed(kRunFlags, name) ? absl::FindCommandLineFlag(name) : nullptr;
    if (!flag)
      return syntaxError("Unknown command line flag '" + spelled + "'");
    // A switch stands alone (--check-finite); --check-finite=false too.
    if (!hasValue && flag->IsOfType<bool>()) {
      value = "true";
    } else if (!hasValue) {
      if (i + 1 == argv.size())
        return syntaxError("Missing the value for the flag '" + spelled + "'");
      value = argv[++i];
    }
    std::string error;
    if (!flag->ParseFrom(value, &error))
      return syntaxError(absl::StrReplaceAll(
          error, {{"flag '" + name + "'", "flag '" + spelled + "'"}}));
  }
  if (!usage.empty()) {
    RunCommand command = commandFromFlags("");
    command.usage = std::move(usage);
    return command;
  }
  if (positional.size() != 1)
    return absl::InvalidArgumentError(
        "expected exactly one bundle directory (see --help)");
  // Checked whether or not this process launches (a rank ignores it, but
  // a value that cannot mean anything is a mistake either way). The
  // launcher holds it in int64 milliseconds: inf or 1e300 would not fit.
  double grace = absl::GetFlag(FLAGS_stop_grace);
  if (!(grace >= 0))
    return absl::InvalidArgumentError(
        "--stop-grace must be at least 0 seconds");
  if (grace > 1e7)
    return absl::InvalidArgumentError(
        absl::StrCat("--stop-grace must be at most 1e7 seconds, got ", grace));
  absl::StatusOr<runtime::SdcCheck> sdc =
      runtime::parseSdcCheck(absl::GetFlag(FLAGS_sdc_check));
  if (!sdc.ok())
    return sdc.status();
  absl::StatusOr<runtime::LossSpikePolicy> spike =
      runtime::parseLossSpike(absl::GetFlag(FLAGS_loss_spike));
  if (!spike.ok())
    return spike.status();
  RunCommand command = commandFromFlags(positional[0]);
  command.bundleArg = bundleArg;
  command.job.sdcEvery = sdc->every;
  command.job.sdcReplay = sdc->replay;
  command.job.lossSpike = *spike;
  std::string every = absl::GetFlag(FLAGS_checkpoint_every);
  if (every == "auto")
    command.job.checkpointAuto = true;
  else if (!absl::SimpleAtoi(every, &command.job.checkpointEvery))
    return absl::InvalidArgumentError(absl::StrCat(
        "--checkpoint-every '", every, "' is not a number of steps or auto"));
  if (command.maxRestarts < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-restarts must be at least 0, got ", command.maxRestarts));
  if (command.maxRestarts > 0 && command.job.checkpointDir.empty())
    return absl::InvalidArgumentError(
        "--max-restarts restarts from the newest checkpoint: give "
        "--checkpoint-dir");
  if (command.elastic < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--elastic must be at least 1 data-parallel replica, got ",
                     command.elastic));
  if (command.elastic > 0 && command.maxRestarts == 0)
    return absl::InvalidArgumentError(
        "--elastic continues a job on fewer ranks when it restarts: give "
        "--max-restarts (and --checkpoint-dir)");
  return command;
}

bool isFlagSyntaxError(const absl::Status &status) {
  return status.GetPayload(kSyntaxPayload).has_value();
}

} // namespace weft::run
