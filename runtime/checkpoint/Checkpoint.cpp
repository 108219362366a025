//===- Checkpoint.cpp - sharded training checkpoints ----------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointIndex.h"

#include "runtime/exec/BundleData.h"
#include "runtime/io/Safetensors.h"
#include "runtime/support/Files.h"
#include "runtime/support/Json.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>

namespace weft::runtime {
namespace {
namespace fs = std::filesystem;

std::string stepDir(const std::string &dir, int64_t step) {
  return (fs::path(dir) / ("step-" + std::to_string(step))).string();
}
std::string rankFile(int64_t rank, const char *extension) {
  return "rank-" + std::to_string(rank) + extension;
}

/// Flushes `path` (a file or a directory) to the disk.
absl::Status syncPath(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    int error = errno;
    if (fd >= 0)
      ::close(fd);
    return absl::InternalError(
        absl::StrCat(path, ": cannot flush to disk: ", std::strerror(error)));
  }
  ::close(fd);
  return absl::OkStatus();
}

absl::Status writeText(const std::string &path, const std::string &text) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush())
      return absl::InternalError(absl::StrCat(path, ": cannot write"));
  }
  return syncPath(path);
}

std::string hashOf(const uint8_t *data, size_t bytes) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(XXH64(data, bytes, 0)));
  return text;
}

/// A checkpoint's JSON file: a regular file (a FIFO would block the open
/// for ever) of at most `maxBytes`.
absl::StatusOr<std::string> readCheckpointText(const std::string &path,
                                               size_t maxBytes) {
  std::error_code error;
  if (fs::exists(path, error) && !fs::is_regular_file(path, error))
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is not a regular file"));
  return readFileAtMost(path, maxBytes);
}

/// One collective verdict: true when every rank's `ok` is.
absl::StatusOr<bool> allAgree(Communicator *comm, bool ok) {
  if (!comm)
    return ok;
  float bad = ok ? 0.0f : 1.0f;
  if (absl::Status s = comm->allReduce({}, &bad, 1, /*max=*/true); !s.ok())
    return s;
  return bad == 0.0f;
}

/// Whether a checkpoint holds `p`: every tensor but those each step leaves
/// at their initial values.
bool saved(const sched::Param &p) { return !p.transient; }

} // namespace

/// This rank's blocks as the step left them (the copy the save waits
/// for: raw bytes, widened for the file off the step) and what
/// rank-<r>.json says of each.
struct CheckpointWriter::Snapshot {
  struct Block {
    const sched::Param *param = nullptr;
    std::vector<uint8_t> bytes;
  };
  std::vector<Block> blocks;
  nlohmann::json described = nlohmann::json::object();
};

namespace {
using Snapshot = CheckpointWriter::Snapshot;

absl::Status snapshot(SchedExecutor &ex, int64_t rank, Snapshot &snap) {
  MeshSpec mesh = meshSpecOf(ex.bundle());
  snap.described = nlohmann::json::object();
  size_t n = 0;
  for (const sched::Param &p : ex.bundle().params) {
    if (!saved(p) || !ex.holds(p))
      continue;
    // The last save's buffers, when this is the same run's next save.
    if (n == snap.blocks.size())
      snap.blocks.push_back({});
    Snapshot::Block &b = snap.blocks[n++];
    b.param = &p;
    if (absl::Status s = ex.copyParamBytes(p.name, b.bytes); !s.ok())
      return s;
    Sharding split = p.split ? *p.split : Sharding();
    // Where the block lies in the global tensor and how a consolidated
    // checkpoint holds that: what another plan, or an export, needs.
    nlohmann::json &entry = snap.described[p.name];
    entry = {
        {"shape", p.type.shape},
        {"global_shape", mesh.globalShape(p.type.shape, split)},
        {"start", mesh.blockStart(rank, p.type.shape, split)},
    };
    if (p.checkpointRows)
      entry["rows"] = *p.checkpointRows;
    if (p.checkpointShape)
      entry["checkpoint_shape"] = *p.checkpointShape;
    if (p.checkpointStack)
      entry["stack"] = *p.checkpointStack;
    if (p.state)
      entry["state"] = true;
  }
  snap.blocks.resize(n);
  return absl::OkStatus();
}

/// Writes `snap` as rank-<r>.safetensors and rank-<r>.json in `tmp`, then
/// rank-<r>.done, each fsynced.
absl::Status writeRank(Snapshot &snap, const std::string &tmp, int64_t rank) {
  std::string file = (fs::path(tmp) / rankFile(rank, ".safetensors")).string();
  std::vector<TensorToWrite> tensors;
  for (Snapshot::Block &b : snap.blocks) {
    const sched::Param &p = *b.param;
    std::vector<float> values =
        decodeAll(b.bytes.data(), p.type.numElements(), p.type.dtype);
    tensors.push_back({p.name, p.type.dtype, p.type.shape,
                       std::vector<double>(values.begin(), values.end())});
  }
  if (absl::Status s = writeSafetensors(file, tensors); !s.ok())
    return s;
  tensors.clear();
  if (absl::Status s = syncPath(file); !s.ok())
    return s;
  // The checksums are of the bytes as written, read back.
  absl::StatusOr<SafetensorsFile> written = SafetensorsFile::read(file);
  if (!written.ok())
    return written.status();
  for (auto &[name, entry] : snap.described.items()) {
    const TensorInfo *t = written->find(name);
    entry["xxh64"] = hashOf(written->data(*t), t->end - t->begin);
  }
  if (absl::Status s =
          writeText((fs::path(tmp) / rankFile(rank, ".json")).string(),
                    snap.described.dump(1));
      !s.ok())
    return s;
  return writeText((fs::path(tmp) / rankFile(rank, ".done")).string(), "");
}

/// The steps of the complete checkpoints under `dir`, newest first.
std::vector<int64_t> checkpointSteps(const std::string &dir) {
  std::vector<int64_t> steps;
  std::error_code error;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, error)) {
    std::string name = e.path().filename().string();
    int64_t step = 0;
    // Only the names the writer gives (step-02 or step-+2 would be read
    // as step-2, another directory).
    if (name.rfind("step-", 0) == 0 &&
        absl::SimpleAtoi(name.substr(5), &step) && step >= 0 &&
        name == "step-" + std::to_string(step) &&
        fs::exists(e.path() / "index.json"))
      steps.push_back(step);
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

/// This rank's blocks, by parameter: what `ex` would load.
using Blocks = std::vector<std::pair<std::string, std::vector<float>>>;

std::string shapeText(const std::vector<int64_t> &shape) {
  return "[" + absl::StrJoin(shape, ", ") + "]";
}

/// rank-<r>.json of checkpoint `path`.
absl::StatusOr<RankTable> readTable(const std::string &path, int64_t rank) {
  std::string tablePath = (fs::path(path) / rankFile(rank, ".json")).string();
  absl::StatusOr<std::string> text = readCheckpointText(tablePath, 64 << 20);
  if (!text.ok())
    return text.status();
  return parseRankTable(*text, tablePath);
}

/// Tensor `name` of `file` as rank-<r>.json's `entry` describes it, its
/// checksum verified: its values, or what is wrong, naming both.
absl::StatusOr<std::vector<double>> verifiedTensor(const SafetensorsFile &file,
                                                   const std::string &fileName,
                                                   const std::string &name,
                                                   const BlockEntry &entry) {
  const TensorInfo *t = file.find(name);
  if (!t)
    return absl::InvalidArgumentError(
        absl::StrCat(fileName, ": tensor '", name, "' is missing"));
  if (t->shape != entry.shape)
    return absl::InvalidArgumentError(
        absl::StrCat(fileName, ": tensor '", name,
                     "' has another shape than its rank table says"));
  std::string got = hashOf(file.data(*t), t->end - t->begin);
  if (got != entry.xxh64)
    return absl::DataLossError(
        absl::StrCat(fileName, ": tensor '", name, "' is corrupt (xxHash64 ",
                     got, ", its rank table says ", entry.xxh64, ")"));
  std::vector<double> values = file.toDoubles(*t);
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return absl::DataLossError(absl::StrCat(
          fileName, ": tensor '", name, "' holds ", values[i], " at element ",
          i, ": a checkpoint's values must be finite"));
  return values;
}

/// This rank's blocks of checkpoint `path`, saved under the same plan
/// (`ranks` ranks, this bundle): each as stored, checked against the bundle
/// and its checksum, or what is wrong, naming the file and the tensor.
absl::StatusOr<Blocks> readSamePlan(const SchedExecutor &ex, int64_t rank,
                                    const std::string &path) {
  absl::StatusOr<RankTable> table = readTable(path, rank);
  if (!table.ok())
    return table.status();
  std::string file = (fs::path(path) / rankFile(rank, ".safetensors")).string();
  absl::StatusOr<SafetensorsFile> tensors = SafetensorsFile::read(file);
  if (!tensors.ok())
    return tensors.status();
  Blocks values;
  for (const sched::Param &p : ex.bundle().params) {
    if (!saved(p) || !ex.holds(p))
      continue;
    auto entry = table->find(p.name);
    if (entry == table->end())
      return absl::InvalidArgumentError(
          absl::StrCat((fs::path(path) / rankFile(rank, ".json")).string(),
                       ": tensor '", p.name, "' is missing"));
    const TensorInfo *t = tensors->find(p.name);
    if (!t)
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": tensor '", p.name, "' is missing"));
    if (t->dtype != p.type.dtype || t->shape != p.type.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          file, ": tensor '", p.name, "' is ", shapeText(t->shape), " ",
          std::string(dtypeName(t->dtype)), ", but the bundle's block is ",
          shapeText(p.type.shape), " ", std::string(dtypeName(p.type.dtype))));
    absl::StatusOr<std::vector<double>> wide =
        verifiedTensor(*tensors, file, p.name, entry->second);
    if (!wide.ok())
      return wide.status();
    values.push_back({p.name, std::vector<float>(wide->begin(), wide->end())});
  }
  return values;
}

/// index.json of checkpoint `path`.
absl::StatusOr<CheckpointIndex> readIndex(const std::string &path) {
  std::string indexPath = (fs::path(path) / "index.json").string();
  absl::StatusOr<std::string> text = readCheckpointText(indexPath, 1 << 20);
  if (!text.ok())
    return text.status();
  return parseCheckpointIndex(*text, indexPath);
}

/// The blocks saved by a checkpoint's ranks, by rank: their tables and,
/// once read, their files.
struct SavedRanks {
  std::string path;
  std::vector<RankTable> tables;
  std::vector<std::optional<SafetensorsFile>> files;

  std::string fileName(int64_t r) const {
    return (fs::path(path) / rankFile(r, ".safetensors")).string();
  }
  absl::StatusOr<const SafetensorsFile *> file(int64_t r) {
    if (!files[r]) {
      absl::StatusOr<SafetensorsFile> read = SafetensorsFile::read(fileName(r));
      if (!read.ok())
        return read.status();
      files[r] = std::move(*read);
    }
    return &*files[r];
  }

  /// Checkpoint `path`'s `ranks` rank tables, read.
  static absl::StatusOr<SavedRanks> open(const std::string &path,
                                         int64_t ranks) {
    SavedRanks saved{path, {}, {}};
    for (int64_t r = 0; r < ranks; ++r) {
      absl::StatusOr<RankTable> table = readTable(path, r);
      if (!table.ok())
        return table.status();
      saved.tables.push_back(std::move(*table));
    }
    saved.files.resize(saved.tables.size()); // As many as there are.
    return saved;
  }
};

/// The first `kept` elements (row-major) of the global tensor `name`
/// assembled from the saved ranks' blocks (one of each set of replicas),
/// every block checked; `shape` is what the caller's plan holds it as
/// consolidated, which the saved tensor must match.
absl::StatusOr<std::vector<float>> assemble(SavedRanks &saved,
                                            const std::string &name,
                                            const std::vector<int64_t> &shape,
                                            int64_t kept) {
  // The distinct blocks (replicas hold the same one), their shapes checked
  // against the files' own: the tables are untrusted, and nothing is
  // allocated for a tensor until blocks that are really there could cover
  // it.
  std::vector<std::pair<int64_t, const BlockEntry *>> blocks;
  std::set<std::vector<int64_t>> starts;
  int64_t present = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(saved.tables.size()); ++r) {
    auto it = saved.tables[r].find(name);
    if (it == saved.tables[r].end())
      continue;
    const BlockEntry &e = it->second;
    std::vector<int64_t> theirs =
        consolidatedShape(e.globalShape, e.rows, e.checkpointShape);
    if (theirs != shape)
      return absl::FailedPreconditionError(absl::StrCat(
          (fs::path(saved.path) / rankFile(r, ".json")).string(), ": tensor '",
          name, "' is ", shapeText(theirs), " there but ", shapeText(shape),
          " in this bundle: not the same model"));
    if (!starts.insert(e.start).second)
      continue;
    absl::StatusOr<const SafetensorsFile *> file = saved.file(r);
    if (!file.ok())
      return file.status();
    const TensorInfo *t = (*file)->find(name);
    if (!t || t->shape != e.shape)
      return absl::InvalidArgumentError(absl::StrCat(
          saved.fileName(r), ": tensor '", name,
          t ? "' has another shape than its rank table says" : "' is missing"));
    int64_t elements = 1;
    for (int64_t n : e.shape)
      elements *= n;
    present += elements;
    blocks.push_back({r, &e});
  }
  if (blocks.empty())
    return absl::NotFoundError(absl::StrCat(
        saved.path, ": tensor '", name,
        "' is in no rank's table (saved by another model or optimizer?)"));
  auto uncovered = [&] {
    return absl::DataLossError(
        absl::StrCat(saved.path, ": the ranks' blocks of tensor '", name,
                     "' do not cover it (a rank's table is missing entries)"));
  };
  if (present < kept)
    return uncovered();
  std::vector<float> whole(kept);
  std::vector<uint8_t> covered(kept, 0);
  for (auto [r, entry] : blocks) {
    const BlockEntry &e = *entry;
    absl::StatusOr<const SafetensorsFile *> file = saved.file(r);
    if (!file.ok())
      return file.status();
    absl::StatusOr<std::vector<double>> values =
        verifiedTensor(**file, saved.fileName(r), name, e);
    if (!values.ok())
      return values.status();
    forEachInBlock(e.shape, e.globalShape, e.start, [&](int64_t i, int64_t g) {
      if (g < kept) {
        whole[g] = static_cast<float>((*values)[i]);
        covered[g] = 1;
      }
    });
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end())
    return uncovered();
  return whole;
}

/// This rank's blocks of checkpoint `path`, saved by `ranks` ranks under
/// another plan: each tensor assembled from the saved blocks that overlap
/// it (global coordinates, the padding rows of either plan zero), checked
/// as readSamePlan checks.
absl::StatusOr<Blocks> reshard(const SchedExecutor &ex, int64_t rank,
                               const std::string &path, int64_t ranks) {
  absl::StatusOr<SavedRanks> ckpt = SavedRanks::open(path, ranks);
  if (!ckpt.ok())
    return ckpt.status();
  MeshSpec mesh = meshSpecOf(ex.bundle());
  Blocks values;
  for (const sched::Param &p : ex.bundle().params) {
    if (!saved(p) || !ex.holds(p))
      continue;
    Sharding split = p.split ? *p.split : Sharding();
    std::vector<int64_t> global = mesh.globalShape(p.type.shape, split);
    std::vector<int64_t> shape =
        consolidatedShape(global, p.checkpointRows.value_or(-1),
                          p.checkpointShape.value_or(std::vector<int64_t>()));
    int64_t kept = 1;
    for (int64_t n : shape)
      kept *= n;
    absl::StatusOr<std::vector<float>> whole =
        assemble(*ckpt, p.name, shape, kept);
    if (!whole.ok())
      return whole.status();
    std::vector<float> block(p.type.numElements());
    forEachInBlock(p.type.shape, global,
                   mesh.blockStart(rank, p.type.shape, split),
                   [&](int64_t i, int64_t g) {
                     block[i] = g < kept ? (*whole)[g] : 0.0f;
                   });
    values.push_back({p.name, std::move(block)});
  }
  return values;
}

/// This rank's blocks of checkpoint `path`, or what is wrong: the run's
/// facts must be the saving run's; the plan may differ (resharded).
absl::StatusOr<Blocks> readRank(const SchedExecutor &ex, Communicator *comm,
                                const std::string &path, int64_t step,
                                const RunFacts &facts, bool &resharded) {
  int64_t rank = comm ? comm->rank() : 0, ranks = comm ? comm->worldSize() : 1;
  std::string indexPath = (fs::path(path) / "index.json").string();
  absl::StatusOr<CheckpointIndex> index = readIndex(path);
  if (!index.ok())
    return index.status();
  if (index->step != step)
    return absl::InvalidArgumentError(
        absl::StrCat(indexPath, ": says step ", index->step,
                     ", but its directory is step-", step));
  if (absl::Status s = checkRunFacts(*index, indexPath, facts); !s.ok())
    return s;
  resharded =
      index->bundle != ex.bundle().manifestXxh3 || index->ranks != ranks;
  return resharded ? reshard(ex, rank, path, index->ranks)
                   : readSamePlan(ex, rank, path);
}
} // namespace

CheckpointWriter::CheckpointWriter(std::string dir, int64_t keep,
                                   RunFacts facts, double timeoutSeconds)
    : dir(std::move(dir)), keep(keep), facts(std::move(facts)),
      timeoutSeconds(timeoutSeconds), snap(std::make_unique<Snapshot>()) {}

CheckpointWriter::~CheckpointWriter() {
  if (inFlight.joinable())
    inFlight.join();
}

absl::Status CheckpointWriter::finish(const Log &log) {
  if (inFlight.joinable()) {
    inFlight.join();
    lastSeconds = snapshotSeconds + writeSeconds;
  }
  absl::Status s = std::move(result);
  result = absl::OkStatus();
  if (s.ok() && !saved.empty())
    log.say("saved checkpoint " + saved);
  saved.clear();
  return s;
}

absl::Status CheckpointWriter::save(SchedExecutor &ex, Communicator *comm,
                                    int64_t step, bool async, const Log &log) {
  // One save in flight: the previous one completes (or fails) first.
  if (absl::Status s = finish(log); !s.ok())
    return s;
  int64_t rank = comm ? comm->rank() : 0, ranks = comm ? comm->worldSize() : 1;
  std::string final = stepDir(dir, step), tmp = final + ".tmp";
  // A fresh directory (a crashed run's leftovers gone) before any rank
  // writes into it.
  absl::Status made = absl::OkStatus();
  if (rank == 0) {
    std::error_code error;
    fs::remove_all(tmp, error);
    if (!fs::create_directories(tmp, error) && error)
      made = absl::InternalError(
          absl::StrCat(tmp, ": cannot create: ", error.message()));
  }
  absl::StatusOr<bool> ready = allAgree(comm, made.ok());
  if (!ready.ok())
    return ready.status();
  if (!made.ok())
    return made;
  if (!*ready)
    return absl::InternalError(
        absl::StrCat(tmp, ": rank 0 could not create the checkpoint"));
  bundleHash = ex.bundle().manifestXxh3;
  auto started = std::chrono::steady_clock::now();
  if (absl::Status s = snapshot(ex, rank, *snap); !s.ok())
    return s;
  snapshotSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  // The rest touches no executor and no collective: files only. Rank 0
  // completes the checkpoint once every rank's done marker is there.
  // The thread has the snapshot to itself until finish() joins it.
  auto persist = [this, tmp, final, rank, ranks, step]() {
    auto started = std::chrono::steady_clock::now();
    absl::Status s = writeRank(*snap, tmp, rank);
    if (s.ok() && rank == 0)
      s = commit(tmp, final, step, ranks);
    result = s;
    if (s.ok() && rank == 0)
      saved = final;
    writeSeconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  };
  if (!async) {
    persist();
    lastSeconds = snapshotSeconds + writeSeconds;
    return finish(log);
  }
  inFlight = std::thread(std::move(persist));
  return absl::OkStatus();
}

absl::Status CheckpointWriter::commit(const std::string &tmp,
                                      const std::string &final, int64_t step,
                                      int64_t ranks) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeoutSeconds);
  for (int64_t r = 0; r < ranks; ++r)
    while (!fs::exists(fs::path(tmp) / rankFile(r, ".done"))) {
      if (std::chrono::steady_clock::now() > deadline)
        return absl::DeadlineExceededError(absl::StrCat(
            tmp, ": rank ", r, " did not finish writing its part within ",
            timeoutSeconds, " s"));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  nlohmann::json index = {{"format", kCheckpointFormat},
                          {"step", step},
                          {"bundle", bundleHash},
                          {"ranks", ranks},
                          {"run", facts}};
  if (absl::Status s =
          writeText((fs::path(tmp) / "index.json").string(), index.dump(1));
      !s.ok())
    return s;
  std::error_code error;
  fs::remove_all(final, error);
  fs::rename(tmp, final, error);
  if (error)
    return absl::InternalError(
        absl::StrCat(tmp, ": cannot rename to ", final, ": ", error.message()));
  if (absl::Status s = syncPath(dir); !s.ok())
    return s;
  std::vector<int64_t> steps = checkpointSteps(dir);
  for (size_t i = static_cast<size_t>(std::max<int64_t>(keep, 1));
       i < steps.size(); ++i)
    fs::remove_all(stepDir(dir, steps[i]), error);
  return absl::OkStatus();
}

int64_t checkpointInterval(double saveSeconds, double stepSeconds,
                           double mttfSeconds) {
  double interval = std::sqrt(2 * saveSeconds * mttfSeconds);
  double steps = stepSeconds > 0 ? interval / stepSeconds : 1;
  if (!(steps >= 1))
    return 1;
  return steps > 1e12 ? int64_t(1e12)
                      : static_cast<int64_t>(std::llround(steps));
}

bool hasCheckpoint(const std::string &dir) {
  return !checkpointSteps(dir).empty();
}

absl::StatusOr<int64_t> resumeCheckpoint(SchedExecutor &ex, Communicator *comm,
                                         const std::string &dir,
                                         const RunFacts &facts,
                                         const Log &log) {
  if (!fs::is_directory(dir))
    return absl::NotFoundError(
        absl::StrCat(dir, ": no such checkpoint directory"));
  // The ranks list the directory alike (a shared filesystem); each tries
  // the candidates newest first and they agree on the first all verify.
  std::vector<int64_t> steps = checkpointSteps(dir);
  int64_t count = static_cast<int64_t>(steps.size());
  if (comm) {
    float fewest = -static_cast<float>(count);
    if (absl::Status s = comm->allReduce({}, &fewest, 1, /*max=*/true); !s.ok())
      return s;
    count = static_cast<int64_t>(-fewest);
  }
  if (count == 0)
    return absl::NotFoundError(absl::StrCat(
        dir, ": no complete checkpoint (a step-<N> directory with an "
             "index.json)"));
  absl::Status last;
  for (int64_t i = 0; i < count; ++i) {
    std::string path = stepDir(dir, steps[i]);
    // Loaded only once every rank has verified its part: a checkpoint one
    // rank cannot use is passed over by all, none of them changed.
    bool resharded = false;
    absl::StatusOr<Blocks> mine =
        readRank(ex, comm, path, steps[i], facts, resharded);
    absl::StatusOr<bool> all = allAgree(comm, mine.ok());
    if (!all.ok())
      return all.status();
    if (*all) {
      for (auto &[name, values] : *mine)
        if (absl::Status s = ex.setParam(name, values); !s.ok())
          return s;
      if (!comm || comm->rank() == 0)
        log.say(absl::StrCat("resumed from ", path,
                             resharded ? " (resharded: saved under another "
                                         "plan)"
                                       : ""));
      return steps[i];
    }
    last = mine.ok() ? absl::DataLossError(absl::StrCat(
                           path, ": another rank could not verify its part"))
                     : mine.status();
    // Each rank that could not verify its part says why, naming its file
    // and tensor (the others know only that one could not).
    if (i + 1 < count && !mine.ok())
      log.say(absl::StrCat("passing over ", path, ": ", last.message()));
  }
  return last;
}

absl::StatusOr<std::vector<TensorToWrite>>
consolidateCheckpoint(const std::string &dir, std::string &from) {
  from = dir;
  if (!fs::exists(fs::path(dir) / "index.json")) {
    std::vector<int64_t> steps = checkpointSteps(dir);
    if (steps.empty())
      return absl::NotFoundError(absl::StrCat(
          dir, ": not a checkpoint (a step-<N> directory with an index.json) "
               "nor a directory of them"));
    from = stepDir(dir, steps.front());
  }
  absl::StatusOr<CheckpointIndex> index = readIndex(from);
  if (!index.ok())
    return index.status();
  absl::StatusOr<SavedRanks> ckpt = SavedRanks::open(from, index->ranks);
  if (!ckpt.ok())
    return ckpt.status();
  // Every model parameter some rank holds, with what its table says of it.
  std::map<std::string, BlockEntry> parameters;
  for (const RankTable &table : ckpt->tables)
    for (const auto &[name, entry] : table)
      if (!entry.state)
        parameters.emplace(name, entry);
  std::vector<TensorToWrite> out;
  for (const auto &[name, entry] : parameters) {
    std::vector<int64_t> shape =
        consolidatedShape(entry.globalShape, entry.rows, entry.checkpointShape);
    int64_t kept = entry.keptElements();
    absl::StatusOr<std::vector<float>> whole =
        assemble(*ckpt, name, shape, kept);
    if (!whole.ok())
      return whole.status();
    appendCheckpointTensor(out, name, entry.stack, shape, whole->data());
  }
  return out;
}

} // namespace weft::runtime
