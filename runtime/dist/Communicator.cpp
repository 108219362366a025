//===- Communicator.cpp - CPU collectives over Gloo -----------------------===//

#include "runtime/dist/Communicator.h"

#include "runtime/dist/TcpStore.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/alltoall.h"
#include "gloo/alltoallv.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/unbound_buffer.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace weft::runtime {
namespace {
std::string hostName() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

std::string keyOf(const std::vector<std::string> &axes) {
  return absl::StrJoin(axes, ",");
}

/// Whether process `pid` exists and has not exited (a zombie has).
bool isRunning(int64_t pid) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0)
    return pid <= 0 || errno != ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ||
         text[paren + 2] != 'Z';
}

bool isLoopback(const std::string &host) {
  return host == "localhost" || host.rfind("127.", 0) == 0;
}

/// The address of this host's interface that routes to `host` (what a
/// UDP socket connected there is bound to; nothing is sent), or "".
std::string addressTowards(const std::string &host) {
  addrinfo hints = {}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found)
    return "";
  std::string address;
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in local = {};
  socklen_t size = sizeof(local);
  char text[INET_ADDRSTRLEN] = {};
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &size) == 0 &&
      ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)))
    address = text;
  if (fd >= 0)
    ::close(fd);
  ::freeaddrinfo(found);
  return address;
}

/// A socket listening on `host` (any free port), whose port goes into
/// `port`, or -1. Peers connect to it only to see that this host answers.
int listenForProbes(const std::string &host, int &port) {
  addrinfo hints = {}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(host.c_str(), "0", &hints, &found) != 0 || !found)
    return -1;
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in bound = {};
  socklen_t size = sizeof(bound);
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 &&
            ::listen(fd, 64) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &size) == 0;
  ::freeaddrinfo(found);
  if (!ok) {
    if (fd >= 0)
      ::close(fd);
    return -1;
  }
  port = ntohs(bound.sin_port);
  return fd;
}

/// How a probe of a peer's liveness port ended.
enum class Probe { Answered, Refused, Silent };

/// Connects to every (address, port) at once and waits at most `wait` for
/// them all: answered, refused (the host is up, nothing listens: the rank
/// is gone) or silent (no answer: the host or the network to it is down).
std::vector<Probe>
probeAll(const std::vector<std::pair<std::string, int>> &targets,
         std::chrono::milliseconds wait) {
  std::vector<Probe> result(targets.size(), Probe::Silent);
  std::vector<pollfd> pending;
  std::vector<size_t> which;
  for (size_t i = 0; i < targets.size(); ++i) {
    addrinfo hints = {}, *found = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(targets[i].first.c_str(),
                      std::to_string(targets[i].second).c_str(), &hints,
                      &found) != 0 ||
        !found)
      continue;
    int fd = ::socket(found->ai_family,
                      SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      if (::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
        result[i] = Probe::Answered;
        ::close(fd);
      } else if (errno == EINPROGRESS) {
        pending.push_back({fd, POLLOUT, 0});
        which.push_back(i);
      } else {
        result[i] = errno == ECONNREFUSED ? Probe::Refused : Probe::Silent;
        ::close(fd);
      }
    }
    ::freeaddrinfo(found);
  }
  auto deadline = std::chrono::steady_clock::now() + wait;
  size_t open = pending.size();
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || ::poll(pending.data(), pending.size(),
                                    static_cast<int>(left.count())) <= 0)
      break;
    for (size_t k = 0; k < pending.size(); ++k) {
      if (pending[k].fd < 0 || pending[k].revents == 0)
        continue;
      int error = 0;
      socklen_t size = sizeof(error);
      ::getsockopt(pending[k].fd, SOL_SOCKET, SO_ERROR, &error, &size);
      result[which[k]] = error == 0              ? Probe::Answered
                         : error == ECONNREFUSED ? Probe::Refused
                                                 : Probe::Silent;
      ::close(pending[k].fd);
      pending[k].fd = -1; // poll skips it from now on.
      --open;
    }
  }
  for (pollfd &p : pending)
    if (p.fd >= 0)
      ::close(p.fd);
  return result;
}

/// Facts as the store holds them: one `what=value` line each, the value
/// C-escaped so no line break or '=' in it can split a line.
std::vector<char> encodeFacts(const JobFacts &facts) {
  std::string text;
  for (const auto &[what, value] : facts)
    absl::StrAppend(&text, what, "=", absl::CEscape(value), "\n");
  return std::vector<char>(text.begin(), text.end());
}

JobFacts decodeFacts(const std::vector<char> &bytes) {
  JobFacts facts;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(bytes.data(), bytes.size()), '\n',
                      absl::SkipEmpty())) {
    size_t eq = line.find('=');
    std::string value;
    if (eq == absl::string_view::npos ||
        !absl::CUnescape(line.substr(eq + 1), &value))
      value = std::string(line);
    facts.emplace_back(std::string(line.substr(0, eq)), value);
  }
  return facts;
}
} // namespace

absl::Status compareJobFacts(const JobFacts &mine, int64_t me,
                             const JobFacts &theirs, int64_t peer) {
  std::map<std::string, std::string> peerFacts(theirs.begin(), theirs.end());
  for (const auto &[what, value] : mine) {
    auto it = peerFacts.find(what);
    std::string other = it == peerFacts.end() ? "(none)" : it->second;
    if (other != value)
      return absl::FailedPreconditionError(absl::StrCat(
          "ranks ", std::min(me, peer), " and ", std::max(me, peer),
          " were started differently: ", what, " is '",
          me < peer ? value : other, "' on rank ", std::min(me, peer), " but '",
          me < peer ? other : value, "' on rank ", std::max(me, peer),
          "; start every rank with the same bundle and flags"));
  }
  return absl::OkStatus();
}

std::string firstSlurmHost(const std::string &nodelist) {
  // The first entry: up to a comma outside brackets.
  size_t end = 0;
  for (int depth = 0; end < nodelist.size(); ++end) {
    char c = nodelist[end];
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c == ',' && depth == 0)
      break;
  }
  std::string entry = nodelist.substr(0, end);
  size_t open = entry.find('['), close = entry.find(']');
  if (open == std::string::npos)
    return entry;
  if (close == std::string::npos || close < open)
    return "";
  // The bracket's first number (zero padding kept): "01" of "[01-04,07]".
  std::string ranges = entry.substr(open + 1, close - open - 1);
  size_t stop = ranges.find_first_of(",-");
  return entry.substr(0, open) + ranges.substr(0, stop) +
         entry.substr(close + 1);
}

absl::StatusOr<RankInfo> rankFromEnvironment() {
  RankInfo info;
  // mpirun and srun name the rank their own way; RANK (torchrun, a
  // scheduler's script, weft-run --nproc) comes first. Theirs are copied
  // into RANK, WORLD_SIZE and LOCAL_RANK (and Slurm's first node into
  // MASTER_ADDR), so the process sees one convention from here on.
  struct Launcher {
    const char *rank, *size, *local;
  };
  for (Launcher l : {Launcher{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                              "OMPI_COMM_WORLD_LOCAL_RANK"},
                     Launcher{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}})
    if (!std::getenv("RANK") && std::getenv(l.rank) && std::getenv(l.size)) {
      ::setenv("RANK", std::getenv(l.rank), 1);
      ::setenv("WORLD_SIZE", std::getenv(l.size), 1);
      if (const char *local = std::getenv(l.local))
        ::setenv("LOCAL_RANK", local, 1);
      const char *nodes = std::getenv("SLURM_JOB_NODELIST");
      if (l.rank == std::string("SLURM_PROCID") &&
          !std::getenv("MASTER_ADDR") && nodes &&
          !firstSlurmHost(nodes).empty())
        ::setenv("MASTER_ADDR", firstSlurmHost(nodes).c_str(), 1);
    }
  auto read = [](const char *name, int64_t &out) -> absl::Status {
    const char *text = std::getenv(name);
    if (!text)
      return absl::OkStatus();
    if (!absl::SimpleAtoi(text, &out) || out < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(name, "='", text, "' is not a non-negative integer"));
    return absl::OkStatus();
  };
  int64_t port = info.masterPort;
  for (auto [name, out] :
       std::initializer_list<std::pair<const char *, int64_t *>>{
           {"RANK", &info.rank},
           {"WORLD_SIZE", &info.worldSize},
           {"LOCAL_RANK", &info.localRank},
           {"MASTER_PORT", &port},
           {"TORCHELASTIC_RESTART_COUNT", &info.restartCount}})
    if (absl::Status s = read(name, *out); !s.ok())
      return s;
  // torchrun and schedulers set both; one alone is a launch gone wrong
  // (this rank would wait for the others, or be taken for rank 0).
  if (!std::getenv("RANK") != !std::getenv("WORLD_SIZE"))
    return absl::InvalidArgumentError(
        std::getenv("RANK")
            ? "RANK is set but WORLD_SIZE is not: set both (torchrun does)"
            : "WORLD_SIZE is set but RANK is not: set both (torchrun does)");
  if (info.worldSize < 1)
    return absl::InvalidArgumentError("WORLD_SIZE must be at least 1");
  if (info.rank >= info.worldSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "RANK=", info.rank, " is not below WORLD_SIZE=", info.worldSize));
  if (port <= 0 || port > 65535)
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT=", port, " is not a TCP port"));
  info.masterPort = static_cast<int>(port);
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    info.masterAddr = addr;
  // torchrun writes Python's str(True).
  if (const char *agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE"))
    info.agentStore = std::string(agent) == "True";
  return info;
}

absl::StatusOr<std::unique_ptr<Communicator>>
Communicator::create(const RankInfo &info, std::chrono::milliseconds timeout,
                     const JobFacts &facts) {
  std::unique_ptr<Communicator> c(new Communicator);
  c->info = info;
  c->timeout = timeout;
  // Under torchrun's agent store the keys of each attempt are apart (its
  // restarts are fresh process groups in a store that lives on).
  if (info.rank == 0 && !info.agentStore)
    if (absl::Status s = serveTcpStore(info.masterPort); !s.ok())
      return s;
  auto store = TcpStore::connect(
      info.masterAddr, info.masterPort, timeout,
      info.agentStore ? absl::StrCat("/weft/attempt_", info.restartCount, "/")
                      : std::string("/weft/"));
  if (!store.ok())
    return store.status();
  c->store = std::move(*store);
  try {
    // First, before any rank waits on a peer that may run something else.
    JobFacts all = facts;
    all.emplace_back("WORLD_SIZE", std::to_string(info.worldSize));
    if (absl::Status s = c->agree(all); !s.ok())
      return s;
    gloo::transport::tcp::attr attr;
    // Bind where the peers can reach us: loopback for a local job, else
    // the address of the interface that routes to the store's host (not
    // the host's name, which /etc/hosts often maps to loopback: 127.0.1.1
    // on a default Debian install); WEFT_GLOO_HOST
    // overrides, e.g. for a specific NIC.
    if (const char *host = std::getenv("WEFT_GLOO_HOST"); host && *host)
      attr.hostname = host;
    else if (isLoopback(info.masterAddr))
      attr.hostname = "127.0.0.1";
    else if (std::string towards = addressTowards(info.masterAddr);
             !towards.empty())
      attr.hostname = towards;
    else
      attr.hostname = hostName();
    c->device = gloo::transport::tcp::CreateDevice(attr);
    int port = 0;
    c->livenessFd = listenForProbes(attr.hostname, port);
    if (c->livenessFd >= 0)
      c->livenessThread = std::thread([fd = c->livenessFd] {
        // Until the destructor shuts the socket down.
        for (int peer; (peer = ::accept(fd, nullptr, nullptr)) >= 0 ||
                       errno == EINTR || errno == ECONNABORTED;)
          if (peer >= 0)
            ::close(peer);
      });
    std::string me = absl::StrCat(hostName(), " ", ::getpid(), " ",
                                  attr.hostname, " ", port);
    c->store->set(absl::StrCat("pid/", info.rank),
                  std::vector<char>(me.begin(), me.end()));
    for (int64_t r = 0; r < info.worldSize; ++r) {
      std::vector<char> v = c->store->get(absl::StrCat("pid/", r));
      std::vector<std::string> fields =
          absl::StrSplit(std::string(v.begin(), v.end()), ' ');
      Peer peer;
      peer.host = fields[0];
      if (fields.size() == 4) {
        (void)absl::SimpleAtoi(fields[1], &peer.pid);
        peer.address = fields[2];
        (void)absl::SimpleAtoi(fields[3], &peer.port);
      }
      c->peers.push_back(std::move(peer));
    }
    c->world = c->fullMesh("world", info.rank, info.worldSize);
    // Opened with the world, not at the first transfer: the first transfers
    // of different ranks come at different points of their programs, and a
    // rank opening it would wait for ranks that wait for it elsewhere.
    c->pointToPoint = c->fullMesh("p2p", info.rank, info.worldSize);
  } catch (const std::exception &e) {
    return c->failure("joining the job", e.what());
  }
  return c;
}

Communicator::~Communicator() {
  if (livenessFd >= 0) {
    ::shutdown(livenessFd, SHUT_RDWR);
    if (livenessThread.joinable())
      livenessThread.join();
    ::close(livenessFd);
  }
}

std::string Communicator::unreachableNodes() const {
  // Every rank on another host at once, 2 s in all.
  std::string me = hostName();
  std::vector<std::pair<std::string, int>> targets;
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < peers.size(); ++r)
    if (peers[r].host != me && peers[r].port > 0) {
      targets.push_back({peers[r].address, peers[r].port});
      ranks.push_back(static_cast<int64_t>(r));
    }
  std::vector<Probe> probes =
      probeAll(targets, std::chrono::milliseconds(2000));
  // Per host: its silent ranks (the node or the network to it) and its
  // refusing ones (the host answers; the rank's process is gone).
  std::map<std::string, std::vector<int64_t>> silent, refused;
  std::map<std::string, std::string> addressOf;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const std::string &host = peers[ranks[i]].host;
    addressOf[host] = peers[ranks[i]].address;
    if (probes[i] == Probe::Silent)
      silent[host].push_back(ranks[i]);
    if (probes[i] == Probe::Refused)
      refused[host].push_back(ranks[i]);
  }
  auto list = [](const std::vector<int64_t> &r) {
    return absl::StrCat("rank", r.size() == 1 ? " " : "s ",
                        absl::StrJoin(r, ", "));
  };
  std::string out;
  for (const auto &[host, r] : silent)
    absl::StrAppend(&out, "; node ", host, " (", list(r), " at ",
                    addressOf[host],
                    ") does not answer: the network to it is down or it is "
                    "gone");
  for (const auto &[host, r] : refused)
    absl::StrAppend(&out, "; ", list(r), " on node ", host,
                    r.size() == 1 ? " is" : " are",
                    " gone (the node answers, the rank does not)");
  return out;
}

std::shared_ptr<gloo::Context>
Communicator::fullMesh(const std::string &prefix, int64_t rank, int64_t size) {
  auto context = std::make_shared<gloo::rendezvous::Context>(
      static_cast<int>(rank), static_cast<int>(size));
  context->setTimeout(timeout);
  gloo::rendezvous::PrefixStore prefixed(prefix, *store);
  context->connectFullMesh(prefixed, device);
  return context;
}

absl::Status Communicator::agree(const JobFacts &facts) {
  store->set(absl::StrCat("job/", info.rank), encodeFacts(facts));
  // Rank 0 hears from every rank; the others from rank 0, so each side of
  // a disagreement reports it (a rank that never publishes times out).
  // Rank 0 serves the store and exits on a disagreement, so it waits until
  // every rank has read its facts ("job/<r>/read"): otherwise a rank still
  // reading them would see the store vanish and could only say so.
  if (info.rank != 0) {
    absl::Status s =
        compareJobFacts(facts, info.rank, decodeFacts(store->get("job/0")), 0);
    store->set(absl::StrCat("job/", info.rank, "/read"), std::vector<char>{1});
    return s;
  }
  absl::Status first = absl::OkStatus();
  for (int64_t r = 1; r < info.worldSize; ++r)
    if (absl::Status s = compareJobFacts(
            facts, 0, decodeFacts(store->get(absl::StrCat("job/", r))), r);
        !s.ok() && first.ok())
      first = s;
  for (int64_t r = 1; r < info.worldSize; ++r)
    store->get(absl::StrCat("job/", r, "/read"));
  return first;
}

absl::Status Communicator::failure(const std::string &what,
                                   const std::string &why) {
  // A peer that died shows up as a closed connection or a timeout; name it
  // when it ran on this host. Its sockets close while it exits, so look
  // again shortly if it still seems alive.
  std::vector<std::string> dead;
  std::string host = hostName();
  for (int attempt = 0; attempt < 3 && dead.empty(); ++attempt) {
    if (attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (size_t r = 0; r < peers.size(); ++r)
      if (peers[r].host == host && !isRunning(peers[r].pid))
        dead.push_back(absl::StrCat("rank ", r, " (pid ", peers[r].pid, ")"));
  }
  // Else a rank on another host may be cut off: say which node.
  std::string who = dead.empty()
                        ? unreachableNodes()
                        : absl::StrCat("; ", absl::StrJoin(dead, ", "),
                                       dead.size() == 1 ? " is" : " are",
                                       " no longer running");
  return absl::UnavailableError(absl::StrCat(what, " failed: ", why, who));
}

absl::Status
Communicator::setMesh(const MeshSpec &mesh,
                      const std::vector<std::vector<std::string>> &wanted) {
  if (mesh.size() != info.worldSize) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      parts.push_back(absl::StrCat(mesh.axes[i], "=", mesh.sizes[i]));
    return absl::InvalidArgumentError(absl::StrCat(
        "the bundle is placed on ", mesh.size(), " ranks (",
        absl::StrJoin(parts, ","), ") but this job has ", info.worldSize,
        "; launch it with weft-run --nproc ", mesh.size()));
  }
  mesh_ = mesh;
  try {
    for (const std::vector<std::string> &axes : wanted) {
      std::string key = keyOf(axes);
      if (groups.count(key))
        continue;
      std::vector<int64_t> members = mesh.groupMembers(info.rank, axes);
      // Members agree on the group's first rank, which names the group.
      groups[key] = fullMesh(absl::StrCat("group/", key, "/", members.front()),
                             mesh.groupRank(info.rank, axes),
                             static_cast<int64_t>(members.size()));
    }
  } catch (const std::exception &e) {
    return failure("opening communicators", e.what());
  }
  return absl::OkStatus();
}

std::shared_ptr<gloo::Context>
Communicator::group(const std::vector<std::string> &axes) {
  auto it = groups.find(keyOf(axes));
  return it == groups.end() ? nullptr : it->second;
}

absl::Status Communicator::collective(
    const std::string &what, const std::vector<std::string> &axes,
    const std::function<void(const std::shared_ptr<gloo::Context> &, uint32_t)>
        &call) {
  std::shared_ptr<gloo::Context> context = axes.empty() ? world : group(axes);
  std::string label = what + " over [" + keyOf(axes) + "]";
  if (!context)
    return absl::InternalError(label + ": the group was never opened");
  try {
    call(context, tags[context.get()]++);
  } catch (const std::exception &e) {
    return failure(label, e.what());
  }
  return absl::OkStatus();
}

absl::Status Communicator::reduceScatter(const std::vector<std::string> &axes,
                                         float *blocks, float *out,
                                         size_t count) {
  if (absl::Status s = allReduce(axes, blocks, count * mesh_.groupSize(axes));
      !s.ok())
    return s;
  std::memcpy(out, blocks + mesh_.groupRank(rank(), axes) * count,
              count * sizeof(float));
  return absl::OkStatus();
}

absl::Status Communicator::allReduce(const std::vector<std::string> &axes,
                                     float *data, size_t count, bool max) {
  return collective("all-reduce", axes, [&](const auto &context, uint32_t t) {
    using Reduce = void (*)(void *, const void *, const void *, size_t);
    gloo::AllreduceOptions opts(context);
    opts.setOutput(data, count);
    opts.setReduceFunction(max ? static_cast<Reduce>(&gloo::max<float>)
                               : static_cast<Reduce>(&gloo::sum<float>));
    opts.setTag(t);
    opts.setTimeout(timeout);
    gloo::allreduce(opts);
  });
}

template <typename T>
absl::Status Communicator::allGatherOf(const std::vector<std::string> &axes,
                                       const T *in, T *out, size_t count) {
  return collective("all-gather", axes, [&](const auto &context, uint32_t t) {
    gloo::AllgatherOptions opts(context);
    opts.setInput(const_cast<T *>(in), count);
    opts.setOutput(out, count * context->size);
    opts.setTag(t);
    opts.setTimeout(timeout);
    gloo::allgather(opts);
  });
}

absl::Status Communicator::allGather(const std::vector<std::string> &axes,
                                     const float *in, float *out,
                                     size_t count) {
  return allGatherOf(axes, in, out, count);
}

absl::Status Communicator::allGather(const std::vector<std::string> &axes,
                                     const int32_t *in, int32_t *out,
                                     size_t count) {
  return allGatherOf(axes, in, out, count);
}

absl::Status Communicator::allGather(const std::vector<std::string> &axes,
                                     const uint8_t *in, uint8_t *out,
                                     size_t count) {
  return allGatherOf(axes, in, out, count);
}

template <typename T>
absl::Status Communicator::allToAllOf(const std::vector<std::string> &axes,
                                      const T *in, T *out, size_t count) {
  return collective("all-to-all", axes, [&](const auto &context, uint32_t t) {
    gloo::AlltoallOptions opts(context);
    size_t total = count * static_cast<size_t>(context->size);
    opts.setInput(const_cast<T *>(in), total);
    opts.setOutput(out, total);
    opts.setTag(t);
    opts.setTimeout(timeout);
    gloo::alltoall(opts);
  });
}

absl::Status Communicator::allToAll(const std::vector<std::string> &axes,
                                    const float *in, float *out, size_t count) {
  return allToAllOf(axes, in, out, count);
}

absl::Status Communicator::allToAll(const std::vector<std::string> &axes,
                                    const int32_t *in, int32_t *out,
                                    size_t count) {
  return allToAllOf(axes, in, out, count);
}

absl::Status Communicator::allToAllv(const std::vector<std::string> &axes,
                                     const float *in,
                                     const std::vector<int64_t> &sendCounts,
                                     float *out,
                                     const std::vector<int64_t> &recvCounts) {
  return collective("all-to-all-v", axes, [&](const auto &context, uint32_t t) {
    gloo::AlltoallvOptions opts(context);
    opts.setInput(const_cast<float *>(in), sendCounts);
    opts.setOutput(out, recvCounts);
    opts.setTag(t);
    opts.setTimeout(timeout);
    gloo::alltoallv(opts);
  });
}

absl::Status Communicator::barrier() {
  return collective("barrier", {}, [&](const auto &context, uint32_t t) {
    gloo::BarrierOptions opts(context);
    opts.setTag(t);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  });
}

absl::Status Communicator::checkPeer(const std::string &what,
                                     int64_t peer) const {
  if (peer == info.rank)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": rank ", peer, " is this rank"));
  if (peer < 0 || peer >= info.worldSize)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": there is no rank ", peer, " in a job of ", info.worldSize));
  return absl::OkStatus();
}

absl::Status Communicator::send(int64_t peer, uint32_t tag, const void *data,
                                size_t bytes) {
  std::string what = absl::StrCat("send of ", bytes, " bytes to rank ", peer,
                                  " (tag ", tag, ")");
  if (absl::Status s = checkPeer(what, peer); !s.ok())
    return s;
  // The receiver's buffer is as empty (their types match): nothing to move.
  if (bytes == 0)
    return absl::OkStatus();
  PendingSend pending{peer, tag, bytes,
                      std::unique_ptr<char[]>(new char[bytes]), nullptr};
  std::memcpy(pending.bytes.get(), data, bytes);
  try {
    pending.buffer =
        pointToPoint->createUnboundBuffer(pending.bytes.get(), bytes);
    pending.buffer->send(static_cast<int>(peer), tag);
  } catch (const std::exception &e) {
    return failure(what, e.what());
  }
  pendingSends.push_back(std::move(pending));
  return absl::OkStatus();
}

absl::Status Communicator::recv(int64_t peer, uint32_t tag, void *data,
                                size_t bytes) {
  std::string what = absl::StrCat("receive of ", bytes, " bytes from rank ",
                                  peer, " (tag ", tag, ")");
  if (absl::Status s = checkPeer(what, peer); !s.ok())
    return s;
  if (bytes == 0)
    return absl::OkStatus();
  try {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer =
        pointToPoint->createUnboundBuffer(data, bytes);
    buffer->recv(static_cast<int>(peer), tag);
    // Gloo throws on a timeout or a closed connection; false is an abort,
    // which nothing here asks for.
    if (!buffer->waitRecv(timeout))
      return failure(what, "Gloo aborted the wait");
  } catch (const std::exception &e) {
    return failure(what, e.what());
  }
  return absl::OkStatus();
}

absl::Status Communicator::waitSends() {
  std::vector<PendingSend> sends = std::move(pendingSends);
  pendingSends.clear();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (PendingSend &s : sends) {
    std::string what = absl::StrCat("rank ", s.peer, " receiving the ", s.size,
                                    " bytes sent to it with tag ", s.tag);
    // Never Gloo's "unset" -1 ms (its default timeout); 1 ms past the
    // deadline still reports a send that has completed.
    auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now()),
                         std::chrono::milliseconds(1));
    try {
      if (!s.buffer->waitSend(left))
        return failure(what, "Gloo aborted the wait");
    } catch (const std::exception &e) {
      return failure(what, e.what());
    }
  }
  return absl::OkStatus();
}

} // namespace weft::runtime
