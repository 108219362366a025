//===- Nccl.cpp - a placed bundle's collectives through NCCL --------------===//

#include "runtime/gpu/Nccl.h"

#include "runtime/gpu/DynamicLibrary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <cstring>

namespace weft::runtime {

// NCCL's few types and constants, with nccl.h's values, so building needs
// no NCCL headers.
using ncclResult = int;
struct NcclId {
  char internal[128];
};
constexpr int kNcclInt8 = 0, kNcclFloat32 = 7, kNcclSum = 0, kNcclMax = 2;

struct NcclLibrary {
  DynamicLibrary library;
  ncclResult (*getUniqueId)(NcclId *);
  ncclResult (*commInitRank)(void **, int, NcclId, int);
  ncclResult (*commDestroy)(void *);
  ncclResult (*allReduce)(const void *, void *, size_t, int, int, void *,
                          void *);
  ncclResult (*allGather)(const void *, void *, size_t, int, void *, void *);
  ncclResult (*reduceScatter)(const void *, void *, size_t, int, int, void *,
                              void *);
  ncclResult (*send)(const void *, size_t, int, int, void *, void *);
  ncclResult (*recv)(void *, size_t, int, int, void *, void *);
  ncclResult (*groupStart)();
  ncclResult (*groupEnd)();
  ncclResult (*commCount)(void *, int *);
  ncclResult (*commUserRank)(void *, int *);
  const char *(*errorString)(ncclResult);
};

absl::Status NcclCollectives::check(int result, const char *what) const {
  if (result == 0)
    return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "NCCL ", what, " failed: ", lib->errorString(result), " (", result, ")"));
}

absl::StatusOr<std::unique_ptr<NcclCollectives>>
NcclCollectives::create(Communicator &comm,
                        const std::vector<std::vector<std::string>> &groups) {
  std::unique_ptr<NcclCollectives> nccl(new NcclCollectives);
  nccl->lib = std::make_unique<NcclLibrary>();
  NcclLibrary &l = *nccl->lib;
  if (!l.library.open({"libnccl.so.2", "libnccl.so"}))
    return absl::UnavailableError(
        "NCCL is not installed (libnccl.so.2); placed bundles on GPUs run "
        "their collectives through it: install it or add it to "
        "LD_LIBRARY_PATH");
  DynamicLibrary &d = l.library;
  d.bind(l.getUniqueId, "ncclGetUniqueId");
  d.bind(l.commInitRank, "ncclCommInitRank");
  d.bind(l.commDestroy, "ncclCommDestroy");
  d.bind(l.allReduce, "ncclAllReduce");
  d.bind(l.allGather, "ncclAllGather");
  d.bind(l.reduceScatter, "ncclReduceScatter");
  d.bind(l.send, "ncclSend");
  d.bind(l.recv, "ncclRecv");
  d.bind(l.groupStart, "ncclGroupStart");
  d.bind(l.groupEnd, "ncclGroupEnd");
  d.bind(l.commCount, "ncclCommCount");
  d.bind(l.commUserRank, "ncclCommUserRank");
  d.bind(l.errorString, "ncclGetErrorString");
  if (!d.allBound())
    return absl::UnavailableError("libnccl lacks an entry point Weft needs");
  const MeshSpec &mesh = comm.mesh();
  for (const std::vector<std::string> &axes : groups) {
    if (nccl->comms.count(axes))
      continue;
    int64_t size = mesh.groupSize(axes), me = mesh.groupRank(comm.rank(), axes);
    // The first member's id reaches the group through a Gloo all-gather
    // (bytes carried as floats: nothing adds them).
    static_assert(sizeof(NcclId) % sizeof(float) == 0);
    constexpr size_t kWords = sizeof(NcclId) / sizeof(float);
    NcclId id{};
    if (me == 0)
      if (absl::Status s = nccl->check(l.getUniqueId(&id), "ncclGetUniqueId");
          !s.ok())
        return s;
    std::vector<float> mine(kWords), all(kWords * size);
    std::memcpy(mine.data(), &id, sizeof(id));
    if (absl::Status s = comm.allGather(axes, mine.data(), all.data(), kWords);
        !s.ok())
      return s;
    std::memcpy(&id, all.data(), sizeof(id));
    void *handle = nullptr;
    if (absl::Status s =
            nccl->check(l.commInitRank(&handle, static_cast<int>(size), id,
                                       static_cast<int>(me)),
                        "ncclCommInitRank");
        !s.ok())
      return absl::Status(s.code(),
                          absl::StrCat(s.message(), " for the group of axes ",
                                       absl::StrJoin(axes, ",")));
    nccl->comms[axes] = handle;
  }
  return nccl;
}

NcclCollectives::~NcclCollectives() {
  for (auto &[axes, handle] : comms)
    lib->commDestroy(handle);
}

absl::StatusOr<void *>
NcclCollectives::comm(const std::vector<std::string> &axes) const {
  auto it = comms.find(axes);
  if (it == comms.end())
    return absl::FailedPreconditionError(
        absl::StrCat("no NCCL communicator for the group of axes ",
                     absl::StrJoin(axes, ",")));
  return it->second;
}

absl::Status NcclCollectives::allReduce(const std::vector<std::string> &axes,
                                        uint64_t data, size_t count, bool max,
                                        void *stream) {
  absl::StatusOr<void *> c = comm(axes);
  if (!c.ok())
    return c.status();
  auto *p = reinterpret_cast<void *>(data);
  return check(lib->allReduce(p, p, count, kNcclFloat32,
                              max ? kNcclMax : kNcclSum, *c, stream),
               "all-reduce");
}

absl::Status NcclCollectives::allGather(const std::vector<std::string> &axes,
                                        uint64_t in, uint64_t out, size_t count,
                                        void *stream) {
  absl::StatusOr<void *> c = comm(axes);
  if (!c.ok())
    return c.status();
  return check(lib->allGather(reinterpret_cast<const void *>(in),
                              reinterpret_cast<void *>(out), count,
                              kNcclFloat32, *c, stream),
               "all-gather");
}

absl::Status
NcclCollectives::reduceScatter(const std::vector<std::string> &axes,
                               uint64_t in, uint64_t out, size_t count,
                               void *stream) {
  absl::StatusOr<void *> c = comm(axes);
  if (!c.ok())
    return c.status();
  return check(lib->reduceScatter(reinterpret_cast<const void *>(in),
                                  reinterpret_cast<void *>(out), count,
                                  kNcclFloat32, kNcclSum, *c, stream),
               "reduce-scatter");
}

absl::Status NcclCollectives::allToAll(const std::vector<std::string> &axes,
                                       uint64_t in, uint64_t out, size_t count,
                                       void *stream) {
  absl::StatusOr<void *> c = comm(axes);
  if (!c.ok())
    return c.status();
  int members = 0;
  if (absl::Status s = check(lib->commCount(*c, &members), "comm count");
      !s.ok())
    return s;
  // NCCL has no all-to-all of its own: one send and one receive per peer,
  // grouped so they progress together (and cannot deadlock on ordering).
  size_t bytes = count * sizeof(float);
  if (absl::Status s = check(lib->groupStart(), "group start"); !s.ok())
    return s;
  absl::Status status = absl::OkStatus();
  for (int peer = 0; peer < members && status.ok(); ++peer) {
    status = check(lib->send(reinterpret_cast<const void *>(in + peer * bytes),
                             count, kNcclFloat32, peer, *c, stream),
                   "send");
    if (status.ok())
      status = check(lib->recv(reinterpret_cast<void *>(out + peer * bytes),
                               count, kNcclFloat32, peer, *c, stream),
                     "receive");
  }
  absl::Status end = check(lib->groupEnd(), "group end");
  return status.ok() ? end : status;
}

absl::Status NcclCollectives::ringShift(const std::string &axis, int64_t delta,
                                        int64_t /*tag*/, uint64_t in,
                                        uint64_t out, size_t bytes,
                                        void *stream) {
  absl::StatusOr<void *> c = comm({axis});
  if (!c.ok())
    return c.status();
  int members = 0, me = 0;
  if (absl::Status s = check(lib->commCount(*c, &members), "comm count");
      !s.ok())
    return s;
  if (absl::Status s = check(lib->commUserRank(*c, &me), "comm rank"); !s.ok())
    return s;
  auto member = [&](int64_t offset) {
    return static_cast<int>(((me + offset) % members + members) % members);
  };
  // NCCL matches point-to-point in order, so no tag is needed; the send
  // and the receive go in one group, so a ring of them progresses together.
  if (absl::Status s = check(lib->groupStart(), "group start"); !s.ok())
    return s;
  absl::Status status =
      check(lib->send(reinterpret_cast<const void *>(in), bytes, kNcclInt8,
                      member(delta), *c, stream),
            "send");
  if (status.ok())
    status = check(lib->recv(reinterpret_cast<void *>(out), bytes, kNcclInt8,
                             member(-delta), *c, stream),
                   "receive");
  absl::Status end = check(lib->groupEnd(), "group end");
  return status.ok() ? end : status;
}

} // namespace weft::runtime
