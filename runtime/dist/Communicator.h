//===- Communicator.h - CPU collectives over Gloo ---------------*- C++ -*-===//
//
// One process per rank. Ranks meet through the TCP rendezvous store served
// by rank 0 at MASTER_ADDR:MASTER_PORT, then open one Gloo context (full
// TCP mesh) per group of mesh axes a program uses, and one of their own for
// point-to-point transfers. Collectives are blocking and run on this rank's
// group of the named axes; receives block, sends are posted and waited for
// later. Any Gloo failure becomes a status that names the ranks that are no
// longer running, if any.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DIST_COMMUNICATOR_H
#define WEFT_RUNTIME_DIST_COMMUNICATOR_H

#include "runtime/dist/Mesh.h"

#include "absl/status/statusor.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class Device;
class UnboundBuffer;
} // namespace transport
} // namespace gloo

namespace weft::runtime {

class TcpStore;

/// Where this process sits in the job: torchrun's environment variables.
struct RankInfo {
  int64_t rank = 0, worldSize = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;
  /// Started by torchrun with TORCHELASTIC_USE_AGENT_STORE=True: its agent
  /// serves the store on MASTER_PORT, and rank 0 does not.
  bool agentStore = false;
  /// TORCHELASTIC_RESTART_COUNT: which attempt of a job torchrun restarts
  /// this is (0 when not under torchrun).
  int64_t restartCount = 0;
};

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (and
/// torchrun's TORCHELASTIC_USE_AGENT_STORE and TORCHELASTIC_RESTART_COUNT);
/// without RANK, OpenMPI's (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, as
/// mpirun starts ranks) or Slurm's (SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID, as srun does; MASTER_ADDR defaulting to the first host of
/// SLURM_JOB_NODELIST); with none set, one rank. Malformed or inconsistent
/// values are errors.
absl::StatusOr<RankInfo> rankFromEnvironment();

/// The first host of a Slurm node list ("node[01-04,07],gpu1" is
/// "node01"); "" when it names none.
std::string firstSlurmHost(const std::string &nodelist);

/// What a rank was started to run, as (what, value) pairs: the bundle's
/// hash and every flag that changes the step's collectives or its result.
/// Ranks compare them at rendezvous, before the first collective, so ranks
/// started differently fail at once, naming the ranks and the flag, instead
/// of hanging in a collective one of them never calls.
using JobFacts = std::vector<std::pair<std::string, std::string>>;

/// The first fact on which `mine` (rank `me`) and `theirs` (rank `peer`)
/// differ, as an error naming both ranks; OK when they agree.
absl::Status compareJobFacts(const JobFacts &mine, int64_t me,
                             const JobFacts &theirs, int64_t peer);

class Communicator {
public:
  /// Joins the job (rank 0 serves the store), checks that every rank was
  /// started with the same `facts` (and WORLD_SIZE) and publishes this
  /// process's host and pid so failures can name dead ranks. `timeout`
  /// bounds the rendezvous and every collective.
  static absl::StatusOr<std::unique_ptr<Communicator>>
  create(const RankInfo &info, std::chrono::milliseconds timeout,
         const JobFacts &facts = {});
  ~Communicator();

  int64_t rank() const { return info.rank; }
  int64_t worldSize() const { return info.worldSize; }
  /// This process's rank on its node (which GPU it takes).
  int64_t localRank() const { return info.localRank; }

  /// Lays the ranks out on `mesh` (its size must be the world size) and
  /// opens this rank's group for each entry of `groups`, in order (every
  /// rank must pass the same list).
  absl::Status setMesh(const MeshSpec &mesh,
                       const std::vector<std::vector<std::string>> &groups);
  const MeshSpec &mesh() const { return mesh_; }

  /// Sum (or max) over the group of `axes`, in place.
  absl::Status allReduce(const std::vector<std::string> &axes, float *data,
                         size_t count, bool max = false);
  /// `blocks` holds group-size blocks of `count`; member j gets the sum
  /// over the group of block j in `out`. Gloo 0.5 has no reduce-scatter of
  /// this layout, so every block is all-reduced (in place in `blocks`) and
  /// this member keeps its own: twice the bytes of a ring reduce-scatter.
  absl::Status reduceScatter(const std::vector<std::string> &axes,
                             float *blocks, float *out, size_t count);
  /// `out` (count * group size) gets every member's `in` (count), in
  /// group order. No axes: the group of every rank, in rank order.
  absl::Status allGather(const std::vector<std::string> &axes, const float *in,
                         float *out, size_t count);
  /// The same for i32 (an expert route's counts).
  absl::Status allGather(const std::vector<std::string> &axes,
                         const int32_t *in, int32_t *out, size_t count);
  /// The same for bytes (FP8 codes).
  absl::Status allGather(const std::vector<std::string> &axes,
                         const uint8_t *in, uint8_t *out, size_t count);
  /// `in` holds group-size blocks of `count`; block j goes to member j, and
  /// `out` holds the blocks received, in group order.
  absl::Status allToAll(const std::vector<std::string> &axes, const float *in,
                        float *out, size_t count);
  /// The same for i32 (an expert route's counts).
  absl::Status allToAll(const std::vector<std::string> &axes, const int32_t *in,
                        int32_t *out, size_t count);
  /// Variable-length blocks: `in` holds sendCounts[j] elements for member
  /// j, consecutive in group order, and `out` gets recvCounts[i] from
  /// member i, consecutive; every member's counts must agree with its
  /// peers' (Gloo's alltoallv).
  absl::Status allToAllv(const std::vector<std::string> &axes, const float *in,
                         const std::vector<int64_t> &sendCounts, float *out,
                         const std::vector<int64_t> &recvCounts);
  /// Waits for every rank (a barrier on the whole job).
  absl::Status barrier();

  /// Posts a send of a copy of the `bytes` bytes at `data` to world rank
  /// `peer`, matched by that rank's recv of the same tag and size, and
  /// returns without waiting for it. Gloo's TCP transport moves the bytes
  /// only once the receiver has posted its recv, which may be in a program
  /// the peer runs much later, while the caller's buffer (a program's
  /// arena) is reused at once. Sends of one tag to one peer are received in
  /// the order posted. The copy is kept until waitSends.
  absl::Status send(int64_t peer, uint32_t tag, const void *data, size_t bytes);
  /// Receives into the `bytes` bytes at `data` what world rank `peer` sends
  /// with `tag`, waiting at most the communicator's timeout.
  absl::Status recv(int64_t peer, uint32_t tag, void *data, size_t bytes);
  /// Waits until every send posted since the last call has been received
  /// (the timeout bounds them all together) and frees their copies; the
  /// first failure is returned and the other sends are dropped.
  absl::Status waitSends();

private:
  Communicator() = default;
  template <typename T>
  absl::Status allToAllOf(const std::vector<std::string> &axes, const T *in,
                          T *out, size_t count);
  template <typename T>
  absl::Status allGatherOf(const std::vector<std::string> &axes, const T *in,
                           T *out, size_t count);
  std::shared_ptr<gloo::Context> group(const std::vector<std::string> &axes);
  /// A context of `size` ranks (this one is `rank`), every pair connected,
  /// met under `prefix` in the store. Gloo failures throw.
  std::shared_ptr<gloo::Context> fullMesh(const std::string &prefix,
                                          int64_t rank, int64_t size);
  /// Runs `call` on the group of `axes` (the world when empty) with the
  /// next tag, turning a Gloo exception into a status naming dead ranks.
  absl::Status
  collective(const std::string &what, const std::vector<std::string> &axes,
             const std::function<void(const std::shared_ptr<gloo::Context> &,
                                      uint32_t)> &call);
  absl::Status failure(const std::string &what, const std::string &why);
  /// "; node H (ranks 2, 3 at A) does not answer: ..." for every other
  /// host whose ranks' liveness ports stay silent, and "; rank 5 on node
  /// H is gone ..." for ranks whose host refuses the connection: every
  /// rank probed at once, 2 s in all.
  std::string unreachableNodes() const;
  /// Why `peer` cannot be the other end of a transfer (`what`), if it can't.
  absl::Status checkPeer(const std::string &what, int64_t peer) const;
  /// Publishes `facts` and compares them with rank 0's (rank 0: with every
  /// other rank's). Store failures throw, as in the rest of the rendezvous.
  absl::Status agree(const JobFacts &facts);

  RankInfo info;
  std::chrono::milliseconds timeout{0};
  MeshSpec mesh_;
  std::unique_ptr<TcpStore> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::Context> world;
  std::map<std::string, std::shared_ptr<gloo::Context>> groups;
  /// Point to point's own full mesh: its slots (the sched tags as they
  /// are) live apart from the collectives', and a receive that times out,
  /// which makes Gloo close every connection of the context it waited on,
  /// leaves the collectives and the barrier that reports failures working.
  std::shared_ptr<gloo::Context> pointToPoint;
  /// A posted send: the bytes it sends from, then Gloo's handle on them
  /// (released first).
  struct PendingSend {
    int64_t peer = 0;
    uint32_t tag = 0;
    size_t size = 0;
    std::unique_ptr<char[]> bytes;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  };
  std::vector<PendingSend> pendingSends;
  /// Per rank: its host's name, its pid and where it answers liveness
  /// probes (address and port; port 0: does not).
  struct Peer {
    std::string host;
    int64_t pid = 0;
    std::string address;
    int port = 0;
  };
  std::vector<Peer> peers;
  /// A TCP port this rank listens on only so that peers on other hosts can
  /// tell, when a collective fails, whether the network to it is up: the
  /// kernel completes their connection and a thread closes it.
  int livenessFd = -1;
  std::thread livenessThread;
  /// The next collective's tag on each context. Per context, not one
  /// count: a group's members issue its collectives in the same order,
  /// but ranks of different pipeline stages issue different numbers of
  /// collectives over their other groups (a stage's tp all-reduces) before
  /// they meet in a group they share (the gradient norm over pp).
  std::map<const gloo::Context *, uint32_t> tags;
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_COMMUNICATOR_H
