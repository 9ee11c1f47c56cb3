//===- rank_monitor.h - heartbeats and failure diagnosis --------*- C++ -*-===//
//
// Part of strata. Turns "a collective failed or timed out" into "which rank
// is at fault". Every rank of a communicator runs a RankMonitor: a thread
// that writes the key `<prefix>/hb/<rank>` in the store every interval
// (timeout / 10, between 20 ms and 1 s) with a counter and the collective
// the rank last entered ("<beat> <seq> <op>"). When a collective fails on a
// rank (a transport error, or no completion within its share of the
// timeout), diagnose() first records the failure under
// `<prefix>/failed/<rank>`, then reads every rank's heartbeat twice, two
// intervals apart, and classifies the others:
//
//   * dead or hung: the heartbeat did not move (the process was killed or
//     stopped) and the rank recorded no failure of its own;
//   * behind: alive, but it has not entered this collective;
//   * failed: it recorded a failure (a consequence, reported only when no
//     rank is dead, hung or behind);
//   * exited: it shut its communicator down.
//
// When the store itself does not answer and a rank serves it (TcpStore: rank
// 0), that rank is reported dead. So that a serving rank which fails and
// exits is not mistaken for the cause by ranks still diagnosing, every rank
// writes `<prefix>/done/<rank>` when its diagnosis is complete, and the
// serving rank waits (at most 1.5 intervals) for the live ranks' keys before
// returning its error. The result is one Status naming the
// collective, its sequence number and the ranks, e.g.
//
//   UNAVAILABLE: all_reduce #12 failed on rank 1: rank 3 is dead or hung (no
//   heartbeat for 0.8 s; last seen at all_reduce #11) (gloo: [...] Connection
//   closed by peer [127.0.0.1]:41023)
//
// "last seen" is the collective of the rank's last heartbeat, which may lag
// the collectives it ran since by up to one interval.
//
// A communicator gives its transport timeout - 4 intervals, so that
// diagnosis fits in the timeout the caller asked for.
//
// Ownership: owned by its communicator; the store must outlive it.
// Thread-safety: enter() and diagnose() from the communicator's thread; the
// heartbeat thread is internal.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_RANK_MONITOR_H
#define STRATA_RUNTIME_COLLECTIVES_RANK_MONITOR_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/collectives/store.h"

namespace strata::runtime {

class RankMonitor {
public:
  /// Starts the heartbeat of `rank` of `size` under `prefix` in `store`;
  /// `timeout` is the communicator's timeout.
  static StatusOr<std::unique_ptr<RankMonitor>>
  start(Store &store, const std::string &prefix, int rank, int size,
        std::chrono::milliseconds timeout);

  /// Stops the heartbeat and marks the rank as exited.
  ~RankMonitor();

  /// Heartbeat period.
  std::chrono::milliseconds interval() const { return interval_; }

  /// Timeout left to the transport of one collective: the communicator's
  /// timeout less four intervals (diagnosis), at least one interval.
  std::chrono::milliseconds transportTimeout() const;

  /// Records that this rank enters collective number `seq` named `op` (a
  /// string literal), published with the next heartbeat.
  void enter(uint64_t seq, const char *op);

  /// The error for collective `seq` (`op`) that failed here with `cause`:
  /// names the ranks at fault (see the file comment), or reports `cause`
  /// alone when every rank looks healthy. Takes about two intervals.
  Status diagnose(uint64_t seq, const char *op, const Status &cause);

private:
  RankMonitor(Store &store, std::string prefix, int rank, int size,
              std::chrono::milliseconds interval);
  void beat();
  void lingerIfServing(const std::vector<bool> &dead);
  std::string key(const char *kind, int rank) const;

  Store &store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds timeout_{};

  std::atomic<uint64_t> seq_{0};
  std::atomic<const char *> op_{"init"};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_RANK_MONITOR_H
