//===- collectives_worker.cpp - one rank of the collectives tests ---------===//
//
// Part of strata. A test program, started once per rank by
// gloo_communicator_test.cpp (separate processes, like real ranks):
//
//   strata-collectives-worker --rank R --size N --store tcp:HOST:PORT|file:DIR
//       [--timeout-ms T] [--scenario NAME] [--victim V] [--at K]
//       [--staged 1]
//
// With --staged 1 the Gloo communicator is wrapped in a host-staged one
// that stages every region (host_staged_communicator.h), so the same checks
// run through the staging copies.
//
// Scenarios:
//   all    every collective on the CPU device's buffers, each result checked
//          exactly against values computed here; prints "rank R: ok".
//   kill   all-reduces in a loop; rank V SIGKILLs itself before all-reduce
//          number K; every other rank must get an error.
//   stop   the same, but rank V SIGSTOPs itself (a hung process).
//   late   rank V sleeps for 2 x the timeout before all-reduce number K (alive,
//          not arriving).
// A collective error is printed as "rank R: error after N ms: <status>" and
// exits with status 3; a wrong result prints the element and exits with 1.
//
//===----------------------------------------------------------------------===//

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/numeric.h"
#include "runtime/collectives/gloo_communicator.h"
#include "runtime/collectives/host_staged_communicator.h"
#include "runtime/collectives/store.h"
#include "runtime/device/cpu/cpu_device.h"

using namespace strata::runtime;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int rank = 0, size = 1;
  std::string store;
  int timeout_ms = 60000;
  std::string scenario = "all";
  int victim = -1, at = 0;
  bool staged = false;
};

[[noreturn]] void fail(int rank, const std::string &what) {
  std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  std::exit(1);
}

template <typename T> T check(int rank, StatusOr<T> value, const char *what) {
  if (!value.ok())
    fail(rank, std::string(what) + ": " + value.status().toString());
  return std::move(value).value();
}

void check(int rank, const Status &status, const char *what) {
  if (!status.ok())
    fail(rank, std::string(what) + ": " + status.toString());
}

/// The rank's device, a stream, and typed access to host buffers.
struct Env {
  int rank, size;
  Device *device;
  Communicator *comm;

  std::unique_ptr<Buffer> buffer(uint64_t bytes) {
    return check(rank, device->allocate(bytes, 64), "allocate");
  }
  template <typename T> T *at(Buffer &b) {
    return static_cast<T *>(b.hostPointer());
  }
  Stream &stream() { return device->defaultStream(); }
};

template <typename T>
void expectEqual(int rank, const char *what, const T *got, const T *want,
                 size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
      fail(rank, fmt::format("{}: element {} is {}, expected {}", what, i,
                             +got[i], +want[i]));
}

void runAll(Env &e) {
  int n = e.size, me = e.rank;
  Stream &s = e.stream();
  auto check_ok = [&](const Status &st, const char *what) {
    check(me, st, what);
  };

  // all_reduce sum, f32, a count over Gloo's 1 MiB segment and not a
  // multiple of anything.
  for (uint64_t count : {uint64_t(1037), uint64_t(300001)}) {
    auto send = e.buffer(count * 4), recv = e.buffer(count * 4);
    std::vector<float> want(count);
    for (uint64_t i = 0; i < count; ++i) {
      e.at<float>(*send)[i] = float(me * 1000 + int(i % 4096));
      want[i] = float(1000 * n * (n - 1) / 2 + n * int(i % 4096));
    }
    check_ok(e.comm->allReduce({send.get(), 0}, {recv.get(), 0}, count,
                               DataType::kF32, ReduceOp::kSum, s),
             "all_reduce f32");
    expectEqual(me, "all_reduce f32 sum", e.at<float>(*recv), want.data(),
                count);
  }
  // all_reduce sum, bf16, in place at an offset; small integers are exact.
  {
    uint64_t count = 515, off = 6;
    auto buf = e.buffer(off + count * 2);
    std::vector<uint16_t> want(count);
    for (uint64_t i = 0; i < count; ++i) {
      reinterpret_cast<uint16_t *>(e.at<char>(*buf) + off)[i] =
          f32ToBf16(float((me + int(i)) % 8));
      int sum = 0;
      for (int r = 0; r < n; ++r)
        sum += (r + int(i)) % 8;
      want[i] = f32ToBf16(float(sum));
    }
    check_ok(e.comm->allReduce({buf.get(), off}, {buf.get(), off}, count,
                               DataType::kBF16, ReduceOp::kSum, s),
             "all_reduce bf16");
    expectEqual(me, "all_reduce bf16 sum in place",
                reinterpret_cast<uint16_t *>(e.at<char>(*buf) + off),
                want.data(), count);
  }
  // all_reduce max f32 and sum i32.
  {
    uint64_t count = 100;
    auto send = e.buffer(count * 4), recv = e.buffer(count * 4);
    std::vector<float> want(count);
    for (uint64_t i = 0; i < count; ++i) {
      e.at<float>(*send)[i] =
          int(i) % n == me ? 100.0f + float(i) : -float(i) - float(me);
      want[i] = 100.0f + float(i);
    }
    check_ok(e.comm->allReduce({send.get(), 0}, {recv.get(), 0}, count,
                               DataType::kF32, ReduceOp::kMax, s),
             "all_reduce max");
    expectEqual(me, "all_reduce f32 max", e.at<float>(*recv), want.data(),
                count);
    std::vector<int32_t> want_i(count);
    for (uint64_t i = 0; i < count; ++i) {
      e.at<int32_t>(*send)[i] = -me * 7 + int(i);
      want_i[i] = -7 * n * (n - 1) / 2 + n * int(i);
    }
    check_ok(e.comm->allReduce({send.get(), 0}, {recv.get(), 0}, count,
                               DataType::kI32, ReduceOp::kSum, s),
             "all_reduce i32");
    expectEqual(me, "all_reduce i32 sum", e.at<int32_t>(*recv), want_i.data(),
                count);
  }
  // all_gather f32, and u8 from the rank's own block (in place).
  {
    uint64_t count = 33;
    auto send = e.buffer(count * 4), recv = e.buffer(n * count * 4);
    std::vector<float> want(n * count);
    for (uint64_t i = 0; i < count; ++i)
      e.at<float>(*send)[i] = float(me * 100 + int(i));
    for (int r = 0; r < n; ++r)
      for (uint64_t i = 0; i < count; ++i)
        want[r * count + i] = float(r * 100 + int(i));
    check_ok(e.comm->allGather({send.get(), 0}, {recv.get(), 0}, count,
                               DataType::kF32, s),
             "all_gather");
    expectEqual(me, "all_gather f32", e.at<float>(*recv), want.data(),
                n * count);
    auto bytes = e.buffer(n * 3);
    std::vector<uint8_t> want_b(n * 3);
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < 3; ++i)
        want_b[r * 3 + i] = uint8_t(r * 16 + i + 1);
    for (int i = 0; i < 3; ++i)
      e.at<uint8_t>(*bytes)[me * 3 + i] = want_b[me * 3 + i];
    check_ok(e.comm->allGather({bytes.get(), uint64_t(me) * 3},
                               {bytes.get(), 0}, 3, DataType::kU8, s),
             "all_gather in place");
    expectEqual(me, "all_gather u8 in place", e.at<uint8_t>(*bytes),
                want_b.data(), n * 3);
  }
  // reduce_scatter sum f32 and bf16.
  {
    uint64_t count = 21;
    auto send = e.buffer(n * count * 4), recv = e.buffer(count * 4);
    std::vector<float> want(count);
    for (int j = 0; j < n; ++j)
      for (uint64_t i = 0; i < count; ++i)
        e.at<float>(*send)[j * count + i] = float(me + j + int(i));
    for (uint64_t i = 0; i < count; ++i)
      want[i] = float(n * (n - 1) / 2 + n * (me + int(i)));
    check_ok(e.comm->reduceScatter({send.get(), 0}, {recv.get(), 0}, count,
                                   DataType::kF32, ReduceOp::kSum, s),
             "reduce_scatter f32");
    expectEqual(me, "reduce_scatter f32 sum", e.at<float>(*recv), want.data(),
                count);
    std::vector<uint16_t> want_h(count);
    for (int j = 0; j < n; ++j)
      for (uint64_t i = 0; i < count; ++i)
        e.at<uint16_t>(*send)[j * count + i] = f32ToBf16(float(me * j + 1));
    for (uint64_t i = 0; i < count; ++i)
      want_h[i] = f32ToBf16(float(me * n * (n - 1) / 2 + n));
    check_ok(e.comm->reduceScatter({send.get(), 0}, {recv.get(), 0}, count,
                                   DataType::kBF16, ReduceOp::kSum, s),
             "reduce_scatter bf16");
    expectEqual(me, "reduce_scatter bf16 sum", e.at<uint16_t>(*recv),
                want_h.data(), count);
  }
  // all_to_all i32.
  {
    uint64_t count = 9;
    auto send = e.buffer(n * count * 4), recv = e.buffer(n * count * 4);
    std::vector<int32_t> want(n * count);
    for (int j = 0; j < n; ++j)
      for (uint64_t i = 0; i < count; ++i) {
        e.at<int32_t>(*send)[j * count + i] = me * 10000 + j * 100 + int(i);
        want[j * count + i] = j * 10000 + me * 100 + int(i);
      }
    check_ok(e.comm->allToAll({send.get(), 0}, {recv.get(), 0}, count,
                              DataType::kI32, s),
             "all_to_all");
    expectEqual(me, "all_to_all i32", e.at<int32_t>(*recv), want.data(),
                n * count);
  }
  // all_to_all_v f32: rank r sends (r + q) % 3 elements to rank q (some
  // zero), packed in rank order.
  {
    std::vector<uint64_t> send_counts(n), recv_counts(n);
    uint64_t send_total = 0, recv_total = 0;
    for (int q = 0; q < n; ++q) {
      send_counts[q] = uint64_t((me + q) % 3);
      recv_counts[q] = uint64_t((q + me) % 3);
      send_total += send_counts[q];
      recv_total += recv_counts[q];
    }
    auto send = e.buffer(send_total * 4 + 4),
         recv = e.buffer(recv_total * 4 + 4);
    std::vector<float> want;
    uint64_t k = 0;
    for (int q = 0; q < n; ++q)
      for (uint64_t i = 0; i < send_counts[q]; ++i)
        e.at<float>(*send)[k++] = float(me * 1000 + q * 10 + int(i));
    for (int q = 0; q < n; ++q)
      for (uint64_t i = 0; i < recv_counts[q]; ++i)
        want.push_back(float(q * 1000 + me * 10 + int(i)));
    check_ok(e.comm->allToAllV({send.get(), 0}, send_counts, {recv.get(), 0},
                               recv_counts, DataType::kF32, s),
             "all_to_all_v");
    expectEqual(me, "all_to_all_v f32", e.at<float>(*recv), want.data(),
                want.size());
  }
  // broadcast from the last rank, then in place from rank 0.
  {
    uint64_t count = 77;
    auto send = e.buffer(count * 4), recv = e.buffer(count * 4);
    std::vector<float> want(count);
    for (uint64_t i = 0; i < count; ++i) {
      e.at<float>(*send)[i] = me == n - 1 ? float(7 * int(i) + 1) : -1.0f;
      e.at<float>(*recv)[i] = -2.0f;
      want[i] = float(7 * int(i) + 1);
    }
    check_ok(e.comm->broadcast({send.get(), 0}, {recv.get(), 0}, count,
                               DataType::kF32, n - 1, s),
             "broadcast");
    expectEqual(me, "broadcast f32 from the last rank", e.at<float>(*recv),
                want.data(), count);
    for (uint64_t i = 0; i < count; ++i) {
      e.at<float>(*recv)[i] = me == 0 ? float(3 * int(i)) : -3.0f;
      want[i] = float(3 * int(i));
    }
    check_ok(e.comm->broadcast({recv.get(), 0}, {recv.get(), 0}, count,
                               DataType::kF32, 0, s),
             "broadcast in place");
    expectEqual(me, "broadcast f32 in place from rank 0", e.at<float>(*recv),
                want.data(), count);
  }
  check_ok(e.comm->barrier(s), "barrier");
  check_ok(e.comm->synchronize(s), "synchronize");
}

/// All-reduces in a loop; the victim dies, stops or dawdles before number
/// `at`. Returns only on success (the victim never gets there).
void runFault(Env &e, const Args &a) {
  auto buf = e.buffer(64 * 4);
  for (int step = 1; step <= a.at + 1000; ++step) {
    if (e.rank == a.victim && step == a.at) {
      std::fprintf(stderr, "rank %d: %s before all_reduce %d\n", e.rank,
                   a.scenario.c_str(), step);
      std::fflush(stderr);
      if (a.scenario == "kill")
        ::raise(SIGKILL);
      if (a.scenario == "stop")
        ::raise(SIGSTOP);
      if (a.scenario == "late")
        std::this_thread::sleep_for(
            std::chrono::milliseconds(2 * a.timeout_ms));
    }
    Clock::time_point start = Clock::now();
    Status st = e.comm->allReduce({buf.get(), 0}, {buf.get(), 0}, 64,
                                  DataType::kF32, ReduceOp::kSum, e.stream());
    if (!st.ok()) {
      long ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(
                         Clock::now() - start)
                         .count());
      std::printf("rank %d: error after %ld ms: %s\n", e.rank, ms,
                  st.toString().c_str());
      std::fflush(stdout);
      std::exit(3);
    }
    if (step >= a.at + 5 && e.rank != a.victim)
      break; // the victim's loss was not noticed: report below
  }
  std::printf("rank %d: no error\n", e.rank);
}

} // namespace

int main(int argc, char **argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank")
      a.rank = std::atoi(v.c_str());
    else if (k == "--size")
      a.size = std::atoi(v.c_str());
    else if (k == "--store")
      a.store = v;
    else if (k == "--timeout-ms")
      a.timeout_ms = std::atoi(v.c_str());
    else if (k == "--scenario")
      a.scenario = v;
    else if (k == "--victim")
      a.victim = std::atoi(v.c_str());
    else if (k == "--at")
      a.at = std::atoi(v.c_str());
    else if (k == "--staged")
      a.staged = v == "1";
    else
      fail(a.rank, "unknown flag " + k);
  }
  std::unique_ptr<Store> store;
  if (a.store.rfind("tcp:", 0) == 0) {
    std::string rest = a.store.substr(4);
    size_t colon = rest.rfind(':');
    TcpStoreOptions o;
    o.host = rest.substr(0, colon);
    o.port = uint16_t(std::atoi(rest.c_str() + colon + 1));
    o.serve = a.rank == 0;
    o.timeout = std::chrono::milliseconds(a.timeout_ms);
    o.request_timeout = std::chrono::milliseconds(a.timeout_ms / 5);
    store = check(a.rank, TcpStore::create(o), "tcp store");
  } else if (a.store.rfind("file:", 0) == 0) {
    store = check(a.rank, createFileStore(a.store.substr(5)), "file store");
  } else {
    fail(a.rank, "bad --store " + a.store);
  }
  std::unique_ptr<Device> device = createCpuDevice();
  GlooCommunicatorOptions o;
  o.group.store = store.get();
  o.group.rank = a.rank;
  o.group.size = a.size;
  o.group.timeout = std::chrono::milliseconds(a.timeout_ms);
  // With the TCP store Gloo advertises the address that reaches the store
  // (its default); the file store gives no such address.
  if (a.store.rfind("file:", 0) == 0)
    o.hostname = "127.0.0.1";
  auto comm = check(a.rank, createGlooCommunicator(o), "communicator");
  if (a.staged) {
    HostStagedCommunicatorOptions staged;
    staged.inner = std::move(comm);
    staged.device = device.get();
    staged.always_stage = true;
    comm = check(a.rank, createHostStagedCommunicator(std::move(staged)),
                 "host-staged communicator");
  }
  Env e{a.rank, a.size, device.get(), comm.get()};
  if (a.scenario == "all") {
    runAll(e);
    std::printf("rank %d: ok\n", a.rank);
  } else {
    runFault(e, a);
  }
  return 0;
}
