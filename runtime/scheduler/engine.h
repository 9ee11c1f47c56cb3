//===- engine.h - the serving engine: a Scheduler on its own thread -*- C++ -*-===//
//
// Part of strata. The Engine is what a server talks to (docs/Scheduler.md):
//   submit(prompt ids, SamplingParams, callback) -> request id
//   cancel(id)
//   stats() / metricsText()
// One engine thread runs Scheduler::step() while there is work and sleeps
// otherwise. submit() validates synchronously (INVALID_ARGUMENT for a bad
// request, UNAVAILABLE when the queue is full: the server's 400 and 503) and
// hands the request to the engine thread; cancel() takes effect before the
// next step and frees the request's blocks then.
//
// Callbacks run on the engine thread, with no engine lock held: they may call
// submit() and cancel() but must not block for long (a server pushes the
// output into the client connection's queue).
//
// Ownership: the Engine owns its ModelRunner, Scheduler and thread; the
// optional Tokenizer must outlive it. Thread-safety: submit, cancel, stats
// and metricsText may be called from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_ENGINE_H
#define STRATA_RUNTIME_SCHEDULER_ENGINE_H

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/progress.h"
#include "runtime/scheduler/scheduler.h"

namespace strata::runtime {

class ModelExecutor;

/// Sizes the caches once the weights are on the device: sets
/// `scheduler.num_blocks` (and may set num_snapshot_slots) from what
/// `executor`'s device has left (strata-serve's --gpu-memory-utilization).
using CacheSizer =
    std::function<Status(ModelExecutor &executor, SchedulerOptions &scheduler)>;

/// Options of Engine::create over an artifact (ExecutorRunner).
struct EngineOptions {
  /// Compiled artifact and checkpoint directory. Required.
  std::string artifact_path, checkpoint_dir;
  /// Batching, cache and MTP options (max_requests and num_blocks required).
  SchedulerOptions scheduler;
  /// Artifact target to run on (cpu, sm_90, sm_90a, gfx942, gfx950).
  std::string target = "cpu";
  /// Decode and MTP steps replayed from captured graphs (ExecutorOptions).
  bool step_graphs = true;
  /// Kernels of graph-replayed steps as programmatic dependent launches
  /// (ExecutorOptions::dependent_launches). Default off.
  bool dependent_launches = false;
  /// Shows the weight upload (ExecutorOptions::progress); not owned, must
  /// outlive create(). Default: none.
  ProgressReporter *progress = nullptr;
  /// When set, the caches are sized by it after the weights are loaded
  /// (scheduler.num_blocks may then be 0).
  CacheSizer size_caches;
  /// A sharded artifact: this process's rank. Rank 0 creates the engine,
  /// whose runner replicates every step on the other ranks
  /// (replicated_runner.h); the others call runEngineFollower.
  std::optional<RankGroupsOptions> ranks;
};

/// A rank other than 0 of a sharded engine: loads its part of the model and
/// repeats rank 0's commands until rank 0 stops (OK) or fails (the error).
Status runEngineFollower(const EngineOptions &options);

class Engine {
public:
  /// Loads the model (sized for `options.scheduler`) and starts the engine
  /// thread. `tokenizer` may be null (no text, no stop strings).
  static StatusOr<std::unique_ptr<Engine>>
  create(const EngineOptions &options,
         const tokenizer::Tokenizer *tokenizer = nullptr);
  /// The same over any ModelRunner (tests use a fake model).
  static StatusOr<std::unique_ptr<Engine>>
  create(std::unique_ptr<ModelRunner> runner,
         const tokenizer::Tokenizer *tokenizer,
         const SchedulerOptions &options);
  /// Stops the thread; requests still queued or running are cancelled.
  ~Engine();

  /// Queues a request; its outputs go to `callback` (engine thread).
  /// INVALID_ARGUMENT (bad prompt or params), UNAVAILABLE (queue full).
  StatusOr<uint64_t> submit(std::vector<int32_t> prompt,
                            const SamplingParams &params,
                            OutputCallback callback);
  /// One request of submitAll.
  struct Request {
    std::vector<int32_t> prompt;
    SamplingParams params;
    OutputCallback callback;
  };
  /// Queues every request at once: the engine thread sees all of them
  /// before its next step (a batch job's arrival does not depend on thread
  /// timing). All or none: INVALID_ARGUMENT naming the first bad prompt by
  /// its index ("prompt I: ..."),
  /// UNAVAILABLE when they do not all fit the queue. Ids in `requests`' order.
  StatusOr<std::vector<uint64_t>> submitAll(std::vector<Request> requests);
  /// Cancels request `id` (its callback gets a final output with status
  /// CANCELLED). NOT_FOUND for an id never returned by submit; cancelling
  /// a finished request is a no-op.
  Status cancel(uint64_t id);
  /// Blocks until no request is queued or running.
  void waitIdle();

  /// Counters and gauges as of the last step.
  SchedulerStats stats() const;
  /// stats() in Prometheus text (with the MTP acceptance counters).
  std::string metricsText() const;
  /// The first error a step returned (OK if none); steps go on after one.
  Status lastError() const;

private:
  /// Rank 0 of a sharded artifact: a ReplicatedRunner over its executor.
  static StatusOr<std::unique_ptr<Engine>>
  createReplicated(const EngineOptions &options,
                   const CacheGeometry &geometry,
                   const tokenizer::Tokenizer *tokenizer);

  Engine() = default;
  void loop();

  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  struct Submission {
    uint64_t id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    OutputCallback callback;
  };
  std::vector<Submission> inbox_;
  std::vector<uint64_t> cancels_;
  uint64_t next_id_ = 1;
  bool stop_ = false, busy_ = false;
  SchedulerStats stats_;
  Status last_error_;
  std::thread thread_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_ENGINE_H
