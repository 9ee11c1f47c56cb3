//===- communicator.h - collectives across ranks ----------------*- C++ -*-===//
//
// Part of strata. A Communicator connects the `size` ranks of one parallel
// group (one process per rank) and runs the collectives tensor and expert
// parallelism need on device buffers: all-reduce (sum or max), all-gather,
// reduce-scatter, all-to-all and all-to-all-v, broadcast and barrier.
// Backends:
//
//   * Gloo (gloo_communicator.h): the CPU backend, over TCP. Buffers must be
//     host-visible (the CPU device's buffers, or kHost buffers of a GPU
//     device); collectives run on the calling thread and are complete when
//     the call returns.
//   * NCCL on CUDA and RCCL on HIP (nccl_communicator.h): the vendor library
//     is loaded with dlopen like the drivers; collectives are enqueued on the
//     stream's vendor stream and complete asynchronously.
//
// Ranks meet through a Store (store.h): TcpStore (rank 0 serves at master
// addr:port) or FileStore. Every communicator runs a RankMonitor
// (rank_monitor.h), so a dead or hung rank becomes an error naming it on
// every other rank, within `timeout`, instead of a hang.
//
// Semantics shared by every backend (counts are in elements of `type`):
//
//   allReduce      recv[i] = op over ranks of send[i], i < count
//   allGather      recv[r * count + i] = send[i] of rank r
//   reduceScatter  recv[i] = op over ranks of send[rank * count + i]
//   allToAll       recv[r * count + i] = send[rank * count + i] of rank r
//   allToAllV      block r of send (send_counts[r] elements, blocks packed in
//                  rank order) goes to rank r, and arrives there as block
//                  `rank` of recv (recv_counts packed the same way); rank r's
//                  send_counts[q] must equal rank q's recv_counts[r]
//   broadcast      recv[i] = send[i] of rank `root` (send is read on root
//                  only; send == recv is the in-place form)
//   barrier        returns (Gloo) / completes (NCCL) once every rank entered
//
// allReduce may run in place (send == recv, same offset). bf16 values are
// added in fp32; a partial sum passed between ranks (ring all-reduce) is
// rounded to bf16 (nearest even), as NCCL does, while Gloo's reduce-scatter
// rounds once at the end. The result is identical on every rank. The order
// in which ranks' contributions are added depends on the backend's
// algorithm, so sums are reproducible per backend and world size, not across
// them.
//
// Errors: arguments are checked before any transport call (INVALID_ARGUMENT,
// OUT_OF_RANGE with the values); a transport failure or timeout returns
// UNAVAILABLE / DEADLINE_EXCEEDED from RankMonitor::diagnose and leaves the
// communicator failed: every later call returns FAILED_PRECONDITION with the
// first error.
//
// Ownership: a Communicator is owned by its creator; the Store, and for NCCL
// the Device, must outlive it. Thread-safety: one thread at a time (the
// device's thread).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_COMMUNICATOR_H
#define STRATA_RUNTIME_COLLECTIVES_COMMUNICATOR_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/collectives/store.h"
#include "runtime/device/device.h"

namespace strata::runtime {

/// Element type of a collective.
enum class DataType : uint8_t {
  kF32 = 0,  ///< IEEE binary32.
  kBF16 = 1, ///< bfloat16 (reductions add in fp32, round to nearest even).
  kI32 = 2,  ///< int32 (e.g. token ids, expert routing counts).
  kU8 = 3,   ///< raw bytes (gathers of any payload; not reducible).
};

/// Bytes per element of `type`.
uint64_t dataTypeBytes(DataType type);
/// "f32", "bf16", "i32", "u8".
const char *dataTypeName(DataType type);

/// Reduction of allReduce / reduceScatter.
enum class ReduceOp : uint8_t {
  kSum = 0,
  kMax = 1,
};

/// A place in a buffer: `buffer` (not owned) at `offset_bytes`.
struct Region {
  /// The buffer. Default null (invalid).
  Buffer *buffer = nullptr;
  /// Byte offset into the buffer. Default 0.
  uint64_t offset_bytes = 0;
};

/// A collective's (and the rendezvous') timeout when none is given.
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout{60000};

/// What every backend needs to join a group.
struct CommunicatorOptions {
  /// Rendezvous store (not owned; must outlive the communicator). Required.
  Store *store = nullptr;
  /// This process's rank in [0, size). Default 0.
  int rank = 0;
  /// Number of ranks. Default (0): 1.
  int size = 0;
  /// Key namespace in the store, so several groups (tensor- and
  /// expert-parallel) share one store. Default (empty): "strata".
  std::string prefix;
  /// Longest a collective (and the rendezvous) may take before it fails with
  /// an error naming the ranks at fault. Default (0):
  /// kDefaultCollectiveTimeout (60 s).
  std::chrono::milliseconds timeout{0};
};

class Communicator {
public:
  virtual ~Communicator() = default;

  /// "gloo", "nccl" or "rccl".
  virtual const char *backendName() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  virtual Status allReduce(Region send, Region recv, uint64_t count,
                           DataType type, ReduceOp op, Stream &stream) = 0;
  virtual Status allGather(Region send, Region recv, uint64_t count,
                           DataType type, Stream &stream) = 0;
  virtual Status reduceScatter(Region send, Region recv, uint64_t count,
                               DataType type, ReduceOp op, Stream &stream) = 0;
  virtual Status allToAll(Region send, Region recv, uint64_t count,
                          DataType type, Stream &stream) = 0;
  virtual Status allToAllV(Region send,
                           const std::vector<uint64_t> &send_counts,
                           Region recv,
                           const std::vector<uint64_t> &recv_counts,
                           DataType type, Stream &stream) = 0;
  virtual Status broadcast(Region send, Region recv, uint64_t count,
                           DataType type, int root, Stream &stream) = 0;
  virtual Status barrier(Stream &stream) = 0;

  /// Waits until the collectives enqueued on `stream` have completed, at most
  /// the timeout; use it instead of Stream::synchronize after collectives so
  /// that a dead peer is an error, not a hang. Immediate for Gloo.
  virtual Status synchronize(Stream &stream) = 0;
};

//===----------------------------------------------------------------------===//
// Shared by the backends
//===----------------------------------------------------------------------===//

/// Defaults applied and checked: a store, 1 <= size, 0 <= rank < size.
StatusOr<CommunicatorOptions> resolveOptions(const CommunicatorOptions &in);

/// Checks that `count` elements of `type` at `region` lie inside its buffer
/// ("<op>: <what> region [a, b) outside its 100-byte buffer"); `what` is
/// "send" or "recv".
Status checkRegion(const char *op, const char *what, Region region,
                   uint64_t count, DataType type);

/// Sum of `counts`, INVALID_ARGUMENT unless there is one count per rank.
StatusOr<uint64_t> checkCounts(const char *op, const char *what,
                               const std::vector<uint64_t> &counts, int size);

/// Whether `type` can be reduced (not kU8).
Status checkReducible(const char *op, DataType type);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_COMMUNICATOR_H
