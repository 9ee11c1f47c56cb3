//===- nccl_communicator_test.cpp - NCCL/RCCL backend conformance ---------===//
//
// Part of strata. The NCCL and RCCL backends (one implementation, two
// flavors; every test runs for both) against testdata/fake_libnccl.cpp, a
// loopback library whose ranks are threads of this process and whose "GPU"
// memory is the CPU device's: loading errors (missing library, missing entry
// points, missing driver), every collective's results for 3 ranks and for 1,
// a rank that never arrives, a hung stream, call errors, asynchronous errors,
// a failed init, a rank that dies between the store barrier and its
// (non-blocking) init, and a call NCCL finishes in the background. The installed libnccl is probed (all entry points
// resolve, version) where it exists; OneRankOnTheGpu runs the real library
// on a real GPU (a group of one: every collective is a copy, plus a graph
// capture) and skips where there is none.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/nccl_communicator.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/base/numeric.h"
#include "runtime/device/cpu/cpu_device.h"
#include "runtime/device/cuda/cuda_device.h"
#include "runtime/device/hip/hip_device.h"

namespace strata::runtime {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string testdataPath(const std::string &name) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return name;
  exe[n] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/testdata/" + name;
}

std::string fakePath() { return testdataPath("libstrata_fake_nccl.so"); }

/// The fake's test controls (the backend dlopens the same file, so both see
/// one instance).
struct FakeControls {
  void (*failNext)(const char *, int);
  void (*setAsyncError)(int);
  void (*hang)(int);
  void (*inProgress)(int);
  int (*aborts)();
  void (*reset)();
};

FakeControls &fake() {
  static FakeControls controls = [] {
    FakeControls c{};
    void *handle = dlopen(fakePath().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return c;
    c.failNext = reinterpret_cast<void (*)(const char *, int)>(
        dlsym(handle, "fakeNcclFailNext"));
    c.setAsyncError =
        reinterpret_cast<void (*)(int)>(dlsym(handle, "fakeNcclSetAsyncError"));
    c.hang = reinterpret_cast<void (*)(int)>(dlsym(handle, "fakeNcclHang"));
    c.inProgress =
        reinterpret_cast<void (*)(int)>(dlsym(handle, "fakeNcclInProgress"));
    c.aborts = reinterpret_cast<int (*)()>(dlsym(handle, "fakeNcclAborts"));
    c.reset = reinterpret_cast<void (*)()>(dlsym(handle, "fakeNcclReset"));
    return c;
  }();
  return controls;
}

class NcclCommunicatorTest : public ::testing::TestWithParam<NcclFlavor> {
protected:
  void SetUp() override {
    ASSERT_NE(fake().reset, nullptr) << "cannot load " << fakePath();
    fake().reset();
    char pattern[] = "/tmp/strata-nccl-XXXXXX";
    auto store = createFileStore(mkdtemp(pattern));
    ASSERT_TRUE(store.ok());
    store_ = std::move(*store);
  }
  void TearDown() override { fake().reset(); }

  const char *name() const {
    return GetParam() == NcclFlavor::kNccl ? "NCCL" : "RCCL";
  }

  NcclCommunicatorOptions options(Device &device, int rank, int size,
                                  int timeout_ms = 60000) {
    NcclCommunicatorOptions o;
    o.group.store = store_.get();
    o.group.rank = rank;
    o.group.size = size;
    o.group.prefix = "p";
    o.group.timeout = milliseconds(timeout_ms);
    o.device = &device;
    o.flavor = GetParam();
    o.library = fakePath();
    o.driver_library = fakePath();
    return o;
  }

  /// Runs `body(rank, communicator, device)` on `size` threads, one rank
  /// each, every rank with its own CPU device.
  void
  runRanks(int size, int timeout_ms,
           const std::function<void(int, Communicator &, Device &)> &body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        std::unique_ptr<Device> device = createCpuDevice();
        auto comm =
            createNcclCommunicator(options(*device, r, size, timeout_ms));
        ASSERT_TRUE(comm.ok()) << comm.status().toString();
        EXPECT_STREQ((*comm)->backendName(),
                     GetParam() == NcclFlavor::kNccl ? "nccl" : "rccl");
        body(r, **comm, *device);
      });
    for (auto &t : threads)
      t.join();
  }

  std::unique_ptr<Store> store_;
};

// Tests the message when the library cannot be loaded.
TEST_P(NcclCommunicatorTest, MissingLibraryIsUnavailable) {
  std::unique_ptr<Device> device = createCpuDevice();
  auto o = options(*device, 0, 1);
  o.library = "libstrata-no-such-nccl.so.2";
  auto comm = createNcclCommunicator(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(comm.status().message()),
              StartsWith(fmt::format("no {}: libstrata-no-such-nccl.so.2 not "
                                     "found (",
                                     name())));
}

// Tests that a library without the entry points is named with the first
// missing one.
TEST_P(NcclCommunicatorTest, LibraryWithoutEntryPointsIsUnavailable) {
  auto version = probeNcclLibrary(GetParam(), "libm.so.6");
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.status(),
            unavailable("unusable {} library: libm.so.6 lacks ncclGetVersion",
                        name()));
}

// Tests the message when the driver with the stream query is missing.
TEST_P(NcclCommunicatorTest, MissingDriverIsUnavailable) {
  std::unique_ptr<Device> device = createCpuDevice();
  auto o = options(*device, 0, 1);
  o.driver_library = "libstrata-no-such-driver.so";
  auto comm = createNcclCommunicator(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_THAT(std::string(comm.status().message()),
              StartsWith(fmt::format("{}: libstrata-no-such-driver.so not "
                                     "found (",
                                     GetParam() == NcclFlavor::kNccl
                                         ? "no CUDA driver"
                                         : "no HIP runtime")));
}

// Tests that the fake resolves every entry point and reports its version.
TEST_P(NcclCommunicatorTest, ProbesTheFake) {
  auto version = probeNcclLibrary(GetParam(), fakePath());
  ASSERT_TRUE(version.ok()) << version.status().toString();
  EXPECT_EQ(*version, "2.28.5");
}

// Tests that the installed vendor library (when there is one) has every
// entry point the backend resolves; no GPU is needed for that.
TEST_P(NcclCommunicatorTest, ProbesTheInstalledLibrary) {
  std::string library = GetParam() == NcclFlavor::kNccl
                            ? "/usr/local/cuda/lib64/libnccl.so.2"
                            : "";
  if (GetParam() == NcclFlavor::kNccl && access(library.c_str(), R_OK) != 0)
    library.clear();
  auto version = probeNcclLibrary(GetParam(), library);
  if (!version.ok() && version.status().message().rfind("no ", 0) == 0)
    GTEST_SKIP() << version.status().toString();
  ASSERT_TRUE(version.ok()) << version.status().toString();
  EXPECT_THAT(*version, StartsWith("2."));
}

/// Typed host view of a CPU buffer.
template <typename T> T *host(Buffer &b) {
  return static_cast<T *>(b.hostPointer());
}

// Tests every collective's result on 3 ranks (and its mapping onto NCCL's
// calls: counts, offsets, types, reductions, roots, grouped sends and
// receives).
TEST_P(NcclCommunicatorTest, ThreeRanksRunEveryCollective) {
  constexpr int n = 3;
  runRanks(n, 60000, [&](int me, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto buffer = [&](uint64_t bytes) {
      return std::move(d.allocate(bytes, 64).value());
    };
    // all_reduce f32 sum at offsets, bf16 sum in place, f32 max, i32 sum.
    auto a = buffer(4 * 40), b = buffer(4 * 40);
    for (int i = 0; i < 37; ++i)
      host<float>(*a)[i + 1] = float(me * 1000 + i);
    ASSERT_TRUE(c.allReduce({a.get(), 4}, {b.get(), 8}, 37, DataType::kF32,
                            ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 37; ++i)
      ASSERT_EQ(host<float>(*b)[i + 2], float(3000 + 3 * i)) << i;
    for (int i = 0; i < 40; ++i)
      host<uint16_t>(*a)[i] = f32ToBf16(float((me + i) % 8));
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {a.get(), 0}, 40, DataType::kBF16,
                            ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 40; ++i)
      ASSERT_EQ(bf16ToF32(host<uint16_t>(*a)[i]),
                float(i % 8 + (i + 1) % 8 + (i + 2) % 8))
          << i;
    for (int i = 0; i < 30; ++i)
      host<float>(*a)[i] = i % n == me ? 100.0f + float(i) : -1.0f;
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {b.get(), 0}, 30, DataType::kF32,
                            ReduceOp::kMax, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 30; ++i)
      ASSERT_EQ(host<float>(*b)[i], 100.0f + float(i));
    for (int i = 0; i < 30; ++i)
      host<int32_t>(*a)[i] = -me * 5 + i;
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {b.get(), 0}, 30, DataType::kI32,
                            ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 30; ++i)
      ASSERT_EQ(host<int32_t>(*b)[i], -15 + 3 * i);

    // all_gather u8, reduce_scatter f32, all_to_all i32.
    for (int i = 0; i < 5; ++i)
      host<uint8_t>(*a)[i] = uint8_t(me * 10 + i);
    ASSERT_TRUE(
        c.allGather({a.get(), 0}, {b.get(), 0}, 5, DataType::kU8, s).ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 5; ++i)
        ASSERT_EQ(host<uint8_t>(*b)[r * 5 + i], uint8_t(r * 10 + i));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 4; ++i)
        host<float>(*a)[j * 4 + i] = float(me + j * 10 + i);
    ASSERT_TRUE(c.reduceScatter({a.get(), 0}, {b.get(), 0}, 4, DataType::kF32,
                                ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(host<float>(*b)[i], float(3 + 3 * (me * 10 + i)));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 2; ++i)
        host<int32_t>(*a)[j * 2 + i] = me * 100 + j * 10 + i;
    ASSERT_TRUE(
        c.allToAll({a.get(), 0}, {b.get(), 0}, 2, DataType::kI32, s).ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < 2; ++i)
        ASSERT_EQ(host<int32_t>(*b)[j * 2 + i], j * 100 + me * 10 + i);

    // all_to_all_v f32: rank r sends (r + q) % 3 elements to rank q.
    std::vector<uint64_t> sc(n), rc(n);
    for (int q = 0; q < n; ++q)
      sc[q] = rc[q] = uint64_t((me + q) % 3);
    int k = 0;
    for (int q = 0; q < n; ++q)
      for (uint64_t i = 0; i < sc[q]; ++i)
        host<float>(*a)[k++] = float(me * 100 + q * 10 + int(i));
    ASSERT_TRUE(
        c.allToAllV({a.get(), 0}, sc, {b.get(), 0}, rc, DataType::kF32, s)
            .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    k = 0;
    for (int q = 0; q < n; ++q)
      for (uint64_t i = 0; i < rc[q]; ++i)
        ASSERT_EQ(host<float>(*b)[k++], float(q * 100 + me * 10 + int(i)));

    // broadcast from rank 2 into another buffer, then in place from 0.
    for (int i = 0; i < 6; ++i) {
      host<float>(*a)[i] = me == 2 ? float(i * 7) : -1.0f;
      host<float>(*b)[i] = -2.0f;
    }
    ASSERT_TRUE(
        c.broadcast({a.get(), 0}, {b.get(), 0}, 6, DataType::kF32, 2, s).ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 6; ++i)
      ASSERT_EQ(host<float>(*b)[i], float(i * 7));
    for (int i = 0; i < 6; ++i)
      host<float>(*b)[i] = me == 0 ? float(i) : -3.0f;
    ASSERT_TRUE(
        c.broadcast({b.get(), 0}, {b.get(), 0}, 6, DataType::kF32, 0, s).ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    for (int i = 0; i < 6; ++i)
      ASSERT_EQ(host<float>(*b)[i], float(i));
    EXPECT_TRUE(c.barrier(s).ok());
  });
  EXPECT_EQ(fake().aborts(), 0);
}

// Tests a group of one and the argument checks shared with Gloo.
TEST_P(NcclCommunicatorTest, SingleRankAndArgumentChecks) {
  runRanks(1, 60000, [&](int, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto a = std::move(d.allocate(64, 64).value());
    host<float>(*a)[0] = 5.0f;
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {a.get(), 32}, 1, DataType::kF32,
                            ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    EXPECT_EQ(host<float>(*a)[8], 5.0f);
    EXPECT_EQ(c.reduceScatter({a.get(), 0}, {a.get(), 0}, 17, DataType::kF32,
                              ReduceOp::kSum, s),
              outOfRange("reduce_scatter: send region [0, 68) outside its "
                         "64-byte buffer"));
    EXPECT_EQ(c.allReduce({a.get(), 0}, {a.get(), 0}, 1, DataType::kU8,
                          ReduceOp::kMax, s),
              invalidArgument("all_reduce: cannot reduce u8 elements"));
    EXPECT_EQ(
        c.allToAllV({a.get(), 0}, {}, {a.get(), 0}, {1}, DataType::kF32, s),
        invalidArgument("all_to_all_v: send counts has 0 entries for 1 "
                        "ranks"));
    ASSERT_TRUE(s.beginCapture().ok());
    EXPECT_EQ(c.barrier(s),
              failedPrecondition("barrier: waits for the other ranks, so it "
                                 "cannot be captured"));
    EXPECT_EQ(c.synchronize(s),
              failedPrecondition("cannot synchronize a capturing stream"));
    ASSERT_TRUE(s.endCapture().ok());
    EXPECT_TRUE(c.barrier(s).ok());
  });
}

// Tests that a live rank which does not enter the collective is named after
// the timeout, NCCL is aborted, and later calls refuse.
TEST_P(NcclCommunicatorTest, RankNotReachingTheCollectiveIsNamed) {
  std::atomic<bool> done{false};
  runRanks(2, 1000, [&](int me, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    if (me == 1) {
      while (!done)
        std::this_thread::sleep_for(milliseconds(5));
      return;
    }
    auto a = std::move(d.allocate(64, 64).value());
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {a.get(), 0}, 4, DataType::kF32,
                            ReduceOp::kSum, s)
                    .ok());
    Status status = c.synchronize(s);
    done = true;
    EXPECT_EQ(status, Status(StatusCode::kDeadlineExceeded,
                             "all_reduce #1 failed on rank 0: rank 1 is alive "
                             "but has not reached all_reduce #1 (it is at "
                             "connect #0) (all_reduce #1 did not complete "
                             "within 600 ms)"));
    EXPECT_EQ(fake().aborts(), 1);
    EXPECT_EQ(c.barrier(s),
              failedPrecondition("barrier: the communicator failed earlier: "
                                 "{}",
                                 status.message()));
  });
}

// Tests that a hung stream ends in DEADLINE_EXCEEDED when every rank looks
// healthy.
TEST_P(NcclCommunicatorTest, HungStreamTimesOut) {
  runRanks(1, 1000, [&](int, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto a = std::move(d.allocate(64, 64).value());
    fake().hang(1);
    ASSERT_TRUE(
        c.broadcast({a.get(), 0}, {a.get(), 0}, 4, DataType::kF32, 0, s).ok());
    EXPECT_EQ(c.synchronize(s),
              Status(StatusCode::kDeadlineExceeded,
                     "broadcast #1 failed on rank 0: broadcast #1 did not "
                     "complete within 600 ms"));
    EXPECT_EQ(fake().aborts(), 1);
  });
}

// Tests that an error returned by an NCCL call is reported with its name.
TEST_P(NcclCommunicatorTest, CallErrorIsReported) {
  runRanks(1, 1000, [&](int, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto a = std::move(d.allocate(64, 64).value());
    fake().failNext("ncclSend", 2);
    std::vector<uint64_t> counts = {2};
    EXPECT_EQ(c.allToAllV({a.get(), 0}, counts, {a.get(), 16}, counts,
                          DataType::kF32, s),
              unavailable("all_to_all_v #1 failed on rank 0: ncclSend: "
                          "unhandled system error (run with NCCL_DEBUG=INFO "
                          "for details) (ncclResult 2)"));
    EXPECT_EQ(fake().aborts(), 1);
    EXPECT_EQ(c.synchronize(s).code(), StatusCode::kFailedPrecondition);
  });
}

// Tests that an asynchronous error (a peer's network failure) ends the wait.
TEST_P(NcclCommunicatorTest, AsyncErrorIsReported) {
  runRanks(1, 60000, [&](int, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto a = std::move(d.allocate(64, 64).value());
    fake().hang(1);
    fake().setAsyncError(6);
    ASSERT_TRUE(
        c.allGather({a.get(), 0}, {a.get(), 0}, 4, DataType::kF32, s).ok());
    EXPECT_EQ(c.synchronize(s),
              unavailable("all_gather #1 failed on rank 0: "
                          "ncclCommGetAsyncError: remote process exited or "
                          "there was a network error (ncclResult 6)"));
  });
}

// Tests that a failing ncclCommInitRankConfig is reported from creation.
TEST_P(NcclCommunicatorTest, InitFailureIsReported) {
  std::unique_ptr<Device> device = createCpuDevice();
  fake().failNext("ncclCommInitRankConfig", 5);
  auto comm = createNcclCommunicator(options(*device, 0, 1, 1000));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status(),
            invalidArgument("connect #0 failed on rank 0: "
                            "ncclCommInitRankConfig: invalid usage (run with "
                            "NCCL_DEBUG=WARN for details) (ncclResult 5)"));
}

// Tests that a rank which passes the store barrier and dies before its own
// init (the test plays it: it counts itself in and never calls NCCL) is
// named by the others within the timeout: their non-blocking init stays in
// progress until the deadline, then they abort it.
TEST_P(NcclCommunicatorTest, RankDyingBeforeItsInitIsNamed) {
  ASSERT_TRUE(store_->add("p/nccl/ready", 1).ok());
  std::unique_ptr<Device> device = createCpuDevice();
  auto start = std::chrono::steady_clock::now();
  auto comm = createNcclCommunicator(options(*device, 0, 2, 1000));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status(),
            unavailable("connect #0 failed on rank 0: rank 1 never joined "
                        "(ncclCommInitRankConfig did not complete within 600 "
                        "ms)"));
  EXPECT_EQ(fake().aborts(), 1);
  EXPECT_LT(took, milliseconds(1000));
}

// Tests that a collective answered with ncclInProgress (NCCL finishing it
// in the background, as when it connects peers on first use) is waited for
// and then runs like any other.
TEST_P(NcclCommunicatorTest, InProgressCallIsAwaited) {
  runRanks(1, 1000, [&](int, Communicator &c, Device &d) {
    Stream &s = d.defaultStream();
    auto a = std::move(d.allocate(64, 64).value());
    host<float>(*a)[0] = 3.0f;
    fake().inProgress(5);
    ASSERT_TRUE(c.allReduce({a.get(), 0}, {a.get(), 32}, 1, DataType::kF32,
                            ReduceOp::kSum, s)
                    .ok());
    ASSERT_TRUE(c.synchronize(s).ok());
    EXPECT_EQ(host<float>(*a)[8], 3.0f);
    EXPECT_EQ(fake().aborts(), 0);
  });
}

// Tests that a rank waiting for a rank 0 that never starts names it.
TEST_P(NcclCommunicatorTest, MissingRankZeroIsNamed) {
  std::unique_ptr<Device> device = createCpuDevice();
  auto comm = createNcclCommunicator(options(*device, 1, 2, 500));
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(comm.status().message()),
              StartsWith("connect #0 failed on rank 1: rank 0 never joined "
                         "(timed out after 300 ms waiting for key "
                         "'p/nccl/unique_id' in file store "));
}

// Tests the real library on a real GPU with a group of one: each collective
// on device memory, and an all-reduce captured into a graph and replayed.
// Skips without a GPU or library; STRATA_NCCL_LIBRARY / STRATA_RCCL_LIBRARY
// name the library when it is not on the loader's path.
TEST_P(NcclCommunicatorTest, OneRankOnTheGpu) {
  bool cuda = GetParam() == NcclFlavor::kNccl;
  StatusOr<std::unique_ptr<Device>> device =
      cuda ? createCudaDevice() : createHipDevice();
  if (!device.ok())
    GTEST_SKIP() << "no GPU: " << device.status().toString();
  const char *env =
      getenv(cuda ? "STRATA_NCCL_LIBRARY" : "STRATA_RCCL_LIBRARY");
  std::string library = env ? env : "";
  if (library.empty() && cuda && !probeNcclLibrary(GetParam()).ok() &&
      access("/usr/local/cuda/lib64/libnccl.so.2", R_OK) == 0)
    library = "/usr/local/cuda/lib64/libnccl.so.2";
  auto probe = probeNcclLibrary(GetParam(), library);
  if (!probe.ok())
    GTEST_SKIP() << probe.status().toString();
  Device &d = **device;
  NcclCommunicatorOptions o = options(d, 0, 1, 60000);
  o.library = library;
  o.driver_library.clear();
  auto comm = createNcclCommunicator(o);
  ASSERT_TRUE(comm.ok()) << comm.status().toString();
  Communicator &c = **comm;
  std::printf("[ library  ] %s %s on %s\n", c.backendName(), probe->c_str(),
              d.description().c_str());
  Stream &s = d.defaultStream();
  constexpr int kN = 1000;
  std::vector<float> in(kN), out(kN);
  for (int i = 0; i < kN; ++i)
    in[i] = float(i) - 17.5f;
  auto a = std::move(d.allocate(kN * 4, 256).value());
  auto b = std::move(d.allocate(kN * 4, 256).value());
  ASSERT_TRUE(d.copyToDevice(*a, 0, in.data(), kN * 4).ok());
  auto expectB = [&](const char *what) {
    ASSERT_TRUE(c.synchronize(s).ok()) << what;
    std::fill(out.begin(), out.end(), 0.0f);
    ASSERT_TRUE(d.copyFromDevice(*b, 0, out.data(), kN * 4).ok());
    EXPECT_EQ(out, in) << what;
  };
  ASSERT_TRUE(c.allReduce({a.get(), 0}, {b.get(), 0}, kN, DataType::kF32,
                          ReduceOp::kSum, s)
                  .ok());
  expectB("all_reduce");
  ASSERT_TRUE(
      d.copyToDevice(*b, 0, std::vector<float>(kN).data(), kN * 4).ok());
  ASSERT_TRUE(
      c.allGather({a.get(), 0}, {b.get(), 0}, kN, DataType::kF32, s).ok());
  expectB("all_gather");
  ASSERT_TRUE(
      d.copyToDevice(*b, 0, std::vector<float>(kN).data(), kN * 4).ok());
  ASSERT_TRUE(c.reduceScatter({a.get(), 0}, {b.get(), 0}, kN, DataType::kF32,
                              ReduceOp::kMax, s)
                  .ok());
  expectB("reduce_scatter");
  ASSERT_TRUE(
      d.copyToDevice(*b, 0, std::vector<float>(kN).data(), kN * 4).ok());
  std::vector<uint64_t> counts = {kN};
  ASSERT_TRUE(
      c.allToAllV({a.get(), 0}, counts, {b.get(), 0}, counts, DataType::kF32, s)
          .ok());
  expectB("all_to_all_v");
  ASSERT_TRUE(
      d.copyToDevice(*b, 0, std::vector<float>(kN).data(), kN * 4).ok());
  ASSERT_TRUE(
      c.broadcast({a.get(), 0}, {b.get(), 0}, kN, DataType::kF32, 0, s).ok());
  expectB("broadcast");
  ASSERT_TRUE(c.barrier(s).ok());

  // A captured all-reduce reads its input when the graph runs.
  auto stream = d.createStream();
  ASSERT_TRUE(stream.ok());
  Stream &cs = **stream;
  ASSERT_TRUE(
      d.copyToDevice(*b, 0, std::vector<float>(kN).data(), kN * 4).ok());
  ASSERT_TRUE(cs.beginCapture().ok());
  ASSERT_TRUE(c.allReduce({a.get(), 0}, {b.get(), 0}, kN, DataType::kF32,
                          ReduceOp::kSum, cs)
                  .ok());
  auto graph = cs.endCapture();
  ASSERT_TRUE(graph.ok()) << graph.status().toString();
  for (float &v : in)
    v = v * 2.0f + 1.0f;
  ASSERT_TRUE(d.copyToDevice(*a, 0, in.data(), kN * 4).ok());
  ASSERT_TRUE(cs.launchGraph(**graph).ok());
  ASSERT_TRUE(c.synchronize(cs).ok());
  std::fill(out.begin(), out.end(), 0.0f);
  ASSERT_TRUE(d.copyFromDevice(*b, 0, out.data(), kN * 4).ok());
  EXPECT_EQ(out, in) << "captured all_reduce";
}

INSTANTIATE_TEST_SUITE_P(Flavors, NcclCommunicatorTest,
                         ::testing::Values(NcclFlavor::kNccl,
                                           NcclFlavor::kRccl),
                         [](const auto &info) {
                           return info.param == NcclFlavor::kNccl
                                      ? std::string("Nccl")
                                      : std::string("Rccl");
                         });

} // namespace
} // namespace strata::runtime
