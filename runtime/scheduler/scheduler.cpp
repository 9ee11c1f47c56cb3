//===- scheduler.cpp - continuous batching over a ModelRunner -------------===//
//
// Part of strata. See scheduler.h and docs/Scheduler.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "runtime/schemas/mtp_draft_limit.h"

namespace strata::runtime {

using artifact::StepKind;

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint32_t snapshotSlots(const SchedulerOptions &options,
                       const CacheGeometry &geometry) {
  if (!options.enable_prefix_cache || !geometry.hasKda())
    return 0;
  return options.num_snapshot_slots ? options.num_snapshot_slots
                                    : 2 * options.max_requests;
}

/// The device's greedy token of logits row `row` (StepResult::greedy).
StatusOr<int32_t> deviceGreedyToken(const StepResult &result, size_t row) {
  if (row >= result.greedy.size())
    return internalError("step returned {} greedy tokens, row {} requested",
                         result.greedy.size(), row);
  int32_t token = result.greedy[row];
  if (token < 0)
    return invalidArgument("logits row {} has no finite maximum (a NaN, a "
                           "+inf or every entry -inf)",
                           row);
  return token;
}

/// The greedy token of the last logits row of a request: from the logits
/// when the step copied them, else the device's.
StatusOr<int32_t> lastGreedyToken(const StepResult &result, size_t last,
                                  size_t vocab) {
  if (result.logits.empty())
    return deviceGreedyToken(result, last);
  return greedyToken(result.logits.data() + last * vocab, vocab);
}

/// Bytes of `n` rounded up to `alignment` (a power of two).
uint64_t alignUp(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) & ~(alignment - 1);
}

} // namespace

uint32_t schedulerStateSlots(const SchedulerOptions &options,
                             const CacheGeometry &geometry) {
  uint32_t slots = options.max_requests + snapshotSlots(options, geometry);
  return slots + options.mtp_draft_tokens * options.max_requests;
}

//===----------------------------------------------------------------------===//
// Per-request state
//===----------------------------------------------------------------------===//

struct Scheduler::Request {
  uint64_t id = 0;
  size_t prompt_size = 0;
  /// Committed ids: prompt, then generated tokens.
  std::vector<int32_t> tokens;
  std::optional<Sampler> sampler;
  /// Prompt and output tokens for the penalties (only with penalties).
  std::optional<PenaltyTracker> penalties;
  std::optional<TextStream> stream;   // with a tokenizer
  std::optional<StopMatcher> matcher; // without one
  OutputCallback callback;
  std::unique_ptr<SequenceCache> seq;
  /// Positions [0, computed) have been run through the target (KV written,
  /// state slot holds the state after `computed` tokens).
  uint64_t computed = 0;
  uint64_t cached_tokens = 0;
  bool planned = false;
  /// MTP: d_1 from the last draft step 0 and the draft's hidden of that row.
  bool has_draft = false;
  /// MTP with per-token KDA states: which of the request's k + 1 KDA slots
  /// holds its state (0: the state slot, i: its i-th scratch slot;
  /// Scheduler::kdaSlot).
  uint32_t kda_slot_index = 0;
  int32_t draft_token = 0;
  std::vector<uint8_t> draft_hidden;
  /// The row of the request's shared selection cache that its step 0 wrote
  /// for the row draft_token came from (what the chain attends to:
  /// StepRequest::shared_selection_row).
  int32_t draft_shared_row = int32_t(kSharedSelectionRows) - 1;
  /// MTP drafts 2..k for the next verification, from the candidate chain
  /// of the row draft_token came from (SchedulerOptions::chain_with_target);
  /// empty when the chain runs before the verification.
  std::vector<int32_t> chain_drafts;
  /// Output not yet delivered.
  std::vector<int32_t> out_tokens;
  std::vector<TokenLogprobs> out_logprobs; // with params.logprobs >= 0
  /// With params.prompt_logprobs >= 0: entries for prompt tokens 1 ..
  /// (filled chunk by chunk), and whether they were delivered.
  std::vector<TokenLogprobs> prompt_logprobs;
  bool prompt_logprobs_delivered = false;
  std::string out_text;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  Status status;
  /// When add() queued it, and the seconds until its first admission (-1:
  /// not admitted yet).
  std::chrono::steady_clock::time_point queued_at;
  double queue_seconds = -1;

  uint64_t generated() const { return tokens.size() - prompt_size; }
  /// The last committed token has not been run yet: decode (or verify).
  bool decoding() const { return computed + 1 == tokens.size(); }
};

/// One request's part of an iteration.
struct Scheduler::Planned {
  Request *request = nullptr;
  /// Target positions [start, end): prompt/committed tokens, then drafts.
  uint64_t start = 0, end = 0;
  /// Draft tokens to verify (k = drafts.size() after the chain).
  size_t k = 0;
  std::vector<int32_t> drafts;
  /// Computed after this iteration, and whether a rollback re-run is due.
  uint64_t new_computed = 0;
  bool rerun = false;
  /// Where this request's target rows' hidden states are: a step result and
  /// the token offset of its first row there.
  const StepResult *hidden_source = nullptr;
  size_t hidden_offset = 0;
};

//===----------------------------------------------------------------------===//
// Creation and submission
//===----------------------------------------------------------------------===//

Scheduler::Scheduler(ModelRunner &runner, const tokenizer::Tokenizer *tokenizer,
                     const SchedulerOptions &options)
    : runner_(runner), tokenizer_(tokenizer), options_(options) {}

Scheduler::~Scheduler() {
  // Sequences point into the KvCache: release them first.
  waiting_.clear();
  running_.clear();
}

StatusOr<std::unique_ptr<Scheduler>>
Scheduler::create(ModelRunner &runner, const tokenizer::Tokenizer *tokenizer,
                  const SchedulerOptions &options) {
  if (options.max_requests == 0 || options.num_blocks == 0)
    return invalidArgument("scheduler: max_requests ({}) and num_blocks ({}) "
                           "must be positive",
                           options.max_requests, options.num_blocks);
  if (options.mtp_draft_tokens > kMaxDraftTokens)
    return invalidArgument("mtp draft tokens must be 0 to {}, got {}",
                           kMaxDraftTokens, options.mtp_draft_tokens);
  if (options.mtp_draft_tokens > 0 && !runner.hasDraft())
    return invalidArgument("mtp draft tokens {} requested, but the artifact "
                           "has no mtp_draft plan",
                           options.mtp_draft_tokens);
  std::unique_ptr<Scheduler> s(new Scheduler(runner, tokenizer, options));
  SchedulerOptions &o = s->options_;
  if (o.max_queued == 0)
    o.max_queued = 256;
  if (o.max_step_tokens == 0)
    o.max_step_tokens = 256;
  if (o.max_chunk_tokens == 0)
    o.max_chunk_tokens = o.max_step_tokens;
  // mtp_verify rows of one request must fit one step.
  if (o.max_step_tokens < o.mtp_draft_tokens + 1)
    return invalidArgument("max step tokens {} below the {} rows of one "
                           "verification",
                           o.max_step_tokens, o.mtp_draft_tokens + 1);

  // Budget that plans exactly num_blocks blocks (cache_geometry.h layout).
  const CacheGeometry &g = runner.geometry();
  uint32_t snapshots = snapshotSlots(o, g);
  uint64_t rings = alignUp(g.ringBytesPerSlot() * o.max_requests, g.alignment);
  uint64_t kda = alignUp(
      g.kdaBytesPerSlot() * (g.hasKda() ? o.max_requests + snapshots : 0),
      g.alignment);
  KvCacheOptions kv;
  kv.memory.memory_budget_bytes = rings + kda + o.num_blocks * g.blockBytes();
  kv.memory.max_requests = o.max_requests;
  kv.memory.num_snapshot_slots = snapshots;
  kv.checkpoint_interval_tokens = o.checkpoint_interval_tokens;
  kv.mtp = o.mtp_draft_tokens > 0;
  kv.disable_prefix_cache = !o.enable_prefix_cache;
  STRATA_ASSIGN_OR_RETURN(s->kv_, KvCache::create(g, kv));
  if (s->kv_->plan().num_blocks != o.num_blocks)
    return internalError("kv cache planned {} blocks, expected {}",
                         s->kv_->plan().num_blocks, o.num_blocks);
  s->scratch_base_ = o.max_requests + snapshots;
  s->token_states_ = o.mtp_draft_tokens > 0 && runner.keepsTokenStates();
  s->draft_with_target_ = s->token_states_ && o.draft_with_target &&
                          runner.runsWithDraft();
  s->chain_step_ = runner.hasDraftChain() ? StepKind::mtp_chain
                                          : StepKind::mtp_draft;
  s->chain_in_one_step_ = o.chain_in_one_step && runner.runsChainedDrafts();
  s->chain_with_target_ = s->draft_with_target_ && o.chain_with_target &&
                          o.mtp_draft_tokens >= 2 &&
                          s->chain_step_ == StepKind::mtp_chain &&
                          runner.runsDraftChainWithTarget();
  s->keep_target_hidden_ = s->token_states_ && runner.keepsTargetHidden();
  return s;
}

Status Scheduler::validate(const std::vector<int32_t> &prompt,
                           const SamplingParams &params) const {
  if (prompt.empty())
    return invalidArgument("empty prompt");
  size_t vocab = runner_.vocabSize();
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || size_t(prompt[i]) >= vocab)
      return invalidArgument("prompt token {} is {}, outside the vocabulary "
                             "[0, {})",
                             i, prompt[i], vocab);
  if (prompt.size() >= runner_.maxPositions())
    return invalidArgument("prompt of {} tokens leaves no room in the "
                           "context of {} positions",
                           prompt.size(), runner_.maxPositions());
  STRATA_RETURN_IF_ERROR(validateSamplingParams(params, vocab));
  if (!params.stop.empty() && !tokenizer_)
    return invalidArgument("stop strings need a tokenizer; the engine has "
                           "none");
  uint64_t page = runner_.geometry().page_size_tokens;
  uint64_t blocks = ceilDiv(prompt.size() + 1 + options_.mtp_draft_tokens,
                            page);
  if (blocks > options_.num_blocks)
    return invalidArgument("prompt of {} tokens needs {} kv blocks, the pool "
                           "has {}",
                           prompt.size(), blocks, options_.num_blocks);
  return okStatus();
}

Status Scheduler::add(uint64_t id, std::vector<int32_t> prompt,
                      const SamplingParams &params, OutputCallback callback) {
  STRATA_RETURN_IF_ERROR(validate(prompt, params));
  if (waiting_.size() >= options_.max_queued)
    return unavailable("request queue full: {} of {} waiting",
                       waiting_.size(), options_.max_queued);
  auto request = std::make_unique<Request>();
  request->id = id;
  request->queued_at = std::chrono::steady_clock::now();
  request->prompt_size = prompt.size();
  request->tokens = std::move(prompt);
  STRATA_ASSIGN_OR_RETURN(Sampler sampler, Sampler::create(params));
  request->sampler.emplace(std::move(sampler));
  if (hasPenalties(params))
    request->penalties.emplace(request->tokens);
  if (tokenizer_) {
    STRATA_ASSIGN_OR_RETURN(TextStream stream,
                            TextStream::create(*tokenizer_, params));
    request->stream.emplace(std::move(stream));
  } else {
    STRATA_ASSIGN_OR_RETURN(StopMatcher matcher, StopMatcher::create(params));
    request->matcher.emplace(std::move(matcher));
  }
  request->callback = std::move(callback);
  waiting_.push_back(std::move(request));
  return okStatus();
}

Status Scheduler::cancel(uint64_t id) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if ((*it)->id != id)
      continue;
    std::unique_ptr<Request> request = std::move(*it);
    waiting_.erase(it);
    finish(*request, FinishReason::kNone,
           cancelled("request {} cancelled", id));
    ++stats_.cancelled_requests;
    return okStatus();
  }
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if ((*it)->id != id)
      continue;
    std::unique_ptr<Request> request = std::move(*it);
    running_.erase(it);
    finish(*request, FinishReason::kNone,
           cancelled("request {} cancelled", id));
    ++stats_.cancelled_requests;
    return okStatus();
  }
  return notFound("no queued or running request {}", id);
}

void Scheduler::cancelAll(const Status &status) {
  while (!waiting_.empty()) {
    std::unique_ptr<Request> request = std::move(waiting_.front());
    waiting_.pop_front();
    finish(*request, FinishReason::kNone, status);
  }
  for (auto &request : running_)
    finish(*request, FinishReason::kNone, status);
  running_.clear();
}

//===----------------------------------------------------------------------===//
// Admission, preemption, planning
//===----------------------------------------------------------------------===//

Status Scheduler::admit(Request &request) {
  AdmitOptions admit_options;
  admit_options.skip_prefix_cache = wantsPromptLogprobs(request);
  STRATA_ASSIGN_OR_RETURN(request.seq,
                          kv_->admit(request.tokens, admit_options));
  if (request.queue_seconds < 0)
    request.queue_seconds = std::chrono::duration<double>(
                                std::chrono::steady_clock::now() -
                                request.queued_at)
                                .count();
  SequenceCache &seq = *request.seq;
  request.computed = seq.hitTokens();
  request.cached_tokens = seq.hitTokens();
  request.has_draft = false;
  request.kda_slot_index = 0;
  int32_t slot = int32_t(seq.stateSlot());
  // A hit resumes from a copy of the snapshot (never advanced in place); the
  // tail ring is logically empty at a block boundary (docs/KVCache.md).
  Status status = seq.restoreSnapshotSlot()
                      ? runner_.copySlot(int32_t(*seq.restoreSnapshotSlot()),
                                         slot)
                      : runner_.resetSlot(slot);
  if (!status.ok())
    request.seq.reset();
  return status;
}

void Scheduler::preempt(Request &victim) {
  victim.seq.reset(); // frees blocks, slot, snapshots
  victim.computed = 0;
  victim.has_draft = false;
  victim.kda_slot_index = 0;
  victim.planned = false;
  ++stats_.preemptions;
  for (auto it = running_.begin(); it != running_.end(); ++it) {
    if (it->get() != &victim)
      continue;
    waiting_.push_front(std::move(*it));
    running_.erase(it);
    return;
  }
}

bool Scheduler::planRequest(Request &request, size_t &budget,
                            std::vector<Planned> &plan) {
  if (budget == 0)
    return false;
  const uint64_t start = request.computed;
  const uint64_t n = request.tokens.size();
  uint64_t end;
  if (request.decoding()) {
    size_t k = 0;
    if (options_.mtp_draft_tokens > 0 && request.has_draft) {
      k = std::min<size_t>(options_.mtp_draft_tokens, budget - 1);
      k = std::min<uint64_t>(k, runner_.maxPositions() - 1 - start);
      int64_t max_tokens = request.sampler->params().max_tokens;
      if (max_tokens > 0)
        k = std::min<uint64_t>(k, uint64_t(max_tokens) - request.generated() -
                                      1);
    }
    end = start + 1 + k;
  } else {
    end = start + std::min<uint64_t>({budget, options_.max_chunk_tokens,
                                      n - start});
  }
  for (;;) {
    Status status = request.seq->reserve(end);
    if (status.ok())
      break;
    if (status.code() != StatusCode::kResourceExhausted) {
      request.status = status;
      return false;
    }
    // Out of blocks: preempt the most recently admitted unplanned request.
    Request *victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
      if (!(*it)->planned && it->get() != &request) {
        victim = it->get();
        break;
      }
    if (!victim) {
      if (running_.size() == 1) {
        // Alone and still out of blocks: the pool cannot hold more of it.
        request.status = status;
        return false;
      }
      preempt(request);
      return false;
    }
    preempt(*victim);
  }
  // End at the first pending snapshot boundary inside the step, so the
  // state after exactly that many tokens exists when the step ends.
  for (const SnapshotRequest &snap : request.seq->pendingSnapshots())
    if (snap.tokens > start && snap.tokens < end) {
      end = snap.tokens;
      break;
    }
  Planned p;
  p.request = &request;
  p.start = start;
  p.end = end;
  p.k = request.decoding() ? end - start - 1 : 0;
  plan.push_back(std::move(p));
  budget -= end - start;
  request.planned = true;
  return true;
}

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

void Scheduler::deliver(Request &request) {
  if (request.out_tokens.empty() && request.out_text.empty() &&
      !request.finished)
    return;
  RequestOutput out;
  out.id = request.id;
  out.tokens = std::move(request.out_tokens);
  out.logprobs = std::move(request.out_logprobs);
  if (wantsPromptLogprobs(request) && !request.prompt_logprobs_delivered &&
      (!out.tokens.empty() || request.finished)) {
    out.prompt_logprobs = std::move(request.prompt_logprobs);
    request.prompt_logprobs_delivered = true;
  }
  out.text = std::move(request.out_text);
  out.finished = request.finished;
  out.finish_reason = request.reason;
  out.status = request.status;
  out.prompt_tokens = request.prompt_size;
  out.completion_tokens = request.generated();
  out.cached_tokens = request.cached_tokens;
  out.queue_seconds = request.queue_seconds;
  request.out_tokens.clear();
  request.out_logprobs.clear();
  request.out_text.clear();
  if (request.callback)
    request.callback(out);
}

void Scheduler::finish(Request &request, FinishReason reason, Status status) {
  if (request.finished)
    return;
  bool stream_done = request.stream ? request.stream->finished()
                                     : request.matcher->finished();
  if (reason == FinishReason::kLength && status.ok() && !stream_done) {
    // An outside end (context or pool full): release held text.
    StatusOr<StopOutput> tail =
        request.stream ? request.stream->finish(reason)
                       : request.matcher->finish("", reason);
    if (tail.ok()) {
      request.out_text += tail->text;
      reason = tail->finish_reason;
    }
  }
  request.finished = true;
  request.reason = status.ok() ? reason : FinishReason::kNone;
  request.status = std::move(status);
  request.seq.reset();
  if (request.status.ok())
    ++stats_.finished_requests;
  deliver(request);
}

const float *Scheduler::processRows(const Request &request,
                                    const float *logits, size_t rows,
                                    const std::vector<int32_t> &drafts,
                                    std::vector<float> &copy) const {
  const SamplingParams &params = request.sampler->params();
  if (!needsLogitsProcessing(params, request.generated()))
    return logits;
  const size_t vocab = runner_.vocabSize();
  copy.assign(logits, logits + rows * vocab);
  for (size_t j = 0; j < rows; ++j)
    processLogitsRow(params, request.generated() + j,
                     request.penalties ? &*request.penalties : nullptr,
                     drafts.data(), std::min(j, drafts.size()),
                     copy.data() + j * vocab, vocab);
  return copy.data();
}

Status Scheduler::commitTokens(Request &request,
                               const std::vector<int32_t> &tokens,
                               const float *raw_logits) {
  std::vector<int32_t> committed;
  for (int32_t token : tokens) {
    StatusOr<StopOutput> out = request.stream
                                   ? request.stream->push(token)
                                   : request.matcher->push(token, "");
    if (!out.ok())
      return out.status();
    if (request.sampler->params().logprobs >= 0 && raw_logits)
      request.out_logprobs.push_back(computeLogprobs(
          raw_logits + committed.size() * runner_.vocabSize(),
          runner_.vocabSize(), token,
          static_cast<size_t>(request.sampler->params().logprobs)));
    if (request.penalties)
      request.penalties->addOutput(token);
    committed.push_back(token);
    request.out_text += out->text;
    if (out->finish_reason != FinishReason::kNone) {
      request.reason = out->finish_reason;
      break;
    }
    if (request.tokens.size() + committed.size() >= runner_.maxPositions())
      break; // context full; finished below
  }
  request.tokens.insert(request.tokens.end(), committed.begin(),
                        committed.end());
  request.out_tokens.insert(request.out_tokens.end(), committed.begin(),
                            committed.end());
  stats_.generated_tokens += committed.size();
  if (request.seq)
    STRATA_RETURN_IF_ERROR(request.seq->appendTokens(committed));
  if (request.reason != FinishReason::kNone) {
    FinishReason reason = request.reason;
    request.reason = FinishReason::kNone;
    finish(request, reason, okStatus());
  } else if (request.tokens.size() >= runner_.maxPositions()) {
    finish(request, FinishReason::kLength, okStatus());
  }
  return okStatus();
}

Status Scheduler::afterTarget(Request &request, uint64_t new_computed) {
  SequenceCache &seq = *request.seq;
  request.computed = new_computed;
  // The state slot now holds the state after exactly new_computed committed
  // tokens: take the snapshot due there before committing attaches it.
  for (const SnapshotRequest &snap : seq.pendingSnapshots())
    if (snap.tokens == new_computed) {
      STRATA_RETURN_IF_ERROR(runner_.copySlot(int32_t(seq.stateSlot()),
                                              int32_t(snap.kda_slot)));
      if (request.kda_slot_index != 0)
        STRATA_RETURN_IF_ERROR(runner_.copySlots(kdaSlotOf(request),
                                                 int32_t(snap.kda_slot), 1,
                                                 StatePools::kda));
    }
  return seq.commitFullBlocks(new_computed);
}

void Scheduler::failStep(std::vector<Planned> &plan, const Status &status) {
  for (Planned &p : plan)
    if (!p.request->finished)
      finish(*p.request, FinishReason::kNone, status);
  removeFinished();
}

void Scheduler::removeFinished() {
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [](const std::unique_ptr<Request> &r) {
                                  return r->finished;
                                }),
                 running_.end());
}

//===----------------------------------------------------------------------===//
// MTP drafting
//===----------------------------------------------------------------------===//

StepRequest Scheduler::chainRequest(const Planned &p, size_t j,
                                    const std::vector<uint8_t> &hidden) {
  StepRequest r;
  r.tokens = {p.drafts.back()};
  r.start_position = int64_t(p.start + j - 1);
  r.shared_selection_row = p.request->draft_shared_row;
  r.block_table.assign(p.request->seq->blockTable().begin(),
                       p.request->seq->blockTable().end());
  r.slot = int32_t(p.request->seq->stateSlot());
  r.hidden = hidden;
  return r;
}

Status Scheduler::runDraftChain(std::vector<Planned> &plan) {
  // d_1 comes from the previous iteration's step 0; steps 1..k-1 chain one
  // row per request (position start + j - 1, previous draft and hidden).
  std::vector<std::vector<uint8_t>> hidden(plan.size());
  std::vector<size_t> pending;
  size_t max_k = 0;
  bool same_k = true;
  for (size_t i = 0; i < plan.size(); ++i) {
    Planned &p = plan[i];
    if (p.k == 0)
      continue;
    p.drafts = {p.request->draft_token};
    const std::vector<int32_t> &ready = p.request->chain_drafts;
    if (p.k > 1 && ready.size() >= p.k - 1) {
      // The chain ran with the last step (candidateChains).
      p.drafts.insert(p.drafts.end(), ready.begin(), ready.begin() + (p.k - 1));
      continue;
    }
    if (p.k == 1)
      continue;
    hidden[i] = p.request->draft_hidden;
    same_k &= max_k == 0 || p.k == max_k;
    max_k = std::max(max_k, p.k);
    pending.push_back(i);
  }
  if (chain_in_one_step_ && same_k && max_k >= 3)
    return runDraftChainInOneStep(plan, pending, hidden, max_k - 1);
  size_t vocab = runner_.vocabSize();
  for (size_t j = 1; j < max_k; ++j) {
    std::vector<StepRequest> step;
    std::vector<size_t> owners;
    for (size_t i : pending) {
      if (plan[i].k <= j)
        continue;
      step.push_back(chainRequest(plan[i], j, hidden[i]));
      owners.push_back(i);
    }
    // Drafts are greedy: the device's tokens and the hidden rows suffice.
    STRATA_ASSIGN_OR_RETURN(
        StepResult result,
        runner_.run(chain_step_, step,
                    StepOutputs{/*logits=*/false, /*hidden=*/true}));
    for (size_t o = 0; o < owners.size(); ++o) {
      Planned &p = plan[owners[o]];
      auto [row, count] = result.request_rows[o];
      STRATA_ASSIGN_OR_RETURN(int32_t token,
                              lastGreedyToken(result, row + count - 1, vocab));
      p.drafts.push_back(token);
      hidden[owners[o]].assign(
          result.hidden.begin() + o * result.hidden_row_bytes,
          result.hidden.begin() + (o + 1) * result.hidden_row_bytes);
    }
  }
  return okStatus();
}

Status Scheduler::runDraftChainInOneStep(
    std::vector<Planned> &plan, const std::vector<size_t> &pending,
    const std::vector<std::vector<uint8_t>> &hidden, size_t passes) {
  std::vector<StepRequest> step;
  for (size_t i : pending)
    step.push_back(chainRequest(plan[i], 1, hidden[i]));
  // Each pass feeds the next on the device: only the tokens come back.
  STRATA_ASSIGN_OR_RETURN(
      std::vector<StepResult> results,
      runner_.runChain(chain_step_, step, passes,
                       StepOutputs{/*logits=*/false, /*hidden=*/false}));
  if (results.size() != passes)
    return internalError("a draft chain of {} passes returned {} results",
                         passes, results.size());
  size_t vocab = runner_.vocabSize();
  for (const StepResult &result : results)
    for (size_t o = 0; o < pending.size(); ++o) {
      auto [row, count] = result.request_rows[o];
      STRATA_ASSIGN_OR_RETURN(int32_t token,
                              lastGreedyToken(result, row + count - 1, vocab));
      plan[pending[o]].drafts.push_back(token);
    }
  return okStatus();
}

Status Scheduler::runDraftStepZero(std::vector<Planned> &plan) {
  // Step 0: the target rows this iteration committed, shifted by one token
  // (row at position p gets token p + 1 and the target's hidden h_p), at the
  // target's positions (spec §4.3-4.4, vLLM convention).
  std::vector<StepRequest> step;
  std::vector<Planned *> owners;
  for (Planned &p : plan) {
    Request &r = *p.request;
    if (r.finished || !p.hidden_source)
      continue;
    uint64_t rows = r.computed - p.start;
    if (rows == 0 || r.tokens.size() <= r.computed)
      continue;
    StepRequest s;
    s.tokens.assign(r.tokens.begin() + p.start + 1,
                    r.tokens.begin() + r.computed + 1);
    s.start_position = int64_t(p.start);
    s.block_table.assign(r.seq->blockTable().begin(),
                         r.seq->blockTable().end());
    s.slot = int32_t(r.seq->stateSlot());
    if (keep_target_hidden_) {
      s.target_hidden_row = int64_t(p.hidden_offset);
    } else {
      size_t row_bytes = p.hidden_source->hidden_row_bytes;
      auto first =
          p.hidden_source->hidden.begin() + p.hidden_offset * row_bytes;
      s.hidden.assign(first, first + rows * row_bytes);
    }
    step.push_back(std::move(s));
    owners.push_back(&p);
  }
  if (step.empty())
    return okStatus();
  // The chain's later steps start from step 0's last hidden row: with one
  // draft token nothing reads it, so no hidden rows come back.
  bool chain = options_.mtp_draft_tokens > 1;
  STRATA_ASSIGN_OR_RETURN(
      StepResult result,
      runner_.run(StepKind::mtp_draft, step,
                  StepOutputs{/*logits=*/false, /*hidden=*/chain}));
  size_t vocab = runner_.vocabSize();
  size_t token_offset = 0;
  for (size_t o = 0; o < owners.size(); ++o) {
    Request &r = *owners[o]->request;
    size_t tokens = step[o].tokens.size();
    token_offset += tokens;
    r.has_draft = r.decoding();
    if (!r.has_draft)
      continue;
    auto [row, count] = result.request_rows[o];
    STRATA_ASSIGN_OR_RETURN(r.draft_token,
                            lastGreedyToken(result, row + count - 1, vocab));
    r.chain_drafts.clear();
    r.draft_shared_row = int32_t(kSharedSelectionRows) - 1;
    if (!chain)
      continue;
    auto last = result.hidden.begin() +
                (token_offset - 1) * result.hidden_row_bytes;
    r.draft_hidden.assign(last, last + result.hidden_row_bytes);
  }
  return okStatus();
}

bool Scheduler::runsDraftWithTarget(const std::vector<Planned> &plan,
                                    const StepOutputs &outputs) const {
  if (!draft_with_target_ || outputs.logits)
    return false;
  // Decodes and verifications only: every token a logits row, every
  // committed token the device's greedy one (no host logits: greedy).
  size_t tokens = 0;
  for (const Planned &p : plan) {
    if (!p.request->decoding())
      return false;
    tokens += 1 + p.k;
  }
  return options_.draft_with_target_max_tokens == 0 ||
         tokens <= options_.draft_with_target_max_tokens;
}

DraftChain
Scheduler::candidateChains(const std::vector<StepRequest> &target) const {
  size_t rows = 0;
  for (const StepRequest &s : target)
    rows += s.tokens.size();
  if (!chain_with_target_ || (options_.chain_with_target_max_rows &&
                              rows > options_.chain_with_target_max_rows))
    return DraftChain{};
  return candidateDraftChains(target, options_.mtp_draft_tokens - 1,
                              runner_.geometry().page_size_tokens);
}

Status Scheduler::takeDrafts(std::vector<Planned> &plan,
                             const StepResult &draft,
                             const std::vector<StepResult> &chain) {
  // Row j of a request ran the draft on the target's greedy token of row j,
  // its committed next token for j <= accepted: the draft row of the last
  // committed position is step 0's last row.
  for (size_t i = 0; i < plan.size(); ++i) {
    Planned &p = plan[i];
    Request &r = *p.request;
    auto [row, count] = draft.request_rows.at(i);
    if (r.finished)
      continue;
    r.has_draft = r.decoding();
    if (!r.has_draft)
      continue;
    uint64_t committed = r.computed - p.start;
    if (committed == 0 || committed > count)
      return internalError("request {}: {} committed rows of {} drafted",
                           r.id, committed, count);
    size_t last = row + committed - 1;
    STRATA_ASSIGN_OR_RETURN(r.draft_token, deviceGreedyToken(draft, last));
    // The candidate chain of row `last` (chain request `last`): drafts 2..k.
    r.chain_drafts.clear();
    for (const StepResult &pass : chain) {
      STRATA_ASSIGN_OR_RETURN(int32_t token, deviceGreedyToken(pass, last));
      r.chain_drafts.push_back(token);
    }
    // Step 0 kept the selections of each request's last rows, its last
    // token in the last row.
    r.draft_shared_row =
        int32_t(kSharedSelectionRows) - 1 - int32_t(count - committed);
    if (options_.mtp_draft_tokens > 1 && chain.empty()) {
      // Every token is a row: row `last` is hidden row `last`.
      if (draft.hidden.size() < (last + 1) * draft.hidden_row_bytes ||
          draft.hidden_row_bytes == 0)
        return internalError("draft step returned {} hidden bytes, row {} "
                             "requested",
                             draft.hidden.size(), last);
      auto first = draft.hidden.begin() + last * draft.hidden_row_bytes;
      r.draft_hidden.assign(first, first + draft.hidden_row_bytes);
    }
  }
  return okStatus();
}

int32_t Scheduler::kdaSlot(const Request &request, uint32_t index) const {
  uint32_t slot = uint32_t(request.seq->stateSlot());
  index %= options_.mtp_draft_tokens + 1;
  if (index == 0)
    return int32_t(slot);
  return int32_t(scratch_base_ + (index - 1) * options_.max_requests + slot);
}

int32_t Scheduler::kdaSlotOf(const Request &request) const {
  return kdaSlot(request, request.kda_slot_index);
}

Status Scheduler::saveStates(std::vector<int32_t> slots) {
  if (slots.empty())
    return okStatus();
  // One run from the lowest to the highest: the scratch slots of the live
  // slots between (other requests', free ones) hold nothing until their own
  // save.
  auto [lo, hi] = std::minmax_element(slots.begin(), slots.end());
  return runner_.copySlots(*lo, int32_t(scratch_base_) + *lo, *hi - *lo + 1);
}

Status Scheduler::restoreStates(std::vector<int32_t> slots) {
  // Runs of consecutive slots only: a slot between two rejected ones may
  // hold an accepted request's new state.
  std::sort(slots.begin(), slots.end());
  for (size_t first = 0; first < slots.size();) {
    size_t end = first + 1;
    while (end < slots.size() && slots[end] == slots[end - 1] + 1)
      ++end;
    STRATA_RETURN_IF_ERROR(runner_.copySlots(int32_t(scratch_base_) +
                                                 slots[first],
                                             slots[first], int32_t(end - first)));
    first = end;
  }
  return okStatus();
}

bool Scheduler::wantsPromptLogprobs(const Request &r) {
  return r.sampler && r.sampler->params().prompt_logprobs >= 0;
}

bool Scheduler::needsLogits(const Planned &p) const {
  const Request &r = *p.request;
  if (!r.decoding() && wantsPromptLogprobs(r))
    return true; // every prompt row's logits
  if (!r.decoding() && p.end != r.tokens.size())
    return false; // a prefill chunk that samples nothing
  const SamplingParams &params = r.sampler->params();
  return !r.sampler->greedy() || params.logprobs >= 0 ||
         needsLogitsProcessing(params, r.generated());
}

void Scheduler::recordPromptLogprobs(Request &r, uint64_t start,
                                     const float *logits, size_t rows) {
  // Row j (position start + j) gives the log-probabilities of the token at
  // start + j + 1; entry e is prompt token e + 1's. A re-prefill after
  // preemption repeats positions already recorded.
  size_t vocab = runner_.vocabSize();
  size_t top = size_t(r.sampler->params().prompt_logprobs);
  for (size_t j = 0; j < rows; ++j) {
    uint64_t next = start + j + 1;
    if (next >= r.prompt_size || next - 1 != r.prompt_logprobs.size())
      continue;
    r.prompt_logprobs.push_back(
        computeLogprobs(logits + j * vocab, vocab, r.tokens[next], top));
  }
}

StatusOr<int32_t> Scheduler::sampleRow(Request &r, const StepResult &result,
                                       size_t row,
                                       std::vector<float> &masked) {
  if (result.logits.empty())
    return deviceGreedyToken(result, row);
  size_t vocab = runner_.vocabSize();
  return r.sampler->sample(
      processRows(r, result.logits.data() + row * vocab, 1, {}, masked),
      vocab);
}

StatusOr<DraftVerificationResult>
Scheduler::verifyRows(Request &r, const StepResult &result, size_t row,
                      const std::vector<int32_t> &drafts,
                      std::vector<float> &masked) {
  const size_t k = drafts.size();
  if (result.logits.empty()) {
    // Greedy, unprocessed rows: the device's greedy tokens decide.
    if (row + k + 1 > result.greedy.size())
      return internalError("step returned {} greedy tokens, rows {}..{} "
                           "requested",
                           result.greedy.size(), row, row + k);
    std::vector<int32_t> target(result.greedy.begin() + row,
                                result.greedy.begin() + row + k + 1);
    return verifyGreedyDrafts(target, drafts, &mtp_counters_);
  }
  size_t vocab = runner_.vocabSize();
  DraftVerification input;
  input.target_logits = processRows(
      r, result.logits.data() + row * vocab, k + 1, drafts, masked);
  input.vocab_size = vocab;
  input.draft_tokens = drafts;
  return verifyDrafts(input, *r.sampler, &mtp_counters_);
}

//===----------------------------------------------------------------------===//
// One iteration
//===----------------------------------------------------------------------===//

Status Scheduler::step() {
  auto started = std::chrono::steady_clock::now();
  size_t budget = options_.max_step_tokens;
  std::vector<Planned> plan;
  for (auto &r : running_)
    r->planned = false;

  // Running requests first (decodes/verifies, then prefill chunks), oldest
  // first; then admissions while the budget, slots and blocks allow.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Request *> order;
    for (auto &r : running_)
      if (r->decoding() == (pass == 0))
        order.push_back(r.get());
    for (Request *r : order) {
      if (r->planned || !r->seq)
        continue; // preempted meanwhile
      if (!planRequest(*r, budget, plan) && !r->status.ok()) {
        Status status = r->status;
        r->status = okStatus();
        if (status.code() == StatusCode::kResourceExhausted)
          finish(*r, FinishReason::kLength, okStatus());
        else
          finish(*r, FinishReason::kNone, status);
      }
    }
  }
  removeFinished();
  const uint64_t page =
      std::max<uint64_t>(runner_.geometry().page_size_tokens, 1);
  while (budget > 0 && !waiting_.empty() &&
         running_.size() < options_.max_requests) {
    Request &next = *waiting_.front();
    KvCacheStats kv = kv_->stats();
    uint64_t first_chunk = std::min<uint64_t>(
        {budget, options_.max_chunk_tokens, next.tokens.size()});
    if (kv.num_blocks - kv.used_blocks < ceilDiv(first_chunk + 1, page))
      break;
    Status status = admit(next);
    if (!status.ok()) {
      if (status.code() == StatusCode::kResourceExhausted)
        break;
      std::unique_ptr<Request> failed = std::move(waiting_.front());
      waiting_.pop_front();
      finish(*failed, FinishReason::kNone, status);
      continue;
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    Request &admitted = *running_.back();
    if (!planRequest(admitted, budget, plan)) {
      if (!admitted.status.ok()) {
        Status status = admitted.status;
        admitted.status = okStatus();
        finish(admitted, FinishReason::kNone, status);
        removeFinished();
      } else if (admitted.seq) {
        preempt(admitted); // no room this step: back to the queue
      }
      break;
    }
  }
  if (plan.empty())
    return okStatus();

  // Draft chain, then save the state of every request that verifies.
  if (options_.mtp_draft_tokens > 0) {
    Status status = runDraftChain(plan);
    if (!status.ok()) {
      failStep(plan, status);
      return status;
    }
    // With per-token KDA states the verification keeps the state after
    // each position in a slot of its own (below) and nothing is saved.
    std::vector<int32_t> verifying;
    for (Planned &p : plan)
      if (p.k > 0 && !token_states_)
        verifying.push_back(int32_t(p.request->seq->stateSlot()));
    status = saveStates(verifying);
    if (!status.ok()) {
      failStep(plan, status);
      return status;
    }
  }

  // The target step: prefill chunks, decodes and verifies together.
  std::vector<StepRequest> target;
  bool multi = false, verify = false;
  size_t longest = 0;
  for (Planned &p : plan) {
    Request &r = *p.request;
    StepRequest s;
    uint64_t committed_end = std::min<uint64_t>(p.end, r.tokens.size());
    s.tokens.assign(r.tokens.begin() + p.start,
                    r.tokens.begin() + committed_end);
    s.tokens.insert(s.tokens.end(), p.drafts.begin(), p.drafts.end());
    s.start_position = int64_t(p.start);
    s.block_table.assign(r.seq->blockTable().begin(),
                         r.seq->blockTable().end());
    s.slot = int32_t(r.seq->stateSlot());
    if (token_states_) {
      // Position j of a verification keeps its state in the request's KDA
      // slot after the current one by j (position 0 updates it in place).
      s.state_src_slot = s.state_dst_slot = kdaSlotOf(r);
      if (p.k > 0) {
        for (size_t j = 0; j <= p.k; ++j)
          s.state_token_slots.push_back(
              kdaSlot(r, r.kda_slot_index + uint32_t(j)));
        s.state_dst_slot = s.state_token_slots.back();
      }
    }
    s.all_logits = p.k > 0 || (!r.decoding() && wantsPromptLogprobs(r));
    multi |= s.tokens.size() > 1;
    verify |= p.k > 0;
    longest = std::max(longest, s.tokens.size());
    target.push_back(std::move(s));
  }
  // The three target plans are compiled from one graph and differ only in
  // the longest request they take (ExecutionPlan.max_request_tokens): a
  // decode step one token per request, a verify step the drafts + 1 (the
  // kernels of longer requests are left out); a step with a longer prefill
  // chunk runs the prefill plan, verify rows included.
  bool verifyOnly = verify && longest <= options_.mtp_draft_tokens + 1;
  StepKind kind = !multi      ? StepKind::decode
                  : verifyOnly ? StepKind::mtp_verify
                               : StepKind::prefill;
  // The draft's step 0 starts from this step's hidden rows: kept on the
  // device when the runner can (no re-run with per-token states, so they
  // are the target step's), else copied back.
  StepOutputs outputs{/*logits=*/false,
                      /*hidden=*/options_.mtp_draft_tokens > 0 &&
                          !keep_target_hidden_};
  outputs.keep_hidden = keep_target_hidden_;
  for (const Planned &p : plan)
    outputs.logits |= needsLogits(p);
  const bool with_draft = runsDraftWithTarget(plan, outputs);
  StepResult draft_result;
  std::vector<StepResult> chain_results;
  StatusOr<StepResult> result = [&]() -> StatusOr<StepResult> {
    if (!with_draft)
      return runner_.run(kind, target, outputs);
    // The candidate chains after the draft, when the step takes them.
    DraftChain chain = candidateChains(target);
    // The draft's hidden rows feed a chain run later (k >= 2) only.
    StepOutputs draft_outputs{/*logits=*/false,
                              /*hidden=*/options_.mtp_draft_tokens > 1 &&
                                  chain.requests.empty()};
    StepOutputs target_outputs{outputs.logits, /*hidden=*/false};
    target_outputs.keep_hidden = false;
    STRATA_ASSIGN_OR_RETURN(
        DraftedStepResult both,
        chain.requests.empty()
            ? runner_.runWithDraft(kind, target, target_outputs, draft_outputs)
            : runner_.runWithDraftChain(kind, target, target_outputs,
                                        draft_outputs, chain));
    draft_result = std::move(both.draft);
    chain_results = std::move(both.chain);
    return std::move(both.target);
  }();
  if (!result.ok()) {
    failStep(plan, result.status());
    return result.status();
  }
  stats_.steps++;

  // Sample, verify, commit.
  size_t vocab = runner_.vocabSize();
  size_t token_offset = 0;
  Status error;
  std::vector<float> masked;
  std::vector<int32_t> rejected;
  for (size_t i = 0; i < plan.size() && error.ok(); ++i) {
    Planned &p = plan[i];
    Request &r = *p.request;
    auto [row, count] = result->request_rows[i];
    const float *logits = result->logits.empty()
                              ? nullptr
                              : result->logits.data() + row * vocab;
    p.hidden_source = &*result;
    p.hidden_offset = token_offset;
    token_offset += target[i].tokens.size();
    if (!r.decoding()) {
      stats_.prefill_tokens += p.end - p.start;
      p.new_computed = p.end;
      if (wantsPromptLogprobs(r) && logits)
        recordPromptLogprobs(r, p.start, logits, count);
      if (p.end == r.tokens.size()) {
        const float *last = logits ? logits + (count - 1) * vocab : nullptr;
        StatusOr<int32_t> token =
            sampleRow(r, *result, row + count - 1, masked);
        if (!token.ok()) {
          error = token.status();
          break;
        }
        error = commitTokens(r, {*token}, last);
      }
    } else if (p.k == 0) {
      p.new_computed = p.start + 1;
      StatusOr<int32_t> token = sampleRow(r, *result, row, masked);
      if (!token.ok()) {
        error = token.status();
        break;
      }
      error = commitTokens(r, {*token}, logits);
    } else {
      StatusOr<DraftVerificationResult> verified =
          verifyRows(r, *result, row, p.drafts, masked);
      if (!verified.ok()) {
        error = verified.status();
        break;
      }
      p.new_computed = p.start + verified->accepted + 1;
      error = commitTokens(r, verified->tokens, logits);
      if (token_states_) {
        // The state after the last accepted position is in its slot.
        r.kda_slot_index = (r.kda_slot_index + uint32_t(verified->accepted)) %
                           uint32_t(options_.mtp_draft_tokens + 1);
      } else if (!r.finished && verified->accepted < p.k) {
        // Rollback: restore the state saved before the verify (below, for
        // every rejection at once), re-run the accepted prefix
        // [t_L, d_1..d_a].
        rejected.push_back(int32_t(r.seq->stateSlot()));
        p.rerun = true;
      }
    }
  }
  if (error.ok())
    error = restoreStates(rejected);
  if (!error.ok()) {
    failStep(plan, error);
    return error;
  }

  // Rollback re-runs: the accepted tokens as a normal step.
  std::vector<StepRequest> rerun;
  std::vector<Planned *> rerun_owners;
  for (Planned &p : plan) {
    if (!p.rerun || p.request->finished)
      continue;
    Request &r = *p.request;
    StepRequest s;
    s.tokens.assign(r.tokens.begin() + p.start,
                    r.tokens.begin() + p.new_computed);
    s.start_position = int64_t(p.start);
    s.block_table.assign(r.seq->blockTable().begin(),
                         r.seq->blockTable().end());
    s.slot = int32_t(r.seq->stateSlot());
    rerun.push_back(std::move(s));
    rerun_owners.push_back(&p);
    ++stats_.verify_rollbacks;
  }
  StepResult rerun_result;
  if (!rerun.empty()) {
    bool rerun_multi = false;
    for (const StepRequest &s : rerun)
      rerun_multi |= s.tokens.size() > 1;
    // Re-run for the state and the draft's hidden rows, not for tokens; at
    // most k tokens a request, which the verify plan takes.
    StatusOr<StepResult> again =
        runner_.run(rerun_multi ? StepKind::mtp_verify : StepKind::decode,
                    rerun, StepOutputs{/*logits=*/false, /*hidden=*/true});
    if (!again.ok()) {
      failStep(plan, again.status());
      return again.status();
    }
    rerun_result = std::move(*again);
    size_t offset = 0;
    for (size_t o = 0; o < rerun_owners.size(); ++o) {
      rerun_owners[o]->hidden_source = &rerun_result;
      rerun_owners[o]->hidden_offset = offset;
      offset += rerun[o].tokens.size();
    }
  }

  for (Planned &p : plan) {
    if (p.request->finished)
      continue;
    Status status = afterTarget(*p.request, p.new_computed);
    if (!status.ok()) {
      failStep(plan, status);
      return status;
    }
  }
  if (options_.mtp_draft_tokens > 0) {
    Status status = with_draft ? takeDrafts(plan, draft_result, chain_results)
                               : runDraftStepZero(plan);
    if (!status.ok()) {
      failStep(plan, status);
      return status;
    }
  }
  for (Planned &p : plan)
    if (!p.request->finished)
      deliver(*p.request);
  removeFinished();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - started)
                       .count();
  stats_.last_step_seconds = seconds;
  stats_.total_step_seconds += seconds;
  stats_.graphs = runner_.graphCounts();
  if (options_.step_observer)
    options_.step_observer(seconds, options_.max_step_tokens - budget);
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Stats
//===----------------------------------------------------------------------===//

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = stats_;
  s.queued = waiting_.size();
  s.running = running_.size();
  s.kv = kv_->stats();
  s.mtp = mtp_counters_.snapshot();
  return s;
}

std::string formatSchedulerMetrics(const SchedulerStats &s,
                                   const MtpAcceptanceCounters *mtp) {
  std::string out = formatKvCacheMetrics(s.kv);
  auto metric = [&](const char *name, const char *type, const char *help,
                    auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                       type, name, value);
  };
  metric("strata_requests_waiting", "gauge", "Requests in the queue.",
         s.queued);
  metric("strata_requests_running", "gauge", "Requests being generated.",
         s.running);
  metric("strata_engine_steps_total", "counter", "Model steps run.", s.steps);
  metric("strata_engine_step_seconds_total", "counter",
         "Seconds spent in scheduler iterations.", s.total_step_seconds);
  metric("strata_engine_last_step_seconds", "gauge",
         "Seconds of the last scheduler iteration.", s.last_step_seconds);
  metric("strata_engine_preemptions_total", "counter",
         "Requests preempted (recomputed later) for lack of KV blocks.",
         s.preemptions);
  metric("strata_engine_verify_rollbacks_total", "counter",
         "MTP verifications re-run after a rejected draft (artifacts "
         "without per-token KDA states: the accepted tokens re-run from the "
         "restored state; 0 otherwise).",
         s.verify_rollbacks);
  auto byStep = [&](const char *name, const char *help,
                    const std::array<uint64_t, StepGraphCounts::kKinds> &n) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n", name, help);
    for (StepKind kind : kGraphSteps)
      out += fmt::format("{}{{step=\"{}\"}} {}\n", name,
                         artifact::EnumNameStepKind(kind), n[size_t(kind)]);
  };
  byStep("strata_engine_graph_captures_total",
         "Step shapes captured into a replayable graph, by step kind.",
         s.graphs.captures);
  byStep("strata_engine_graph_replays_total",
         "Steps run by replaying a captured graph, by step kind.",
         s.graphs.replays);
  auto drafted = [&](const char *name, const char *help,
                     const std::array<uint64_t, StepGraphCounts::kKinds> &n) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n", name, help);
    for (StepKind kind : {StepKind::decode, StepKind::mtp_verify})
      out += fmt::format("{}{{step=\"{}\"}} {}\n", name,
                         artifact::EnumNameStepKind(kind), n[size_t(kind)]);
  };
  drafted("strata_engine_drafted_graph_captures_total",
          "Step shapes captured into one graph with the MTP draft's first "
          "pass over their rows, by the target step's kind.",
          s.graphs.drafted_captures);
  drafted("strata_engine_drafted_graph_replays_total",
          "Steps run with the MTP draft's first pass by replaying one graph, "
          "by the target step's kind.",
          s.graphs.drafted_replays);
  metric("strata_engine_chained_graph_captures_total", "counter",
         "MTP draft chains of several passes captured into one graph.",
         s.graphs.chained_captures);
  metric("strata_engine_chained_graph_replays_total", "counter",
         "MTP draft chains of several passes run by replaying one graph.",
         s.graphs.chained_replays);
  metric("strata_engine_prefill_tokens_total", "counter",
         "Prompt tokens run through the model.", s.prefill_tokens);
  metric("strata_engine_generated_tokens_total", "counter",
         "Tokens generated.", s.generated_tokens);
  metric("strata_requests_finished_total", "counter",
         "Requests finished normally.", s.finished_requests);
  metric("strata_requests_cancelled_total", "counter", "Requests cancelled.",
         s.cancelled_requests);
  if (mtp)
    mtp->appendPrometheus(out);
  return out;
}

} // namespace strata::runtime
