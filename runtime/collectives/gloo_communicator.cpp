//===- gloo_communicator.cpp - collectives on the CPU over Gloo -----------===//
//
// Part of strata. See gloo_communicator.h. Gloo reports errors by throwing
// (gloo::IoException, gloo::EnforceNotMet); every Gloo call is wrapped, and
// an exception becomes a Status diagnosed by the RankMonitor.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/gloo_communicator.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "runtime/base/numeric.h"
#include "runtime/collectives/rank_monitor.h"

namespace strata::runtime {
namespace {

using std::chrono::milliseconds;

/// Our Store as Gloo's rendezvous store, keys under "<prefix>/gloo/".
class GlooStore final : public gloo::rendezvous::Store {
public:
  GlooStore(runtime::Store &store, std::string prefix, milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  void set(const std::string &key, const std::vector<char> &data) override {
    Status s = store_.set(prefix_ + key, std::string(data.begin(), data.end()));
    if (!s.ok())
      throw std::runtime_error(std::string(s.message()));
  }

  std::vector<char> get(const std::string &key) override {
    StatusOr<std::string> value = store_.get(prefix_ + key, timeout_);
    if (!value.ok())
      throw std::runtime_error(std::string(value.status().message()));
    return std::vector<char>(value->begin(), value->end());
  }

  void wait(const std::vector<std::string> &keys) override {
    wait(keys, timeout_);
  }

  void wait(const std::vector<std::string> &keys,
            const milliseconds &timeout) override {
    for (const std::string &key : keys) {
      StatusOr<std::string> value = store_.get(prefix_ + key, timeout);
      if (!value.ok())
        throw std::runtime_error(std::string(value.status().message()));
    }
  }

private:
  runtime::Store &store_;
  std::string prefix_;
  milliseconds timeout_;
};

/// Calls `fn(T{})` with T the C++ element type of `type`.
template <typename Fn> void withElementType(DataType type, Fn &&fn) {
  switch (type) {
  case DataType::kF32:
    fn(float{});
    return;
  case DataType::kBF16:
    fn(uint16_t{});
    return;
  case DataType::kI32:
    fn(int32_t{});
    return;
  case DataType::kU8:
    fn(uint8_t{});
    return;
  }
}

/// Element-wise out[i] = op(a[i], b[i]) over `n` elements of `type`.
void reduceInto(DataType type, ReduceOp op, void *out, const void *a,
                const void *b, size_t n) {
  switch (type) {
  case DataType::kF32: {
    auto *o = static_cast<float *>(out);
    auto *x = static_cast<const float *>(a);
    auto *y = static_cast<const float *>(b);
    for (size_t i = 0; i < n; ++i)
      o[i] = op == ReduceOp::kSum ? x[i] + y[i] : std::max(x[i], y[i]);
    return;
  }
  case DataType::kBF16: {
    auto *o = static_cast<uint16_t *>(out);
    auto *x = static_cast<const uint16_t *>(a);
    auto *y = static_cast<const uint16_t *>(b);
    for (size_t i = 0; i < n; ++i) {
      float fx = bf16ToF32(x[i]), fy = bf16ToF32(y[i]);
      o[i] = f32ToBf16(op == ReduceOp::kSum ? fx + fy : std::max(fx, fy));
    }
    return;
  }
  case DataType::kI32: {
    auto *o = static_cast<int32_t *>(out);
    auto *x = static_cast<const int32_t *>(a);
    auto *y = static_cast<const int32_t *>(b);
    for (size_t i = 0; i < n; ++i)
      o[i] = op == ReduceOp::kSum
                 ? static_cast<int32_t>(static_cast<uint32_t>(x[i]) +
                                        static_cast<uint32_t>(y[i]))
                 : std::max(x[i], y[i]);
    return;
  }
  case DataType::kU8:
    return;
  }
}

class GlooCommunicator final : public Communicator {
public:
  GlooCommunicator(CommunicatorOptions options,
                   std::unique_ptr<RankMonitor> monitor)
      : options_(std::move(options)), monitor_(std::move(monitor)) {}

  Status connect(const std::string &hostname) {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    GlooStore store(*options_.store, options_.prefix + "/gloo/",
                    monitor_->transportTimeout());
    monitor_->enter(0, "connect");
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank,
                                                                 options_.size);
      context->setTimeout(monitor_->transportTimeout());
      context->connectFullMesh(store, device_);
      context_ = std::move(context);
    } catch (const std::exception &e) {
      failed_ = monitor_->diagnose(
          0, "connect",
          unavailable("gloo: cannot connect from {}: {}", hostname, e.what()));
      return failed_;
    }
    return okStatus();
  }

  const char *backendName() const override { return "gloo"; }
  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }

  Status allReduce(Region send, Region recv, uint64_t count, DataType type,
                   ReduceOp op, Stream &stream) override {
    const char *name = "all_reduce";
    STRATA_RETURN_IF_ERROR(checkReducible(name, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    STRATA_ASSIGN_OR_RETURN(char *in, hostAddress(name, "send", send));
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t bytes = count * dataTypeBytes(type);
    if (in != out && overlaps(in, out, bytes, bytes))
      return invalidArgument("{}: send and recv overlap without being the "
                             "same region",
                             name);
    return run(name, stream, [&](uint32_t tag) {
      if (count == 0)
        return;
      if (options_.size == 1 || in != out)
        std::memmove(out, in, bytes);
      if (options_.size == 1)
        return;
      gloo::AllreduceOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(monitor_->transportTimeout());
      withElementType(type, [&](auto element) {
        using T = decltype(element);
        opts.setOutput(reinterpret_cast<T *>(out), count);
      });
      opts.setReduceFunction(
          [type, op](void *o, const void *a, const void *b, size_t n) {
            reduceInto(type, op, o, a, b, n);
          });
      gloo::allreduce(opts);
    });
  }

  Status allGather(Region send, Region recv, uint64_t count, DataType type,
                   Stream &stream) override {
    const char *name = "all_gather";
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, total, type));
    STRATA_ASSIGN_OR_RETURN(char *in, hostAddress(name, "send", send));
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t bytes = count * dataTypeBytes(type);
    return run(name, stream, [&](uint32_t tag) {
      if (count == 0)
        return;
      // Gloo reads its input from the rank's own block of the output.
      char *own = out + static_cast<uint64_t>(options_.rank) * bytes;
      if (in != own)
        std::memmove(own, in, bytes);
      if (options_.size == 1)
        return;
      gloo::AllgatherOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(monitor_->transportTimeout());
      withElementType(type, [&](auto element) {
        using T = decltype(element);
        opts.setOutput(reinterpret_cast<T *>(out), total);
      });
      gloo::allgather(opts);
    });
  }

  Status reduceScatter(Region send, Region recv, uint64_t count, DataType type,
                       ReduceOp op, Stream &stream) override {
    const char *name = "reduce_scatter";
    STRATA_RETURN_IF_ERROR(checkReducible(name, type));
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    STRATA_ASSIGN_OR_RETURN(char *in, hostAddress(name, "send", send));
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t bytes = count * dataTypeBytes(type);
    return run(name, stream, [&](uint32_t tag) {
      if (count == 0)
        return;
      // Block r of every rank's send arrives here as block r of `blocks`...
      std::vector<char> blocks(total * dataTypeBytes(type));
      if (options_.size == 1) {
        std::memcpy(blocks.data(), in, bytes);
      } else {
        gloo::AlltoallOptions opts(context_);
        opts.setTag(tag);
        opts.setTimeout(monitor_->transportTimeout());
        withElementType(type, [&](auto element) {
          using T = decltype(element);
          opts.setInput(reinterpret_cast<T *>(in), total);
          opts.setOutput(reinterpret_cast<T *>(blocks.data()), total);
        });
        gloo::alltoall(opts);
      }
      // ...and is reduced in rank order.
      reduceBlocks(type, op, out, blocks.data(), count);
    });
  }

  Status allToAll(Region send, Region recv, uint64_t count, DataType type,
                  Stream &stream) override {
    const char *name = "all_to_all";
    STRATA_ASSIGN_OR_RETURN(uint64_t total, perRankTotal(name, count));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, total, type));
    STRATA_ASSIGN_OR_RETURN(char *in, hostAddress(name, "send", send));
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t bytes = total * dataTypeBytes(type);
    if (overlaps(in, out, bytes, bytes))
      return invalidArgument("{}: send and recv overlap", name);
    return run(name, stream, [&](uint32_t tag) {
      if (count == 0)
        return;
      if (options_.size == 1) {
        std::memcpy(out, in, bytes);
        return;
      }
      gloo::AlltoallOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(monitor_->transportTimeout());
      withElementType(type, [&](auto element) {
        using T = decltype(element);
        opts.setInput(reinterpret_cast<T *>(in), total);
        opts.setOutput(reinterpret_cast<T *>(out), total);
      });
      gloo::alltoall(opts);
    });
  }

  Status allToAllV(Region send, const std::vector<uint64_t> &send_counts,
                   Region recv, const std::vector<uint64_t> &recv_counts,
                   DataType type, Stream &stream) override {
    const char *name = "all_to_all_v";
    STRATA_ASSIGN_OR_RETURN(
        uint64_t send_total,
        checkCounts(name, "send", send_counts, options_.size));
    STRATA_ASSIGN_OR_RETURN(
        uint64_t recv_total,
        checkCounts(name, "recv", recv_counts, options_.size));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, send_total, type));
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, recv_total, type));
    STRATA_ASSIGN_OR_RETURN(char *in, hostAddress(name, "send", send));
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t element = dataTypeBytes(type);
    if (overlaps(in, out, send_total * element, recv_total * element))
      return invalidArgument("{}: send and recv overlap", name);
    if (options_.size == 1 && send_counts[0] != recv_counts[0])
      return invalidArgument("{}: rank 0 sends {} elements to itself but "
                             "receives {}",
                             name, send_counts[0], recv_counts[0]);
    return run(name, stream, [&](uint32_t tag) {
      if (options_.size == 1) {
        std::memcpy(out, in, send_total * element);
        return;
      }
      std::vector<int64_t> in_counts(send_counts.begin(), send_counts.end());
      std::vector<int64_t> out_counts(recv_counts.begin(), recv_counts.end());
      // Gloo wants non-null pointers even when every count is zero.
      char dummy[8];
      gloo::AlltoallvOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(monitor_->transportTimeout());
      withElementType(type, [&](auto e) {
        using T = decltype(e);
        opts.setInput(reinterpret_cast<T *>(send_total ? in : dummy),
                      in_counts);
        opts.setOutput(reinterpret_cast<T *>(recv_total ? out : dummy),
                       out_counts);
      });
      gloo::alltoallv(opts);
    });
  }

  Status broadcast(Region send, Region recv, uint64_t count, DataType type,
                   int root, Stream &stream) override {
    const char *name = "broadcast";
    if (root < 0 || root >= options_.size)
      return invalidArgument("{}: root {} outside [0, {})", name, root,
                             options_.size);
    STRATA_RETURN_IF_ERROR(checkRegion(name, "recv", recv, count, type));
    char *in = nullptr;
    if (options_.rank == root) {
      STRATA_RETURN_IF_ERROR(checkRegion(name, "send", send, count, type));
      STRATA_ASSIGN_OR_RETURN(in, hostAddress(name, "send", send));
    }
    STRATA_ASSIGN_OR_RETURN(char *out, hostAddress(name, "recv", recv));
    uint64_t bytes = count * dataTypeBytes(type);
    return run(name, stream, [&](uint32_t tag) {
      if (count == 0)
        return;
      if (in && in != out)
        std::memmove(out, in, bytes);
      if (options_.size == 1)
        return;
      gloo::BroadcastOptions opts(context_);
      opts.setTag(tag);
      opts.setRoot(root);
      opts.setTimeout(monitor_->transportTimeout());
      withElementType(type, [&](auto element) {
        using T = decltype(element);
        opts.setOutput(reinterpret_cast<T *>(out), count);
      });
      gloo::broadcast(opts);
    });
  }

  Status barrier(Stream &stream) override {
    return run("barrier", stream, [&](uint32_t tag) {
      if (options_.size == 1)
        return;
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(monitor_->transportTimeout());
      gloo::barrier(opts);
    });
  }

  Status synchronize(Stream &stream) override {
    if (!failed_.ok())
      return failedPrecondition("the communicator failed earlier: {}",
                                failed_.message());
    return stream.synchronize();
  }

private:
  static bool overlaps(const char *a, const char *b, uint64_t a_bytes,
                       uint64_t b_bytes) {
    return a_bytes && b_bytes && a < b + b_bytes && b < a + a_bytes;
  }

  StatusOr<uint64_t> perRankTotal(const char *op, uint64_t count) const {
    if (count > UINT64_MAX / static_cast<uint64_t>(options_.size))
      return outOfRange("{}: {} elements per rank x {} ranks overflows", op,
                        count, options_.size);
    return count * static_cast<uint64_t>(options_.size);
  }

  static StatusOr<char *> hostAddress(const char *op, const char *what,
                                      Region region) {
    void *host = region.buffer->hostPointer();
    if (!host)
      return invalidArgument("{}: gloo needs host-visible buffers, the {} "
                             "buffer is device memory",
                             op, what);
    return static_cast<char *>(host) + region.offset_bytes;
  }

  /// out[i] = op over r of blocks[r * count + i], in rank order; bf16 is
  /// accumulated in fp32 and rounded once.
  void reduceBlocks(DataType type, ReduceOp op, char *out, const char *blocks,
                    uint64_t count) const {
    int n = options_.size;
    if (type == DataType::kBF16) {
      auto *in = reinterpret_cast<const uint16_t *>(blocks);
      auto *o = reinterpret_cast<uint16_t *>(out);
      for (uint64_t i = 0; i < count; ++i) {
        float acc = bf16ToF32(in[i]);
        for (int r = 1; r < n; ++r) {
          float v = bf16ToF32(in[static_cast<uint64_t>(r) * count + i]);
          acc = op == ReduceOp::kSum ? acc + v : std::max(acc, v);
        }
        o[i] = f32ToBf16(acc);
      }
      return;
    }
    uint64_t bytes = count * dataTypeBytes(type);
    std::memmove(out, blocks, bytes);
    for (int r = 1; r < n; ++r)
      reduceInto(type, op, out, out, blocks + static_cast<uint64_t>(r) * bytes,
                 count);
  }

  /// Runs one collective: refuses after an earlier failure or on a capturing
  /// stream, waits for the stream, then calls `body(tag)` and turns a Gloo
  /// exception into the monitor's diagnosis.
  template <typename Body>
  Status run(const char *op, Stream &stream, Body &&body) {
    if (!failed_.ok())
      return failedPrecondition("{}: the communicator failed earlier: {}", op,
                                failed_.message());
    if (stream.capturing())
      return failedPrecondition("{}: gloo collectives cannot be captured into "
                                "a graph",
                                op);
    STRATA_RETURN_IF_ERROR(stream.synchronize());
    uint64_t seq = ++seq_;
    monitor_->enter(seq, op);
    Status cause;
    try {
      body(static_cast<uint32_t>(seq));
      return okStatus();
    } catch (const std::exception &e) {
      std::string what = e.what();
      bool timed_out = what.find("Timed out") != std::string::npos ||
                       what.find("timed out") != std::string::npos;
      cause = Status(timed_out ? StatusCode::kDeadlineExceeded
                               : StatusCode::kUnavailable,
                     fmt::format("gloo: {}", what));
    }
    failed_ = monitor_->diagnose(seq, op, cause);
    return failed_;
  }

  CommunicatorOptions options_;
  std::unique_ptr<RankMonitor> monitor_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  uint64_t seq_ = 0;
  Status failed_;
};

} // namespace

StatusOr<std::unique_ptr<Communicator>>
createGlooCommunicator(const GlooCommunicatorOptions &options) {
  STRATA_ASSIGN_OR_RETURN(CommunicatorOptions group,
                          resolveOptions(options.group));
  // Gloo writes to sockets without MSG_NOSIGNAL: a peer that died would kill
  // this process with SIGPIPE instead of becoming an error. Ignore SIGPIPE
  // unless the program installed its own handler.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL)
    ::signal(SIGPIPE, SIG_IGN);
  std::string hostname = options.hostname;
  if (hostname.empty())
    hostname = group.store->localAddress();
  if (hostname.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    hostname = host;
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RankMonitor> monitor,
                          RankMonitor::start(*group.store, group.prefix,
                                             group.rank, group.size,
                                             group.timeout));
  auto comm =
      std::make_unique<GlooCommunicator>(std::move(group), std::move(monitor));
  STRATA_RETURN_IF_ERROR(comm->connect(hostname));
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace strata::runtime
