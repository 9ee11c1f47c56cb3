//===- model_engine.cpp - the engine strata-serve serves a model with -------===//
//
// Part of strata. serve::Engine (the server's contract, engine.h) over the
// scheduler's Engine (runtime/scheduler/engine.h): requests, events and
// statistics are translated one to one; the cache is sized from the
// artifact's cache layout and the memory budget.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/model_engine.h"

#include <random>

#include "runtime/kv_cache/cache_geometry.h"
#include "runtime/scheduler/engine.h"

namespace strata::runtime::serve {

namespace {

FinishReason finishReasonOf(const RequestOutput &out) {
  if (!out.status.ok())
    return out.status.code() == StatusCode::kCancelled ? FinishReason::kCancelled
                                                       : FinishReason::kError;
  return out.finish_reason == runtime::FinishReason::kLength
             ? FinishReason::kLength
             : FinishReason::kStop;
}

class SchedulerEngine : public Engine {
public:
  explicit SchedulerEngine(std::unique_ptr<runtime::Engine> engine,
                           std::shared_ptr<Histogram> step_time)
      : engine_(std::move(engine)), step_time_(std::move(step_time)) {}

  StatusOr<RequestId> submit(GenerationRequest request,
                             EngineCallback callback) override {
    runtime::SamplingParams params;
    params.temperature = static_cast<float>(request.sampling.temperature);
    params.top_p = static_cast<float>(request.sampling.top_p);
    params.top_k = request.sampling.top_k;
    params.seed = request.sampling.seed ? *request.sampling.seed : seeds_();
    params.max_tokens = request.sampling.max_tokens;
    params.stop_token_ids = request.sampling.stop_token_ids;
    return engine_->submit(
        std::move(request.prompt_ids), params,
        [callback = std::move(callback)](const RequestOutput &out) {
          EngineEvent event;
          event.token_ids = out.tokens;
          event.finished = out.finished;
          event.prompt_tokens = static_cast<int32_t>(out.prompt_tokens);
          event.completion_tokens = static_cast<int32_t>(out.completion_tokens);
          if (out.finished) {
            event.finish_reason = finishReasonOf(out);
            if (event.finish_reason == FinishReason::kError)
              event.error = out.status;
          }
          callback(std::move(event));
        });
  }

  void cancel(RequestId id) override { (void)engine_->cancel(id); }

  EngineStats stats() const override {
    SchedulerStats s = engine_->stats();
    EngineStats e;
    e.queued_requests = s.queued;
    e.running_requests = s.running;
    e.kv_blocks_in_use = s.kv.used_blocks;
    e.kv_blocks_total = s.kv.num_blocks;
    e.prefix_cache_queried_tokens = s.kv.prefix_queried_tokens;
    e.prefix_cache_hit_tokens = s.kv.prefix_hit_tokens;
    e.mtp_draft_tokens = s.mtp.draft_tokens;
    e.mtp_accepted_tokens = s.mtp.accepted_tokens;
    e.mtp_draft_tokens_by_position.assign(s.mtp.draft_by_position.begin(),
                                          s.mtp.draft_by_position.end());
    e.mtp_accepted_tokens_by_position.assign(
        s.mtp.accepted_by_position.begin(), s.mtp.accepted_by_position.end());
    e.step_time = step_time_->snapshot();
    return e;
  }

private:
  std::unique_ptr<runtime::Engine> engine_;
  std::shared_ptr<Histogram> step_time_;
  std::mt19937_64 seeds_{std::random_device{}()};
};

} // namespace

StatusOr<std::unique_ptr<Engine>>
createModelEngine(const ModelEngineOptions &options) {
  if (!options.artifact)
    return invalidArgument("engine construction: no artifact");
  if (options.max_requests == 0)
    return invalidArgument("--max-requests must be positive");
  if (options.mtp_draft_tokens > 3)
    return invalidArgument("--mtp must be 0..3, got {}",
                           options.mtp_draft_tokens);
  SchedulerOptions scheduler;
  scheduler.max_requests = options.max_requests;
  scheduler.max_queued = options.max_queue;
  scheduler.max_step_tokens = options.max_step_tokens;
  scheduler.max_chunk_tokens = options.max_chunk_tokens;
  scheduler.enable_prefix_cache = options.prefix_cache;
  scheduler.checkpoint_interval_tokens = options.checkpoint_interval_tokens;
  scheduler.num_snapshot_slots = options.snapshot_slots;
  scheduler.mtp_draft_tokens = options.mtp_draft_tokens;

  // Blocks: what the budget leaves after every state slot (running
  // requests, snapshots, MTP scratch), each holding tail rings and KDA state.
  STRATA_ASSIGN_OR_RETURN(
      CacheGeometry geometry,
      CacheGeometry::fromLayout(*options.artifact->def().cache_layout()));
  uint64_t blocks = options.kv_blocks;
  if (blocks == 0) {
    uint64_t slots = schedulerStateSlots(scheduler, geometry);
    uint64_t fixed = slots * (geometry.ringBytesPerSlot() +
                              geometry.kdaBytesPerSlot());
    if (geometry.blockBytes() == 0 ||
        options.kv_memory_bytes < fixed + geometry.blockBytes())
      return resourceExhausted(
          "cache memory budget of {} bytes is too small: {} state slots take "
          "{} bytes and one KV block {} bytes (raise --kv-memory-mb or lower "
          "--max-requests)",
          options.kv_memory_bytes, slots, fixed, geometry.blockBytes());
    blocks = (options.kv_memory_bytes - fixed) / geometry.blockBytes();
  }
  scheduler.num_blocks = blocks;
  auto step_time = std::make_shared<Histogram>();
  scheduler.step_observer = [step_time](double seconds) {
    step_time->observe(seconds);
  };

  EngineOptions engine_options;
  engine_options.artifact_path = options.artifact_path;
  engine_options.checkpoint_dir = options.checkpoint_dir;
  engine_options.scheduler = std::move(scheduler);
  engine_options.target = options.target;
  engine_options.decode_graphs = options.decode_graphs;
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<runtime::Engine> engine,
      runtime::Engine::create(engine_options, options.tokenizer));
  return std::unique_ptr<Engine>(
      new SchedulerEngine(std::move(engine), std::move(step_time)));
}

} // namespace strata::runtime::serve
