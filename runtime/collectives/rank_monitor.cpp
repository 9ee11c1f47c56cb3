//===- rank_monitor.cpp - heartbeats and failure diagnosis ----------------===//
//
// Part of strata. See rank_monitor.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/rank_monitor.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <vector>

namespace strata::runtime {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

/// A parsed heartbeat value.
struct Beat {
  bool present = false;
  bool exited = false;
  uint64_t count = 0;
  uint64_t seq = 0;
  std::string op;
};

Beat parseBeat(const std::optional<std::string> &value) {
  Beat beat;
  if (!value)
    return beat;
  beat.present = true;
  if (*value == "exited") {
    beat.exited = true;
    return beat;
  }
  std::istringstream in(*value);
  in >> beat.count >> beat.seq >> beat.op;
  return beat;
}

std::string seconds(milliseconds ms) {
  return fmt::format("{:.1f} s", static_cast<double>(ms.count()) / 1000.0);
}

} // namespace

RankMonitor::RankMonitor(Store &store, std::string prefix, int rank, int size,
                         milliseconds interval)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), size_(size),
      interval_(interval) {}

StatusOr<std::unique_ptr<RankMonitor>>
RankMonitor::start(Store &store, const std::string &prefix, int rank, int size,
                   milliseconds timeout) {
  milliseconds interval =
      std::clamp(timeout / 10, milliseconds(20), milliseconds(1000));
  std::unique_ptr<RankMonitor> monitor(
      new RankMonitor(store, prefix, rank, size, interval));
  monitor->timeout_ = timeout;
  // The first beat is written before returning, so that a rank that dies
  // right after startup is seen as dead, not as never started.
  STRATA_RETURN_IF_ERROR(store.set(monitor->key("hb", rank), "0 0 init"));
  monitor->thread_ = std::thread([m = monitor.get()] { m->beat(); });
  return monitor;
}

RankMonitor::~RankMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
  (void)store_.set(key("hb", rank_), "exited");
}

milliseconds RankMonitor::transportTimeout() const {
  return std::max(timeout_ - 4 * interval_, interval_);
}

std::string RankMonitor::key(const char *kind, int rank) const {
  return fmt::format("{}/{}/{}", prefix_, kind, rank);
}

void RankMonitor::enter(uint64_t seq, const char *op) {
  op_.store(op, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_release);
}

void RankMonitor::beat() {
  uint64_t count = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    lock.unlock();
    // A failing store (its server died) is diagnosed by the collectives;
    // the heartbeat keeps trying.
    (void)store_.set(key("hb", rank_),
                     fmt::format("{} {} {}", ++count,
                                 seq_.load(std::memory_order_acquire),
                                 op_.load(std::memory_order_relaxed)));
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

void RankMonitor::lingerIfServing(const std::vector<bool> &dead) {
  (void)store_.set(key("done", rank_), "1");
  if (store_.serverRank() != rank_)
    return;
  // The others are diagnosing the same failure and read the store this
  // process serves: wait (at most 1.5 intervals) until every live rank is
  // done, so that this rank's exit is not mistaken for the cause.
  Clock::time_point end = Clock::now() + interval_ * 3 / 2;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || dead[static_cast<size_t>(r)])
      continue;
    while (Clock::now() < end) {
      StatusOr<std::optional<std::string>> done = store_.tryGet(key("done", r));
      if (!done.ok() || *done)
        break;
      std::this_thread::sleep_for(std::max(interval_ / 8, milliseconds(2)));
    }
  }
}

Status RankMonitor::diagnose(uint64_t seq, const char *op,
                             const Status &cause) {
  std::string what = fmt::format("{} #{} failed on rank {}", op, seq, rank_);
  std::string cause_text = std::string(cause.message());
  (void)store_.set(key("failed", rank_),
                   fmt::format("{} #{}: {}", op, seq, cause_text));

  // The store itself failing means its server is gone.
  auto storeDown = [&](const Status &status) -> Status {
    int server = store_.serverRank();
    if (server >= 0 && server != rank_)
      return unavailable("{}: rank {} is dead or hung: the {} it serves does "
                         "not answer ({}) ({})",
                         what, server, store_.description(), status.message(),
                         cause_text);
    return unavailable("{}: the {} does not answer ({}) ({})", what,
                       store_.description(), status.message(), cause_text);
  };

  auto readBeats = [&](std::vector<Beat> &beats) -> Status {
    beats.assign(static_cast<size_t>(size_), Beat());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_)
        continue;
      STRATA_ASSIGN_OR_RETURN(std::optional<std::string> value,
                              store_.tryGet(key("hb", r)));
      beats[static_cast<size_t>(r)] = parseBeat(value);
    }
    return okStatus();
  };

  std::vector<Beat> first, second;
  if (Status s = readBeats(first); !s.ok())
    return storeDown(s);
  // Watch for up to 2.5 intervals, stopping early once every rank has beaten
  // (or exited).
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + interval_ * 5 / 2;
  while (true) {
    std::this_thread::sleep_for(std::max(interval_ / 4, milliseconds(5)));
    if (Status s = readBeats(second); !s.ok())
      return storeDown(s);
    bool all_moved = true;
    for (int r = 0; r < size_; ++r) {
      const Beat &a = first[static_cast<size_t>(r)];
      const Beat &b = second[static_cast<size_t>(r)];
      if (r != rank_ && !b.exited && (!b.present || b.count == a.count))
        all_moved = false;
    }
    if (all_moved || Clock::now() >= end)
      break;
  }
  milliseconds watched =
      std::chrono::duration_cast<milliseconds>(Clock::now() - start);

  std::vector<std::string> faults, failures;
  std::vector<bool> dead(static_cast<size_t>(size_), false);
  bool any_dead = false;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    const Beat &a = first[static_cast<size_t>(r)];
    const Beat &b = second[static_cast<size_t>(r)];
    StatusOr<std::optional<std::string>> failed =
        store_.tryGet(key("failed", r));
    if (!failed.ok())
      return storeDown(failed.status());
    if (*failed) {
      failures.push_back(fmt::format("rank {} failed too ({})", r, **failed));
      continue;
    }
    if (!b.present || b.exited || b.count == a.count)
      dead[static_cast<size_t>(r)] = true;
    if (!b.present) {
      any_dead = true;
      faults.push_back(fmt::format("rank {} never joined", r));
    } else if (b.exited) {
      any_dead = true;
      faults.push_back(
          fmt::format("rank {} has shut down its communicator", r));
    } else if (b.count == a.count) {
      any_dead = true;
      faults.push_back(fmt::format("rank {} is dead or hung (no heartbeat for "
                                   "{}; last seen at {} #{})",
                                   r, seconds(watched), b.op, b.seq));
    } else if (b.seq < seq) {
      faults.push_back(fmt::format("rank {} is alive but has not reached {} "
                                   "#{} (it is at {} #{})",
                                   r, op, seq, b.op, b.seq));
    }
  }
  lingerIfServing(dead);

  const std::vector<std::string> &named = faults.empty() ? failures : faults;
  std::string ranks;
  for (const std::string &text : named)
    ranks += (ranks.empty() ? "" : "; ") + text;
  if (ranks.empty())
    return Status(cause.code(), fmt::format("{}: {}", what, cause_text));
  StatusCode code = any_dead ? StatusCode::kUnavailable
                    : cause.code() == StatusCode::kDeadlineExceeded
                        ? StatusCode::kDeadlineExceeded
                        : StatusCode::kUnavailable;
  return Status(code, fmt::format("{}: {} ({})", what, ranks, cause_text));
}

} // namespace strata::runtime
