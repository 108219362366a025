//===- TcpStore.h - rendezvous key-value store over TCP ---------*- C++ -*-===//
//
// Gloo's ranks find each other through a key-value store. The Debian Gloo
// has file, hash and Redis stores but no TCP store, so this is one, in the
// shape torchrun uses: rank 0 serves it at MASTER_ADDR:MASTER_PORT, every
// rank (rank 0 too) is a client. Requests are length-prefixed frames:
//   'S' key value -> ack       'G' key -> found? value
// Waiting polls 'G' until every key is present or the timeout passes.
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
  static absl::StatusOr<std::unique_ptr<TcpStore>>
  connect(const std::string &host, int port, std::chrono::milliseconds timeout);
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

private:
  TcpStore(int fd, std::chrono::milliseconds timeout)
      : fd(fd), timeout(timeout) {}
  int fd;
  std::chrono::milliseconds timeout;
  std::mutex mutex; // One request at a time on the connection.
};

} // namespace weft::runtime

#endif // WEFT_RUNTIME_DIST_TCPSTORE_H
