//===- gloo_communicator.h - collectives on the CPU over Gloo ---*- C++ -*-===//
//
// Part of strata. The CPU Communicator: Gloo (Debian's libgloo-dev, linked)
// over its TCP transport, one full mesh of connections between the ranks.
// Buffers must be host-visible (Buffer::hostPointer(): the CPU device's
// buffers, or page-locked kHost buffers of a GPU device). Each collective
// first waits for the stream's earlier work (Stream::synchronize), then runs
// on the calling thread and is complete when it returns; collectives cannot
// be captured into graphs (FAILED_PRECONDITION on a capturing stream).
//
// Algorithms: Gloo's ring all-reduce, all-gather, all-to-all(v), broadcast
// and barrier; reduce-scatter is an all-to-all of the blocks followed by a
// local reduction in rank order (fp32 accumulation, one rounding for bf16).
//
// Gloo writes to its sockets without MSG_NOSIGNAL, so creating a Gloo
// communicator sets SIGPIPE to SIG_IGN when the program left it at SIG_DFL
// (a dead peer is then an error, not the end of this process).
//
// Ownership and thread-safety: see communicator.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_COLLECTIVES_GLOO_COMMUNICATOR_H
#define STRATA_RUNTIME_COLLECTIVES_GLOO_COMMUNICATOR_H

#include <memory>
#include <string>

#include "runtime/collectives/communicator.h"

namespace strata::runtime {

struct GlooCommunicatorOptions {
  /// Store, rank, size, prefix, timeout.
  CommunicatorOptions group;
  /// Address this rank's transport listens on and advertises to its peers.
  /// Default (empty): the store's localAddress() (the interface that reaches
  /// the TCP store's host), else this host's name.
  std::string hostname;
};

/// Joins the group: publishes this rank's address in the store and connects
/// to every other rank, within the timeout.
StatusOr<std::unique_ptr<Communicator>>
createGlooCommunicator(const GlooCommunicatorOptions &options);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_COLLECTIVES_GLOO_COMMUNICATOR_H
