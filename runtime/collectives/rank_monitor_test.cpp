//===- rank_monitor_test.cpp - tests of failure diagnosis -----------------===//
//
// Part of strata. RankMonitor::diagnose in one process: the other ranks'
// heartbeats are written by the test (a thread beating = alive, a fixed
// value = dead), so every classification and its message is checked without
// killing processes (gloo_communicator_test.cpp does that).
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/rank_monitor.h"

#include <stdlib.h>

#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

std::unique_ptr<Store> tempStore() {
  char pattern[] = "/tmp/strata-monitor-XXXXXX";
  return std::move(createFileStore(mkdtemp(pattern)).value());
}

/// Writes `<prefix>/hb/<rank>` every 10 ms with a growing count, at
/// collective `seq` `op`, until destroyed.
class FakeRank {
public:
  FakeRank(Store &store, int rank, uint64_t seq, const char *op)
      : thread_([&store, rank, seq, op, this] {
          for (uint64_t n = 1; !stop_; ++n) {
            (void)store.set(fmt::format("p/hb/{}", rank),
                            fmt::format("{} {} {}", n, seq, op));
            std::this_thread::sleep_for(milliseconds(10));
          }
        }) {}
  ~FakeRank() {
    stop_ = true;
    thread_.join();
  }

private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Tests that a rank whose heartbeat stands still is dead and a beating rank
// behind this collective is named as not having reached it.
TEST(RankMonitor, NamesDeadAndLateRanks) {
  auto store = tempStore();
  auto monitor = RankMonitor::start(*store, "p", 0, 3, milliseconds(200));
  ASSERT_TRUE(monitor.ok()) << monitor.status().toString();
  EXPECT_EQ((*monitor)->interval(), milliseconds(20));
  EXPECT_EQ((*monitor)->transportTimeout(), milliseconds(120));
  FakeRank late(*store, 1, 4, "broadcast");
  ASSERT_TRUE(store->set("p/hb/2", "7 5 all_reduce").ok());
  (*monitor)->enter(5, "all_reduce");
  Status status = (*monitor)->diagnose(
      5, "all_reduce", Status(StatusCode::kDeadlineExceeded, "gloo: slow"));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  std::string message(status.message());
  EXPECT_THAT(message,
              HasSubstr("all_reduce #5 failed on rank 0: rank 1 is alive but "
                        "has not reached all_reduce #5 (it is at "
                        "broadcast #4); rank 2 is dead or hung (no heartbeat "
                        "for 0."));
  EXPECT_THAT(message, HasSubstr("s; last seen at all_reduce #5) (gloo: "
                                 "slow)"));
  // The failure is recorded for the other ranks.
  EXPECT_EQ(**store->tryGet("p/failed/0"), "all_reduce #5: gloo: slow");
}

// Tests that ranks which failed themselves are reported when no rank is
// dead or late, and that a timeout with every rank late is
// DEADLINE_EXCEEDED.
TEST(RankMonitor, ReportsFailedRanksAndLateness) {
  auto store = tempStore();
  auto monitor = RankMonitor::start(*store, "p", 1, 3, milliseconds(200));
  ASSERT_TRUE(monitor.ok());
  {
    FakeRank r0(*store, 0, 3, "barrier");
    FakeRank r2(*store, 2, 3, "barrier");
    ASSERT_TRUE(store->set("p/failed/2", "barrier #3: gloo: reset").ok());
    Status status = (*monitor)->diagnose(
        3, "barrier", Status(StatusCode::kUnavailable, "gloo: closed"));
    EXPECT_EQ(status,
              unavailable("barrier #3 failed on rank 1: rank 2 failed too "
                          "(barrier #3: gloo: reset) (gloo: closed)"));
  }
  ASSERT_TRUE(store->set("p/failed/2", "").ok());
  auto monitor2 = RankMonitor::start(*store, "q", 1, 2, milliseconds(200));
  ASSERT_TRUE(monitor2.ok());
  ASSERT_TRUE(store->set("q/hb/0", "exited").ok());
  Status status = (*monitor2)->diagnose(
      2, "all_gather", Status(StatusCode::kDeadlineExceeded, "t"));
  EXPECT_EQ(status, unavailable("all_gather #2 failed on rank 1: rank 0 has "
                                "shut down its communicator (t)"));
}

// Tests that the cause alone is returned when every rank is healthy.
TEST(RankMonitor, HealthyRanksLeaveTheCause) {
  auto store = tempStore();
  auto monitor = RankMonitor::start(*store, "p", 0, 2, milliseconds(200));
  ASSERT_TRUE(monitor.ok());
  FakeRank r1(*store, 1, 9, "all_to_all");
  Status status = (*monitor)->diagnose(
      9, "all_to_all", Status(StatusCode::kInternal, "gloo: bad"));
  EXPECT_EQ(status, internalError("all_to_all #9 failed on rank 0: gloo: bad"));
}

// Tests that this rank's own heartbeat is written and marked on shutdown.
TEST(RankMonitor, BeatsAndExits) {
  auto store = tempStore();
  {
    auto monitor = RankMonitor::start(*store, "p", 1, 2, milliseconds(200));
    ASSERT_TRUE(monitor.ok());
    (*monitor)->enter(4, "broadcast");
    std::this_thread::sleep_for(milliseconds(60));
    std::string beat = **store->tryGet("p/hb/1");
    EXPECT_THAT(beat, HasSubstr(" 4 broadcast"));
    EXPECT_NE(beat.rfind("0 ", 0), 0u) << beat;
  }
  EXPECT_EQ(**store->tryGet("p/hb/1"), "exited");
}

// Tests that a store whose serving rank is gone names that rank.
TEST(RankMonitor, StoreServerGoneNamesRankZero) {
  TcpStoreOptions server_options;
  server_options.serve = true;
  auto server = TcpStore::create(server_options);
  ASSERT_TRUE(server.ok());
  TcpStoreOptions client_options;
  client_options.port = (*server)->port();
  auto client = TcpStore::create(client_options);
  ASSERT_TRUE(client.ok());
  auto monitor = RankMonitor::start(**client, "p", 1, 2, milliseconds(200));
  ASSERT_TRUE(monitor.ok());
  server->reset();
  Status status = (*monitor)->diagnose(
      1, "all_reduce", Status(StatusCode::kUnavailable, "gloo: reset"));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  // The connection's first error is "connection closed by the server" or a
  // failed send, depending on which request met the closed socket first.
  std::string message(status.message());
  EXPECT_THAT(message,
              HasSubstr(fmt::format("all_reduce #1 failed on rank 1: rank 0 "
                                    "is dead or hung: the TCP store "
                                    "127.0.0.1:{} it serves does not answer "
                                    "(TCP store 127.0.0.1:{}: ",
                                    client_options.port, client_options.port)))
      << message;
  EXPECT_THAT(message, HasSubstr(") (gloo: reset)")) << message;
}

} // namespace
} // namespace strata::runtime
