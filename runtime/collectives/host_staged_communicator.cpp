//===- host_staged_communicator.cpp - a host communicator on device memory ===//
//
// Part of strata. See host_staged_communicator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/host_staged_communicator.h"

#include <numeric>

namespace strata::runtime {

namespace {

class HostStagedCommunicator final : public Communicator {
public:
  explicit HostStagedCommunicator(HostStagedCommunicatorOptions options)
      : inner_(std::move(options.inner)), device_(*options.device),
        always_stage_(options.always_stage) {}

  const char *backendName() const override { return inner_->backendName(); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }

  Status allReduce(Region send, Region recv, uint64_t count, DataType type,
                   ReduceOp op, Stream &stream) override {
    return staged("all_reduce", send, count, recv, count, type, stream,
                  [&](Region in, Region out) {
                    return inner_->allReduce(in, out, count, type, op, stream);
                  });
  }
  Status allGather(Region send, Region recv, uint64_t count, DataType type,
                   Stream &stream) override {
    return staged("all_gather", send, count, recv, count * size(), type,
                  stream, [&](Region in, Region out) {
                    return inner_->allGather(in, out, count, type, stream);
                  });
  }
  Status reduceScatter(Region send, Region recv, uint64_t count,
                       DataType type, ReduceOp op, Stream &stream) override {
    return staged("reduce_scatter", send, count * size(), recv, count, type,
                  stream, [&](Region in, Region out) {
                    return inner_->reduceScatter(in, out, count, type, op,
                                                 stream);
                  });
  }
  Status allToAll(Region send, Region recv, uint64_t count, DataType type,
                  Stream &stream) override {
    return staged("all_to_all", send, count * size(), recv, count * size(),
                  type, stream, [&](Region in, Region out) {
                    return inner_->allToAll(in, out, count, type, stream);
                  });
  }
  Status allToAllV(Region send, const std::vector<uint64_t> &send_counts,
                   Region recv, const std::vector<uint64_t> &recv_counts,
                   DataType type, Stream &stream) override {
    STRATA_ASSIGN_OR_RETURN(
        uint64_t sent, checkCounts("all_to_all_v", "send", send_counts, size()));
    STRATA_ASSIGN_OR_RETURN(
        uint64_t received,
        checkCounts("all_to_all_v", "recv", recv_counts, size()));
    return staged("all_to_all_v", send, sent, recv, received, type, stream,
                  [&](Region in, Region out) {
                    return inner_->allToAllV(in, send_counts, out, recv_counts,
                                             type, stream);
                  });
  }
  Status broadcast(Region send, Region recv, uint64_t count, DataType type,
                   int root, Stream &stream) override {
    // send is read on the root only.
    uint64_t sent = rank() == root ? count : 0;
    return staged("broadcast", send, sent, recv, count, type, stream,
                  [&](Region in, Region out) {
                    if (rank() != root)
                      in = out;
                    return inner_->broadcast(in, out, count, type, root,
                                             stream);
                  });
  }
  Status barrier(Stream &stream) override { return inner_->barrier(stream); }
  Status synchronize(Stream &stream) override {
    STRATA_RETURN_IF_ERROR(inner_->synchronize(stream));
    return stream.synchronize();
  }

private:
  bool direct(Region region) const {
    return !always_stage_ && region.buffer && region.buffer->hostPointer();
  }

  /// A pinned host buffer of at least `bytes` in `slot` (grown, never
  /// shrunk).
  StatusOr<Buffer *> stagingBuffer(std::unique_ptr<Buffer> &slot,
                                   uint64_t bytes) {
    if (!slot || slot->size() < bytes) {
      slot.reset();
      STRATA_ASSIGN_OR_RETURN(slot,
                              device_.allocateHost(std::max<uint64_t>(bytes, 64)));
    }
    return slot.get();
  }

  /// Runs `collective` on host regions for `send` (`sent` elements read)
  /// and `recv` (`received` elements written).
  template <typename Collective>
  Status staged(const char *op, Region send, uint64_t sent, Region recv,
                uint64_t received, DataType type, Stream &stream,
                Collective &&collective) {
    if (stream.capturing())
      return failedPrecondition("{}: a host-staged {} collective cannot be "
                                "captured into a graph",
                                op, inner_->backendName());
    if (direct(send) && direct(recv))
      return collective(send, recv);
    if (sent > 0)
      STRATA_RETURN_IF_ERROR(checkRegion(op, "send", send, sent, type));
    STRATA_RETURN_IF_ERROR(checkRegion(op, "recv", recv, received, type));
    uint64_t send_bytes = sent * dataTypeBytes(type);
    uint64_t recv_bytes = received * dataTypeBytes(type);
    STRATA_ASSIGN_OR_RETURN(Buffer * in, stagingBuffer(send_host_, send_bytes));
    STRATA_ASSIGN_OR_RETURN(Buffer * out,
                            stagingBuffer(recv_host_, recv_bytes));
    if (send_bytes > 0) {
      STRATA_RETURN_IF_ERROR(stream.copyBuffer(*send.buffer, send.offset_bytes,
                                               *in, 0, send_bytes));
      STRATA_RETURN_IF_ERROR(stream.synchronize());
    }
    STRATA_RETURN_IF_ERROR(collective(Region{in, 0}, Region{out, 0}));
    if (recv_bytes == 0)
      return okStatus();
    STRATA_RETURN_IF_ERROR(stream.copyBuffer(*out, 0, *recv.buffer,
                                             recv.offset_bytes, recv_bytes));
    // The staging buffers are reused by the next collective.
    return stream.synchronize();
  }

  std::unique_ptr<Communicator> inner_;
  Device &device_;
  bool always_stage_;
  std::unique_ptr<Buffer> send_host_, recv_host_;
};

} // namespace

StatusOr<std::unique_ptr<Communicator>>
createHostStagedCommunicator(HostStagedCommunicatorOptions options) {
  if (!options.inner)
    return invalidArgument("host-staged communicator: no inner communicator");
  if (!options.device)
    return invalidArgument("host-staged communicator: no device");
  return std::unique_ptr<Communicator>(
      new HostStagedCommunicator(std::move(options)));
}

} // namespace strata::runtime
