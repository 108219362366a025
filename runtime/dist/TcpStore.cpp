//===- TcpStore.cpp - rendezvous key-value store over TCP -----------------===//

#include "runtime/dist/TcpStore.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

#include <arpa/inet.h>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace weft::runtime {
namespace {
/// Moves all `n` bytes with `io` (send or recv), retrying short transfers
/// and interrupts; false if the connection closed or failed.
template <typename Io, typename Pointer>
bool transferAll(Io io, Pointer p, size_t n) {
  while (n > 0) {
    ssize_t k = io(p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool sendAll(int fd, const void *data, size_t n) {
  return transferAll(
      [fd](const char *p, size_t k) { return ::send(fd, p, k, MSG_NOSIGNAL); },
      static_cast<const char *>(data), n);
}

bool recvAll(int fd, void *data, size_t n) {
  return transferAll([fd](char *p, size_t k) { return ::recv(fd, p, k, 0); },
                     static_cast<char *>(data), n);
}

// PyTorch's TCPStore protocol (torch/csrc/distributed/c10d/
// TCPStoreBackend.hpp): a request is a query byte and its fields; integers
// travel as their bytes in host order (little-endian on every host Weft
// runs on), strings and values as a u64 length and the bytes.
enum class Query : uint8_t {
  Validate = 0,
  Set = 1,
  CompareSet = 2,
  Get = 3,
  Add = 4,
  Check = 5,
  Wait = 6,
  GetNumKeys = 7,
  DeleteKey = 8,
  Append = 9,
  MultiGet = 10,
  MultiSet = 11,
  CancelWait = 12,
  Ping = 13,
};
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kReady = 0, kNotReady = 1, kStopWaiting = 0;
// What this server accepts (libuv's TCPStore refuses the same sizes): a
// client sending more is broken, and is disconnected.
constexpr uint64_t kMaxKeyBytes = 8 << 10, kMaxValueBytes = 1ull << 30,
                   kMaxKeys = 1 << 17;

template <typename T> bool sendValue(int fd, T value) {
  return sendAll(fd, &value, sizeof(T));
}

template <typename T> bool recvValue(int fd, T &value) {
  return recvAll(fd, &value, sizeof(T));
}

bool sendBytes(int fd, const std::string &bytes) {
  return sendValue<uint64_t>(fd, bytes.size()) &&
         sendAll(fd, bytes.data(), bytes.size());
}

bool recvBytes(int fd, std::string &bytes, uint64_t limit) {
  uint64_t n = 0;
  if (!recvValue(fd, n) || n > limit)
    return false;
  bytes.resize(n);
  return recvAll(fd, bytes.data(), bytes.size());
}

bool recvKeys(int fd, std::vector<std::string> &keys) {
  uint64_t n = 0;
  if (!recvValue(fd, n) || n > kMaxKeys)
    return false;
  keys.resize(n);
  for (std::string &key : keys)
    if (!recvBytes(fd, key, kMaxKeyBytes))
      return false;
  return true;
}

struct Table {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;

  bool hasAll(const std::vector<std::string> &keys) const {
    for (const std::string &key : keys)
      if (!values.count(key))
        return false;
    return true;
  }
};

/// One client's requests, in order, until it disconnects or sends what
/// this server does not serve (then the connection is closed, as
/// PyTorch's server does).
void serveClient(int fd, Table *table) {
  uint8_t query = 0;
  std::string key, value;
  std::vector<std::string> keys;
  auto served = [&]() -> bool {
    switch (static_cast<Query>(query)) {
    case Query::Validate: {
      uint32_t magic = 0;
      return recvValue(fd, magic) && magic == kValidationMagic;
    }
    case Query::Ping: {
      uint32_t nonce = 0;
      return recvValue(fd, nonce) && sendValue(fd, nonce);
    }
    case Query::Set: {
      if (!recvBytes(fd, key, kMaxKeyBytes) ||
          !recvBytes(fd, value, kMaxValueBytes))
        return false;
      std::lock_guard<std::mutex> lock(table->mutex);
      table->values[key] = value;
      table->changed.notify_all();
      return true;
    }
    case Query::Get: {
      // Clients wait for the key first; a missing one reads as empty, as
      // PyTorch's libuv server answers.
      if (!recvBytes(fd, key, kMaxKeyBytes))
        return false;
      std::string found;
      {
        std::lock_guard<std::mutex> lock(table->mutex);
        auto it = table->values.find(key);
        if (it != table->values.end())
          found = it->second;
      }
      return sendBytes(fd, found);
    }
    case Query::Add: {
      int64_t delta = 0, sum = 0;
      if (!recvBytes(fd, key, kMaxKeyBytes) || !recvValue(fd, delta))
        return false;
      {
        std::lock_guard<std::mutex> lock(table->mutex);
        std::string &stored = table->values[key];
        int64_t before = 0;
        if (!stored.empty() && !absl::SimpleAtoi(stored, &before))
          return false;
        sum = before + delta;
        stored = std::to_string(sum);
        table->changed.notify_all();
      }
      return sendValue(fd, sum);
    }
    case Query::Check: {
      if (!recvKeys(fd, keys))
        return false;
      std::lock_guard<std::mutex> lock(table->mutex);
      return sendValue<uint8_t>(fd, table->hasAll(keys) ? kReady : kNotReady);
    }
    case Query::Wait: {
      if (!recvKeys(fd, keys))
        return false;
      {
        std::unique_lock<std::mutex> lock(table->mutex);
        table->changed.wait(lock, [&] { return table->hasAll(keys); });
      }
      return sendValue<uint8_t>(fd, kStopWaiting);
    }
    default:
      return false;
    }
  };
  while (recvValue(fd, query) && served()) {
  }
  ::close(fd);
}
} // namespace

absl::Status serveTcpStore(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 128) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot serve the rendezvous store on port ", port, ": ",
                     why, " (is MASTER_PORT used by another job?)"));
  }
  // The table and the accept loop live as long as the process: ranks may
  // still look up keys while rank 0 trains.
  auto *table = new Table;
  std::thread([fd, table] {
    for (;;) {
      int client = ::accept(fd, nullptr, nullptr);
      if (client < 0) {
        if (errno == EINTR)
          continue;
        return;
      }
      int on = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      std::thread(serveClient, client, table).detach();
    }
  }).detach();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TcpStore>>
TcpStore::connect(const std::string &host, int port,
                  std::chrono::milliseconds timeout, std::string prefix) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                             &found);
      rc != 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "MASTER_ADDR '", host, "' does not resolve: ", gai_strerror(rc)));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      ::freeaddrinfo(found);
      int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
      // The handshake: one write, as PyTorch's client sends it (its libuv
      // server reads the query byte and the magic number together).
      uint8_t hello[5] = {static_cast<uint8_t>(Query::Validate)};
      std::memcpy(hello + 1, &kValidationMagic, 4);
      if (!sendAll(fd, hello, sizeof(hello))) {
        ::close(fd);
        return absl::UnavailableError(
            absl::StrCat("the rendezvous store at ", host, ":", port,
                         " closed the connection at the handshake"));
      }
      return std::unique_ptr<TcpStore>(
          new TcpStore(fd, timeout, std::move(prefix)));
    }
    why = std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    if (std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(found);
  return absl::DeadlineExceededError(absl::StrCat(
      "no rendezvous store at ", host, ":", port, " after ",
      timeout.count() / 1000.0, " s (", why, "); did rank 0 start?"));
}

TcpStore::~TcpStore() { ::close(fd); }

void TcpStore::lost() const {
  throw gloo::IoException(
      "rendezvous store connection lost (its server, rank 0 or torchrun's "
      "agent, ended?)");
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!sendValue(fd, Query::Set) || !sendBytes(fd, prefix + key) ||
      !sendBytes(fd, std::string(data.begin(), data.end())))
    lost();
}

bool TcpStore::has(const std::vector<std::string> &keys) {
  std::lock_guard<std::mutex> lock(mutex);
  uint8_t ready = kNotReady;
  bool ok = sendValue(fd, Query::Check) && sendValue<uint64_t>(fd, keys.size());
  for (const std::string &key : keys)
    ok = ok && sendBytes(fd, prefix + key);
  if (!ok || !recvValue(fd, ready))
    lost();
  return ready == kReady;
}

std::optional<std::vector<char>> TcpStore::tryGet(const std::string &key) {
  if (!has({key}))
    return std::nullopt;
  std::lock_guard<std::mutex> lock(mutex);
  std::string value;
  if (!sendValue(fd, Query::Get) || !sendBytes(fd, prefix + key) ||
      !recvBytes(fd, value, kMaxValueBytes))
    lost();
  return std::vector<char>(value.begin(), value.end());
}

std::vector<char> TcpStore::get(const std::string &key) {
  wait({key}, timeout);
  return *tryGet(key);
}

void TcpStore::wait(const std::vector<std::string> &keys) {
  wait(keys, timeout);
}

void TcpStore::wait(const std::vector<std::string> &keys,
                    const std::chrono::milliseconds &limit) {
  // CHECK, polled: the server's blocking WAIT would need a CANCEL_WAIT
  // when the time is up.
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (const std::string &key : keys)
    while (!has({key})) {
      if (std::chrono::steady_clock::now() > deadline)
        throw gloo::IoException("rendezvous: timed out waiting for key '" +
                                key + "' (a rank did not start?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

} // namespace weft::runtime
