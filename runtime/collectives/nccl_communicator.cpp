//===- nccl_communicator.cpp - collectives over NCCL / RCCL ---------------===//
//
// Part of strata. See nccl_communicator.h. No vendor header: the types and
// entry points below follow nccl.h (2.x), which RCCL shares.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/nccl_communicator.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/collectives/rank_monitor.h"
#include "runtime/device/gpu/dynamic_library.h"

namespace strata::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

//===----------------------------------------------------------------------===//
// The C ABI (nccl.h)
//===----------------------------------------------------------------------===//

using ncclComm_t = void *;
using ncclResult_t = int;
struct ncclUniqueId {
  char internal[128];
};
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclSystemError = 2;
constexpr ncclResult_t ncclInvalidArgument = 4;
constexpr ncclResult_t ncclInvalidUsage = 5;
constexpr ncclResult_t ncclRemoteError = 6;
constexpr ncclResult_t ncclInProgress = 7;
constexpr int ncclUint8 = 1, ncclInt32 = 2, ncclFloat32 = 7, ncclBfloat16 = 9;
constexpr int ncclSum = 0, ncclMax = 2;
/// The head of ncclConfig_t as NCCL 2.14 defined it. The library copies
/// `size` bytes over its defaults (NCCL_CONFIG_INITIALIZER) and resets every
/// field newer than `version`, so this prefix works with every later release
/// and leaves their fields at their defaults.
struct ncclConfig {
  size_t size = sizeof(ncclConfig);
  unsigned magic = 0xcafebeef;
  unsigned version = 21400; // NCCL_VERSION(2, 14, 0)
  int blocking = 0;         // ncclCommInitRankConfig returns at once
};
/// cuStreamQuery / hipStreamQuery "not ready" (CUDA_ERROR_NOT_READY,
/// hipErrorNotReady).
constexpr int kStreamNotReady = 600;

struct NcclApi {
  ncclResult_t (*getVersion)(int *);
  ncclResult_t (*getUniqueId)(ncclUniqueId *);
  ncclResult_t (*commInitRankConfig)(ncclComm_t *, int, ncclUniqueId, int,
                                     ncclConfig *);
  ncclResult_t (*commDestroy)(ncclComm_t);
  ncclResult_t (*commAbort)(ncclComm_t);
  ncclResult_t (*commGetAsyncError)(ncclComm_t, ncclResult_t *);
  const char *(*getErrorString)(ncclResult_t);
  ncclResult_t (*allReduce)(const void *, void *, size_t, int, int, ncclComm_t,
                            void *);
  ncclResult_t (*allGather)(const void *, void *, size_t, int, ncclComm_t,
                            void *);
  ncclResult_t (*reduceScatter)(const void *, void *, size_t, int, int,
                                ncclComm_t, void *);
  ncclResult_t (*broadcast)(const void *, void *, size_t, int, int, ncclComm_t,
                            void *);
  ncclResult_t (*send)(const void *, size_t, int, int, ncclComm_t, void *);
  ncclResult_t (*recv)(void *, size_t, int, int, ncclComm_t, void *);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
  /// cuStreamQuery / hipStreamQuery from the driver library.
  int (*streamQuery)(void *);
};

const char *flavorName(NcclFlavor flavor) {
  return flavor == NcclFlavor::kNccl ? "NCCL" : "RCCL";
}

std::vector<std::string> libraryNames(NcclFlavor flavor,
                                      const std::string &library) {
  if (!library.empty())
    return {library};
  if (flavor == NcclFlavor::kNccl)
    return {"libnccl.so.2", "libnccl.so"};
  return {"librccl.so.1", "librccl.so"};
}

/// Opens the library and resolves the NCCL entry points (not streamQuery).
StatusOr<NcclApi> loadNccl(NcclFlavor flavor, const std::string &library) {
  std::string no = fmt::format("no {}", flavorName(flavor));
  STRATA_ASSIGN_OR_RETURN(
      DynamicLibrary lib,
      DynamicLibrary::open(libraryNames(flavor, library), no.c_str()));
  NcclApi api{};
  Status s;
  auto resolve = [&](auto &fn, const char *name) {
    if (s.ok())
      s = lib.resolve(fn, {name});
  };
  resolve(api.getVersion, "ncclGetVersion");
  resolve(api.getUniqueId, "ncclGetUniqueId");
  resolve(api.commInitRankConfig, "ncclCommInitRankConfig");
  resolve(api.commDestroy, "ncclCommDestroy");
  resolve(api.commAbort, "ncclCommAbort");
  resolve(api.commGetAsyncError, "ncclCommGetAsyncError");
  resolve(api.getErrorString, "ncclGetErrorString");
  resolve(api.allReduce, "ncclAllReduce");
  resolve(api.allGather, "ncclAllGather");
  resolve(api.reduceScatter, "ncclReduceScatter");
  resolve(api.broadcast, "ncclBroadcast");
  resolve(api.send, "ncclSend");
  resolve(api.recv, "ncclRecv");
  resolve(api.groupStart, "ncclGroupStart");
  resolve(api.groupEnd, "ncclGroupEnd");
  if (!s.ok())
    return unavailable("unusable {} library: {}", flavorName(flavor),
                       s.message());
  return api;
}

std::string versionText(int v) {
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch, older releases
  // major * 1000 + minor * 100 + patch.
  if (v >= 10000)
    return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, (v % 1000) / 100, v % 100);
}

int ncclTypeOf(DataType type) {
  switch (type) {
  case DataType::kF32:
    return ncclFloat32;
  case DataType::kBF16:
    return ncclBfloat16;
  case DataType::kI32:
    return ncclInt32;
  case DataType::kU8:
    return ncclUint8;
  }
  return ncclUint8;
}

int ncclOpOf(ReduceOp op) { return op == ReduceOp::kSum ? ncclSum : ncclMax; }

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(NcclApi api, NcclCommunicatorOptions options,
                   CommunicatorOptions group,
                   std::unique_ptr<RankMonitor> monitor)
      : api_(api), options_(std::move(options)), group_(std::move(group)),
        monitor_(std::move(monitor)) {}

  ~NcclCommunicator() override {
    if (comm_) {
      (void)options_.device->makeCurrent();
      api_.commDestroy(comm_);
    }
  }

  Status init() {
    Device &device = *options_.device;
    STRATA_RETURN_IF_ERROR(device.makeCurrent());
    STRATA_ASSIGN_OR_RETURN(scratch_, device.allocate(256, 256));
    monitor_->enter(0, "connect");
    std::string id_key = group_.prefix + "/nccl/unique_id";
    ncclUniqueId id{};
    if (group_.rank == 0) {
      STRATA_RETURN_IF_ERROR(check("ncclGetUniqueId", api_.getUniqueId(&id)));
      STRATA_RETURN_IF_ERROR(
          group_.store->set(id_key, std::string(id.internal, sizeof(id))));
    } else {
      StatusOr<std::string> value =
          group_.store->get(id_key, monitor_->transportTimeout());
      if (!value.ok())
        return fail(0, "connect", value.status());
      if (value->size() != sizeof(id))
        return internalError("{}: unique id of {} bytes, expected {}", id_key,
                             value->size(), sizeof(id));
      std::memcpy(id.internal, value->data(), sizeof(id));
    }
    // Everyone alive before NCCL's init: a rank that never started is
    // named here, by the store.
    std::string ready_key = group_.prefix + "/nccl/ready";
    STRATA_ASSIGN_OR_RETURN(int64_t arrived, group_.store->add(ready_key, 1));
    Clock::time_point deadline = Clock::now() + monitor_->transportTimeout();
    while (arrived < group_.size) {
      if (Clock::now() >= deadline)
        return fail(0, "connect",
                    Status(StatusCode::kDeadlineExceeded,
                           fmt::format("{} of {} ranks reached the store "
                                       "barrier before ncclCommInitRankConfig",
                                       arrived, group_.size)));
      std::this_thread::sleep_for(milliseconds(2));
      STRATA_ASSIGN_OR_RETURN(arrived, group_.store->add(ready_key, 0));
    }
    // Non-blocking init: a rank that dies after the barrier leaves the
    // others polling (and, at the deadline, aborting) instead of blocked
    // inside NCCL, where nothing could stop them.
    ncclConfig config;
    ncclResult_t rc = api_.commInitRankConfig(&comm_, group_.size, id,
                                              group_.rank, &config);
    if (rc != ncclSuccess && rc != ncclInProgress) {
      Status s = check("ncclCommInitRankConfig", rc);
      comm_ = nullptr;
      return fail(0, "connect", s);
    }
    return awaitCommunicator("ncclCommInitRankConfig", 0, "connect",
                             deadline);
  }

  const char *backendName() const override {
    return options_.flavor == NcclFlavor::kNccl ? "nccl" : "rccl";
  }
  int rank() const override { return group_.rank; }
  int size() const override { return group_.size; }

  Status allReduce(Region send, Region recv, uint64_t count, DataType type,
                   ReduceOp op, Stream &stream) override {
    const char *name = "all_reduce";
    STRATA_RETURN_IF_ERROR(checkReducible(name, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    return enqueue(name, stream, [&](void *s) {
      return called("ncclAllReduce",
                   api_.allReduce(address(send), address(recv), count,
                                  ncclTypeOf(type), ncclOpOf(op), comm_, s));
    });
  }

  Status allGather(Region send, Region recv, uint64_t count, DataType type,
                   Stream &stream) override {
    const char *name = "all_gather";
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, total, type));
    return enqueue(name, stream, [&](void *s) {
      return called("ncclAllGather",
                   api_.allGather(address(send), address(recv), count,
                                  ncclTypeOf(type), comm_, s));
    });
  }

  Status reduceScatter(Region send, Region recv, uint64_t count, DataType type,
                       ReduceOp op, Stream &stream) override {
    const char *name = "reduce_scatter";
    STRATA_RETURN_IF_ERROR(checkReducible(name, type));
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    return enqueue(name, stream, [&](void *s) {
      return called("ncclReduceScatter",
                   api_.reduceScatter(address(send), address(recv), count,
                                      ncclTypeOf(type), ncclOpOf(op), comm_,
                                      s));
    });
  }

  Status allToAll(Region send, Region recv, uint64_t count, DataType type,
                  Stream &stream) override {
    const char *name = "all_to_all";
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, total, type));
    std::vector<uint64_t> counts(static_cast<size_t>(group_.size), count);
    return enqueue(name, stream, [&](void *s) {
      return sendRecv(send, counts, recv, counts, type, s);
    });
  }

  Status allToAllV(Region send, const std::vector<uint64_t> &send_counts,
                   Region recv, const std::vector<uint64_t> &recv_counts,
                   DataType type, Stream &stream) override {
    const char *name = "all_to_all_v";
    STRATA_ASSIGN_OR_RETURN(
        uint64_t send_total,
        checkCounts(name, "send", send_counts, group_.size));
    STRATA_ASSIGN_OR_RETURN(
        uint64_t recv_total,
        checkCounts(name, "recv", recv_counts, group_.size));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, send_total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, recv_total, type));
    return enqueue(name, stream, [&](void *s) {
      return sendRecv(send, send_counts, recv, recv_counts, type, s);
    });
  }

  Status broadcast(Region send, Region recv, uint64_t count, DataType type,
                   int root, Stream &stream) override {
    const char *name = "broadcast";
    if (root < 0 || root >= group_.size)
      return invalidArgument("{}: root {} outside [0, {})", name, root,
                             group_.size);
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    if (group_.rank == root)
      STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
    return enqueue(name, stream, [&](void *s) {
      const void *in = group_.rank == root ? address(send) : address(recv);
      return called("ncclBroadcast",
                   api_.broadcast(in, address(recv), count, ncclTypeOf(type),
                                  root, comm_, s));
    });
  }

  Status barrier(Stream &stream) override {
    if (stream.capturing())
      return failedPrecondition("barrier: waits for the other ranks, so it "
                                "cannot be captured");
    STRATA_RETURN_IF_ERROR(enqueue("barrier", stream, [&](void *s) {
      void *p = scratch_->devicePointer();
      return called("ncclAllReduce",
                   api_.allReduce(p, p, 1, ncclFloat32, ncclSum, comm_, s));
    }));
    return synchronize(stream);
  }

  Status synchronize(Stream &stream) override {
    if (!failed_.ok())
      return failedPrecondition("the communicator failed earlier: {}",
                                failed_.message());
    if (stream.capturing())
      return failedPrecondition("cannot synchronize a capturing stream");
    STRATA_RETURN_IF_ERROR(options_.device->makeCurrent());
    void *handle = stream.nativeHandle();
    Clock::time_point start = Clock::now();
    Clock::time_point deadline = start + monitor_->transportTimeout();
    for (uint64_t polls = 0;; ++polls) {
      int q = api_.streamQuery(handle);
      if (q == 0)
        return okStatus();
      if (q != kStreamNotReady)
        return fail(seq_, last_op_,
                    internalError("{}: error {}", streamQueryName(), q));
      ncclResult_t async = ncclSuccess;
      ncclResult_t rc = api_.commGetAsyncError(comm_, &async);
      if (rc != ncclSuccess)
        return fail(seq_, last_op_, check("ncclCommGetAsyncError", rc));
      if (async != ncclSuccess && async != ncclInProgress)
        return fail(seq_, last_op_, check("ncclCommGetAsyncError", async));
      if (Clock::now() >= deadline)
        return fail(
            seq_, last_op_,
            Status(StatusCode::kDeadlineExceeded,
                   fmt::format("{} #{} did not complete within {} ms", last_op_,
                               seq_, monitor_->transportTimeout().count())));
      // Spin briefly (a decode step's collective takes microseconds), then
      // sleep between polls.
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  void setStreamQuery(int (*query)(void *), std::string name) {
    api_.streamQuery = query;
    stream_query_name_ = std::move(name);
  }

private:
  const std::string &streamQueryName() const { return stream_query_name_; }

  Status check(const char *call, ncclResult_t rc) const {
    if (rc == ncclSuccess)
      return okStatus();
    const char *text = api_.getErrorString ? api_.getErrorString(rc) : "";
    std::string message =
        fmt::format("{}: {} (ncclResult {})", call, text ? text : "", rc);
    if (rc == ncclInvalidArgument || rc == ncclInvalidUsage)
      return Status(StatusCode::kInvalidArgument, message);
    if (rc == ncclSystemError || rc == ncclRemoteError)
      return Status(StatusCode::kUnavailable, message);
    return Status(StatusCode::kInternal, message);
  }

  /// Waits while the communicator's state (ncclCommGetAsyncError) is
  /// ncclInProgress: a non-blocking communicator's init, or a call it
  /// finishes in the background (connecting peers on first use). An error
  /// state, or `deadline`, fails operation `op` #`seq` (aborting NCCL).
  Status awaitCommunicator(const char *call, uint64_t seq, const char *op,
                           Clock::time_point deadline) {
    for (uint64_t polls = 0;; ++polls) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t rc = api_.commGetAsyncError(comm_, &state);
      if (rc != ncclSuccess)
        return fail(seq, op, check("ncclCommGetAsyncError", rc));
      if (state == ncclSuccess)
        return okStatus();
      if (state != ncclInProgress)
        return fail(seq, op, check(call, state));
      if (Clock::now() >= deadline)
        return fail(seq, op,
                    Status(StatusCode::kDeadlineExceeded,
                           fmt::format("{} did not complete within {} ms", call,
                                       monitor_->transportTimeout().count())));
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  /// check() of an enqueueing call, whose ncclInProgress (non-blocking
  /// communicator) means "done once the state leaves ncclInProgress".
  Status called(const char *call, ncclResult_t rc) {
    if (rc != ncclInProgress)
      return check(call, rc);
    return awaitCommunicator(call, seq_, last_op_,
                             Clock::now() + monitor_->transportTimeout());
  }

  /// Aborts the communicator and returns (and keeps) the diagnosis.
  Status fail(uint64_t seq, const char *op, const Status &cause) {
    if (comm_) {
      api_.commAbort(comm_);
      comm_ = nullptr;
    }
    failed_ = monitor_->diagnose(seq, op, cause);
    return failed_;
  }

  StatusOr<uint64_t> perRankTotal(const char *op, uint64_t count) const {
    if (count > UINT64_MAX / static_cast<uint64_t>(group_.size))
      return outOfRange("{}: {} elements per rank x {} ranks overflows", op,
                        count, group_.size);
    return count * static_cast<uint64_t>(group_.size);
  }

  static char *address(Region region) {
    return static_cast<char *>(region.buffer->devicePointer()) +
           region.offset_bytes;
  }

  Status sendRecv(Region send, const std::vector<uint64_t> &send_counts,
                  Region recv, const std::vector<uint64_t> &recv_counts,
                  DataType type, void *stream) {
    uint64_t element = dataTypeBytes(type);
    STRATA_RETURN_IF_ERROR(check("ncclGroupStart", api_.groupStart()));
    Status status;
    uint64_t send_off = 0, recv_off = 0;
    for (int peer = 0; peer < group_.size && status.ok(); ++peer) {
      uint64_t sc = send_counts[static_cast<size_t>(peer)];
      uint64_t rc = recv_counts[static_cast<size_t>(peer)];
      if (sc)
        status =
            check("ncclSend", api_.send(address(send) + send_off * element, sc,
                                        ncclTypeOf(type), peer, comm_, stream));
      if (status.ok() && rc)
        status =
            check("ncclRecv", api_.recv(address(recv) + recv_off * element, rc,
                                        ncclTypeOf(type), peer, comm_, stream));
      send_off += sc;
      recv_off += rc;
    }
    Status end = called("ncclGroupEnd", api_.groupEnd());
    return status.ok() ? end : status;
  }

  /// Enqueues one collective: refuses after an earlier failure, makes the
  /// device current, then calls `body(vendor stream)`.
  template <typename Body>
  Status enqueue(const char *op, Stream &stream, Body &&body) {
    if (!failed_.ok())
      return failedPrecondition("{}: the communicator failed earlier: {}", op,
                                failed_.message());
    STRATA_RETURN_IF_ERROR(options_.device->makeCurrent());
    uint64_t seq = ++seq_;
    last_op_ = op;
    monitor_->enter(seq, op);
    Status s = body(stream.nativeHandle());
    if (s.ok())
      return okStatus();
    // A wait inside the body (called) may have failed and diagnosed it.
    return failed_.ok() ? fail(seq, op, s) : failed_;
  }

  NcclApi api_;
  NcclCommunicatorOptions options_;
  CommunicatorOptions group_;
  std::unique_ptr<RankMonitor> monitor_;
  std::string stream_query_name_;
  std::unique_ptr<Buffer> scratch_;
  ncclComm_t comm_ = nullptr;
  uint64_t seq_ = 0;
  const char *last_op_ = "connect";
  Status failed_;
};

} // namespace

StatusOr<std::string> probeNcclLibrary(NcclFlavor flavor,
                                       const std::string &library) {
  STRATA_ASSIGN_OR_RETURN(NcclApi api, loadNccl(flavor, library));
  int version = 0;
  if (api.getVersion(&version) != ncclSuccess)
    return internalError("ncclGetVersion failed");
  return versionText(version);
}

StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(const NcclCommunicatorOptions &options) {
  if (!options.device)
    return invalidArgument("{} communicator: no device given",
                           flavorName(options.flavor));
  STRATA_ASSIGN_OR_RETURN(CommunicatorOptions group,
                          resolveOptions(options.group));
  STRATA_ASSIGN_OR_RETURN(NcclApi api,
                          loadNccl(options.flavor, options.library));
  // The stream query comes from the driver the device backend loaded.
  bool cuda = options.flavor == NcclFlavor::kNccl;
  std::vector<std::string> drivers;
  if (!options.driver_library.empty())
    drivers = {options.driver_library};
  else if (cuda)
    drivers = {"libcuda.so.1"};
  else
    drivers = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
               "libamdhip64.so.5"};
  const char *query_name = cuda ? "cuStreamQuery" : "hipStreamQuery";
  STRATA_ASSIGN_OR_RETURN(
      DynamicLibrary driver,
      DynamicLibrary::open(drivers,
                           cuda ? "no CUDA driver" : "no HIP runtime"));
  int (*query)(void *) = nullptr;
  STRATA_RETURN_IF_ERROR(driver.resolve(query, {query_name}));

  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RankMonitor> monitor,
                          RankMonitor::start(*group.store, group.prefix,
                                             group.rank, group.size,
                                             group.timeout));
  auto comm = std::make_unique<NcclCommunicator>(api, options, group,
                                                 std::move(monitor));
  comm->setStreamQuery(query, query_name);
  STRATA_RETURN_IF_ERROR(comm->init());
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace strata::runtime
