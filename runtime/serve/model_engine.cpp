//===- model_engine.cpp - the engine strata-serve serves a model with -------===//
//
// Part of strata. serve::Engine (the server's contract, engine.h) over the
// scheduler's Engine (runtime/scheduler/engine.h): requests, events and
// statistics are translated one to one; the cache is sized from the
// artifact's cache layout and the memory budget.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/model_engine.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "runtime/kv_cache/cache_geometry.h"
#include "runtime/executor/model_executor.h"
#include "runtime/sampling/speculative.h"
#include "runtime/scheduler/engine.h"
#include "runtime/serve/memory_sizing.h"

namespace strata::runtime::serve {

namespace {

/// Context (tokens) at which the step reserve of --gpu-memory-utilization
/// is measured.
constexpr uint64_t kReserveContext = 16384;

FinishReason finishReasonOf(const RequestOutput &out) {
  if (!out.status.ok())
    return out.status.code() == StatusCode::kCancelled ? FinishReason::kCancelled
                                                       : FinishReason::kError;
  return out.finish_reason == runtime::FinishReason::kLength
             ? FinishReason::kLength
             : FinishReason::kStop;
}

/// The scheduler's log-probabilities in the engine interface's form.
std::vector<TokenLogprob>
engineLogprobs(const std::vector<TokenLogprobs> &logprobs) {
  std::vector<TokenLogprob> out;
  out.reserve(logprobs.size());
  for (const TokenLogprobs &l : logprobs)
    out.push_back({l.logprob, l.top, l.rank});
  return out;
}

class SchedulerEngine : public Engine {
public:
  SchedulerEngine(std::unique_ptr<runtime::Engine> engine,
                  std::shared_ptr<Histogram> step_time,
                  std::shared_ptr<Histogram> iteration_tokens)
      : engine_(std::move(engine)), step_time_(std::move(step_time)),
        iteration_tokens_(std::move(iteration_tokens)) {}

  StatusOr<RequestId> submit(GenerationRequest request,
                             EngineCallback callback) override {
    runtime::SamplingParams params;
    params.temperature = static_cast<float>(request.sampling.temperature);
    params.top_p = static_cast<float>(request.sampling.top_p);
    params.top_k = request.sampling.top_k;
    params.seed = request.sampling.seed ? *request.sampling.seed : seeds_();
    params.max_tokens = request.sampling.max_tokens;
    params.stop_token_ids = request.sampling.stop_token_ids;
    params.min_tokens = request.sampling.min_tokens;
    params.min_p = static_cast<float>(request.sampling.min_p);
    params.repetition_penalty =
        static_cast<float>(request.sampling.repetition_penalty);
    params.presence_penalty =
        static_cast<float>(request.sampling.presence_penalty);
    params.frequency_penalty =
        static_cast<float>(request.sampling.frequency_penalty);
    params.logit_bias = request.sampling.logit_bias;
    params.logprobs = request.sampling.logprobs;
    params.prompt_logprobs = request.sampling.prompt_logprobs;
    return engine_->submit(
        std::move(request.prompt_ids), params,
        [callback = std::move(callback),
         stops = params.stop_token_ids](const RequestOutput &out) {
          EngineEvent event;
          event.token_ids = out.tokens;
          event.logprobs = engineLogprobs(out.logprobs);
          event.prompt_logprobs = engineLogprobs(out.prompt_logprobs);
          // The scheduler commits the stop token that ended the request;
          // the contract (engine.h) counts it but does not deliver it, so
          // it never shows in text decoded with special tokens kept.
          if (out.finished && out.status.ok() &&
              out.finish_reason == runtime::FinishReason::kStop &&
              !event.token_ids.empty() &&
              std::find(stops.begin(), stops.end(), event.token_ids.back()) !=
                  stops.end()) {
            event.token_ids.pop_back();
            if (event.logprobs.size() > event.token_ids.size())
              event.logprobs.pop_back();
          }
          event.cached_tokens = static_cast<int32_t>(out.cached_tokens);
          event.queue_seconds = out.queue_seconds;
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

  /// A model step that failed (a device or kernel error) leaves the engine
  /// unhealthy for good: the first such error.
  Status health() const override { return engine_->lastError(); }

  EngineStats stats() const override {
    SchedulerStats s = engine_->stats();
    EngineStats e;
    e.queued_requests = s.queued;
    e.running_requests = s.running;
    e.kv_blocks_in_use = s.kv.used_blocks;
    e.kv_blocks_total = s.kv.num_blocks;
    e.prefix_cache_queried_tokens = s.kv.prefix_queried_tokens;
    e.prefix_cache_hit_tokens = s.kv.prefix_hit_tokens;
    e.preemptions = s.preemptions;
    e.mtp_draft_tokens = s.mtp.draft_tokens;
    e.mtp_accepted_tokens = s.mtp.accepted_tokens;
    e.mtp_draft_tokens_by_position.assign(s.mtp.draft_by_position.begin(),
                                          s.mtp.draft_by_position.end());
    e.mtp_accepted_tokens_by_position.assign(
        s.mtp.accepted_by_position.begin(), s.mtp.accepted_by_position.end());
    e.verify_rollbacks = s.verify_rollbacks;
    for (artifact::StepKind kind : kGraphSteps) {
      const char *name = artifact::EnumNameStepKind(kind);
      e.graph_captures[name] = s.graphs.captures[size_t(kind)];
      e.graph_replays[name] = s.graphs.replays[size_t(kind)];
    }
    // Steps captured with the MTP draft's first pass (runWithDraft).
    for (artifact::StepKind kind :
         {artifact::StepKind::decode, artifact::StepKind::mtp_verify}) {
      std::string name = artifact::EnumNameStepKind(kind);
      name += "+draft";
      e.graph_captures[name] = s.graphs.drafted_captures[size_t(kind)];
      e.graph_replays[name] = s.graphs.drafted_replays[size_t(kind)];
    }
    // Draft chains of several passes in one graph (runChain).
    e.graph_captures["mtp_chain*passes"] = s.graphs.chained_captures;
    e.graph_replays["mtp_chain*passes"] = s.graphs.chained_replays;
    e.step_time = step_time_->snapshot();
    e.iteration_tokens = iteration_tokens_->snapshot();
    return e;
  }

private:
  std::unique_ptr<runtime::Engine> engine_;
  std::shared_ptr<Histogram> step_time_;
  std::shared_ptr<Histogram> iteration_tokens_;
  std::mt19937_64 seeds_{std::random_device{}()};
};

/// --max-step-tokens by the device's memory (defaultMaxStepTokens), logged.
void stepTokensFromDevice(const ModelEngineOptions &options,
                          const MemoryInfo &memory,
                          SchedulerOptions &scheduler) {
  scheduler.max_step_tokens = defaultMaxStepTokens(memory.total_bytes);
  if (options.log)
    options.log(fmt::format(
        "max step tokens: {} (default for a device of {}; --max-step-tokens "
        "sets it)",
        scheduler.max_step_tokens, formatBytes(memory.total_bytes)));
}

/// The step reserve and the split of memory_sizing.h, logged.
Status sizeFromMemory(const ModelEngineOptions &options,
                      const CacheGeometry &geometry, const MemoryInfo &memory,
                      ModelExecutor &executor, SchedulerOptions &scheduler) {
  MemorySizingInput input;
  input.memory = memory;
  input.device = executor.device().description();
  input.utilization = options.gpu_memory_utilization;
  input.weight_bytes = executor.weightBytes();
  input.geometry = geometry;
  input.scheduler = scheduler;
  // The largest steps the scheduler forms, at contexts up to
  // kReserveContext tokens: a prefill of max_step_tokens (from one or from
  // every running request), a decode of every running request (kept once
  // per captured graph), an MTP verify and draft.
  const uint64_t step_tokens =
      scheduler.max_step_tokens ? scheduler.max_step_tokens : 256;
  const uint64_t batch = std::min<uint64_t>(scheduler.max_requests, step_tokens);
  const uint64_t context = std::min<uint64_t>(
      executor.model().max_position_embeddings(), kReserveContext);
  uint64_t largest = 0;
  std::string note;
  auto consider = [&](artifact::StepKind step, uint64_t tokens,
                      uint64_t requests) -> StatusOr<uint64_t> {
    if (!executor.hasStep(step))
      return uint64_t(0);
    STRATA_ASSIGN_OR_RETURN(uint64_t bytes, executor.stepBufferBytes(
                                                step, tokens, requests, context));
    largest = std::max(largest, bytes);
    return bytes;
  };
  // A prefill step's tokens may come from one request or from many (chunks
  // of several prompts with the decodes of the others).
  STRATA_ASSIGN_OR_RETURN(uint64_t prefill_one,
                          consider(artifact::StepKind::prefill, step_tokens, 1));
  STRATA_ASSIGN_OR_RETURN(
      uint64_t prefill_many,
      consider(artifact::StepKind::prefill, step_tokens, batch));
  const uint64_t prefill = std::max(prefill_one, prefill_many);
  STRATA_ASSIGN_OR_RETURN(uint64_t decode,
                          consider(artifact::StepKind::decode, batch, batch));
  // Each kind keeps kStepGraphsPerKind captured shapes with their buffers.
  uint64_t graph_bytes = decode;
  if (scheduler.mtp_draft_tokens > 0) {
    const uint64_t rows = scheduler.mtp_draft_tokens + 1;
    STRATA_ASSIGN_OR_RETURN(
        uint64_t verify,
        consider(artifact::StepKind::mtp_verify,
                 std::min(step_tokens, batch * rows),
                 std::min(batch, step_tokens / rows)));
    STRATA_ASSIGN_OR_RETURN(
        uint64_t draft,
        consider(artifact::StepKind::mtp_draft, batch, batch));
    graph_bytes += verify + draft;
    // A chain of k - 1 passes in one graph keeps a draft step's buffers per
    // pass (the first counted above).
    if (scheduler.chain_in_one_step && scheduler.mtp_draft_tokens >= 3)
      graph_bytes += draft * (scheduler.mtp_draft_tokens - 2);
    if (scheduler.draft_with_target) {
      // Verify and decode steps captured with their draft (of at most
      // draft_with_target_max_tokens tokens) keep the draft's buffers for
      // every row too.
      uint64_t fused = std::min(step_tokens, batch * rows);
      if (scheduler.draft_with_target_max_tokens)
        fused = std::min<uint64_t>(fused,
                                   scheduler.draft_with_target_max_tokens);
      STRATA_ASSIGN_OR_RETURN(
          uint64_t verify_draft,
          consider(artifact::StepKind::mtp_draft, fused,
                   std::max<uint64_t>(1, fused / rows)));
      graph_bytes += verify + verify_draft + decode + draft;
      if (scheduler.chain_with_target && scheduler.mtp_draft_tokens >= 2) {
        // ... and the candidate chains' passes after it (one row each).
        uint64_t chain_rows = fused;
        if (scheduler.chain_with_target_max_rows)
          chain_rows = std::min<uint64_t>(chain_rows,
                                          scheduler.chain_with_target_max_rows);
        STRATA_ASSIGN_OR_RETURN(
            uint64_t chain_pass,
            consider(artifact::StepKind::mtp_draft, chain_rows, chain_rows));
        graph_bytes += chain_pass * (scheduler.mtp_draft_tokens - 1);
      }
    }
  }
  const uint64_t graphs = options.step_graphs ? kStepGraphsPerKind : 0;
  input.step_reserve_bytes = largest + graphs * graph_bytes;
  input.step_reserve_note = fmt::format(
      "largest step {} (prefill of {} tokens {}, decode of {} {}) + {} "
      "captured graphs of each step kind ({} a set), at {} tokens of context",
      formatBytes(largest), step_tokens, formatBytes(prefill), batch,
      formatBytes(decode), graphs, formatBytes(graph_bytes), context);
  STRATA_ASSIGN_OR_RETURN(MemorySizing sizing, sizeCachesFromMemory(input));
  scheduler.num_blocks = sizing.num_blocks;
  if (sizing.snapshot_slots)
    scheduler.num_snapshot_slots = sizing.snapshot_slots;
  if (options.log) {
    options.log(fmt::format("weights: {}, {} on the device, loaded in {:.1f} s",
                            executor.weightsDescription(),
                            formatBytes(executor.weightBytes()),
                            executor.weightsLoadSeconds()));
    options.log(sizing.log);
  }
  return okStatus();
}

} // namespace

StatusOr<std::unique_ptr<Engine>>
createModelEngine(const ModelEngineOptions &options) {
  if (!options.artifact)
    return invalidArgument("engine construction: no artifact");
  if (options.max_requests == 0)
    return invalidArgument("--max-requests must be positive");
  if (options.mtp_draft_tokens > kMaxDraftTokens)
    return invalidArgument("--mtp must be 0..{}, got {}", kMaxDraftTokens,
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
  scheduler.draft_with_target = options.mtp_draft_with_target;
  scheduler.chain_in_one_step = options.mtp_chain_in_one_step;
  scheduler.chain_with_target = options.mtp_chain_with_target;

  // Blocks: what the budget leaves after every state slot (running
  // requests, snapshots, MTP scratch), each holding tail rings and KDA state.
  STRATA_ASSIGN_OR_RETURN(
      CacheGeometry geometry,
      CacheGeometry::fromLayout(*options.artifact->def().cache_layout()));
  uint64_t blocks = options.kv_blocks;
  const bool from_memory = options.gpu_memory_utilization > 0;
  if (blocks == 0 && !from_memory) {
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
  auto iteration_tokens = std::make_shared<Histogram>(iterationTokenBuckets());
  scheduler.step_observer = [step_time, iteration_tokens](double seconds,
                                                          uint64_t tokens) {
    step_time->observe(seconds);
    iteration_tokens->observe(static_cast<double>(tokens));
  };

  EngineOptions engine_options;
  engine_options.artifact_path = options.artifact_path;
  engine_options.checkpoint_dir = options.checkpoint_dir;
  engine_options.scheduler = std::move(scheduler);
  engine_options.target = options.target;
  engine_options.step_graphs = options.step_graphs;
  engine_options.dependent_launches = options.dependent_launches;
  engine_options.progress = options.progress;
  engine_options.ranks = options.ranks;
  if (from_memory || options.step_tokens_from_device)
    engine_options.size_caches = [&options, geometry, from_memory](
                                     ModelExecutor &executor,
                                     SchedulerOptions &scheduler) -> Status {
      // The device's memory with the weights loaded, once for both.
      STRATA_ASSIGN_OR_RETURN(MemoryInfo memory,
                              executor.device().memoryInfo());
      if (options.step_tokens_from_device)
        stepTokensFromDevice(options, memory, scheduler);
      if (!from_memory)
        return okStatus();
      return sizeFromMemory(options, geometry, memory, executor, scheduler);
    };
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<runtime::Engine> engine,
      runtime::Engine::create(engine_options, options.tokenizer));
  return std::unique_ptr<Engine>(
      new SchedulerEngine(std::move(engine), std::move(step_time),
                          std::move(iteration_tokens)));
}

} // namespace strata::runtime::serve
