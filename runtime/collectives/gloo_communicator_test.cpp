//===- gloo_communicator_test.cpp - Gloo ranks in separate processes ------===//
//
// Part of strata. Starts N processes of testdata/strata-collectives-worker
// (one per rank, as in a real run) and checks their exit status and output:
// every collective's result is checked exactly inside the workers, with a
// TCP store (rank 0 serves it) and with a file store; a rank killed
// (SIGKILL), stopped (SIGSTOP) or late makes every other rank fail with an
// error naming it within the timeout. Plus in-process checks of the
// arguments and of a group of one.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/gloo_communicator.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/device/cpu/cpu_device.h"

extern char **environ;

namespace strata::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

std::string testdataPath(const std::string &name) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return name;
  exe[n] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/testdata/" + name;
}

std::string tempDir() {
  char pattern[] = "/tmp/strata-gloo-XXXXXX";
  char *dir = mkdtemp(pattern);
  return dir ? std::string(dir) : std::string("/tmp");
}

uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// How one rank's process ended.
struct RankResult {
  bool exited = false; ///< exited (as opposed to killed by a signal)
  int code = -1;       ///< exit status, or the signal
  std::string output;  ///< stdout and stderr
};

/// Runs `size` workers with `store` and `extra` flags; kills any still
/// running after `deadline` (a hung test fails instead of hanging). A
/// stopped process is killed once every other rank has ended.
std::vector<RankResult> runRanks(int size, const std::string &store,
                                 const std::vector<std::string> &extra,
                                 milliseconds deadline = milliseconds(120000)) {
  std::string worker = testdataPath("strata-collectives-worker");
  std::string dir = tempDir();
  std::vector<pid_t> pids(size, -1);
  for (int r = 0; r < size; ++r) {
    std::vector<std::string> args = {
        worker,    "--rank", std::to_string(r), "--size", std::to_string(size),
        "--store", store};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char *> argv;
    for (std::string &a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string out = fmt::format("{}/rank{}.txt", dir, r);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    int rc = posix_spawn(&pids[r], worker.c_str(), &actions, nullptr,
                         argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << worker;
  }
  std::vector<RankResult> results(size);
  Clock::time_point end = Clock::now() + deadline;
  int left = size;
  while (left > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG | WUNTRACED);
    if (pid > 0) {
      for (int r = 0; r < size; ++r) {
        if (pids[r] != pid)
          continue;
        if (WIFSTOPPED(status))
          break; // collected once the others are done
        results[r].exited = WIFEXITED(status);
        results[r].code =
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
        pids[r] = -1;
        --left;
      }
      continue;
    }
    // Only stopped ranks left, or past the deadline: kill the rest.
    bool only_stopped = true;
    for (int r = 0; r < size; ++r)
      if (pids[r] > 0 &&
          readFile(fmt::format("/proc/{}/stat", pids[r])).find(") T ") ==
              std::string::npos)
        only_stopped = false;
    if (only_stopped || Clock::now() >= end) {
      for (int r = 0; r < size; ++r)
        if (pids[r] > 0)
          ::kill(pids[r], SIGKILL);
      if (Clock::now() >= end)
        ADD_FAILURE() << "ranks still running after " << deadline.count()
                      << " ms were killed";
      end = Clock::time_point::max();
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
  for (int r = 0; r < size; ++r)
    results[r].output = readFile(fmt::format("{}/rank{}.txt", dir, r));
  return results;
}

std::string describe(const std::vector<RankResult> &results) {
  std::string text;
  for (size_t r = 0; r < results.size(); ++r)
    text += fmt::format("rank {}: {} {}: {}\n", r,
                        results[r].exited ? "exit" : "signal", results[r].code,
                        results[r].output);
  return text;
}

void expectAllOk(const std::vector<RankResult> &results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_TRUE(results[r].exited && results[r].code == 0) << describe(results);
    EXPECT_THAT(results[r].output, HasSubstr(fmt::format("rank {}: ok", r)));
  }
}

// Tests every collective with 2 ranks meeting at a TCP store.
TEST(GlooCommunicator, TwoRanksTcpStore) {
  expectAllOk(runRanks(2, fmt::format("tcp:127.0.0.1:{}", freePort()), {}));
}

// Tests every collective with 4 ranks meeting at a TCP store.
TEST(GlooCommunicator, FourRanksTcpStore) {
  expectAllOk(runRanks(4, fmt::format("tcp:127.0.0.1:{}", freePort()), {}));
}

// Tests every collective with 4 ranks through host-staged communicators
// that stage every region (the GPU ranks' Gloo form): the worker's exact
// checks pass through the staging copies.
TEST(GlooCommunicator, FourRanksHostStaged) {
  expectAllOk(runRanks(4, fmt::format("tcp:127.0.0.1:{}", freePort()),
                       {"--staged", "1"}));
}

// Tests every collective with 4 ranks meeting in a file store.
TEST(GlooCommunicator, FourRanksFileStore) {
  expectAllOk(runRanks(4, "file:" + tempDir(), {}));
}

constexpr int kTimeoutMs = 3000;
// Scheduling slack on a loaded 2-core machine.
constexpr int kSlackMs = 1000;

/// Checks that every rank but `victim` failed (exit 3) within the timeout
/// with a message containing `expected`.
void expectNamed(const std::vector<RankResult> &results, int victim,
                 const std::string &expected) {
  for (size_t r = 0; r < results.size(); ++r) {
    if (static_cast<int>(r) == victim)
      continue;
    const RankResult &result = results[r];
    EXPECT_TRUE(result.exited && result.code == 3) << describe(results);
    EXPECT_THAT(result.output, HasSubstr(expected)) << describe(results);
    long ms = -1;
    size_t at = result.output.find("error after ");
    if (at != std::string::npos)
      ms = std::atol(result.output.c_str() + at + 12);
    EXPECT_GE(ms, 0) << describe(results);
    EXPECT_LE(ms, kTimeoutMs + kSlackMs) << describe(results);
  }
}

std::vector<std::string> fault(const char *scenario, int victim, int at) {
  return {"--timeout-ms", std::to_string(kTimeoutMs),
          "--scenario",   scenario,
          "--victim",     std::to_string(victim),
          "--at",         std::to_string(at)};
}

// Tests that a rank killed between two all-reduces is named by every other
// rank within the timeout.
TEST(GlooCommunicator, KilledRankIsNamed) {
  auto results = runRanks(4, fmt::format("tcp:127.0.0.1:{}", freePort()),
                          fault("kill", 2, 3));
  EXPECT_FALSE(results[2].exited);
  EXPECT_EQ(results[2].code, SIGKILL);
  expectNamed(results, 2, "UNAVAILABLE: all_reduce #3 failed on rank ");
  expectNamed(results, 2, "rank 2 is dead or hung (no heartbeat for ");
  // The heartbeat names the collective it last saw, which may lag.
  expectNamed(results, 2, "; last seen at ");
}

// Tests that killing rank 0, which serves the TCP store, is named too.
TEST(GlooCommunicator, KilledStoreRankIsNamed) {
  auto results = runRanks(4, fmt::format("tcp:127.0.0.1:{}", freePort()),
                          fault("kill", 0, 2));
  EXPECT_EQ(results[0].code, SIGKILL);
  expectNamed(results, 0, "all_reduce #2 failed on rank ");
  expectNamed(results, 0, ": rank 0 is dead or hung");
}

// Tests a killed rank with the file store (no rank serves it).
TEST(GlooCommunicator, KilledRankIsNamedWithFileStore) {
  auto results = runRanks(2, "file:" + tempDir(), fault("kill", 1, 2));
  EXPECT_EQ(results[1].code, SIGKILL);
  expectNamed(results, 1,
              "all_reduce #2 failed on rank 0: rank 1 is dead or hung");
}

// Tests that a stopped (hung) rank is named after the timeout.
TEST(GlooCommunicator, StoppedRankIsNamed) {
  auto results = runRanks(4, fmt::format("tcp:127.0.0.1:{}", freePort()),
                          fault("stop", 3, 4));
  expectNamed(results, 3, "all_reduce #4 failed on rank ");
  expectNamed(results, 3, "rank 3 is dead or hung");
}

// Tests that a live rank that does not arrive is named as late.
TEST(GlooCommunicator, LateRankIsNamed) {
  auto results = runRanks(2, fmt::format("tcp:127.0.0.1:{}", freePort()),
                          fault("late", 1, 3));
  expectNamed(results, 1,
              "DEADLINE_EXCEEDED: all_reduce #3 failed on rank 0: rank 1 is "
              "alive but has not reached all_reduce #3 (it is at all_reduce "
              "#2)");
}

// Tests, with two ranks as threads of this process, that a rank which
// shuts its communicator down mid-run is named by the other, whose failed
// communicator then refuses further calls and is destroyed cleanly.
TEST(GlooCommunicator, FailedCommunicatorShutsDownCleanly) {
  char pattern[] = "/tmp/strata-gloo2-XXXXXX";
  auto store = createFileStore(mkdtemp(pattern));
  ASSERT_TRUE(store.ok());
  std::atomic<bool> left{false};
  auto rank = [&](int r) {
    std::unique_ptr<Device> device = createCpuDevice();
    GlooCommunicatorOptions options;
    options.group.store = store->get();
    options.group.rank = r;
    options.group.size = 2;
    options.group.timeout = milliseconds(2000);
    options.hostname = "127.0.0.1";
    auto comm = createGlooCommunicator(options);
    ASSERT_TRUE(comm.ok()) << comm.status().toString();
    Stream &s = device->defaultStream();
    ASSERT_TRUE((*comm)->barrier(s).ok());
    if (r == 1) {
      comm->reset();
      left = true;
      return;
    }
    while (!left)
      std::this_thread::sleep_for(milliseconds(1));
    Status status = (*comm)->barrier(s);
    EXPECT_EQ(status.code(), StatusCode::kUnavailable);
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("barrier #2 failed on rank 0: rank 1 has shut down "
                          "its communicator (gloo: "))
        << status.toString();
    EXPECT_EQ((*comm)->barrier(s).code(), StatusCode::kFailedPrecondition);
  };
  std::thread r1(rank, 1);
  rank(0);
  r1.join();
}

// Tests a group of one (no peers) and the argument checks, in process.
TEST(GlooCommunicator, SingleRankAndArgumentChecks) {
  char pattern[] = "/tmp/strata-gloo1-XXXXXX";
  auto store = createFileStore(mkdtemp(pattern));
  ASSERT_TRUE(store.ok());
  std::unique_ptr<Device> device = createCpuDevice();
  GlooCommunicatorOptions options;
  options.group.store = store->get();
  options.hostname = "127.0.0.1";
  auto comm = createGlooCommunicator(options);
  ASSERT_TRUE(comm.ok()) << comm.status().toString();
  Communicator &c = **comm;
  EXPECT_STREQ(c.backendName(), "gloo");
  EXPECT_EQ(c.size(), 1);
  auto buf = std::move(device->allocate(64, 64).value());
  auto *f = static_cast<float *>(buf->hostPointer());
  for (int i = 0; i < 8; ++i)
    f[i] = float(i + 1);
  Stream &s = device->defaultStream();
  ASSERT_TRUE(c.allReduce({buf.get(), 0}, {buf.get(), 32}, 8, DataType::kF32,
                          ReduceOp::kSum, s)
                  .ok());
  EXPECT_EQ(f[8 + 7], 8.0f);
  std::vector<uint64_t> counts = {3};
  ASSERT_TRUE(c.allToAllV({buf.get(), 0}, counts, {buf.get(), 40}, counts,
                          DataType::kF32, s)
                  .ok());
  EXPECT_EQ(f[10 + 2], 3.0f);

  EXPECT_EQ(c.allReduce({buf.get(), 0}, {buf.get(), 4}, 16, DataType::kF32,
                        ReduceOp::kSum, s),
            outOfRange("all_reduce: recv region [4, 68) outside its 64-byte "
                       "buffer"));
  EXPECT_EQ(c.allReduce({buf.get(), 0}, {buf.get(), 4}, 15, DataType::kF32,
                        ReduceOp::kSum, s),
            invalidArgument("all_reduce: send and recv overlap without being "
                            "the same region"));
  EXPECT_EQ(c.allReduce({buf.get(), 0}, {buf.get(), 0}, 8, DataType::kU8,
                        ReduceOp::kSum, s),
            invalidArgument("all_reduce: cannot reduce u8 elements"));
  EXPECT_EQ(c.allToAllV({buf.get(), 0}, {1, 2}, {buf.get(), 0}, {1},
                        DataType::kF32, s),
            invalidArgument("all_to_all_v: send counts has 2 entries for 1 "
                            "ranks"));
  EXPECT_EQ(
      c.broadcast({buf.get(), 0}, {buf.get(), 0}, 1, DataType::kF32, 1, s),
      invalidArgument("broadcast: root 1 outside [0, 1)"));
  EXPECT_EQ(c.allGather({nullptr, 0}, {buf.get(), 0}, 1, DataType::kF32, s),
            invalidArgument("all_gather: no send buffer"));
  ASSERT_TRUE(s.beginCapture().ok());
  EXPECT_EQ(c.barrier(s),
            failedPrecondition("barrier: gloo collectives cannot be captured "
                               "into a graph"));
  ASSERT_TRUE(s.endCapture().ok());
  EXPECT_TRUE(c.barrier(s).ok());
}

} // namespace
} // namespace strata::runtime
