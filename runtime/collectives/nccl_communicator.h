//===- nccl_communicator.h - collectives over NCCL / RCCL -------*- C++ -*-===//
//
// Part of strata. The GPU Communicator: NCCL on CUDA devices, RCCL (NCCL's
// API, AMD's library) on HIP devices. The library is loaded at run time with
// dlopen, like the drivers (runtime/device/gpu/dynamic_library.h): nothing
// vendor-specific is needed to build, and binaries run where it is absent
// (createNcclCommunicator fails with UNAVAILABLE "no NCCL: libnccl.so.2 not
// found (...)"). The ~15 entry points used are declared here from NCCL's
// stable C ABI (nccl.h 2.x: ncclUniqueId is 128 bytes, ncclFloat32 = 7,
// ncclBfloat16 = 9, ncclSum = 0, ncclMax = 2).
//
// Rendezvous: rank 0 calls ncclGetUniqueId and publishes the id under
// `<prefix>/nccl/unique_id` in the store; every rank waits for it, then all
// ranks meet at a store barrier (so a rank that never started is named
// before NCCL is entered), then ncclCommInitRankConfig with `blocking = 0`
// (NCCL / RCCL 2.14 or later): the call returns at once and the rank polls
// ncclCommGetAsyncError until the communicator leaves ncclInProgress, so a
// rank dying between the barrier and its own init makes the others abort
// (ncclCommAbort) and name it within the timeout instead of hanging inside
// NCCL. The communicator stays non-blocking: a call NCCL finishes in the
// background (connecting peers on first use) answers ncclInProgress and is
// waited for the same way.
//
// Collectives are enqueued on the stream's vendor stream
// (Stream::nativeHandle()) with device pointers (Buffer::devicePointer());
// all-to-all and all-to-all-v are grouped ncclSend / ncclRecv pairs (zero
// counts skipped). barrier is a one-element all-reduce followed by
// synchronize. synchronize(stream) polls the vendor stream (cuStreamQuery /
// hipStreamQuery, resolved from the driver library) and
// ncclCommGetAsyncError until the work is done, an asynchronous error
// appears or the transport timeout passes; then it calls ncclCommAbort
// (which stops NCCL's kernels) and returns the RankMonitor's diagnosis.
// Collectives may be enqueued on a capturing stream (NCCL supports CUDA/HIP
// graph capture); synchronize and barrier (which waits) refuse a capturing
// stream.
//
// Ownership: the Device and Store must outlive the communicator.
// Thread-safety: see communicator.h; the device's context is made current
// on every call.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_NCCL_COMMUNICATOR_H
#define STRATA_RUNTIME_COLLECTIVES_NCCL_COMMUNICATOR_H

#include <memory>
#include <string>

#include "runtime/collectives/communicator.h"

namespace strata::runtime {

/// Which vendor library.
enum class NcclFlavor : uint8_t {
  kNccl = 0, ///< NVIDIA NCCL on a CUDA device.
  kRccl = 1, ///< AMD RCCL on a HIP device.
};

struct NcclCommunicatorOptions {
  /// Store, rank, size, prefix, timeout.
  CommunicatorOptions group;
  /// The GPU (not owned; must outlive the communicator). Required.
  Device *device = nullptr;
  /// NCCL or RCCL. Default NCCL.
  NcclFlavor flavor = NcclFlavor::kNccl;
  /// Library to dlopen. Default (empty): "libnccl.so.2" then "libnccl.so"
  /// (NCCL), "librccl.so.1" then "librccl.so" (RCCL).
  std::string library;
  /// Library providing the stream query (cuStreamQuery / hipStreamQuery).
  /// Default (empty): the driver the device backend loads ("libcuda.so.1";
  /// "libamdhip64.so" and its versioned names).
  std::string driver_library;
};

/// Loads the library, meets the other ranks and creates the NCCL/RCCL
/// communicator, within the timeout.
StatusOr<std::unique_ptr<Communicator>>
createNcclCommunicator(const NcclCommunicatorOptions &options);

/// Loads the library and resolves every entry point the backend uses,
/// without creating a communicator (no GPU needed). Returns the library's
/// version as "2.28.3" (ncclGetVersion).
StatusOr<std::string> probeNcclLibrary(NcclFlavor flavor,
                                       const std::string &library = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_NCCL_COMMUNICATOR_H
