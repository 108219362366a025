//===- p2p_test.cpp - sched.send / sched.recv on the CPU runtime ----------===//
//
// Hand-written sched programs (planned by the memory planner and written by
// the bundle writer, as the compiler would) run by SchedExecutor on ranks
// as threads over Gloo: bytes arrive exactly as sent, to the peer the mesh
// says, matched by tag whatever the order, from copies taken when posted;
// a receive from a peer that never sends, or a send nobody receives, fails
// within the timeout, naming the peer; and where there is no way to move the
// bytes (no communicator, the GPU backend) the bundle is refused with a
// message.
//
//===----------------------------------------------------------------------===//

#include "codegen/SchedBundle.h"
#include "passes/memory/Passes.h"
#include "runtime/exec/BundleData.h"
#include "runtime/exec/SchedExecutor.h"
#include "runtime/gpu/GpuProgram.h"
#include "test/compiler/TestUtils.h"
#include "test/runtime/TrainingJob.h"

#include "dialects/sched/IR/SchedOps.h"
#include "mlir/Pass/PassManager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

using namespace weft;
using ::testing::HasSubstr;
namespace rs = runtime::sched;

namespace {
/// Two pipeline stages. send_up (rank 0) sends a copy of its input with
/// tag 7 and then overwrites it, so a send that did not copy would deliver
/// -1s; recv_down (rank 1) returns what it receives. send_three posts tags
/// 1, 2, 3 (the last i32, moved as stored); recv_three takes 2, 1, 3.
constexpr const char *kStages = R"mlir(
  sched.mesh @mesh axes ["pp"] sizes [2]
  sched.program @send_up align(256) events(0) streams ["compute"] {
  ^bb0(%x: !sched.buffer<8xf32>):
    %a = sched.alloc : !sched.buffer<8xf32>
    sched.copy %x -> %a sizes [8] src [0, 1] dst [0, 1] : !sched.buffer<8xf32> -> !sched.buffer<8xf32>
    sched.send %a to @mesh "pp" offset 1 tag 7 : !sched.buffer<8xf32>
    sched.fill %a value -1.0 : !sched.buffer<8xf32>
    sched.return []
  }
  sched.program @recv_down align(256) events(0) streams ["compute"] {
    %y = sched.alloc : !sched.buffer<8xf32>
    sched.recv %y from @mesh "pp" offset -1 tag 7 : !sched.buffer<8xf32>
    sched.return ["y"] %y : !sched.buffer<8xf32>
  }
  sched.program @send_three align(256) events(0) streams ["compute"] {
  ^bb0(%a: !sched.buffer<8xf32>, %b: !sched.buffer<8xf32>, %c: !sched.buffer<2x3xi32>):
    sched.send %a to @mesh "pp" offset 1 tag 1 : !sched.buffer<8xf32>
    sched.send %b to @mesh "pp" offset 1 tag 2 : !sched.buffer<8xf32>
    sched.send %c to @mesh "pp" offset 1 tag 3 : !sched.buffer<2x3xi32>
    sched.return []
  }
  sched.program @recv_three align(256) events(0) streams ["compute"] {
    %b = sched.alloc : !sched.buffer<8xf32>
    %a = sched.alloc : !sched.buffer<8xf32>
    %c = sched.alloc : !sched.buffer<2x3xi32>
    sched.recv %b from @mesh "pp" offset -1 tag 2 : !sched.buffer<8xf32>
    sched.recv %a from @mesh "pp" offset -1 tag 1 : !sched.buffer<8xf32>
    sched.recv %c from @mesh "pp" offset -1 tag 3 : !sched.buffer<2x3xi32>
    sched.return ["a", "b", "c"] %a, %b, %c : !sched.buffer<8xf32>, !sched.buffer<8xf32>, !sched.buffer<2x3xi32>
  }
)mlir";

/// Every rank of dp x pp sends its input both ways round its pp ring, the
/// second way as offset 2 (-1 mod 3), and receives from both neighbours,
/// sends first: a send that waited for its receive would deadlock.
constexpr const char *kRing = R"mlir(
  sched.mesh @mesh axes ["dp", "pp"] sizes [2, 3]
  sched.program @ring align(256) events(0) streams ["compute"] {
  ^bb0(%x: !sched.buffer<4x4xf32>):
    %prev = sched.alloc : !sched.buffer<4x4xf32>
    %next = sched.alloc : !sched.buffer<4x4xf32>
    sched.send %x to @mesh "pp" offset 1 tag 0 : !sched.buffer<4x4xf32>
    sched.send %x to @mesh "pp" offset 2 tag 1 : !sched.buffer<4x4xf32>
    sched.recv %prev from @mesh "pp" offset -1 tag 0 : !sched.buffer<4x4xf32>
    sched.recv %next from @mesh "pp" offset -2 tag 1 : !sched.buffer<4x4xf32>
    sched.return ["prev", "next"] %prev, %next : !sched.buffer<4x4xf32>, !sched.buffer<4x4xf32>
  }
)mlir";

/// The bundle directory of sched module `ir`, planned and written as the
/// compiler does ("" on failure).
std::string bundleOf(const char *ir, const std::string &label) {
  auto context = testutil::makeContext();
  auto module = testutil::parse(*context, ir);
  if (!module)
    return "";
  mlir::PassManager pm(context.get());
  pm.nest<sched::ProgramOp>().addPass(createSchedPlanMemory());
  if (mlir::failed(pm.run(*module))) {
    ADD_FAILURE() << "planning " << label;
    return "";
  }
  return testutil::writeManifestBundle(*module, label);
}

/// What one rank does, over `comm`, with `exec` running the job's bundle
/// (null without one).
using RankWork = std::function<absl::Status(
    int64_t rank, runtime::Communicator &comm, runtime::SchedExecutor *exec)>;

/// Runs `work` on `world` ranks as threads, over communicators with
/// `timeout`, each with an executor of bundle `dir` (none for ""); what
/// each rank returned, by rank.
std::vector<absl::Status> onRanks(int64_t world,
                                  std::chrono::milliseconds timeout,
                                  const std::string &dir,
                                  const RankWork &work) {
  std::vector<absl::Status> results(world);
  int port = testutil::nextPort();
  auto rank = [&](int64_t r) -> absl::Status {
    runtime::RankInfo info;
    info.rank = r, info.worldSize = world, info.masterPort = port;
    auto comm = runtime::Communicator::create(info, timeout);
    if (!comm.ok())
      return comm.status();
    absl::StatusOr<std::unique_ptr<runtime::SchedExecutor>> exec;
    if (!dir.empty()) {
      auto bundle = rs::loadSchedBundle(dir);
      if (!bundle.ok())
        return bundle.status();
      runtime::SchedExecutor::Options options;
      options.comm = comm->get();
      options.poisonDeadBuffers = true; // Dead bytes read later are NaN.
      exec = runtime::SchedExecutor::create(std::move(*bundle), options);
      if (!exec.ok())
        return exec.status();
    }
    absl::Status s = work(r, **comm, exec.ok() ? exec->get() : nullptr);
    // No rank closes its connections while another may still use them.
    (*comm)->barrier().IgnoreError();
    return s;
  };
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < world; ++r)
    threads.emplace_back([&, r] { results[r] = rank(r); });
  for (std::thread &t : threads)
    t.join();
  return results;
}

/// Outputs `names` of the last run of `program`, into `out`.
absl::Status outputs(runtime::SchedExecutor &exec, const std::string &program,
                     const std::vector<std::string> &names,
                     std::map<std::string, std::vector<float>> &out) {
  for (const std::string &name : names) {
    auto values = exec.output(program, name);
    if (!values.ok())
      return values.status();
    out[name] = *values;
  }
  return absl::OkStatus();
}

/// `count` floats no rank and no run shares, exact in f32.
std::vector<float> valuesOf(int64_t rank, int run, int count = 8) {
  std::vector<float> v(count);
  for (int i = 0; i < count; ++i)
    v[i] = static_cast<float>(1000 * rank + 100 * run + i) + 0.25f;
  return v;
}

runtime::HostTensor tensor(const std::vector<int64_t> &shape,
                           const std::vector<float> &values) {
  return {shape, runtime::DType::F32, values.data()};
}

TEST(MeshNeighbour, WrapsEitherWayAlongOneAxis) {
  runtime::MeshSpec mesh{{"dp", "pp"}, {2, 3}};
  // Rank 4 is (dp 1, pp 1).
  EXPECT_EQ(mesh.neighbour(4, "pp", 1), 5);
  EXPECT_EQ(mesh.neighbour(4, "pp", -1), 3);
  EXPECT_EQ(mesh.neighbour(5, "pp", 1), 3);
  EXPECT_EQ(mesh.neighbour(3, "pp", -1), 5);
  EXPECT_EQ(mesh.neighbour(3, "pp", -4), 5);
  EXPECT_EQ(mesh.neighbour(3, "pp", 7), 4);
  EXPECT_EQ(mesh.neighbour(1, "dp", 1), 4);
  EXPECT_EQ(mesh.neighbour(4, "dp", -1), 1);
  EXPECT_EQ(mesh.neighbour(4, "tp", 1), -1);
}

// Rank 0 runs its stage twice before rank 1 has posted a receive (the world
// barrier between), so the arena the first send read from has been
// overwritten twice by then: rank 1 must still get each run's values, in
// order, exactly.
TEST(PointToPoint, ArrivesExactlyFromCopiesInTheOrderSent) {
  std::string dir = bundleOf(kStages, "stages");
  ASSERT_FALSE(dir.empty());
  std::vector<std::vector<float>> received;
  std::vector<absl::Status> results = onRanks(
      2, std::chrono::seconds(60), dir,
      [&](int64_t r, runtime::Communicator &comm,
          runtime::SchedExecutor *exec) -> absl::Status {
        for (int run = 0; run < 2 && r == 0; ++run) {
          std::vector<float> x = valuesOf(0, run);
          if (absl::Status s = exec->run("send_up", {tensor({8}, x)}); !s.ok())
            return s;
        }
        if (absl::Status s = comm.barrier(); !s.ok())
          return s;
        for (int run = 0; run < 2 && r == 1; ++run) {
          if (absl::Status s = exec->run("recv_down", {}); !s.ok())
            return s;
          auto y = exec->output("recv_down", "y");
          if (!y.ok())
            return y.status();
          received.push_back(*y);
        }
        return exec->finishSends(); // Rank 1 posted none: at once.
      });
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
  ASSERT_EQ(received.size(), 2u);
  EXPECT_EQ(received[0], valuesOf(0, 0));
  EXPECT_EQ(received[1], valuesOf(0, 1));
}

// Tags 1, 2, 3 posted in that order and received as 2, 1, 3: each buffer
// gets its own message; the i32 one arrives as stored.
TEST(PointToPoint, MatchesByTagWhateverTheOrder) {
  std::string dir = bundleOf(kStages, "tags");
  ASSERT_FALSE(dir.empty());
  std::vector<float> a = valuesOf(0, 1), b = valuesOf(0, 2);
  std::vector<int32_t> c = {-3, 0, 7, 1 << 20, -(1 << 20), 42};
  std::map<std::string, std::vector<float>> got;
  std::vector<absl::Status> results = onRanks(
      2, std::chrono::seconds(60), dir,
      [&](int64_t r, runtime::Communicator &,
          runtime::SchedExecutor *exec) -> absl::Status {
        if (r == 0) {
          if (absl::Status s = exec->run(
                  "send_three", {tensor({8}, a),
                                 tensor({8}, b),
                                 {{2, 3}, runtime::DType::I32, c.data()}});
              !s.ok())
            return s;
          return exec->finishSends();
        }
        if (absl::Status s = exec->run("recv_three", {}); !s.ok())
          return s;
        return outputs(*exec, "recv_three", {"a", "b", "c"}, got);
      });
  for (int r = 0; r < 2; ++r)
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
  EXPECT_EQ(got["a"], a);
  EXPECT_EQ(got["b"], b);
  EXPECT_EQ(got["c"], std::vector<float>(c.begin(), c.end()));
}

// On dp=2 x pp=3, rank (d, p) gets (d, p-1)'s input as "prev" and
// (d, p+1)'s as "next": the peer is the mesh's, along pp only, and the
// direction is right (with two stages either sign is the same rank).
TEST(PointToPoint, RingGoesToTheMeshNeighbours) {
  std::string dir = bundleOf(kRing, "ring");
  ASSERT_FALSE(dir.empty());
  runtime::MeshSpec mesh{{"dp", "pp"}, {2, 3}};
  std::vector<std::map<std::string, std::vector<float>>> got(6);
  std::vector<absl::Status> results = onRanks(
      6, std::chrono::seconds(60), dir,
      [&](int64_t r, runtime::Communicator &,
          runtime::SchedExecutor *exec) -> absl::Status {
        std::vector<float> x = valuesOf(r, 0, 16);
        if (absl::Status s = exec->run("ring", {tensor({4, 4}, x)}); !s.ok())
          return s;
        if (absl::Status s = outputs(*exec, "ring", {"prev", "next"}, got[r]);
            !s.ok())
          return s;
        return exec->finishSends();
      });
  for (int64_t r = 0; r < 6; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
    std::vector<int64_t> c = mesh.coords(r);
    int64_t prev = mesh.rankOf({c[0], (c[1] + 2) % 3}),
            next = mesh.rankOf({c[0], (c[1] + 1) % 3});
    EXPECT_EQ(got[r]["prev"], valuesOf(prev, 0, 16)) << "rank " << r;
    EXPECT_EQ(got[r]["next"], valuesOf(next, 0, 16)) << "rank " << r;
  }
}

/// On a two-rank job of bundle `dir` with a 2 s timeout, rank `active`
/// runs `work` while the other rank does nothing until it has returned
/// (the barrier after them would time out too); what `work` returned and
/// how long it took.
std::pair<absl::Status, std::chrono::steady_clock::duration> withSilentPeer(
    const std::string &dir, int64_t active,
    const std::function<absl::Status(runtime::SchedExecutor &)> &work) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::chrono::steady_clock::duration took{};
  std::vector<absl::Status> results =
      onRanks(2, std::chrono::seconds(2), dir,
              [&](int64_t r, runtime::Communicator &,
                  runtime::SchedExecutor *exec) -> absl::Status {
                if (r != active) {
                  finished.wait_for(std::chrono::seconds(60));
                  return absl::OkStatus();
                }
                auto start = std::chrono::steady_clock::now();
                absl::Status s = work(*exec);
                took = std::chrono::steady_clock::now() - start;
                done.set_value();
                return s;
              });
  EXPECT_TRUE(results[1 - active].ok()) << results[1 - active];
  return {results[active], took};
}

// Rank 0 never sends: rank 1's receive fails after the communicator's
// timeout, naming the program, the instruction, the transfer and rank 0.
TEST(PointToPoint, ReceiveFromASilentPeerTimesOutNamingIt) {
  std::string dir = bundleOf(kStages, "silent");
  ASSERT_FALSE(dir.empty());
  auto [status, took] =
      withSilentPeer(dir, 1, [](runtime::SchedExecutor &exec) {
        return exec.run("recv_down", {});
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("program recv_down, instruction 0 (recv): along 'pp' "
                        "offset -1 tag 7: receive of 32 bytes from rank 0 "
                        "(tag 7) failed: "));
  EXPECT_THAT(status.message(), HasSubstr("Timed out"));
  EXPECT_GE(took, std::chrono::milliseconds(1900));
  EXPECT_LT(took, std::chrono::seconds(20));
}

// Rank 1 never receives: rank 0's program still returns once its send is
// posted, and finishSends fails after the timeout, naming rank 1.
TEST(PointToPoint, SendNobodyReceivesFailsAtFinishSendsNamingThePeer) {
  std::string dir = bundleOf(kStages, "unreceived");
  ASSERT_FALSE(dir.empty());
  std::vector<float> x = valuesOf(0, 0);
  absl::Status ran;
  auto [status, took] =
      withSilentPeer(dir, 0, [&](runtime::SchedExecutor &exec) {
        ran = exec.run("send_up", {tensor({8}, x)});
        return exec.finishSends();
      });
  EXPECT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(),
              HasSubstr("rank 1 receiving the 32 bytes sent to it with tag 7 "
                        "failed: "));
  EXPECT_THAT(status.message(), HasSubstr("Timed out"));
  EXPECT_GE(took, std::chrono::milliseconds(1900));
  EXPECT_LT(took, std::chrono::seconds(20));
}

// Transfers to this rank or past the job are refused before Gloo sees
// them; an empty message moves nothing, on either side.
TEST(PointToPoint, CommunicatorRefusesPeersOutsideTheJob) {
  std::vector<absl::Status> results =
      onRanks(2, std::chrono::seconds(60), "",
              [&](int64_t r, runtime::Communicator &comm,
                  runtime::SchedExecutor *) -> absl::Status {
                float x = 1.0f;
                absl::Status self = comm.send(r, 0, &x, sizeof(x));
                EXPECT_EQ(self.code(), absl::StatusCode::kInvalidArgument);
                EXPECT_THAT(self.message(), HasSubstr("is this rank"));
                absl::Status past = comm.recv(2, 0, &x, sizeof(x));
                EXPECT_EQ(past.code(), absl::StatusCode::kInvalidArgument);
                EXPECT_THAT(past.message(),
                            HasSubstr("receive of 4 bytes from rank 2 (tag 0): "
                                      "there is no rank 2 in a job of 2"));
                if (absl::Status s = comm.send(1 - r, 5, nullptr, 0); !s.ok())
                  return s;
                if (absl::Status s = comm.recv(1 - r, 5, nullptr, 0); !s.ok())
                  return s;
                return comm.waitSends();
              });
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
}

// A pipeline's stages issue different numbers of collectives over their
// own groups (stage 0's tp all-reduces) before all of them meet in one
// group (the gradient norm over tp and pp). On pp=2 x tp=2, stage 0's
// ranks all-reduce over tp three times and stage 1's once, then every
// rank sums its rank over [tp, pp]: each group counts its own tags, so
// the shared sum meets (one count for every collective put stage 0 two
// tags ahead, and the sum waited until the timeout).
TEST(Collectives, GroupsCountTheirOwnCollectives) {
  std::vector<float> got(4, -1.0f);
  std::vector<absl::Status> results = onRanks(
      4, std::chrono::seconds(20), "",
      [&](int64_t r, runtime::Communicator &comm,
          runtime::SchedExecutor *) -> absl::Status {
        runtime::MeshSpec mesh{{"pp", "tp"}, {2, 2}};
        if (absl::Status s = comm.setMesh(mesh, {{"tp"}, {"tp", "pp"}});
            !s.ok())
          return s;
        int64_t stage = mesh.coords(r)[0];
        for (int i = 0; i < (stage == 0 ? 3 : 1); ++i) {
          float x = 1.0f;
          if (absl::Status s = comm.allReduce({"tp"}, &x, 1); !s.ok())
            return s;
          EXPECT_EQ(x, 2.0f);
        }
        float total = static_cast<float>(r);
        if (absl::Status s = comm.allReduce({"tp", "pp"}, &total, 1); !s.ok())
          return s;
        got[r] = total;
        return absl::OkStatus();
      });
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r];
    EXPECT_EQ(got[r], 0.0f + 1 + 2 + 3) << "rank " << r;
  }
}

// Without a communicator there is no peer: the placed bundle is refused
// at create, saying how to run it. The GPU backend has no point to point
// yet and refuses the program, naming it and the instruction.
TEST(PointToPoint, RefusedWhereBytesCannotMove) {
  std::string dir = bundleOf(kStages, "nowhere");
  ASSERT_FALSE(dir.empty());
  auto bundle = rs::loadSchedBundle(dir);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  auto program = runtime::gpuProgram(*bundle, *bundle->program("send_up"),
                                     runtime::meshSpecOf(*bundle), 0);
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(program.status().message(),
              HasSubstr("program send_up, instruction 1 (send): "
                        "point-to-point transfers are not in the GPU runtime"));
  auto exec = runtime::SchedExecutor::create(std::move(*bundle), {});
  ASSERT_FALSE(exec.ok());
  EXPECT_EQ(exec.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(exec.status().message(),
              HasSubstr("the bundle is placed on 2 ranks; run it with "
                        "weft-run --nproc 2"));
}
} // namespace
