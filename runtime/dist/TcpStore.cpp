//===- TcpStore.cpp - rendezvous key-value store over TCP -----------------===//

#include "runtime/dist/TcpStore.h"

#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

#include <arpa/inet.h>
#include <cerrno>
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

bool sendBytes(int fd, const std::string &bytes) {
  uint32_t n = htonl(static_cast<uint32_t>(bytes.size()));
  return sendAll(fd, &n, 4) && sendAll(fd, bytes.data(), bytes.size());
}

bool recvBytes(int fd, std::string &bytes) {
  uint32_t n = 0;
  if (!recvAll(fd, &n, 4))
    return false;
  bytes.resize(ntohl(n));
  return recvAll(fd, bytes.data(), bytes.size());
}

struct Table {
  std::mutex mutex;
  std::map<std::string, std::string> values;
};

void serveClient(int fd, Table *table) {
  char op = 0;
  std::string key, value;
  while (recvAll(fd, &op, 1) && recvBytes(fd, key)) {
    if (op == 'S') {
      if (!recvBytes(fd, value))
        break;
      {
        std::lock_guard<std::mutex> lock(table->mutex);
        table->values[key] = value;
      }
      char ack = 1;
      if (!sendAll(fd, &ack, 1))
        break;
    } else if (op == 'G') {
      std::lock_guard<std::mutex> lock(table->mutex);
      auto it = table->values.find(key);
      char found = it != table->values.end();
      if (!sendAll(fd, &found, 1) || (found && !sendBytes(fd, it->second)))
        break;
    } else {
      break;
    }
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
                  std::chrono::milliseconds timeout) {
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
      return std::unique_ptr<TcpStore>(new TcpStore(fd, timeout));
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

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  std::lock_guard<std::mutex> lock(mutex);
  char op = 'S', ack = 0;
  if (!sendAll(fd, &op, 1) || !sendBytes(fd, key) ||
      !sendBytes(fd, std::string(data.begin(), data.end())) ||
      !recvAll(fd, &ack, 1))
    throw gloo::IoException("rendezvous store connection lost (rank 0 died?)");
}

std::optional<std::vector<char>> TcpStore::tryGet(const std::string &key) {
  std::lock_guard<std::mutex> lock(mutex);
  char op = 'G', found = 0;
  std::string value;
  if (!sendAll(fd, &op, 1) || !sendBytes(fd, key) || !recvAll(fd, &found, 1) ||
      (found && !recvBytes(fd, value)))
    throw gloo::IoException("rendezvous store connection lost (rank 0 died?)");
  if (!found)
    return std::nullopt;
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
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (const std::string &key : keys)
    while (!tryGet(key)) {
      if (std::chrono::steady_clock::now() > deadline)
        throw gloo::IoException("rendezvous: timed out waiting for key '" +
                                key + "' (a rank did not start?)");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

} // namespace weft::runtime
