//===- checkpoint_test.cpp - sharded checkpoints and bitwise resume
//--------===//
//
// A run cut in two by a checkpoint ends where the uninterrupted run ends,
// to the bit: the same losses after the cut and the same parameters and
// optimizer state (runtime/checkpoint/Checkpoint.h), on one rank and on
// data-parallel ZeRO-3 ranks, each saving its own shards. A corrupt newest
// checkpoint is passed over for the one before it (the run still ends the
// same); with none good, the error names the file and the tensor.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/exec/BundleData.h"
#include "runtime/train/Job.h"
#include "test/runtime/TrainingJob.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace weft;
using weft::testutil::Case;

namespace {
namespace fs = std::filesystem;

/// What a rank's run left: its losses by step and every parameter's and
/// state tensor's block, as f32 bits.
struct RankEnd {
  std::string failure;
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> state;
  std::vector<std::string> said;
};

std::string textFile() {
  std::string path = testutil::uniqueTempPath("ckpt-text") + ".txt";
  std::ofstream out(path);
  for (int i = 0; i < 200; ++i)
    out << "the quick brown fox jumps over the lazy dog " << i << "\n";
  return path;
}

/// `setup` compiled, with the meta weftc compile writes for training (the
/// global batch, the sequence, the vocabulary).
std::string trainingBundle(const Case &setup) {
  std::string dir = testutil::compileCase(setup);
  if (dir.empty())
    return dir;
  std::string path = dir + "/manifest.json";
  nlohmann::json manifest;
  std::ifstream(path) >> manifest;
  manifest["meta"]["batch"] = setup.batch;
  manifest["meta"]["seq"] = setup.seq;
  manifest["meta"]["vocab"] = 256; // The tiny configs' byte vocabulary.
  std::ofstream(path) << manifest.dump();
  return dir;
}

/// Runs `options` on every rank of `dir`'s bundle, each rank with its own
/// executor initialized from `seed`, as weft-run's ranks do.
std::vector<RankEnd> run(const Case &setup, const std::string &dir,
                         runtime::JobOptions options, uint64_t seed = 3) {
  auto loaded = runtime::sched::loadSchedBundle(dir);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  runtime::MeshSpec mesh = runtime::meshSpecOf(*loaded);
  std::vector<RankEnd> ends(std::max<int64_t>(mesh.size(), 1));
  static int runs = 0;
  ++runs;
  testutil::runJob(
      setup, mesh,
      [&](int64_t r, runtime::Communicator *comm, int64_t, int64_t,
          testutil::Trace &) {
        RankEnd &end = ends[r];
        auto bundle = runtime::sched::loadSchedBundle(dir);
        runtime::SchedExecutor::Options o;
        o.comm = comm;
        auto ex = runtime::SchedExecutor::create(std::move(*bundle), o);
        if (!ex.ok()) {
          end.failure = std::string(ex.status().message());
          return;
        }
        (*ex)->initialize(seed);
        // Every rank writes metrics (their peak-memory gather is a
        // collective), each to a fresh file.
        runtime::JobOptions mine = options;
        std::string metrics = testutil::uniqueTempPath(
            "ckpt-metrics-" + std::to_string(runs) + "-" + std::to_string(r));
        fs::remove(metrics);
        mine.metrics = metrics;
        runtime::Log log("test", [&](absl::string_view text) {
          end.said.push_back(std::string(text));
        });
        auto result = runtime::trainJob(**ex, comm, mine, log);
        if (!result.ok()) {
          end.failure = std::string(result.status().message());
          return;
        }
        for (const auto &p : (*ex)->bundle().params)
          end.state[p.name] = *(*ex)->param(p.name);
        std::ifstream in(metrics);
        for (std::string line; std::getline(in, line);)
          end.losses.push_back(
              nlohmann::json::parse(line).at("loss").get<float>());
      });
  return ends;
}

/// Whether `a` and `b` hold the same bits.
bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Flips one byte of tensor data in `file` (past the header).
void corrupt(const std::string &file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header = 0;
  f.read(reinterpret_cast<char *>(&header), 8);
  f.seekg(static_cast<std::streamoff>(8 + header + 5));
  char c = 0;
  f.read(&c, 1);
  f.seekp(static_cast<std::streamoff>(8 + header + 5));
  c = static_cast<char>(c ^ 0x40);
  f.write(&c, 1);
}

/// Four steps straight, against four steps checkpointed after each, cut
/// after step 2 (the later checkpoints removed, as a crash leaves the
/// directory) and resumed by executors initialized from another seed: the
/// resumed run's losses of steps 3 and 4 and every parameter and state
/// tensor at the end are the straight run's, bit for bit.
void checkResume(const Case &setup) {
  SCOPED_TRACE(setup.label());
  std::string dir = trainingBundle(setup);
  ASSERT_FALSE(dir.empty());
  runtime::JobOptions base;
  base.data = textFile();
  base.tokenizer = "bytes";
  base.steps = 4;
  base.lr = 3e-3;
  base.seed = 1;
  std::vector<RankEnd> whole = run(setup, dir, base);
  ASSERT_EQ(whole[0].failure, "");
  ASSERT_EQ(whole[0].losses.size(), 4u);

  std::string checkpoints = testutil::uniqueTempPath("ckpt");
  runtime::JobOptions saving = base;
  saving.checkpointDir = checkpoints;
  saving.checkpointEvery = 1;
  saving.keep = 4;
  for (const RankEnd &end : run(setup, dir, saving))
    ASSERT_EQ(end.failure, "");
  for (int step : {1, 2, 3, 4})
    ASSERT_TRUE(fs::exists(checkpoints + "/step-" + std::to_string(step) +
                           "/index.json"))
        << step;
  fs::remove_all(checkpoints + "/step-3");
  fs::remove_all(checkpoints + "/step-4");

  runtime::JobOptions resumed = base;
  resumed.resume = checkpoints;
  auto checkEnd = [&](const std::vector<RankEnd> &ends, size_t fromStep) {
    ASSERT_EQ(ends.size(), whole.size());
    for (size_t r = 0; r < ends.size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      ASSERT_EQ(ends[r].failure, "");
      for (const auto &[name, values] : whole[r].state)
        EXPECT_TRUE(sameBits(values, ends[r].state.at(name))) << name;
    }
    ASSERT_EQ(ends[0].losses.size(), 4 - fromStep);
    for (size_t s = fromStep; s < 4; ++s)
      EXPECT_EQ(ends[0].losses[s - fromStep], whole[0].losses[s])
          << "step " << s + 1;
  };
  std::vector<RankEnd> again = run(setup, dir, resumed, /*seed=*/99);
  checkEnd(again, 2);

  // The newest checkpoint corrupt (one byte of rank 0's tensors): every
  // rank passes it over for step 1's, saying why, and ends the same.
  corrupt(checkpoints + "/step-2/rank-0.safetensors");
  std::vector<RankEnd> fallback = run(setup, dir, resumed, 99);
  checkEnd(fallback, 1);
  bool said = false;
  for (const std::string &line : fallback[0].said)
    said |= line.find("passing over " + checkpoints + "/step-2") !=
                std::string::npos &&
            line.find("is corrupt (xxHash64") != std::string::npos;
  EXPECT_TRUE(said);

  // None good: the error names the file and the tensor.
  corrupt(checkpoints + "/step-1/rank-0.safetensors");
  std::vector<RankEnd> none = run(setup, dir, resumed, 99);
  EXPECT_NE(none[0].failure.find(checkpoints +
                                 "/step-1/rank-0.safetensors: tensor '"),
            std::string::npos)
      << none[0].failure;
  EXPECT_NE(none[0].failure.find("' is corrupt"), std::string::npos)
      << none[0].failure;
}
} // namespace

// One rank, with dropout (its step and micro-batch counters are state).
TEST(Checkpoint, ResumedRunEndsBitForBitAsTheStraightOne) {
  checkResume(Case("gpt2-tiny-dropout"));
}
// ZeRO-3 on two ranks with micro-batches: each rank saves and restores its
// own shards of the parameters, AdamW's moments and masters.
TEST(Checkpoint, ResumedZero3RanksEndBitForBitAsTheStraightRun) {
  Case setup("gpt2-tiny", "f32", "dp=2,zero=3,mb=2");
  setup.batch = 4;
  checkResume(setup);
}

// What resume refuses: no directory, no complete checkpoint, another
// bundle's.
TEST(Checkpoint, ResumeSaysWhatItCannotUse) {
  Case setup("gpt2-tiny");
  std::string dir = trainingBundle(setup);
  runtime::JobOptions options;
  options.data = textFile();
  options.tokenizer = "bytes";
  options.steps = 1;
  options.resume = testutil::uniqueTempPath("no-ckpt");
  EXPECT_EQ(run(setup, dir, options)[0].failure,
            options.resume + ": no such checkpoint directory");
  fs::create_directories(options.resume + "/step-1.tmp");
  EXPECT_EQ(run(setup, dir, options)[0].failure,
            options.resume +
                ": no complete checkpoint (a step-<N> directory with an "
                "index.json)");
  // Saved by another model (Llama-tiny), resumed with this one: another
  // plan would be resharded, another model is refused by name.
  Case other("llama-tiny");
  runtime::JobOptions saving = options;
  saving.resume.clear();
  saving.checkpointDir = testutil::uniqueTempPath("other-ckpt");
  ASSERT_EQ(run(other, trainingBundle(other), saving)[0].failure, "");
  options.resume = saving.checkpointDir;
  EXPECT_EQ(run(setup, dir, options)[0].failure,
            saving.checkpointDir +
                "/step-1: tensor 'transformer.wte.weight' is in no rank's "
                "table (saved by another model or optimizer?)");
}
