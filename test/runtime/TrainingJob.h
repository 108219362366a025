//===- TrainingJob.h - train a compiled model on thread ranks ----*- C++
//-*-===//
//
// The harness the executor parity tests share: a model, how it is compiled
// (Case), a few AdamW steps and a forward run on one executor (train), what
// that produced (Trace), and a job of every rank of a mesh as threads
// talking through Gloo (runJob). The tests differ in which executors they
// compare and how closely.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TEST_RUNTIME_TRAININGJOB_H
#define WEFT_TEST_RUNTIME_TRAININGJOB_H

#include "compiler/Pipeline.h"
#include "passes/sharding/Passes.h"
#include "runtime/dist/Communicator.h"
#include "runtime/dist/Mesh.h"
#include "runtime/exec/SchedBundle.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/train/TrainSchedule.h"
#include "test/compiler/TestUtils.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace weft::testutil {

inline constexpr int kTrainSteps = 3;

/// A model, how it is compiled and how it is fed.
struct Case {
  Case(std::string model, std::string dtype = "f32", std::string plan = "")
      : model(std::move(model)), dtype(std::move(dtype)),
        plan(std::move(plan)) {}
  std::string model, dtype, plan;
  bool cudaBundle = false; // target=cuda (GEMM epilogues, scratch, streams).
  int64_t attentionScratchMb = TrainingOptions().attentionScratchMb;
  bool keepGradients = false; // Also the @train_step program.
  double adamEps = 0;         // 0: AdamW's default.
  int64_t batch = 2, seq = 8;
  int64_t layers = 0; // Positive: instead of the config's (deeper pipelines).
  std::string recompute = "none";  // weft-recompute's policy.
  std::string fp8 = "none";        // weft-fp8's recipe.
  std::string fp8Storage = "auto"; // FP8 GEMM operands as FP8 codes.

  TrainingOptions options() const {
    TrainingOptions o;
    if (cudaBundle)
      o.cudaArchs = {"sm_90"};
    o.attentionScratchMb = attentionScratchMb;
    o.keepGradients = keepGradients;
    o.recompute = recompute;
    o.fp8.recipe = fp8;
    o.fp8Storage = fp8Storage;
    if (adamEps > 0)
      o.adamw.eps = adamEps;
    if (!plan.empty()) {
      auto parsed = parsePlan(plan);
      EXPECT_TRUE(static_cast<bool>(parsed)) << plan;
      if (parsed)
        o.plan = *parsed;
    }
    return o;
  }
  /// The plan's micro-batches per step (1 without a plan).
  int64_t microbatches() const {
    return plan.empty() ? 1 : options().plan.microbatches;
  }
  std::string label() const {
    return model + "-" + dtype + "-" + plan + (cudaBundle ? "-cuda" : "") +
           "-" + std::to_string(attentionScratchMb) +
           (layers ? "-" + std::to_string(layers) + "layers" : "") +
           (recompute != "none" ? "-recompute-" + recompute : "") +
           (fp8 != "none" ? "-fp8-" + fp8 : "") +
           (fp8Storage != "auto" ? "-storage-" + fp8Storage : "");
  }
};

/// Compiles the case's model (built fresh: the pipeline rewrites it) to a
/// bundle v2 in a fresh directory, which it returns ("" on failure).
inline std::string compileCase(const Case &setup) {
  auto context = makeContext();
  mlir::OwningOpRef<mlir::ModuleOp> module = buildExampleModel(
      *context, setup.model,
      {setup.batch / setup.microbatches(), setup.seq, setup.dtype,
       /*masterWeights=*/true},
      setup.layers);
  if (!module)
    return "";
  std::string dir = uniqueTempPath(setup.label() + "-v2");
  bool ok = mlir::succeeded(
      compileSchedBundle(*module, dir, setup.options(), llvm::json::Object{}));
  EXPECT_TRUE(ok) << setup.label();
  return ok ? dir : "";
}

/// What one run of a few steps produced, on one rank.
struct Trace {
  std::vector<float> losses, norms, forwardLoss, logits;
  std::map<std::string, std::vector<float>> params; // Whole (gathered).
  std::string failure;
};

/// Token ids of step `s` for the rows [first, first + rows) of the batch.
inline std::vector<int32_t> tokenIds(int s, int64_t first, int64_t rows,
                                     int64_t seq, int salt) {
  std::vector<int32_t> out;
  for (int64_t i = first * seq; i < (first + rows) * seq; ++i)
    out.push_back(static_cast<int32_t>((7 * i + 11 * s + salt) % 256));
  return out;
}

/// This rank's block of step `s`'s ids for rows [first, first + rows) of a
/// sequence of `seq`, cut as `input` says: whole rows, or under context
/// parallelism each row reordered into load-balanced chunks and the rank's
/// columns of it (as weft-run's TrainLoop cuts them).
inline std::vector<int32_t> blockIds(const runtime::sched::ProgramInput &input,
                                     const runtime::MeshSpec &mesh,
                                     int64_t rank, int s, int64_t first,
                                     int64_t rows, int64_t seq, int salt) {
  std::vector<int32_t> whole = tokenIds(s, first, rows, seq, salt);
  if (input.sequenceChunks == 0 || !input.split)
    return whole;
  int64_t local = input.type.shape[1];
  int64_t column = mesh.blockStart(rank, {rows, local}, *input.split)[1];
  std::vector<int32_t> out, scratch;
  for (int64_t r = 0; r < rows; ++r) {
    runtime::reorderChunks(whole.data() + r * seq, seq, input.sequenceChunks,
                           scratch);
    out.insert(out.end(), whole.begin() + r * seq + column,
               whole.begin() + r * seq + column + local);
  }
  return out;
}

/// `values` [rows, seq, width] with the sequence held in `chunks`
/// load-balanced chunks, back in the natural order.
inline std::vector<float> naturalOrder(const std::vector<float> &values,
                                       int64_t rows, int64_t seq,
                                       int64_t chunks) {
  std::vector<float> out(values.size());
  int64_t width = static_cast<int64_t>(values.size()) / (rows * seq);
  int64_t size = seq / chunks * width; // Values per chunk of a row.
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < chunks; ++k)
      std::copy_n(values.begin() + r * seq * width + k * size, size,
                  out.begin() + r * seq * width + heldChunk(k, chunks) * size);
  return out;
}

/// Trains kTrainSteps steps then runs forward on `exec` (any executor),
/// this rank's rows of the batch being [first, first + rows), and gathers
/// the parameters `names`.
template <typename Exec>
void train(Exec &exec, int64_t first, int64_t rows, int64_t seq,
           const std::vector<std::string> &names, Trace &trace) {
  auto fail = [&](const absl::Status &s) {
    trace.failure = std::string(s.message());
  };
  exec.initialize(5);
  // As weft-run steps: the bundle's train schedule, micro-batch by
  // micro-batch over this rank's rows.
  absl::StatusOr<runtime::TrainSteps> steps =
      runtime::trainSteps(exec.bundle(), exec.rank());
  if (!steps.ok())
    return fail(steps.status());
  const runtime::sched::ProgramInput &input =
      exec.bundle().tokensProgram()->inputs[0];
  runtime::MeshSpec mesh = runtime::meshSpecOf(exec.bundle());
  // Micro-batch j is rows [j B/M, (j+1) B/M) of the global batch, each
  // rank taking its block of it (as TrainLoop cuts them): the order
  // dropout's masks follow.
  int64_t m = steps->microbatches, mbRows = rows / m;
  int64_t groups = input.split && !input.split->empty()
                       ? mesh.groupSize((*input.split)[0])
                       : 1;
  for (int s = 0; s < kTrainSteps; ++s) {
    std::vector<int32_t> tokens, labels;
    for (int64_t j = 0; j < m; ++j) {
      int64_t at = j * mbRows * groups + (first / rows) * mbRows;
      for (auto [ids, salt] : {std::pair{&tokens, 3}, std::pair{&labels, 1}}) {
        std::vector<int32_t> part =
            blockIds(input, mesh, exec.rank(), s, at, mbRows, seq, salt);
        ids->insert(ids->end(), part.begin(), part.end());
      }
    }
    float lr = 3e-3f, number = static_cast<float>(s + 1);
    if (absl::Status st = runtime::runTrainSteps(exec, *steps, tokens.data(),
                                                 labels.data(), lr, number);
        !st.ok())
      return fail(st);
    trace.losses.push_back(*exec.scalarOutput(steps->reporter, "loss"));
    trace.norms.push_back(*exec.scalarOutput(steps->reporter, "grad_norm"));
  }
  auto gather = [&] {
    for (const std::string &name : names) {
      auto p = exec.gatherParam(name);
      if (!p.ok())
        return fail(p.status());
      trace.params[name] = *p;
    }
  };
  // Pipelined bundles have no whole-model forward yet.
  if (!exec.bundle().program("forward"))
    return gather();
  // The forward program takes one micro-batch: this rank's first rows.
  int64_t forwardRows = steps->rows;
  const runtime::sched::ProgramInput &forwardInput =
      exec.bundle().program("forward")->inputs[0];
  int64_t localSeq = forwardInput.type.shape[1];
  std::vector<int32_t> tokens = blockIds(forwardInput, mesh, exec.rank(), 9,
                                         first, forwardRows, seq, 3),
                       labels = blockIds(forwardInput, mesh, exec.rank(), 9,
                                         first, forwardRows, seq, 1);
  if (absl::Status st = exec.run(
          "forward",
          {{{forwardRows, localSeq}, runtime::DType::I32, tokens.data()},
           {{forwardRows, localSeq}, runtime::DType::I32, labels.data()}});
      !st.ok())
    return fail(st);
  trace.forwardLoss.push_back(*exec.scalarOutput("forward", "loss"));
  auto logits = exec.gatherOutput("forward", "logits");
  if (!logits.ok())
    return fail(logits.status());
  trace.logits = *logits;
  if (forwardInput.sequenceChunks > 0) {
    // Gathered in the program's order of the sequence: [rows, seq, vocab].
    const runtime::sched::Program &forward = *exec.bundle().program("forward");
    int64_t vocab = 0;
    for (const runtime::sched::Output &o : forward.outputs)
      if (o.name == "logits")
        vocab = forward.buffers[o.buffer].type.shape.back();
    int64_t globalRows = static_cast<int64_t>(logits->size()) / (seq * vocab);
    trace.logits =
        naturalOrder(*logits, globalRows, seq, forwardInput.sequenceChunks);
  }
  gather();
}

/// The largest |a - b| relative to the largest |a| over the elements that
/// differ (0 when every bit is equal; infinite for a NaN or infinity that
/// the other side lacks, or a size that differs).
inline double worstError(const std::vector<float> &a,
                         const std::vector<float> &b) {
  if (a.size() != b.size())
    return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) == 0)
      continue;
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      return INFINITY;
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
  }
  return diff == 0 ? 0 : diff / std::max(scale, 1e-30);
}

/// A port for a multi-rank job: one the kernel has free now (bound to port
/// 0, read back, released). ctest runs test processes side by side, so a
/// port computed from the pid could be another process's (two pids 150
/// apart once took the same one, and a job's communicator failed).
inline int nextPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0) << "socket: " << std::strerror(errno);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  bool bound =
      fd >= 0 &&
      bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0;
  EXPECT_TRUE(bound) << "finding a free port: " << std::strerror(errno);
  if (fd >= 0)
    close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

/// A CPU executor of bundle `dir` for a rank talking over `comm` (null for
/// one rank), or null with the failure in `trace`.
inline std::unique_ptr<runtime::SchedExecutor>
openExecutor(const std::string &dir, runtime::Communicator *comm,
             Trace &trace) {
  auto loaded = runtime::sched::loadSchedBundle(dir);
  if (!loaded.ok()) {
    trace.failure = std::string(loaded.status().message());
    return nullptr;
  }
  runtime::SchedExecutor::Options options;
  options.comm = comm;
  auto exec = runtime::SchedExecutor::create(std::move(*loaded), options);
  if (!exec.ok()) {
    trace.failure = std::string(exec.status().message());
    return nullptr;
  }
  return std::move(*exec);
}

/// What one rank of a job does: rank `r` over `comm` (null for one rank),
/// its rows of the batch [first, first + rows).
using RankWork = std::function<void(int64_t r, runtime::Communicator *comm,
                                    int64_t first, int64_t rows, Trace &)>;

/// Runs `work` on every rank of `mesh`, ranks as threads over Gloo; dp x ep
/// splits the batch, every other axis sees all of it.
inline std::vector<Trace>
runJob(const Case &setup, const runtime::MeshSpec &mesh, const RankWork &work) {
  int64_t world = std::max<int64_t>(mesh.size(), 1);
  // The batch is split over dp and ep together (dp major), as the plan
  // splits it.
  std::vector<std::string> batchAxes;
  for (const char *axis : {"dp", "ep"})
    if (mesh.axisIndex(axis) >= 0)
      batchAxes.push_back(axis);
  int64_t rows =
      setup.batch / (batchAxes.empty() ? 1 : mesh.groupSize(batchAxes));
  std::vector<Trace> traces(world);
  int port = world > 1 ? nextPort() : 0;
  auto rank = [&](int64_t r) {
    int64_t first = batchAxes.empty() ? 0 : mesh.groupRank(r, batchAxes) * rows;
    if (world == 1)
      return work(r, nullptr, first, rows, traces[r]);
    runtime::RankInfo info;
    info.rank = r, info.worldSize = world, info.masterPort = port;
    auto comm = runtime::Communicator::create(info, std::chrono::seconds(60));
    if (!comm.ok()) {
      // Never silent: a test reading only what `work` saw would pass.
      ADD_FAILURE() << "rank " << r << ": " << comm.status();
      traces[r].failure = std::string(comm.status().message());
      return;
    }
    work(r, comm->get(), first, rows, traces[r]);
    // No rank closes its connections while another may still use them.
    (*comm)->barrier().IgnoreError();
  };
  std::vector<std::thread> others;
  for (int64_t r = 1; r < world; ++r)
    others.emplace_back(rank, r);
  rank(0);
  for (std::thread &t : others)
    t.join();
  return traces;
}

} // namespace weft::testutil

#endif // WEFT_TEST_RUNTIME_TRAININGJOB_H
