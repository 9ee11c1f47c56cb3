//===- fake_libnccl.cpp - a loopback stand-in for NCCL / RCCL -------------===//
//
// Part of strata. Built by the tests as libstrata_fake_nccl.so: exports the
// ncclXxx entry points the NCCL/RCCL backend resolves, plus cuStreamQuery and
// hipStreamQuery, so the backend's loading, argument mapping, completion
// polling and error paths run without a GPU. The "GPU" is host memory (the
// CPU device's buffers; their device pointers are host pointers) and the
// ranks are threads of one process:
//
//   * ncclCommInitRankConfig joins the group named by the unique id's bytes
//     (the config must carry NCCL_CONFIG_INITIALIZER's magic and a version
//     of at least 2.14); a blocking one waits for every rank, a non-blocking
//     one returns ncclInProgress, and ncclCommGetAsyncError reports
//     ncclInProgress, until every rank has joined (so a rank that never
//     calls it leaves the others in progress);
//   * every collective is operation number k of its rank; it executes, for
//     all ranks at once, when the last rank enqueues its number k (so
//     results are exact and in order, and a rank that never arrives leaves
//     the others pending);
//   * ncclSend / ncclRecv must be grouped (ncclGroupStart/End, as the
//     backend does); at ncclGroupEnd sends are copied into a mailbox per
//     (source, destination) and receives are posted;
//   * cuStreamQuery / hipStreamQuery return 600 (not ready) while a
//     collective the calling thread enqueued has not executed or one of its
//     receives has no message yet (receives complete in the query, so the
//     tests synchronize before reading what they received).
//
// Test controls (extern "C"): fakeNcclFailNext(name, result) makes the next
// call of `name` return `result`; fakeNcclSetAsyncError(result) is what
// ncclCommGetAsyncError reports; fakeNcclHang(1) makes the stream queries
// report "not ready" forever; fakeNcclInProgress(polls) makes the next
// collective return ncclInProgress (after enqueueing it) and
// ncclCommGetAsyncError report it for `polls` polls, as NCCL does for a
// call it finishes in the background; fakeNcclAborts() counts
// ncclCommAbort calls; fakeNcclReset() clears all of it.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using Result = int;
constexpr Result kSuccess = 0, kInvalidArgument = 4, kInvalidUsage = 5,
                 kInProgress = 7;
struct UniqueId {
  char internal[128];
};
/// ncclConfig_t's head (the fields every release since 2.14 has).
struct Config {
  size_t size;
  unsigned magic;
  unsigned version;
  int blocking;
};

enum Type { kU8 = 1, kI32 = 2, kF32 = 7, kBF16 = 9 };

size_t typeBytes(int type) {
  switch (type) {
  case kU8:
    return 1;
  case kI32:
  case kF32:
    return 4;
  case kBF16:
    return 2;
  }
  return 0;
}

float bf16ToFloat(uint16_t bits) {
  uint32_t w = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  w += 0x7fff + ((w >> 16) & 1);
  return uint16_t(w >> 16);
}

/// Element i of `p` as a double (exact for the types here).
double load(int type, const void *p, size_t i) {
  switch (type) {
  case kU8:
    return static_cast<const uint8_t *>(p)[i];
  case kI32:
    return static_cast<const int32_t *>(p)[i];
  case kF32:
    return static_cast<const float *>(p)[i];
  case kBF16:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
  return 0;
}

void store(int type, void *p, size_t i, double v) {
  switch (type) {
  case kU8:
    static_cast<uint8_t *>(p)[i] = uint8_t(v);
    return;
  case kI32:
    static_cast<int32_t *>(p)[i] = int32_t(v);
    return;
  case kF32:
    static_cast<float *>(p)[i] = float(v);
    return;
  case kBF16:
    static_cast<uint16_t *>(p)[i] = floatToBf16(float(v));
    return;
  }
}

enum Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast };

struct P2P {
  bool is_send;
  void *ptr;
  size_t count;
  int type;
  int peer;
};

/// One rank's part of a collective.
struct Part {
  const void *send = nullptr;
  void *recv = nullptr;
  size_t count = 0;
  int type = 0, op = 0, root = 0;
};

struct Op {
  Kind kind;
  std::vector<Part> parts;
  int arrived = 0;
  bool done = false;
};

/// A message of a send, copied when the group ends.
struct Message {
  std::vector<char> data;
  size_t count;
  int type;
};

struct Group {
  int size;
  /// Ranks that called ncclCommInitRankConfig.
  int joined = 0;
  std::map<uint64_t, Op> ops;
  /// (source, destination) -> messages in send order.
  std::map<std::pair<int, int>, std::deque<Message>> mailbox;
  Result async_error = kSuccess;
};

struct Comm {
  std::shared_ptr<Group> group;
  int rank;
  uint64_t next = 0;
};

std::mutex g_mutex;
/// Signalled when a rank joins a group (blocking inits wait on it).
std::condition_variable g_joined;
std::map<std::string, std::shared_ptr<Group>> g_groups;
std::map<std::string, Result> g_fail_next;
Result g_async_error = kSuccess;
bool g_hang = false;
/// fakeNcclInProgress: whether the next collective answers ncclInProgress,
/// and how many more polls report it.
bool g_in_progress_next = false;
int g_in_progress_polls = 0, g_in_progress_armed = 0;
int g_aborts = 0;
uint64_t g_ids = 0;

/// Operations this thread enqueued and has not seen complete.
thread_local std::vector<std::pair<std::shared_ptr<Group>, uint64_t>> t_pending;
thread_local int t_group_depth = 0;
thread_local Comm *t_group_comm = nullptr;
thread_local std::vector<P2P> t_group_p2p;
/// Receives this thread posted: (group, own rank, the receive).
struct PendingRecv {
  std::shared_ptr<Group> group;
  int rank;
  P2P recv;
};
thread_local std::vector<PendingRecv> t_recvs;

Result injected(const char *name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_fail_next.find(name);
  if (it == g_fail_next.end())
    return kSuccess;
  Result r = it->second;
  g_fail_next.erase(it);
  return r;
}

double reduce(int op, double a, double b) {
  return op == 0 ? a + b : (a > b ? a : b);
}

/// Runs `op` for every rank (all parts present). Called under g_mutex.
void execute(Group &g, Op &op) {
  int n = g.size;
  const Part &p0 = op.parts[0];
  switch (op.kind) {
  case kAllReduce: {
    std::vector<double> acc(p0.count);
    for (size_t i = 0; i < p0.count; ++i) {
      double v = load(p0.type, op.parts[0].send, i);
      for (int r = 1; r < n; ++r) {
        v = reduce(p0.op, v, load(p0.type, op.parts[r].send, i));
        // Partial sums travel as the element type, as on the wire.
        if (p0.type == kBF16)
          v = bf16ToFloat(floatToBf16(float(v)));
      }
      acc[i] = v;
    }
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < p0.count; ++i)
        store(p0.type, op.parts[r].recv, i, acc[i]);
    return;
  }
  case kAllGather: {
    size_t bytes = p0.count * typeBytes(p0.type);
    std::vector<char> all(bytes * n);
    for (int q = 0; q < n; ++q)
      std::memcpy(all.data() + q * bytes, op.parts[q].send, bytes);
    for (int r = 0; r < n; ++r)
      std::memcpy(op.parts[r].recv, all.data(), all.size());
    return;
  }
  case kReduceScatter: {
    std::vector<std::vector<double>> out(n, std::vector<double>(p0.count));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < p0.count; ++i) {
        double v = load(p0.type, op.parts[0].send, r * p0.count + i);
        for (int q = 1; q < n; ++q)
          v = reduce(p0.op, v,
                     load(p0.type, op.parts[q].send, r * p0.count + i));
        out[r][i] = v;
      }
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < p0.count; ++i)
        store(p0.type, op.parts[r].recv, i, out[r][i]);
    return;
  }
  case kBroadcast: {
    size_t bytes = p0.count * typeBytes(p0.type);
    std::vector<char> data(bytes);
    std::memcpy(data.data(), op.parts[p0.root].send, bytes);
    for (int r = 0; r < n; ++r)
      std::memcpy(op.parts[r].recv, data.data(), bytes);
    return;
  }
  }
}

/// Adds this rank's part of its next operation.
Result enqueue(Comm *comm, Kind kind, Part part) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Group &g = *comm->group;
  uint64_t k = comm->next++;
  Op &op = g.ops[k];
  if (op.parts.empty()) {
    op.kind = kind;
    op.parts.resize(g.size);
  } else if (op.kind != kind) {
    g.async_error = kInvalidUsage;
    return kInvalidUsage;
  }
  op.parts[comm->rank] = std::move(part);
  t_pending.push_back({comm->group, k});
  if (++op.arrived == g.size) {
    execute(g, op);
    op.done = true;
  }
  if (g_in_progress_next) {
    g_in_progress_next = false;
    g_in_progress_polls = g_in_progress_armed;
    return kInProgress;
  }
  return kSuccess;
}

int streamQuery() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_hang)
    return 600;
  std::vector<std::pair<std::shared_ptr<Group>, uint64_t>> still;
  for (auto &pending : t_pending)
    if (!pending.first->ops[pending.second].done)
      still.push_back(pending);
  t_pending.swap(still);
  // Receives complete, in order per peer, once the message is there.
  std::vector<PendingRecv> waiting;
  std::map<int, bool> blocked; // a later receive from a peer waits too
  for (PendingRecv &r : t_recvs) {
    auto &queue = r.group->mailbox[{r.recv.peer, r.rank}];
    if (blocked[r.recv.peer] || queue.empty()) {
      blocked[r.recv.peer] = true;
      waiting.push_back(r);
      continue;
    }
    Message m = std::move(queue.front());
    queue.pop_front();
    if (m.count != r.recv.count || m.type != r.recv.type) {
      r.group->async_error = kInvalidUsage;
      continue;
    }
    std::memcpy(r.recv.ptr, m.data.data(), m.data.size());
  }
  t_recvs.swap(waiting);
  return t_pending.empty() && t_recvs.empty() ? 0 : 600;
}

} // namespace

extern "C" {

void fakeNcclFailNext(const char *name, int result) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail_next[name] = result;
}
void fakeNcclSetAsyncError(int result) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_async_error = result;
}
void fakeNcclHang(int hang) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_hang = hang != 0;
}
void fakeNcclInProgress(int polls) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_in_progress_next = true;
  g_in_progress_armed = polls;
}
int fakeNcclAborts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_aborts;
}
void fakeNcclReset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_fail_next.clear();
  g_async_error = kSuccess;
  g_hang = false;
  g_in_progress_next = false;
  g_in_progress_polls = g_in_progress_armed = 0;
  g_aborts = 0;
}

Result ncclGetVersion(int *version) {
  *version = 22805;
  return kSuccess;
}

const char *ncclGetErrorString(Result r) {
  switch (r) {
  case 0:
    return "no error";
  case 1:
    return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case 2:
    return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case 3:
    return "internal error - please report this issue to the NCCL developers";
  case 4:
    return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case 5:
    return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case 6:
    return "remote process exited or there was a network error";
  case 7:
    return "NCCL operation in progress";
  }
  return "unknown result code";
}

Result ncclGetUniqueId(UniqueId *id) {
  if (Result r = injected("ncclGetUniqueId"))
    return r;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::memset(id, 0, sizeof(*id));
  std::snprintf(id->internal, sizeof(id->internal), "fake-nccl-%llu",
                static_cast<unsigned long long>(++g_ids));
  return kSuccess;
}

Result ncclCommInitRankConfig(void **comm, int nranks, UniqueId id, int rank,
                              Config *config) {
  if (Result r = injected("ncclCommInitRankConfig"))
    return r;
  if (nranks < 1 || rank < 0 || rank >= nranks || !config ||
      config->magic != 0xcafebeef || config->version < 21400)
    return kInvalidArgument;
  // NCCL_CONFIG_UNDEF_INT (INT_MIN) means NCCL's default: blocking.
  bool blocking = config->blocking != 0;
  std::unique_lock<std::mutex> lock(g_mutex);
  std::string key(id.internal, sizeof(id.internal));
  std::shared_ptr<Group> &g = g_groups[key];
  if (!g) {
    g = std::make_shared<Group>();
    g->size = nranks;
  }
  if (g->size != nranks)
    return kInvalidUsage;
  std::shared_ptr<Group> group = g;
  *comm = new Comm{group, rank};
  ++group->joined;
  g_joined.notify_all();
  if (blocking)
    g_joined.wait(lock, [&] { return group->joined == group->size; });
  return group->joined == group->size ? kSuccess : kInProgress;
}

Result ncclCommDestroy(void *comm) {
  delete static_cast<Comm *>(comm);
  return kSuccess;
}

Result ncclCommAbort(void *comm) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_aborts;
  }
  delete static_cast<Comm *>(comm);
  t_pending.clear();
  t_recvs.clear();
  return kSuccess;
}

Result ncclCommGetAsyncError(void *comm, Result *error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Group &group = *static_cast<Comm *>(comm)->group;
  if (g_async_error != kSuccess)
    *error = g_async_error;
  else if (group.async_error != kSuccess)
    *error = group.async_error;
  else if (group.joined < group.size)
    *error = kInProgress;
  else if (g_in_progress_polls > 0) {
    --g_in_progress_polls;
    *error = kInProgress;
  } else
    *error = kSuccess;
  return kSuccess;
}

Result ncclAllReduce(const void *send, void *recv, size_t count, int type,
                     int op, void *comm, void *) {
  if (Result r = injected("ncclAllReduce"))
    return r;
  if (!typeBytes(type) || (op != 0 && op != 2))
    return kInvalidArgument;
  Part p;
  p.send = send;
  p.recv = recv;
  p.count = count;
  p.type = type;
  p.op = op;
  return enqueue(static_cast<Comm *>(comm), kAllReduce, std::move(p));
}

Result ncclAllGather(const void *send, void *recv, size_t count, int type,
                     void *comm, void *) {
  if (Result r = injected("ncclAllGather"))
    return r;
  Part p;
  p.send = send;
  p.recv = recv;
  p.count = count;
  p.type = type;
  return enqueue(static_cast<Comm *>(comm), kAllGather, std::move(p));
}

Result ncclReduceScatter(const void *send, void *recv, size_t count, int type,
                         int op, void *comm, void *) {
  if (Result r = injected("ncclReduceScatter"))
    return r;
  Part p;
  p.send = send;
  p.recv = recv;
  p.count = count;
  p.type = type;
  p.op = op;
  return enqueue(static_cast<Comm *>(comm), kReduceScatter, std::move(p));
}

Result ncclBroadcast(const void *send, void *recv, size_t count, int type,
                     int root, void *comm, void *) {
  if (Result r = injected("ncclBroadcast"))
    return r;
  Part p;
  p.send = send;
  p.recv = recv;
  p.count = count;
  p.type = type;
  p.root = root;
  return enqueue(static_cast<Comm *>(comm), kBroadcast, std::move(p));
}

Result ncclGroupStart() {
  if (Result r = injected("ncclGroupStart"))
    return r;
  ++t_group_depth;
  return kSuccess;
}

Result ncclGroupEnd() {
  if (Result r = injected("ncclGroupEnd"))
    return r;
  if (t_group_depth == 0)
    return kInvalidUsage;
  if (--t_group_depth > 0)
    return kSuccess;
  std::vector<P2P> ops;
  ops.swap(t_group_p2p);
  Comm *comm = t_group_comm;
  t_group_comm = nullptr;
  if (!comm)
    return kSuccess; // an empty group
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const P2P &op : ops) {
    if (op.is_send) {
      const char *src = static_cast<const char *>(op.ptr);
      comm->group->mailbox[{comm->rank, op.peer}].push_back(
          {std::vector<char>(src, src + op.count * typeBytes(op.type)),
           op.count, op.type});
    } else {
      t_recvs.push_back({comm->group, comm->rank, op});
    }
  }
  return kSuccess;
}

static Result p2p(bool is_send, const void *ptr, size_t count, int type,
                  int peer, void *comm) {
  if (t_group_depth == 0)
    return kInvalidUsage; // the backend always groups its sends and receives
  t_group_comm = static_cast<Comm *>(comm);
  t_group_p2p.push_back({is_send, const_cast<void *>(ptr), count, type, peer});
  return kSuccess;
}

Result ncclSend(const void *send, size_t count, int type, int peer, void *comm,
                void *) {
  if (Result r = injected("ncclSend"))
    return r;
  return p2p(true, send, count, type, peer, comm);
}

Result ncclRecv(void *recv, size_t count, int type, int peer, void *comm,
                void *) {
  if (Result r = injected("ncclRecv"))
    return r;
  return p2p(false, recv, count, type, peer, comm);
}

int cuStreamQuery(void *) { return streamQuery(); }
int hipStreamQuery(void *) { return streamQuery(); }

} // extern "C"
