//===- host_staged_communicator.h - a host communicator on device memory -*- C++ -*-===//
//
// Part of strata. Gloo moves host memory only; a GPU rank whose collectives
// run over Gloo (several ranks sharing one GPU, where NCCL refuses two ranks
// on one device, or a machine without NCCL / RCCL) wraps its Gloo
// communicator in a host-staged one: every collective copies its send
// region into a pinned host buffer of the device (Stream::copyBuffer), waits
// for the stream, runs the inner collective on host memory and copies the
// result back into the recv region, waiting again so that the staging
// buffers can be reused. Regions of host-visible buffers go to the inner
// communicator directly unless `always_stage` (tests). Each collective is
// therefore synchronous with its stream, and a capturing stream is refused
// (FAILED_PRECONDITION), like Gloo itself. Arguments are checked by the
// inner communicator's rules before anything is copied.
//
// Ownership: owns the inner communicator; borrows the device, which must
// outlive it. Thread-safety: one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_HOST_STAGED_COMMUNICATOR_H
#define STRATA_RUNTIME_COLLECTIVES_HOST_STAGED_COMMUNICATOR_H

#include <memory>

#include "runtime/collectives/communicator.h"

namespace strata::runtime {

struct HostStagedCommunicatorOptions {
  /// The host-memory communicator (Gloo). Required.
  std::unique_ptr<Communicator> inner;
  /// Whose pinned host buffers stage the regions (not owned). Required.
  Device *device = nullptr;
  /// Stage host-visible regions too (tests the staging on the CPU device).
  bool always_stage = false;
};

/// INVALID_ARGUMENT without an inner communicator or a device.
StatusOr<std::unique_ptr<Communicator>>
createHostStagedCommunicator(HostStagedCommunicatorOptions options);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_HOST_STAGED_COMMUNICATOR_H
