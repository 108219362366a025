//===- TcpStore.h - rendezvous key-value store over TCP ---------*- C++ -*-===//
//
// Gloo's ranks find each other through a key-value store. The Debian Gloo
// has file, hash and Redis stores but no TCP store, so this is one that
// speaks PyTorch's TCPStore protocol (a query byte, then its fields;
// integers in host order, strings as a u64 length and the bytes; the
// client opens with VALIDATE and a magic number). So the ranks can join
// either store: the one rank 0 serves when weft-run --nproc, mpirun or a
// scheduler starts them (serveTcpStore), or the one torchrun's agent
// already serves on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True). This
// server serves VALIDATE, PING, SET, GET, ADD, CHECK and WAIT and closes a
// connection that sends anything else; the client uses VALIDATE, SET, GET
// and CHECK (waiting polls CHECK, so it can give up at its own timeout).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_RUNTIME_DIST_TCPSTORE_H
#define WEFT_RUNTIME_DIST_TCPSTORE_H

#include "absl/status/statusor.h"
#include "gloo/rendezvous/store.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace weft::runtime {

/// Serves the store on `port` from a background thread for the life of the
/// process. Fails if the port cannot be bound.
absl::Status serveTcpStore(int port);

class TcpStore : public gloo::rendezvous::Store {
public:
  /// Connects to the server, retrying until `timeout` (the server's rank
  /// may start later than this one).
  /// Every key this client reads or writes is `prefix` + key (a namespace
  /// in a store other jobs' or attempts' ranks share).
  static absl::StatusOr<std::unique_ptr<TcpStore>>
  connect(const std::string &host, int port, std::chrono::milliseconds timeout,
          std::string prefix = "");
  ~TcpStore() override;

  // gloo::rendezvous::Store; failures throw gloo::IoException, which is
  // how Gloo's rendezvous expects a store to fail.
  void set(const std::string &key, const std::vector<char> &data) override;
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override;
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

  /// The value of `key` if present, without waiting.
  std::optional<std::vector<char>> tryGet(const std::string &key);
  /// Whether every key of `keys` is present (CHECK).
  bool has(const std::vector<std::string> &keys);

private:
  TcpStore(int fd, std::chrono::milliseconds timeout, std::string prefix)
      : fd(fd), timeout(timeout), prefix(std::move(prefix)) {}
  [[noreturn]] void lost() const;
  int fd;
  std::chrono::milliseconds timeout;
  std::string prefix;
  std::mutex mutex; // One request at a time on the connection.
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_TCPSTORE_H
