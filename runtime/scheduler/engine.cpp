//===- engine.cpp - the serving engine: a Scheduler on its own thread -----===//
//
// Part of strata. See engine.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/engine.h"

#include "runtime/executor/model_executor.h"
#include "runtime/scheduler/replicated_runner.h"

namespace strata::runtime {

namespace {

/// The executor runner of `options`, the caches left to allocateCaches.
ExecutorRunnerOptions deferredRunnerOptions(const EngineOptions &options) {
  ExecutorRunnerOptions runner_options;
  runner_options.artifact_path = options.artifact_path;
  runner_options.checkpoint_dir = options.checkpoint_dir;
  runner_options.target = options.target;
  runner_options.step_graphs = options.step_graphs;
  runner_options.dependent_launches = options.dependent_launches;
  runner_options.progress = options.progress;
  runner_options.ranks = options.ranks;
  runner_options.defer_caches = true;
  return runner_options;
}

} // namespace

StatusOr<std::unique_ptr<Engine>>
Engine::create(const EngineOptions &options,
               const tokenizer::Tokenizer *tokenizer) {
  STRATA_ASSIGN_OR_RETURN(CacheGeometry geometry,
                          readArtifactGeometry(options.artifact_path));
  if (options.ranks)
    return createReplicated(options, geometry, tokenizer);
  ExecutorRunnerOptions runner_options = deferredRunnerOptions(options);
  runner_options.defer_caches = false;
  runner_options.kv_pages = options.scheduler.num_blocks;
  runner_options.state_slots =
      schedulerStateSlots(options.scheduler, geometry);
  if (!options.size_caches) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ExecutorRunner> runner,
                            ExecutorRunner::create(runner_options));
    return create(std::move(runner), tokenizer, options.scheduler);
  }
  // Weights first, then the caches from the memory they left.
  runner_options.defer_caches = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ExecutorRunner> runner,
                          ExecutorRunner::create(runner_options));
  SchedulerOptions scheduler = options.scheduler;
  STRATA_RETURN_IF_ERROR(options.size_caches(runner->executor(), scheduler));
  STRATA_RETURN_IF_ERROR(runner->executor().allocateCaches(
      scheduler.num_blocks, schedulerStateSlots(scheduler, geometry)));
  return create(std::move(runner), tokenizer, scheduler);
}

StatusOr<std::unique_ptr<Engine>>
Engine::createReplicated(const EngineOptions &options,
                         const CacheGeometry &geometry,
                         const tokenizer::Tokenizer *tokenizer) {
  const RankGroupsOptions &ranks = *options.ranks;
  if (ranks.rank != 0)
    return invalidArgument("rank {}: only rank 0 runs the engine (the others "
                           "follow it: runEngineFollower)",
                           ranks.rank);
  // Every rank allocates the caches rank 0 decides on.
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ExecutorRunner> own,
      ExecutorRunner::create(deferredRunnerOptions(options)));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> control,
                          createControlCommunicator(ranks));
  std::chrono::milliseconds timeout =
      ranks.timeout.count() > 0 ? ranks.timeout : kDefaultCollectiveTimeout;
  auto runner = std::make_unique<ReplicatedRunner>(
      std::move(own), std::move(control), timeout / 4);
  SchedulerOptions scheduler = options.scheduler;
  if (options.size_caches)
    STRATA_RETURN_IF_ERROR(options.size_caches(runner->executor(), scheduler));
  STRATA_RETURN_IF_ERROR(runner->allocateCaches(
      scheduler.num_blocks, schedulerStateSlots(scheduler, geometry)));
  return create(std::move(runner), tokenizer, scheduler);
}

Status runEngineFollower(const EngineOptions &options) {
  if (!options.ranks || options.ranks->rank == 0)
    return invalidArgument("runEngineFollower: for the ranks other than 0");
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ExecutorRunner> runner,
      ExecutorRunner::create(deferredRunnerOptions(options)));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> control,
                          createControlCommunicator(*options.ranks));
  return runRankFollower(runner->executor(), *control);
}

StatusOr<std::unique_ptr<Engine>>
Engine::create(std::unique_ptr<ModelRunner> runner,
               const tokenizer::Tokenizer *tokenizer,
               const SchedulerOptions &options) {
  std::unique_ptr<Engine> engine(new Engine());
  engine->runner_ = std::move(runner);
  STRATA_ASSIGN_OR_RETURN(
      engine->scheduler_,
      Scheduler::create(*engine->runner_, tokenizer, options));
  engine->stats_ = engine->scheduler_->stats();
  engine->thread_ = std::thread([e = engine.get()] { e->loop(); });
  return engine;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

StatusOr<uint64_t> Engine::submit(std::vector<int32_t> prompt,
                                  const SamplingParams &params,
                                  OutputCallback callback) {
  STRATA_RETURN_IF_ERROR(scheduler_->validate(prompt, params));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_)
      return unavailable("engine is shutting down");
    size_t queued = stats_.queued + inbox_.size();
    if (queued >= scheduler_->maxQueued())
      return unavailable("request queue full: {} of {} waiting", queued,
                         scheduler_->maxQueued());
    id = next_id_++;
    inbox_.push_back({id, std::move(prompt), params, std::move(callback)});
  }
  wake_.notify_all();
  return id;
}

StatusOr<std::vector<uint64_t>>
Engine::submitAll(std::vector<Request> requests) {
  for (size_t i = 0; i < requests.size(); ++i)
    STRATA_RETURN_IF_ERROR(
        scheduler_->validate(requests[i].prompt, requests[i].params)
            .withContext(fmt::format("prompt {}", i)));
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_)
      return unavailable("engine is shutting down");
    size_t queued = stats_.queued + inbox_.size();
    if (queued + requests.size() > scheduler_->maxQueued())
      return unavailable("request queue full: {} waiting, {} more of {}",
                         queued, requests.size(), scheduler_->maxQueued());
    for (Request &r : requests) {
      ids.push_back(next_id_++);
      inbox_.push_back(
          {ids.back(), std::move(r.prompt), r.params, std::move(r.callback)});
    }
  }
  wake_.notify_all();
  return ids;
}

Status Engine::cancel(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (id == 0 || id >= next_id_)
      return notFound("no request {}", id);
    cancels_.push_back(id);
  }
  wake_.notify_all();
  return okStatus();
}

void Engine::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] {
    return inbox_.empty() && cancels_.empty() && !busy_ &&
           stats_.queued == 0 && stats_.running == 0;
  });
}

SchedulerStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::string Engine::metricsText() const {
  return formatSchedulerMetrics(stats(), &scheduler_->mtpCounters());
}

Status Engine::lastError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

void Engine::loop() {
  for (;;) {
    std::vector<Submission> inbox;
    std::vector<uint64_t> cancels;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto woken = [&] {
        return stop_ || !inbox_.empty() || !cancels_.empty() ||
               scheduler_->hasWork();
      };
      std::chrono::milliseconds keep_alive = runner_->keepAliveInterval();
      if (keep_alive.count() == 0) {
        wake_.wait(lock, woken);
      } else if (!wake_.wait_for(lock, keep_alive, woken)) {
        // Idle for the interval: tell the other ranks rank 0 is alive.
        lock.unlock();
        Status alive = runner_->keepAlive();
        lock.lock();
        if (!alive.ok() && last_error_.ok())
          last_error_ = alive;
        continue;
      }
      if (stop_)
        break;
      inbox.swap(inbox_);
      cancels.swap(cancels_);
      busy_ = true;
    }
    // Outside the lock: callbacks may call submit() and cancel().
    for (Submission &s : inbox) {
      Status status = scheduler_->add(s.id, std::move(s.prompt), s.params,
                                      s.callback);
      if (!status.ok() && s.callback) {
        RequestOutput out;
        out.id = s.id;
        out.finished = true;
        out.status = status;
        s.callback(out);
      }
    }
    for (uint64_t id : cancels)
      (void)scheduler_->cancel(id); // finished meanwhile: nothing to do
    Status status = scheduler_->hasWork() ? scheduler_->step() : okStatus();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!status.ok() && last_error_.ok())
        last_error_ = status;
      stats_ = scheduler_->stats();
      busy_ = false;
    }
    idle_.notify_all();
  }
  // Shutdown: cancel what is left so every callback sees an end.
  scheduler_->cancelAll(cancelled("engine shut down"));
}

} // namespace strata::runtime
