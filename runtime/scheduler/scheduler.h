//===- scheduler.h - continuous batching over a ModelRunner -----*- C++ -*-===//
//
// Part of strata. The Scheduler turns queued generation requests into model
// steps (docs/Scheduler.md):
//   - a bounded FIFO of waiting requests (full: UNAVAILABLE, the server's
//     503); running requests up to max_requests (one state slot each);
//   - every step mixes, under a token budget, the decode (or MTP verify) rows
//     of running requests and prefill chunks of any size; a chunk ends early
//     at a pending KDA snapshot boundary (docs/KVCache.md rules);
//   - KV blocks, state slots, prefix hits and snapshots via runtime/kv_cache;
//     when blocks run out the most recently admitted request is preempted by
//     recompute (blocks freed, requeued first with prompt + generated ids);
//   - sampling, MTP verification and stop conditions via runtime/sampling,
//     each logits row first through the request's logits processors
//     (min_tokens, logit_bias, penalties; logits_processors.h), and raw
//     log-probabilities per committed token when the request asks;
//   - MTP speculative decoding with k = 1..3 drafts: the draft chain, one
//     verify step with k + 1 rows per request, and rollback by restoring the
//     state slot saved before the verify and re-running the accepted tokens.
// Outputs go to each request's callback, called on the thread that runs
// step().
//
// Ownership: the Scheduler borrows the ModelRunner and the optional
// Tokenizer (both must outlive it) and owns the KvCache and the requests.
// Thread-safety: none; Engine (engine.h) runs it on one thread.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_SCHEDULER_H
#define STRATA_RUNTIME_SCHEDULER_SCHEDULER_H

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/kv_cache/kv_cache.h"
#include "runtime/sampling/logits_processors.h"
#include "runtime/sampling/sampler.h"
#include "runtime/sampling/speculative.h"
#include "runtime/sampling/stop_matcher.h"
#include "runtime/sampling/text_stream.h"
#include "runtime/scheduler/model_runner.h"

namespace strata::runtime {

/// Scheduler configuration. Zero-initialized fields take the defaults named.
struct SchedulerOptions {
  /// Requests running at once (state slots). Required (> 0).
  uint32_t max_requests = 0;
  /// KV blocks (pages of every paged pool). Required (> 0).
  uint64_t num_blocks = 0;
  /// Waiting requests accepted before submit answers UNAVAILABLE. Default
  /// 0: 256.
  size_t max_queued = 0;
  /// Tokens per step (decode/verify rows + prefill chunk tokens). Default 0:
  /// 256.
  size_t max_step_tokens = 0;
  /// Longest prefill chunk of one request. Default 0: max_step_tokens.
  size_t max_chunk_tokens = 0;
  /// Prefix caching on (KvCache). Default false here; Engine users set it.
  bool enable_prefix_cache = false;
  /// KDA snapshot slots of the prefix cache. Default 0: 2 * max_requests
  /// (when prefix caching is on and the model has KDA layers).
  uint32_t num_snapshot_slots = 0;
  /// KDA checkpoint interval in tokens (multiple of the page size). Default
  /// 0: 16 pages.
  uint64_t checkpoint_interval_tokens = 0;
  /// MTP draft tokens per verification, 0 (off, default) to 3.
  uint32_t mtp_draft_tokens = 0;
  /// With MTP: a step of greedy decodes and verifications runs the draft's
  /// step 0 over all of its rows in the same device work (one launch, one
  /// copy back: ModelRunner::runWithDraft) when the runner can; off: the
  /// draft's step 0 is a step of its own over the committed rows.
  bool draft_with_target = true;
  /// ... for steps of at most this many tokens (0: any). Above it the
  /// draft over every verified row costs more than the launch it saves:
  /// its lm_head and experts read for k + 1 rows a request instead of the
  /// committed ones, and a real-width lm_head (1.9 GB) stops being bound by
  /// its weight reads at about 200 rows on an H200. Default 128.
  size_t draft_with_target_max_tokens = 128;
  /// With MTP k >= 3: the draft chain's k - 1 passes run as one step (one
  /// launch, one copy back: ModelRunner::runChain, each pass's inputs the
  /// previous pass's outputs on the device) when the runner can and every
  /// chaining request drafts the same k; off: one step per pass, through
  /// the host.
  bool chain_in_one_step = true;
  /// With MTP k >= 2 and a draft chain that reuses step 0's selection
  /// (mtp_chain): a greedy step with its draft's step 0
  /// (draft_with_target) also runs the chain's k - 1 passes after it, one
  /// candidate chain per row (the row of the accepted position is kept), so
  /// that a speculative iteration is one launch and one copy back
  /// (ModelRunner::runWithDraftChain) ...
  bool chain_with_target = true;
  /// ... for steps of at most this many rows (0: any): every row is a
  /// candidate, so the chain runs k + 1 rows a request where one is kept.
  /// Default 32.
  size_t chain_with_target_max_rows = 32;
  /// Called on the engine thread after every step with its duration in
  /// seconds and the tokens it ran (prompt chunks, decode and verify
  /// tokens): a server's step-time and iteration-tokens histograms.
  /// Optional.
  std::function<void(double seconds, uint64_t tokens)> step_observer;
};

/// State slots the runner must provide for `options` on a model with
/// `geometry`: running requests, snapshots, and k scratch slots per request
/// with MTP k (the KDA states a verification keeps per position; artifacts
/// without per-token states use the first k = 1 for the state saved before
/// a verify step).
uint32_t schedulerStateSlots(const SchedulerOptions &options,
                             const CacheGeometry &geometry);

/// One delivery to a request's callback.
struct RequestOutput {
  uint64_t id = 0;
  /// Token ids committed since the last delivery (after stop handling).
  std::vector<int32_t> tokens;
  /// With SamplingParams::logprobs >= 0: one entry per token of `tokens`.
  std::vector<TokenLogprobs> logprobs;
  /// With SamplingParams::prompt_logprobs >= 0, on the delivery that
  /// carries the first generated token (or the last one): one entry per
  /// prompt token from the second on (the first has no context).
  std::vector<TokenLogprobs> prompt_logprobs;
  /// Text released since the last delivery (empty without a tokenizer).
  std::string text;
  /// True on the last delivery of the request.
  bool finished = false;
  /// Set when finished normally: kStop or kLength.
  FinishReason finish_reason = FinishReason::kNone;
  /// Non-OK when the request ended by cancel (CANCELLED) or an error.
  Status status;
  /// Prompt tokens, generated tokens so far, prompt tokens served by the
  /// prefix cache at (the latest) admission.
  uint64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  /// Seconds from add() to the first admission (vLLM's queue time); -1
  /// while never admitted (e.g. cancelled while waiting).
  double queue_seconds = -1;
};

using OutputCallback = std::function<void(const RequestOutput &)>;

/// Counters and gauges for /metrics.
struct SchedulerStats {
  uint64_t queued = 0, running = 0;
  KvCacheStats kv;
  MtpAcceptanceCounters::Snapshot mtp;
  uint64_t steps = 0, preemptions = 0, verify_rollbacks = 0;
  uint64_t prefill_tokens = 0, generated_tokens = 0;
  uint64_t finished_requests = 0, cancelled_requests = 0;
  double last_step_seconds = 0, total_step_seconds = 0;
  /// Steps captured into graphs and replayed (the runner's, read after
  /// each iteration).
  StepGraphCounts graphs;
};

/// Prometheus text of `stats` (kv cache metrics, MTP counters, engine
/// gauges and counters).
std::string formatSchedulerMetrics(const SchedulerStats &stats,
                                   const MtpAcceptanceCounters *mtp);

class Scheduler {
public:
  /// Builds the KvCache for `runner` (whose pools must hold
  /// options.num_blocks pages and schedulerStateSlots(...) slots).
  /// INVALID_ARGUMENT for bad options (mtp without a draft plan, k > 3).
  static StatusOr<std::unique_ptr<Scheduler>>
  create(ModelRunner &runner, const tokenizer::Tokenizer *tokenizer,
         const SchedulerOptions &options);
  ~Scheduler();

  /// Checks a request before it is queued: non-empty prompt of in-vocabulary
  /// ids shorter than the context, valid params (validateSamplingParams),
  /// stop strings only with a tokenizer, and a prompt that fits the KV pool.
  /// Thread-safe (reads immutable state only).
  Status validate(const std::vector<int32_t> &prompt,
                  const SamplingParams &params) const;
  /// Queues a request (validate() first). UNAVAILABLE when max_queued are
  /// waiting.
  Status add(uint64_t id, std::vector<int32_t> prompt,
             const SamplingParams &params, OutputCallback callback);
  /// Ends request `id` now: frees its blocks and slot and delivers a final
  /// output with status CANCELLED. NOT_FOUND for an unknown or finished id.
  Status cancel(uint64_t id);
  /// Ends every waiting and running request with `status` (shutdown).
  void cancelAll(const Status &status);
  /// Whether any request is waiting or running.
  bool hasWork() const { return !waiting_.empty() || !running_.empty(); }
  size_t numWaiting() const { return waiting_.size(); }
  size_t numRunning() const { return running_.size(); }
  size_t maxQueued() const { return options_.max_queued; }

  /// Runs one iteration: admission, planning, draft chain, target step,
  /// sampling/verification, rollback re-runs, commits, draft step 0. A model
  /// error fails the requests of that step (their callbacks get the status)
  /// and is returned; the scheduler stays usable.
  Status step();

  SchedulerStats stats() const;
  const MtpAcceptanceCounters &mtpCounters() const { return mtp_counters_; }
  const KvCache &kvCache() const { return *kv_; }

private:
  struct Request;
  struct Planned;
  Scheduler(ModelRunner &runner, const tokenizer::Tokenizer *tokenizer,
            const SchedulerOptions &options);

  Status admit(Request &request);
  void preempt(Request &victim);
  bool planRequest(Request &request, size_t &budget,
                   std::vector<Planned> &plan);
  Status runDraftChain(std::vector<Planned> &plan);
  /// Request `p`'s row of draft chain step j >= 1: its last draft at
  /// position start + j - 1 from `hidden`, attending to its step 0's
  /// selection.
  static StepRequest chainRequest(const Planned &p, size_t j,
                                  const std::vector<uint8_t> &hidden);
  /// The chain's `passes` steps as one ModelRunner::runChain over the
  /// requests of plan indices `pending` (every one the same k = passes +
  /// 1), `hidden` each one's draft hidden row by plan index.
  Status runDraftChainInOneStep(std::vector<Planned> &plan,
                                const std::vector<size_t> &pending,
                                const std::vector<std::vector<uint8_t>> &hidden,
                                size_t passes);
  /// KDA slot `index` (mod k + 1) of `request`: 0 its state slot, i its
  /// i-th scratch slot (scratch_base_ + (i - 1) * max_requests + slot).
  int32_t kdaSlot(const Request &request, uint32_t index) const;
  /// The slot holding `request`'s KDA state.
  int32_t kdaSlotOf(const Request &request) const;
  /// Copies the live state slots `slots` to their scratch slots before a
  /// verification: one run of slots from the lowest to the highest.
  Status saveStates(std::vector<int32_t> slots);
  /// Copies the scratch slots of `slots` back after rejected drafts, one
  /// copy per run of consecutive slots.
  Status restoreStates(std::vector<int32_t> slots);
  /// Logits rows of `request` after its logits processors (min_tokens,
  /// logit_bias, penalties; row j sees drafts[0, j) as output): `logits`
  /// itself when there is nothing to do, else a processed copy in `copy`.
  const float *processRows(const Request &request, const float *logits,
                           size_t rows, const std::vector<int32_t> &drafts,
                           std::vector<float> &copy) const;
  /// Commits `tokens`; token i was sampled from row i of `raw_logits` (the
  /// model's rows, for log-probabilities; null: none).
  Status commitTokens(Request &request, const std::vector<int32_t> &tokens,
                      const float *raw_logits);
  Status afterTarget(Request &request, uint64_t new_computed);
  Status runDraftStepZero(std::vector<Planned> &plan);
  /// Whether this step's target runs with the draft's step 0 over every
  /// row (runWithDraft): MTP on, every request decoding greedily (its
  /// committed tokens are the device's greedy tokens), per-token KDA states.
  bool runsDraftWithTarget(const std::vector<Planned> &plan,
                           const StepOutputs &outputs) const;
  /// Step 0's results from a draft run over every row of the target step:
  /// each request's draft token and hidden row are those of its last
  /// committed position, and with `chain` (the candidate chains run after
  /// it, one per row) the chain's drafts of that row.
  Status takeDrafts(std::vector<Planned> &plan, const StepResult &draft,
                    const std::vector<StepResult> &chain);
  /// The candidate chains for a step with its draft (chain_with_target,
  /// candidateDraftChains over the step's requests `target`); no requests
  /// when the step does not take them.
  DraftChain candidateChains(const std::vector<StepRequest> &target) const;
  /// Whether `p` needs its logits rows on the host this step: it samples a
  /// token by a rule other than plain greedy (a temperature, a logits
  /// processor: penalties, logit_bias, min_tokens' stop masks) or returns
  /// logprobs. Otherwise the step's greedy tokens do, for verifications too.
  bool needsLogits(const Planned &p) const;
  /// Whether `request` asks for its prompt's log-probabilities
  /// (SamplingParams::prompt_logprobs): its prefill chunks copy every row's
  /// logits and it takes no prefix-cache hits.
  static bool wantsPromptLogprobs(const Request &request);
  /// The prompt log-probabilities of the prefill rows `logits` (`rows`
  /// rows from position `start`) not yet recorded.
  void recordPromptLogprobs(Request &request, uint64_t start,
                            const float *logits, size_t rows);
  /// The token `request` samples from logits row `row` of `result` (its
  /// greedy token when the step copied no logits).
  StatusOr<int32_t> sampleRow(Request &request, const StepResult &result,
                              size_t row, std::vector<float> &masked);
  /// Verifies `drafts` against rows row..row + k of `result`: by the
  /// request's sampler over the processed logits, or by the device's greedy
  /// tokens when the step copied no logits.
  StatusOr<DraftVerificationResult>
  verifyRows(Request &request, const StepResult &result, size_t row,
             const std::vector<int32_t> &drafts, std::vector<float> &masked);
  void finish(Request &request, FinishReason reason, Status status);
  void deliver(Request &request);
  void failStep(std::vector<Planned> &plan, const Status &status);
  void removeFinished();

  ModelRunner &runner_;
  const tokenizer::Tokenizer *tokenizer_;
  SchedulerOptions options_;
  std::unique_ptr<KvCache> kv_;
  uint32_t scratch_base_ = 0;
  /// MTP over target plans that keep per-token KDA states: a verification
  /// keeps the state after each position in another of the request's k + 1
  /// KDA slots, so accepting j drafts selects one (no copy, no re-run).
  bool token_states_ = false;
  /// MTP with token states over a runner that runs a step with its draft:
  /// greedy decode / verify steps carry the draft's step 0
  /// (runsDraftWithTarget).
  bool draft_with_target_ = false;
  /// The draft chain's step: mtp_chain when the runner has it (reusing step
  /// 0's selection), else mtp_draft.
  artifact::StepKind chain_step_ = artifact::StepKind::mtp_draft;
  /// SchedulerOptions::chain_in_one_step, and the runner can.
  bool chain_in_one_step_ = false;
  /// SchedulerOptions::chain_with_target, and the runner can.
  bool chain_with_target_ = false;
  /// MTP with token states over a runner that keeps a target step's hidden
  /// output on the device: step 0 names rows of it instead of sending the
  /// rows through the host.
  bool keep_target_hidden_ = false;
  std::deque<std::unique_ptr<Request>> waiting_;
  std::vector<std::unique_ptr<Request>> running_; // admission order
  MtpAcceptanceCounters mtp_counters_;
  SchedulerStats stats_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_SCHEDULER_H
