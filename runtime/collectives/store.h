//===- store.h - key-value stores for rank rendezvous -----------*- C++ -*-===//
//
// Part of strata. The ranks of a communicator find each other through a
// small key-value store: each rank publishes its transport address (Gloo) or
// rank 0 publishes the NCCL/RCCL unique id, and every rank publishes a
// heartbeat (rank_monitor.h). Two stores work across hosts:
//
//   * TcpStore: rank 0 serves the keys from a thread listening on
//     master addr:port; every rank (rank 0 too) is a client over TCP.
//   * FileStore: one file per key in a directory every rank can see (a local
//     directory, or a shared filesystem across hosts); writes are atomic
//     renames, counters are updated under flock.
//
// Values are byte strings. get() waits for a key up to a timeout and then
// fails with DEADLINE_EXCEEDED naming the key, so a rank that never arrives
// is an error, not a hang.
//
// Ownership: stores are owned by their creator (unique_ptr) and must outlive
// the communicators using them. Thread-safety: every call may be made from
// any thread (a TcpStore serialises requests on its connection).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_STORE_H
#define STRATA_RUNTIME_COLLECTIVES_STORE_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/base/status.h"

namespace strata::runtime {

class Store {
public:
  virtual ~Store() = default;

  /// Sets `key` to `value` (replacing any earlier value).
  virtual Status set(const std::string &key, const std::string &value) = 0;

  /// The value of `key`, or nullopt when it is not set yet. Does not wait.
  virtual StatusOr<std::optional<std::string>>
  tryGet(const std::string &key) = 0;

  /// Adds `delta` to the decimal integer stored at `key` (absent = 0),
  /// atomically across all clients, and returns the new value.
  virtual StatusOr<int64_t> add(const std::string &key, int64_t delta) = 0;

  /// One line naming the store for messages ("TCP store 10.0.0.1:29500").
  virtual std::string description() const = 0;

  /// The rank whose process serves the store (0 for a TcpStore: when it dies
  /// the store goes with it), or -1 when no rank does (FileStore).
  virtual int serverRank() const { return -1; }

  /// This host's address on the interface that reaches the store (TcpStore:
  /// the local address of its connection), for transports that must
  /// advertise an address peers can reach; empty when unknown.
  virtual std::string localAddress() const { return {}; }

  /// Waits until `key` is set and returns its value. DEADLINE_EXCEEDED
  /// "timed out after N ms waiting for key 'k' in <store>" after `timeout`.
  StatusOr<std::string> get(const std::string &key,
                            std::chrono::milliseconds timeout);
};

/// Where a TcpStore listens or connects.
struct TcpStoreOptions {
  /// Host name or address of the server (rank 0). Default (empty):
  /// "127.0.0.1".
  std::string host;
  /// TCP port of the server. Default 0: with `serve`, any free port
  /// (TcpStore::port() tells which); clients need the real port.
  uint16_t port = 0;
  /// Whether this process serves the store (rank 0). It listens on every
  /// interface at `port`. Default false.
  bool serve = false;
  /// How long connecting may take (the server may start later). Default
  /// (0): 30 s.
  std::chrono::milliseconds timeout{0};
  /// How long one request may wait for its answer before the store counts as
  /// dead (its server hung). Keep it well below the communicator's timeout,
  /// which diagnosis must fit in. Default (0): 5 s.
  std::chrono::milliseconds request_timeout{0};
};

/// A TCP store client, and with `serve` also the server thread.
class TcpStore : public Store {
public:
  /// Starts the server (when `options.serve`) and connects to it.
  /// UNAVAILABLE when the port cannot be bound or the server cannot be
  /// reached within the timeout.
  static StatusOr<std::unique_ptr<TcpStore>>
  create(const TcpStoreOptions &options);

  /// The server's port (the bound port when options.port was 0).
  virtual uint16_t port() const = 0;
};

/// Creates a store backed by files in `directory` (created if missing).
/// Use a fresh directory per run: keys of an earlier run would be read as
/// this run's. `timeout` bounds waiting for the lock; default (0) 30 s.
StatusOr<std::unique_ptr<Store>>
createFileStore(const std::string &directory,
                std::chrono::milliseconds timeout = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_STORE_H
