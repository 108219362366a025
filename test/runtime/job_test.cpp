//===- job_test.cpp - the training job's library: log, launcher, metrics --===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointIndex.h"
#include "runtime/dist/Launcher.h"
#include "runtime/exec/Blas.h"
#include "runtime/train/Job.h"
#include "runtime/train/LossSpike.h"
#include "runtime/train/Metrics.h"

#include "absl/strings/match.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>

using namespace weft::runtime;

namespace {
/// A log whose messages land in `lines`.
Log capture(std::vector<std::string> &lines) {
  return Log("weft-run",
             [&lines](absl::string_view text) { lines.emplace_back(text); });
}

/// Sets (or, with nullopt, unsets) an environment variable for one test.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

StepReport report(int64_t step) {
  StepReport r;
  r.step = step;
  r.loss = 5.25;
  r.gradNorm = 1.5;
  r.lr = 1e-3;
  r.seconds = 0.5;
  r.tokens = 64;
  return r;
}
} // namespace

TEST(Log, NamesTheRankOnlyWhenThereAreSeveral) {
  std::vector<std::string> lines;
  Log log = capture(lines);
  log.error("--data is required");
  log.forRank(3, 4).error("all-reduce over [dp] failed");
  log.forRank(0, 1).say("saved 2 tensors to w.st");
  log.write("\r[##..]");
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "weft-run: error: --data is required\n",
                       "weft-run: error: rank 3: all-reduce over [dp] failed\n",
                       "saved 2 tensors to w.st\n", "\r[##..]"}));
  EXPECT_FALSE(log.isTerminal()); // A sink is no terminal.
}

TEST(Launcher, LaunchesOnlyWhenAskedForSeveralRanksOutsideAJob) {
  auto none = shouldLaunch(0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "--nproc must be at least 1");
  {
    ScopedEnv rank("RANK", std::nullopt);
    EXPECT_FALSE(*shouldLaunch(1));
    EXPECT_TRUE(*shouldLaunch(4));
  }
  {
    // One of launchRanks' own ranks.
    ScopedEnv rank("RANK", "1");
    ScopedEnv launched(kLaunchedVar, "1");
    EXPECT_FALSE(*shouldLaunch(4));
  }
  {
    // A rank of a job torchrun or a scheduler started, asked for ranks of
    // its own: two meanings, refused.
    ScopedEnv rank("RANK", "1");
    ScopedEnv launched(kLaunchedVar, std::nullopt);
    EXPECT_FALSE(*shouldLaunch(1));
    auto both = shouldLaunch(4);
    ASSERT_FALSE(both.ok());
    EXPECT_EQ(both.status().message(),
              "--nproc 4 asks to start the job's ranks here, but RANK is set "
              "(this process is one rank of a job a scheduler started): give "
              "one or the other");
  }
}

TEST(Launcher, GivesEachRankTorchrunsVariables) {
  EXPECT_EQ(rankEnvironment(2, 4, "node0", "29501"),
            (std::vector<std::pair<std::string, std::string>>{
                {"RANK", "2"},
                {kLaunchedVar, "1"},
                {"LOCAL_RANK", "2"},
                {"WORLD_SIZE", "4"},
                {"LOCAL_WORLD_SIZE", "4"},
                {"MASTER_ADDR", "node0"},
                {"MASTER_PORT", "29501"}}));
}

TEST(Launcher, RefusesAnEmptyLaunch) {
  std::vector<std::string> lines;
  LaunchOptions options;
  options.nproc = 2; // No command line.
  EXPECT_EQ(launchRanks(options, capture(lines)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(lines.empty());
}

// Ranks are real processes here: /bin/sh, which exits with its RANK.
TEST(Launcher, NamesTheFirstRankToFail) {
  ScopedEnv addr("MASTER_ADDR", std::nullopt);
  ScopedEnv port("MASTER_PORT", "29999");
  std::vector<std::string> lines;
  LaunchOptions options;
  options.nproc = 2;
  options.executable = "/bin/sh";
  options.argv = {"sh", "-c",
                  "test \"$WORLD_SIZE $MASTER_ADDR:$MASTER_PORT\" = "
                  "'2 127.0.0.1:29999' && exit $RANK"};
  absl::Status status = launchRanks(options, capture(lines));
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(absl::StrContains(status.message(), "rank 1 (pid "))
      << status.message();
  EXPECT_TRUE(absl::StrContains(status.message(), ") exited with status 1"))
      << status.message();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "weft-run: error: " + std::string(status.message()) +
                          "; stopping the other ranks\n");

  options.argv = {"sh", "-c", "exit 0"};
  lines.clear();
  EXPECT_TRUE(launchRanks(options, capture(lines)).ok());
  EXPECT_TRUE(lines.empty());
}

TEST(Metrics, ProgressLinesAtTheEndsAndEveryFivePercent) {
  EXPECT_EQ(progressText(report(1), 100, /*tty=*/false),
            "step 1/100 loss 5.2500 grad_norm 1.500 lr 1.00e-03 128 tok/s\n");
  EXPECT_EQ(progressText(report(3), 100, false), "");
  EXPECT_NE(progressText(report(5), 100, false), "");
  EXPECT_NE(progressText(report(100), 100, false), "");
  EXPECT_EQ(progressText(report(2), 3, false).substr(0, 9), "step 2/3 ");
}

TEST(Metrics, ProgressBarOnATerminalEndsItsLineAtTheLastStep) {
  EXPECT_EQ(progressText(report(15), 30, /*tty=*/true),
            "\r[###############...............] 15/30 loss 5.2500 lr 1.00e-03 "
            "128 tok/s");
  EXPECT_EQ(progressText(report(30), 30, true),
            "\r[##############################] 30/30 loss 5.2500 lr 1.00e-03 "
            "128 tok/s\n");
}

TEST(Launchers, FirstHostOfASlurmNodeList) {
  EXPECT_EQ(firstSlurmHost("node01"), "node01");
  EXPECT_EQ(firstSlurmHost("node[01-04,07],gpu[1-2]"), "node01");
  EXPECT_EQ(firstSlurmHost("a,b"), "a");
  EXPECT_EQ(firstSlurmHost("rack1-node[3,5]-ib"), "rack1-node3-ib");
  EXPECT_EQ(firstSlurmHost("node[7]"), "node7");
  EXPECT_EQ(firstSlurmHost("node[01"), "");
  EXPECT_EQ(firstSlurmHost(""), "");
}

TEST(Metrics, OneJsonObjectPerStep) {
  auto line = nlohmann::json::parse(metricsLine(report(7), 2, {4096, 8192}));
  EXPECT_EQ(line["step"], 7);
  EXPECT_EQ(line["loss"], 5.25);
  EXPECT_EQ(line["grad_norm"], 1.5);
  EXPECT_EQ(line["lr"], 1e-3);
  EXPECT_EQ(line["tokens_per_s"], 128.0);
  EXPECT_EQ(line["step_s"], 0.5);
  EXPECT_EQ(line["ranks"], 2);
  EXPECT_EQ(line["peak_memory_bytes"], (std::vector<int64_t>{4096, 8192}));
  EXPECT_EQ(line["data_wait_s"], 0.0);
  EXPECT_EQ(line.size(), 9u);
}

TEST(Metrics, PeakMemoryOfOneRankIsThisProcesses) {
  auto peaks = peakMemoryOfRanks(nullptr);
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  ASSERT_EQ(peaks->size(), 1u);
  EXPECT_GT((*peaks)[0], 0);
  EXPECT_EQ((*peaks)[0] % 1024, 0);
  EXPECT_LE((*peaks)[0], peakRssBytes());
}

TEST(Job, RefusesBadOptionsBeforeItStarts) {
  std::vector<std::string> lines;
  JobOptions options;
  options.timeoutSeconds = 0;
  auto noTimeout = runJob(options, RankInfo(), capture(lines));
  ASSERT_FALSE(noTimeout.ok());
  EXPECT_EQ(noTimeout.status().message(), "--timeout must be positive");

  options.timeoutSeconds = 1;
  options.bundle = ::testing::TempDir() + "no-such-bundle";
  auto missing = runJob(options, RankInfo(), capture(lines));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            options.bundle + "/manifest.json: cannot open (is '" +
                options.bundle + "' a bundle directory?)");
  EXPECT_TRUE(lines.empty()); // Errors are returned, not printed.
}

// OpenBLAS's generic kernels are replaced only where the CPU has better
// ones, and its own choice of real kernels is kept.
TEST(Blas, GenericKernelsGiveWayToTheCpusOwn) {
  using weft::runtime::preferredOpenBlasCore;
  EXPECT_EQ(preferredOpenBlasCore("Prescott", /*avx512=*/true, true),
            "SkylakeX");
  EXPECT_EQ(preferredOpenBlasCore("Prescott", false, /*avx2Fma=*/true),
            "Haswell");
  EXPECT_EQ(preferredOpenBlasCore("Nehalem", false, true), "Haswell");
  EXPECT_EQ(preferredOpenBlasCore("Prescott", false, false), std::nullopt);
  for (const char *kept : {"Zen", "Haswell", "SkylakeX", "CooperLake"})
    EXPECT_EQ(preferredOpenBlasCore(kept, true, true), std::nullopt) << kept;
}

// Ranks compare these at rendezvous: a flag that changes the step differs,
// or a fact one rank does not publish at all, and the error names both
// ranks (lower first), the flag and both values.
TEST(JobFacts, NameTheFirstFactRanksDisagreeOn) {
  sched::SchedBundle bundle;
  bundle.manifestXxh3 = "00112233445566778899aabbccddeeff";
  JobOptions a, b;
  b.metrics = "m.jsonl";
  JobFacts mine = jobFacts(a, bundle), theirs = jobFacts(b, bundle);
  EXPECT_TRUE(compareJobFacts(mine, 0, mine, 1).ok());
  absl::Status s = compareJobFacts(theirs, 3, mine, 0);
  EXPECT_EQ(s.message(),
            "ranks 0 and 3 were started differently: --metrics is 'not "
            "given' on rank 0 but 'given' on rank 3; start every rank with "
            "the same bundle and flags");
  JobFacts fewer(mine.begin(), mine.end() - 1);
  s = compareJobFacts(mine, 0, fewer, 1);
  EXPECT_TRUE(absl::StrContains(s.message(), "--device is 'cpu' on rank 0 "
                                             "but '(none)' on rank 1"))
      << s.message();
}

// --checkpoint-every auto: Young's interval sqrt(2 C M) in steps. A 10 s
// save and a day's MTTF: 1314.5 s, 657 steps of 2 s; never below one step,
// and a free save or no failures do not divide by zero.
TEST(Checkpoint, YoungsIntervalInSteps) {
  using weft::runtime::checkpointInterval;
  EXPECT_EQ(checkpointInterval(10, 2, 86400), 657);
  EXPECT_EQ(checkpointInterval(10, 1, 86400), 1315);
  EXPECT_EQ(checkpointInterval(0.001, 100, 60), 1);
  EXPECT_EQ(checkpointInterval(0, 1, 86400), 1);
  EXPECT_EQ(checkpointInterval(10, 0, 86400), 1);
  EXPECT_EQ(checkpointInterval(1e300, 1e-300, 1e300), int64_t(1e12));
}

// A checkpoint's index as a user might have edited it: each field checked,
// the path first (an index without "run" once read through a null).
TEST(Checkpoint, IndexFieldsAreChecked) {
  using weft::runtime::parseCheckpointIndex;
  const std::string good = R"({"format": "weft-checkpoint-2", "step": 2,
      "bundle": "b", "ranks": 2, "run": {"--seed": "1"}})";
  auto index = parseCheckpointIndex(good, "i.json");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->step, 2);
  EXPECT_EQ(index->run.at("--seed"), "1");
  EXPECT_TRUE(
      weft::runtime::checkRunFacts(*index, "i.json", {{"--seed", "1"}}).ok());
  EXPECT_EQ(weft::runtime::checkRunFacts(*index, "i.json", {{"--seed", "2"}})
                .message(),
            "i.json: saved by a run with --seed 1; this one has 2: resume "
            "with the same");
  for (auto [text, error] : std::vector<std::pair<std::string, std::string>>{
           {R"({"format": "weft-checkpoint-2", "step": 2, "bundle": "b",
                "ranks": 2})",
            "i.json: field 'run' must be an object"},
           {R"({"format": "x"})", "i.json: not a Weft checkpoint index "
                                  "(field 'format' is not "
                                  "'weft-checkpoint-2')"},
           {R"({"format": "weft-checkpoint-2", "step": -1})",
            "i.json: field 'step' must be an integer in [0, "
            "4611686018427387904]"},
           {R"({"format": "weft-checkpoint-1"})",
            "i.json: written by an older Weft (weft-checkpoint-1), whose rank "
            "tables lack what resuming now needs; resume it with the Weft "
            "that wrote it"},
           {"[1]", "i.json: not a JSON object"}}) {
    auto bad = parseCheckpointIndex(text, "i.json");
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_EQ(bad.status().message(), error);
  }
}

// A rank's table, which resharding and export trust for where each block
// lies: every field checked, sizes that cannot overflow.
TEST(Checkpoint, RankTableFieldsAreChecked) {
  using weft::runtime::parseRankTable;
  const std::string hash = R"("xxh64": "0123456789abcdef")";
  auto good = parseRankTable(
      R"({"w": {)" + hash +
          R"(, "shape": [2, 3], "global_shape": [6, 3], "start": [4, 0],
          "rows": 5, "state": true}})",
      "t");
  ASSERT_TRUE(good.ok()) << good.status();
  const weft::runtime::BlockEntry &w = good->at("w");
  EXPECT_EQ(w.start, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(w.keptElements(), 15);
  EXPECT_TRUE(w.state);
  for (auto [entry, error] : std::vector<std::pair<std::string, std::string>>{
           {R"({"xxh64": 3})",
            "t: tensor 'w': has no 'xxh64' of 16 lowercase hex digits"},
           {"{" + hash + R"(, "shape": [2], "global_shape": [4]})",
            "t: tensor 'w': 'start' must be a list of at most 8 integers"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4], "start": [3]})",
            "t: tensor 'w': the block (start 3, 2 long) runs past the global "
            "tensor's 4 in dimension 0"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4, 1], "start": [0, 0]})",
            "t: tensor 'w': 'shape', 'global_shape' and 'start' differ in "
            "length"},
           {"{" + hash +
                R"(, "shape": [1, 1], "global_shape": [1048576, 2097152],
                "start": [0, 0]})",
            "t: tensor 'w': 'global_shape' holds 2097152; sizes are integers "
            "in [1, 2^40] whose product is at most 2^40"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4], "start": [0],
                "rows": 5})",
            "t: tensor 'w': 'rows' must be an integer in [1, global_shape[0]]"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4], "start": [0],
                "checkpoint_shape": [3]})",
            "t: tensor 'w': 'checkpoint_shape' holds another number of "
            "elements than the global tensor"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4], "start": [0],
                "stack": "e.*"})",
            "t: tensor 'w': 'stack' must be a pattern with one '*' of a "
            "tensor of rank 2 or more"},
           {"{" + hash +
                R"(, "shape": [2], "global_shape": [4], "start": [0],
                "state": 1})",
            "t: tensor 'w': 'state' must be true or false"}}) {
    auto bad = parseRankTable(R"({"w": )" + entry + "}", "t");
    ASSERT_FALSE(bad.ok()) << entry;
    EXPECT_EQ(bad.status().message(), error);
  }
}

// --loss-spike's running window: nothing is judged before ten losses; a
// spike is not added to the mean; a non-finite loss is always a spike.
TEST(LossSpike, JudgesAgainstTheUnspikedMean) {
  auto policy = weft::runtime::parseLossSpike("1.5:skip");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->action, weft::runtime::LossSpikePolicy::Action::Skip);
  weft::runtime::LossSpikeDetector detector(*policy);
  EXPECT_FALSE(detector.isSpike(100)); // The first ten are not judged.
  detector.record(100);
  for (int i = 0; i < 9; ++i) {
    EXPECT_FALSE(detector.isSpike(1));
    detector.record(1);
  }
  EXPECT_DOUBLE_EQ(detector.mean(), 10.9);
  EXPECT_TRUE(detector.isSpike(16.4)); // Above 1.5 x 10.9.
  EXPECT_FALSE(detector.isSpike(16.3));
  EXPECT_TRUE(detector.isSpike(std::nan("")));
  EXPECT_EQ(weft::runtime::parseLossSpike("").value().factor, 0);
  EXPECT_EQ(weft::runtime::parseLossSpike("2").value().action,
            weft::runtime::LossSpikePolicy::Action::Stop);
  for (const char *bad : {"0.5", "inf", "nan:skip", "2:", "x"})
    EXPECT_FALSE(weft::runtime::parseLossSpike(bad).ok()) << bad;
}
