//===- scheduler_test.cpp - Scheduler and Engine on a fake model ----------===//
//
// Part of strata. FakeModel is a deterministic stand-in for the executor
// whose next token depends on (a) the state slot, a running hash of every
// token run through it, and (b) the tokens read back through the block table
// from its paged "KV" for positions 0..p. A wrong block table, a lost or
// stale page, a state slot that absorbed rejected drafts or a missed
// snapshot restore changes the output, so outputs equal to plain greedy
// decoding (computed directly) show the bookkeeping is right. Its draft
// predicts the target exactly except on ~1/3 of positions, so MTP sees both
// acceptances and rejections.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/scheduler/engine.h"

namespace strata::runtime {
namespace {

using artifact::StepKind;

constexpr size_t kVocab = 64;
constexpr uint64_t kPage = 8;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

class FakeModel : public ModelRunner {
public:
  FakeModel(uint64_t num_blocks, uint32_t slots)
      : pages_(num_blocks, std::vector<int32_t>(kPage, -1)), state_(slots) {
    geometry_.alignment = 8;
    geometry_.page_size_tokens = kPage;
    geometry_.latent_layers = 1;
    geometry_.latent_page_bytes = 64;
    geometry_.ring_layers = 1;
    geometry_.ring_bytes_per_layer = 8;
    geometry_.kda_layers = 1;
    geometry_.kda_recurrent_bytes_per_layer = 8;
    geometry_.kda_conv_bytes_per_layer = 8;
  }
  size_t vocabSize() const override { return kVocab; }
  uint64_t maxPositions() const override { return 400; }
  const CacheGeometry &geometry() const override { return geometry_; }
  bool hasDraft() const override { return true; }
  Status resetSlot(int32_t slot) override {
    state_.at(slot) = 1;
    return okStatus();
  }
  Status copySlots(int32_t src, int32_t dst, int32_t count,
                   StatePools pools) override {
    // The fake's one state stands for the KDA state: both pool sets copy it.
    for (int32_t i = 0; i < count; ++i)
      state_.at(dst + i) = state_.at(src + i);
    ++copy_calls_;
    return okStatus();
  }
  bool keepsTokenStates() const override { return token_states_; }
  /// copySlots calls (each a run of slots).
  int copy_calls_ = 0;
  /// Whether target steps keep the state after each token in
  /// state_token_slots (ModelRunner::keepsTokenStates).
  bool token_states_ = false;
  bool hasDraftChain() const override { return draft_chain_; }
  /// Whether the fake has an mtp_chain step (hasDraftChain).
  bool draft_chain_ = false;
  StatusOr<StepResult> run(StepKind step,
                           const std::vector<StepRequest> &requests,
                           const StepOutputs &outputs) override {
    STRATA_RETURN_IF_ERROR(trackSharedSelections(step, requests));
    if (step == StepKind::mtp_chain)
      step = StepKind::mtp_draft; // the same draft, its selection checked
    if (step != StepKind::mtp_draft)
      kept_hidden_.clear(); // like ModelExecutor: a new target step
    ++steps_[step];
    if (outputs.logits)
      ++logits_steps_[step];
    StepResult result;
    for (const StepRequest &r : requests) {
      size_t first = result.logits.size() / kVocab;
      for (size_t t = 0; t < r.tokens.size(); ++t) {
        uint64_t p = r.start_position + t;
        uint64_t state, kv;
        if (step == StepKind::mtp_draft) {
          // hidden = (state, kv) after position p - 1 of the target (or
          // the previous draft row); the draft computes the target's
          // hashes after token r.tokens[t] at position p + 1. Rows of the
          // kept target hidden output when the request names them.
          const uint8_t *h = r.hidden.data() + 16 * t;
          if (r.target_hidden_row >= 0) {
            size_t row = size_t(r.target_hidden_row) + t;
            if (16 * (row + 1) > kept_hidden_.size())
              return outOfRange("kept hidden row {} of {}", row,
                                kept_hidden_.size() / 16);
            h = kept_hidden_.data() + 16 * row;
          }
          std::memcpy(&state, h, 8);
          std::memcpy(&kv, h + 8, 8);
          state = mix(state, r.tokens[t]);
          kv = mix(kv, r.tokens[t]);
        } else {
          if (r.block_table.size() * kPage <= p)
            return outOfRange("position {} beyond the block table", p);
          pages_.at(r.block_table[p / kPage])[p % kPage] = r.tokens[t];
          // Like the KDA kernels: the first token reads the source slot,
          // each token writes its slot (the destination, or its entry of
          // state_token_slots) and the next one reads it.
          int32_t src = r.state_src_slot < 0 ? r.slot : r.state_src_slot;
          int32_t dst = r.state_dst_slot < 0 ? r.slot : r.state_dst_slot;
          if (!token_states_ && !r.state_token_slots.empty())
            return failedPrecondition("per-token state slots not taken");
          auto slotAfter = [&](size_t i) {
            return r.state_token_slots.empty() ? dst : r.state_token_slots[i];
          };
          state = state_.at(slotAfter(t)) =
              mix(state_.at(t == 0 ? src : slotAfter(t - 1)), r.tokens[t]);
          kv = 1;
          for (uint64_t q = 0; q <= p; ++q)
            kv = mix(kv, pages_.at(r.block_table[q / kPage])[q % kPage]);
        }
        int32_t best = int32_t(mix(state, kv) % kVocab);
        if (step == StepKind::mtp_draft && mix(state, 7) % 3 == 0)
          best = (best + 1) % kVocab; // a wrong guess
        if (r.all_logits || t + 1 == r.tokens.size()) {
          std::vector<float> row(kVocab, 0.0f);
          row[best] = 1.0f;
          result.logits.insert(result.logits.end(), row.begin(), row.end());
          result.greedy.push_back(best);
        }
        uint8_t hidden[16];
        std::memcpy(hidden, &state, 8);
        std::memcpy(hidden + 8, &kv, 8);
        result.hidden.insert(result.hidden.end(), hidden, hidden + 16);
      }
      result.request_rows.emplace_back(first,
                                       result.logits.size() / kVocab - first);
    }
    result.hidden_row_bytes = 16;
    if (outputs.keep_hidden && step != StepKind::mtp_draft)
      kept_hidden_ = result.hidden;
    // Like ModelExecutor: the greedy tokens always, the logits and hidden
    // rows only when asked for.
    if (!outputs.logits)
      result.logits.clear();
    if (!outputs.hidden)
      result.hidden.clear();
    return result;
  }
  bool runsWithDraft() const override { return true; }
  bool keepsTargetHidden() const override { return keeps_target_hidden_; }
  /// Whether target steps keep their hidden output for the draft
  /// (keepsTargetHidden).
  bool keeps_target_hidden_ = true;
  std::vector<uint8_t> kept_hidden_;
  /// Like ModelExecutor::runWithDraft: the target step, then the draft over
  /// every row with the target's greedy tokens and hidden rows.
  StatusOr<DraftedStepResult>
  runWithDraft(StepKind step, const std::vector<StepRequest> &requests,
               const StepOutputs &outputs,
               const StepOutputs &draft_outputs) override {
    ++drafted_steps_[step];
    StepOutputs all = outputs;
    all.hidden = true;
    STRATA_ASSIGN_OR_RETURN(StepResult target, run(step, requests, all));
    std::vector<StepRequest> draft = requests;
    size_t t = 0;
    for (StepRequest &r : draft) {
      if (!r.all_logits && r.tokens.size() != 1)
        return invalidArgument("a token without a logits row");
      r.hidden.clear();
      for (int32_t &token : r.tokens) {
        token = target.greedy.at(t);
        r.hidden.insert(r.hidden.end(), target.hidden.begin() + 16 * t,
                        target.hidden.begin() + 16 * (t + 1));
        ++t;
      }
    }
    STRATA_ASSIGN_OR_RETURN(StepResult drafted,
                            run(StepKind::mtp_draft, draft, draft_outputs));
    if (!outputs.hidden)
      target.hidden.clear();
    return DraftedStepResult{std::move(target), std::move(drafted), {}};
  }
  bool runsDraftChainWithTarget() const override {
    return draft_chain_ && chain_with_target_;
  }
  /// Whether runWithDraftChain works (with draft_chain_).
  bool chain_with_target_ = false;
  /// Like ModelExecutor::runWithDraftChain: runWithDraft, then each chain
  /// pass over the chain's requests, request t taking row t of the step
  /// before it (its greedy token and hidden row), one position further each
  /// pass; each request must name the shared row of the position before
  /// its first pass's (the row its first draft came from).
  StatusOr<DraftedStepResult>
  runWithDraftChain(StepKind step, const std::vector<StepRequest> &requests,
                    const StepOutputs &outputs,
                    const StepOutputs &draft_outputs,
                    const DraftChain &chain) override {
    ++chained_with_target_steps_;
    StepOutputs with_hidden = draft_outputs;
    with_hidden.hidden = true;
    STRATA_ASSIGN_OR_RETURN(DraftedStepResult result,
                            runWithDraft(step, requests, outputs, with_hidden));
    if (chain.requests.size() != result.draft.greedy.size())
      return invalidArgument("{} chain requests for {} rows",
                             chain.requests.size(), result.draft.greedy.size());
    const std::map<int32_t, std::vector<int64_t>> kept = kept_positions_;
    StepResult before = result.draft;
    for (size_t j = 0; j < chain.passes; ++j) {
      std::vector<StepRequest> pass = chain.requests;
      for (size_t t = 0; t < pass.size(); ++t) {
        StepRequest &c = pass[t];
        c.start_position += int64_t(j);
        c.tokens = {before.greedy.at(t)};
        c.hidden.assign(before.hidden.begin() + 16 * t,
                        before.hidden.begin() + 16 * (t + 1));
        int64_t row = c.shared_selection_row;
        int64_t first = c.start_position - int64_t(j);
        if (row < 0 || row >= int64_t(kSharedSelectionRows) ||
            kept.at(c.slot).at(row) != first - 1)
          return failedPrecondition("candidate chain at position {} reads "
                                    "shared row {}",
                                    first, row);
      }
      STRATA_ASSIGN_OR_RETURN(
          before, run(StepKind::mtp_draft, pass,
                      StepOutputs{/*logits=*/false, /*hidden=*/true}));
      kept_positions_ = kept; // chain steps keep no selection
      result.chain.push_back(before);
      if (!chain.outputs.hidden)
        result.chain.back().hidden.clear();
    }
    if (!draft_outputs.hidden)
      result.draft.hidden.clear();
    return result;
  }
  int chained_with_target_steps_ = 0;
  /// Like llm.shared_selection_write / read: a draft step 0 keeps the
  /// positions of each request's last kSharedSelectionRows rows per slot;
  /// the j-th chain step of an iteration at position P must name the row
  /// of position P - j (the row its first draft came from).
  Status trackSharedSelections(StepKind step,
                               const std::vector<StepRequest> &requests) {
    const int64_t rows = kSharedSelectionRows;
    for (const StepRequest &r : requests) {
      std::vector<int64_t> &kept = kept_positions_[r.slot];
      kept.resize(rows, -1);
      int64_t n = int64_t(r.tokens.size());
      if (step == StepKind::mtp_draft) {
        for (int64_t i = std::max<int64_t>(0, n - rows); i < n; ++i)
          kept[rows - (n - i)] = r.start_position + i;
        chain_steps_[r.slot] = 0;
      } else if (step == StepKind::mtp_chain) {
        int64_t j = ++chain_steps_[r.slot];
        int64_t row = r.shared_selection_row;
        if (row < 0 || row >= rows || kept[row] != r.start_position - j)
          return failedPrecondition(
              "chain step {} at position {} reads shared row {} (position "
              "{})",
              j, r.start_position, row, row < 0 || row >= rows ? -1 : kept[row]);
      }
    }
    return okStatus();
  }
  std::map<int32_t, std::vector<int64_t>> kept_positions_;
  std::map<int32_t, int64_t> chain_steps_;
  std::map<StepKind, int> steps_;
  /// Steps that asked for the logits.
  std::map<StepKind, int> logits_steps_;
  /// runWithDraft calls by the target step's kind.
  std::map<StepKind, int> drafted_steps_;

private:
  CacheGeometry geometry_;
  std::vector<std::vector<int32_t>> pages_;
  std::vector<uint64_t> state_;
};

/// Plain greedy decoding of the fake model, computed directly.
std::vector<int32_t> reference(const std::vector<int32_t> &prompt,
                               size_t max_tokens) {
  uint64_t state = 1, kv = 1;
  std::vector<int32_t> out;
  std::vector<int32_t> tokens = prompt;
  for (size_t i = 0; i < tokens.size() && out.size() < max_tokens; ++i) {
    state = mix(state, tokens[i]);
    kv = mix(kv, tokens[i]);
    if (i + 1 == tokens.size()) {
      tokens.push_back(int32_t(mix(state, kv) % kVocab));
      out.push_back(tokens.back());
    }
  }
  return out;
}

std::vector<std::vector<int32_t>> testPrompts() {
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p;
    // Prompts 0-2 share 20 tokens (2.5 pages); lengths 3..40.
    size_t len = 3 + 7 * i;
    for (size_t t = 0; t < len; ++t)
      p.push_back(int32_t(i < 3 && t < 20 ? (t * 5 + 3) % kVocab
                                          : (t * 11 + i * 13) % kVocab));
    prompts.push_back(p);
  }
  return prompts;
}

/// A scheduler over a FakeModel, run synchronously.
struct Harness {
  explicit Harness(SchedulerOptions options, bool token_states = false)
      : model(options.num_blocks,
              schedulerStateSlots(options, FakeModel(1, 1).geometry())) {
    model.token_states_ = token_states;
    auto created = Scheduler::create(model, nullptr, options);
    EXPECT_TRUE(created.ok()) << created.status().message();
    scheduler = std::move(*created);
  }
  /// Submits every prompt and steps until all finish; returns their ids.
  std::vector<std::vector<int32_t>>
  run(const std::vector<std::vector<int32_t>> &prompts, int64_t max_tokens) {
    SamplingParams params;
    params.max_tokens = max_tokens;
    return run(prompts, params);
  }
  std::vector<std::vector<int32_t>>
  run(const std::vector<std::vector<int32_t>> &prompts,
      const SamplingParams &params,
      std::vector<std::vector<TokenLogprobs>> *logprobs = nullptr) {
    std::vector<std::vector<int32_t>> out(prompts.size());
    if (logprobs)
      logprobs->assign(prompts.size(), {});
    for (size_t i = 0; i < prompts.size(); ++i) {
      Status status = scheduler->add(
          next_id++, prompts[i], params,
          [&out, logprobs, i](const RequestOutput &o) {
            EXPECT_TRUE(o.status.ok()) << o.status.message();
            out[i].insert(out[i].end(), o.tokens.begin(), o.tokens.end());
            if (logprobs)
              (*logprobs)[i].insert((*logprobs)[i].end(), o.logprobs.begin(),
                                    o.logprobs.end());
          });
      EXPECT_TRUE(status.ok()) << status.message();
    }
    for (int guard = 0; scheduler->hasWork() && guard < 10000; ++guard) {
      Status status = scheduler->step();
      EXPECT_TRUE(status.ok()) << status.message();
    }
    EXPECT_FALSE(scheduler->hasWork());
    return out;
  }
  FakeModel model;
  std::unique_ptr<Scheduler> scheduler;
  uint64_t next_id = 1;
};

SchedulerOptions baseOptions() {
  SchedulerOptions o;
  o.max_requests = 3;
  o.num_blocks = 64;
  o.max_step_tokens = 16;
  o.max_chunk_tokens = 5;
  o.checkpoint_interval_tokens = kPage;
  o.num_snapshot_slots = 64; // keep every checkpoint of the test prompts
  return o;
}

void expectReference(const std::vector<std::vector<int32_t>> &outputs,
                     int64_t max_tokens) {
  auto prompts = testPrompts();
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], reference(prompts[i], max_tokens)) << "prompt " << i;
}

TEST(Scheduler, BatchedChunkedGreedyEqualsReference) {
  for (size_t chunk : {1, 3, 5, 16}) {
    SchedulerOptions o = baseOptions();
    o.max_chunk_tokens = chunk;
    Harness h(o);
    expectReference(h.run(testPrompts(), 12), 12);
    EXPECT_EQ(h.scheduler->kvCache().stats().used_blocks, 0u);
    // Greedy requests take the step's greedy tokens: no logits copied.
    EXPECT_TRUE(h.model.logits_steps_.empty());
  }
}

// Tests that a step copies the logits back when a request samples with a
// temperature (and only then), and that the greedy requests beside it keep
// their outputs.
TEST(Scheduler, SampledRequestsTakeLogits) {
  Harness h(baseOptions());
  std::vector<int32_t> sampled;
  SamplingParams params;
  params.max_tokens = 6;
  params.temperature = 0.7f;
  params.seed = 5;
  ASSERT_TRUE(h.scheduler
                  ->add(100, testPrompts()[1], params,
                        [&](const RequestOutput &o) {
                          sampled.insert(sampled.end(), o.tokens.begin(),
                                         o.tokens.end());
                        })
                  .ok());
  expectReference(h.run(testPrompts(), 12), 12);
  EXPECT_EQ(sampled.size(), 6u);
  EXPECT_GT(h.model.logits_steps_[StepKind::decode], 0);
}

/// Greedy decoding of the fake model under a presence penalty of 2: its
/// rows are one-hot (1 at the model's token, 0 elsewhere), so a token
/// already generated drops to 1 - 2 or 0 - 2 and the argmax is the model's
/// token when it is new, else the lowest id not generated yet.
std::vector<int32_t> presenceReference(const std::vector<int32_t> &prompt,
                                       size_t max_tokens) {
  uint64_t state = 1, kv = 1;
  std::vector<int32_t> out;
  std::vector<int32_t> tokens = prompt;
  for (size_t i = 0; i < tokens.size() && out.size() < max_tokens; ++i) {
    state = mix(state, tokens[i]);
    kv = mix(kv, tokens[i]);
    if (i + 1 != tokens.size())
      continue;
    auto generated = [&](int32_t t) {
      return std::find(out.begin(), out.end(), t) != out.end();
    };
    int32_t best = int32_t(mix(state, kv) % kVocab);
    if (generated(best))
      for (best = 0; generated(best); ++best) {
      }
    tokens.push_back(best);
    out.push_back(best);
  }
  return out;
}

// Tests that the scheduler feeds penalties the request's output (also
// across MTP verify rows, whose drafts count as output) and returns raw
// log-probabilities of the model's rows: for a one-hot row (1 at the
// model's token), log p = 1 - log(e + V - 1) at that token and
// -log(e + V - 1) elsewhere.
TEST(Scheduler, PresencePenaltyAndLogprobs) {
  for (uint32_t k : {0u, 2u}) {
    SchedulerOptions o = baseOptions();
    o.mtp_draft_tokens = k;
    Harness h(o);
    SamplingParams params;
    params.max_tokens = 30;
    params.presence_penalty = 2.0f;
    params.logprobs = 2;
    std::vector<std::vector<TokenLogprobs>> logprobs;
    auto outputs = h.run(testPrompts(), params, &logprobs);
    auto prompts = testPrompts();
    const double log_z = std::log(std::exp(1.0) + double(kVocab) - 1.0);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(outputs[i], presenceReference(prompts[i], 30))
          << "prompt " << i << " k " << k;
      ASSERT_EQ(logprobs[i].size(), outputs[i].size());
      for (size_t t = 0; t < outputs[i].size(); ++t) {
        const TokenLogprobs &lp = logprobs[i][t];
        EXPECT_EQ(lp.token, outputs[i][t]);
        ASSERT_EQ(lp.top.size(), 2u);
        // The model's token is the row's only 1.
        EXPECT_NEAR(lp.top[0].second, 1.0 - log_z, 1e-6);
        EXPECT_NEAR(lp.top[1].second, -log_z, 1e-6);
        EXPECT_NEAR(lp.logprob, lp.token == lp.top[0].first ? 1.0 - log_z
                                                            : -log_z,
                    1e-6);
      }
    }
    EXPECT_EQ(h.scheduler->kvCache().stats().used_blocks, 0u);
  }
}

/// The prompt log-probabilities the fake model's rows give `prompt` (entry i
/// for token i + 1, its row one-hot at the model's token after tokens 0..i):
/// 1 - log(e + V - 1) where the token is the model's, -log(e + V - 1) else.
std::vector<std::pair<int32_t, double>>
promptLogprobsReference(const std::vector<int32_t> &prompt) {
  const double log_z = std::log(std::exp(1.0) + double(kVocab) - 1.0);
  uint64_t state = 1, kv = 1;
  std::vector<std::pair<int32_t, double>> out; // (the model's token, logprob)
  for (size_t i = 0; i + 1 < prompt.size(); ++i) {
    state = mix(state, prompt[i]);
    kv = mix(kv, prompt[i]);
    int32_t best = int32_t(mix(state, kv) % kVocab);
    out.emplace_back(best, (prompt[i + 1] == best ? 1.0 : 0.0) - log_z);
  }
  return out;
}

// Tests prompt log-probabilities (SamplingParams::prompt_logprobs): one entry
// per prompt token from the second on, from every prefill row of every
// chunk (chunks of 1, 3 and 16), the top-1 the model's token, delivered once
// with the first token; generation unchanged; with prefix caching on, a
// prompt seen before is prefilled again (no hit) and gives the same entries.
// The prompts end in the model's own greedy tokens, so both values occur.
TEST(Scheduler, PromptLogprobsFromEveryPrefillRow) {
  std::vector<std::vector<int32_t>> prompts;
  for (const std::vector<int32_t> &p : testPrompts()) {
    std::vector<int32_t> head(p.begin(), p.begin() + std::min<size_t>(
                                                        p.size(), 5));
    std::vector<int32_t> tail = reference(head, 6);
    head.insert(head.end(), tail.begin(), tail.end());
    prompts.push_back(head);
  }
  for (size_t chunk : {1, 3, 16}) {
    SchedulerOptions o = baseOptions();
    o.max_chunk_tokens = chunk;
    o.enable_prefix_cache = true;
    Harness h(o);
    h.run(prompts, 2); // fills the prefix cache
    SamplingParams params;
    params.max_tokens = 4;
    params.prompt_logprobs = 1;
    std::vector<std::vector<TokenLogprobs>> got(prompts.size());
    std::vector<std::vector<int32_t>> out(prompts.size());
    std::vector<int> deliveries(prompts.size(), 0);
    std::vector<uint64_t> cached(prompts.size(), 0);
    for (size_t i = 0; i < prompts.size(); ++i)
      ASSERT_TRUE(h.scheduler
                      ->add(100 + i, prompts[i], params,
                            [&, i](const RequestOutput &o) {
                              out[i].insert(out[i].end(), o.tokens.begin(),
                                            o.tokens.end());
                              if (!o.prompt_logprobs.empty()) {
                                ++deliveries[i];
                                got[i] = o.prompt_logprobs;
                              }
                              cached[i] = o.cached_tokens;
                            })
                      .ok());
    for (int guard = 0; h.scheduler->hasWork() && guard < 10000; ++guard)
      ASSERT_TRUE(h.scheduler->step().ok());
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " prompt " +
                   std::to_string(i));
      EXPECT_EQ(out[i], reference(prompts[i], 4));
      EXPECT_EQ(deliveries[i], 1);
      EXPECT_EQ(cached[i], 0u);
      auto want = promptLogprobsReference(prompts[i]);
      ASSERT_EQ(got[i].size(), want.size());
      for (size_t e = 0; e < want.size(); ++e) {
        EXPECT_EQ(got[i][e].token, prompts[i][e + 1]);
        EXPECT_NEAR(got[i][e].logprob, want[e].second, 1e-9) << "entry " << e;
        ASSERT_EQ(got[i][e].top.size(), 1u);
        EXPECT_EQ(got[i][e].top[0].first, want[e].first);
      }
    }
    EXPECT_EQ(h.scheduler->kvCache().stats().used_blocks, 0u);
  }
}

TEST(Scheduler, PrefixReuseKeepsOutputs) {
  SchedulerOptions o = baseOptions();
  o.enable_prefix_cache = true;
  Harness h(o);
  expectReference(h.run(testPrompts(), 12), 12);
  uint64_t first_hits = h.scheduler->stats().kv.prefix_hit_tokens;
  expectReference(h.run(testPrompts(), 12), 12);
  SchedulerStats s = h.scheduler->stats();
  EXPECT_GT(s.kv.prefix_hit_tokens, first_hits);
  EXPECT_EQ(s.kv.prefix_hit_tokens % kPage, 0u);
  EXPECT_EQ(s.kv.used_blocks, 0u);
}

// Tests MTP k = 1..3 against plain greedy decoding (with prefix hits in the
// second pass), both with the state saved to a scratch slot before each
// verification (then restored and the accepted tokens re-run) and, over
// plans that keep per-token KDA states, with the verification keeping the
// state after each position in another of the request's k + 1 slots: the
// same outputs, and the second way neither copies state around
// verifications nor re-runs a step. With per-token states the draft's step
// 0 runs with the target step over every verified row (runWithDraft) or,
// with draft_with_target off, as a step of its own: the same outputs.
TEST(Scheduler, MtpKeepsGreedyOutputs) {
  for (uint32_t k : {1u, 2u, 3u}) {
    int copies[2] = {0, 0};
    MtpAcceptanceCounters::Snapshot acceptance[5];
    for (int mode = 0; mode < 5; ++mode) {
      const bool token_states = mode > 0, with_target = mode >= 2;
      SchedulerOptions o = baseOptions();
      o.mtp_draft_tokens = k;
      o.enable_prefix_cache = true;
      o.draft_with_target = with_target;
      Harness h(o, token_states);
      // Mode 3: chain steps reuse step 0's selection (mtp_chain); mode 4:
      // and run after the draft in the verify's step (candidate chains).
      h.model.draft_chain_ = mode >= 3;
      h.model.chain_with_target_ = mode == 4;
      if (mode >= 3) {
        auto created = Scheduler::create(h.model, nullptr, o);
        ASSERT_TRUE(created.ok());
        h.scheduler = std::move(*created);
      }
      expectReference(h.run(testPrompts(), 20), 20);
      expectReference(h.run(testPrompts(), 20), 20); // with prefix hits
      SchedulerStats s = h.scheduler->stats();
      EXPECT_GT(s.mtp.accepted_tokens, 0u) << "k " << k;
      EXPECT_LT(s.mtp.accepted_tokens, s.mtp.draft_tokens) << "k " << k;
      if (token_states)
        EXPECT_EQ(s.verify_rollbacks, 0u) << "k " << k;
      else
        EXPECT_GT(s.verify_rollbacks, 0u) << "k " << k;
      EXPECT_GT(s.mtp.draft_by_position[k - 1], 0u) << "k " << k;
      EXPECT_EQ(s.kv.used_blocks, 0u);
      // Drafts and greedy verifications take the device's greedy tokens: no
      // step copies logits; rollback re-runs take the verify plan.
      EXPECT_TRUE(h.model.logits_steps_.empty());
      EXPECT_GT(h.model.steps_[StepKind::mtp_verify], 0);
      // Verifications carry their draft; steps with a prefill chunk keep a
      // draft step of their own.
      if (with_target) {
        int drafted = h.model.drafted_steps_[StepKind::mtp_verify];
        EXPECT_GT(drafted, h.model.steps_[StepKind::mtp_verify] / 2)
            << "k " << k;
        EXPECT_GT(h.model.steps_[StepKind::mtp_draft],
                  h.model.drafted_steps_[StepKind::decode] + drafted);
      } else {
        EXPECT_TRUE(h.model.drafted_steps_.empty()) << "k " << k;
      }
      // k >= 2: most verifications carry their candidate chains.
      if (mode == 4)
        EXPECT_EQ(h.model.chained_with_target_steps_ > 0, k >= 2) << "k " << k;
      if (mode < 2)
        copies[token_states] = h.model.copy_calls_;
      acceptance[mode] = s.mtp;
    }
    // The same drafts whichever way step 0 runs and gets the target's
    // hidden rows (kept on the device in modes 1-3, through the host in
    // mode 0; the fake's chain steps draft as its draft steps do once they
    // name the right shared row).
    EXPECT_EQ(acceptance[1].accepted_by_position,
              acceptance[0].accepted_by_position);
    EXPECT_EQ(acceptance[3].accepted_by_position,
              acceptance[1].accepted_by_position);
    EXPECT_EQ(acceptance[4].accepted_by_position,
              acceptance[1].accepted_by_position);
    EXPECT_EQ(acceptance[4].draft_by_position, acceptance[1].draft_by_position);
    EXPECT_EQ(acceptance[2].accepted_tokens, acceptance[1].accepted_tokens);
    EXPECT_EQ(acceptance[2].draft_tokens, acceptance[1].draft_tokens);
    EXPECT_EQ(acceptance[2].accepted_by_position,
              acceptance[1].accepted_by_position);
    // Only the prefix cache's snapshot copies are left.
    EXPECT_LT(copies[true], copies[false] / 2) << "k " << k;
  }
}

// Tests that requests which sample (a temperature) or need their logits on
// the host keep the draft's step 0 as a step of its own, while a batch of
// greedy requests runs it with the target: the sampled outputs stay a
// function of the seed, the greedy ones equal the reference.
TEST(Scheduler, SampledRequestsKeepTheirOwnDraftStep) {
  SchedulerOptions o = baseOptions();
  o.mtp_draft_tokens = 2;
  Harness h(o, /*token_states=*/true);
  SamplingParams sampled;
  sampled.max_tokens = 12;
  sampled.temperature = 0.8f;
  sampled.seed = 7;
  std::vector<std::vector<int32_t>> prompts = testPrompts();
  prompts.resize(2);
  std::vector<std::vector<int32_t>> first = h.run(prompts, sampled);
  EXPECT_TRUE(h.model.drafted_steps_.empty());
  EXPECT_GT(h.model.steps_[StepKind::mtp_verify], 0);
  EXPECT_GT(h.model.steps_[StepKind::mtp_draft], 0);
  Harness again(o, /*token_states=*/true);
  EXPECT_EQ(again.run(prompts, sampled), first);
  expectReference(h.run(testPrompts(), 20), 20);
  EXPECT_GT(h.model.drafted_steps_[StepKind::mtp_verify], 0);
}

// Tests that steps of more tokens than draft_with_target_max_tokens run the
// draft's step 0 as a step of their own, smaller ones with the target: the
// same outputs and drafts as every step with the target.
TEST(Scheduler, LargeStepsKeepTheirOwnDraftStep) {
  MtpAcceptanceCounters::Snapshot acceptance[2];
  for (size_t limit : {size_t(0), size_t(3)}) {
    SchedulerOptions o = baseOptions();
    o.mtp_draft_tokens = 2;
    o.draft_with_target_max_tokens = limit;
    Harness h(o, /*token_states=*/true);
    expectReference(h.run(testPrompts(), 20), 20);
    int verify = h.model.steps_[StepKind::mtp_verify];
    int drafted = h.model.drafted_steps_[StepKind::mtp_verify];
    EXPECT_GT(drafted, 0) << "limit " << limit;
    if (limit)
      EXPECT_LT(drafted + 4, verify) << "limit " << limit;
    acceptance[limit ? 1 : 0] = h.scheduler->stats().mtp;
  }
  EXPECT_EQ(acceptance[1].accepted_by_position,
            acceptance[0].accepted_by_position);
}

TEST(Scheduler, PreemptionUnderTinyPoolKeepsOutputs) {
  for (uint32_t k : {0u, 2u}) {
    SchedulerOptions o = baseOptions();
    o.num_blocks = 9; // the longest request needs 8
    o.mtp_draft_tokens = k;
    Harness h(o);
    expectReference(h.run(testPrompts(), 20), 20);
    SchedulerStats s = h.scheduler->stats();
    EXPECT_GT(s.preemptions, 0u);
    EXPECT_EQ(s.kv.used_blocks, 0u);
  }
}

TEST(Scheduler, CancelFreesBlocks) {
  SchedulerOptions o = baseOptions();
  Harness h(o);
  std::vector<RequestOutput> finals;
  for (uint64_t id : {1, 2}) {
    ASSERT_TRUE(h.scheduler
                    ->add(id, testPrompts()[4], {},
                          [&](const RequestOutput &out) {
                            if (out.finished)
                              finals.push_back(out);
                          })
                    .ok());
  }
  ASSERT_TRUE(h.scheduler->step().ok());
  ASSERT_TRUE(h.scheduler->step().ok());
  EXPECT_GT(h.scheduler->kvCache().stats().used_blocks, 0u);
  ASSERT_TRUE(h.scheduler->cancel(1).ok());
  ASSERT_TRUE(h.scheduler->cancel(2).ok());
  EXPECT_EQ(h.scheduler->kvCache().stats().used_blocks, 0u);
  EXPECT_FALSE(h.scheduler->hasWork());
  ASSERT_EQ(finals.size(), 2u);
  EXPECT_EQ(finals[0].status.code(), StatusCode::kCancelled);
  Status again = h.scheduler->cancel(1);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "no queued or running request 1");
}

TEST(Scheduler, StopTokenAndMaxTokens) {
  SchedulerOptions o = baseOptions();
  Harness h(o);
  std::vector<int32_t> prompt = testPrompts()[2];
  std::vector<int32_t> ref = reference(prompt, 10);
  SamplingParams params;
  params.stop_token_ids = {ref[3]};
  std::vector<int32_t> got;
  FinishReason reason = FinishReason::kNone;
  ASSERT_TRUE(h.scheduler
                  ->add(1, prompt, params,
                        [&](const RequestOutput &out) {
                          got.insert(got.end(), out.tokens.begin(),
                                     out.tokens.end());
                          if (out.finished)
                            reason = out.finish_reason;
                        })
                  .ok());
  while (h.scheduler->hasWork())
    ASSERT_TRUE(h.scheduler->step().ok());
  // The first occurrence of the stop token ends it (itself included).
  size_t end = std::find(ref.begin(), ref.end(), ref[3]) - ref.begin() + 1;
  EXPECT_EQ(got, std::vector<int32_t>(ref.begin(), ref.begin() + end));
  EXPECT_EQ(reason, FinishReason::kStop);
}

// Tests min_tokens: the stop token is masked (its logit -inf, so greedy
// takes the next best id, 0 in the fake model's one-hot rows) while fewer
// than min_tokens tokens exist, and stops the request after; the same with
// MTP (the verify rows are masked per position).
TEST(Scheduler, MinTokensMasksStopTokens) {
  std::vector<int32_t> prompt = testPrompts()[2];
  std::vector<int32_t> ref = reference(prompt, 12);
  const int32_t stop = ref[3];
  ASSERT_NE(stop, 0);
  const size_t min_tokens = 6;
  // The reference with the mask: a model token equal to `stop` before
  // min_tokens becomes 0; `stop` after it ends the request.
  std::vector<int32_t> expected;
  {
    uint64_t state = 1, kv = 1;
    std::vector<int32_t> tokens = prompt;
    for (size_t i = 0; i < tokens.size() && expected.size() < 12; ++i) {
      state = mix(state, tokens[i]);
      kv = mix(kv, tokens[i]);
      if (i + 1 < tokens.size())
        continue;
      int32_t next = int32_t(mix(state, kv) % kVocab);
      if (next == stop && expected.size() < min_tokens)
        next = 0;
      tokens.push_back(next);
      expected.push_back(next);
      if (next == stop)
        break;
    }
  }
  ASSERT_NE(expected[3], stop); // the mask changed the output
  for (uint32_t k : {0u, 2u}) {
    SchedulerOptions o = baseOptions();
    o.mtp_draft_tokens = k;
    Harness h(o);
    SamplingParams params;
    params.max_tokens = 12;
    params.min_tokens = min_tokens;
    params.stop_token_ids = {stop};
    std::vector<int32_t> got;
    ASSERT_TRUE(h.scheduler
                    ->add(1, prompt, params,
                          [&](const RequestOutput &out) {
                            got.insert(got.end(), out.tokens.begin(),
                                       out.tokens.end());
                          })
                    .ok());
    while (h.scheduler->hasWork())
      ASSERT_TRUE(h.scheduler->step().ok());
    EXPECT_EQ(got, expected) << "k " << k;
  }
}

TEST(Scheduler, RejectsBadRequests) {
  SchedulerOptions o = baseOptions();
  o.max_queued = 2;
  o.num_blocks = 4;
  Harness h(o);
  SamplingParams params;
  Status s = h.scheduler->add(1, {}, params, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "empty prompt");
  s = h.scheduler->add(1, {1, 64}, params, nullptr);
  EXPECT_EQ(s.message(), "prompt token 1 is 64, outside the vocabulary [0, 64)");
  s = h.scheduler->add(1, std::vector<int32_t>(40, 1), params, nullptr);
  EXPECT_EQ(s.message(), "prompt of 40 tokens needs 6 kv blocks, the pool has 4");
  s = h.scheduler->add(1, std::vector<int32_t>(400, 1), params, nullptr);
  EXPECT_EQ(s.message(),
            "prompt of 400 tokens leaves no room in the context of 400 "
            "positions");
  SamplingParams stop;
  stop.stop = {"x"};
  s = h.scheduler->add(1, {1}, stop, nullptr);
  EXPECT_EQ(s.message(), "stop strings need a tokenizer; the engine has none");
  SamplingParams bad;
  bad.top_p = 1.5f;
  s = h.scheduler->add(1, {1}, bad, nullptr);
  EXPECT_EQ(s.message(), "top_p must be in (0, 1], got 1.5");
  ASSERT_TRUE(h.scheduler->add(1, {1}, params, nullptr).ok());
  ASSERT_TRUE(h.scheduler->add(2, {1}, params, nullptr).ok());
  s = h.scheduler->add(3, {1}, params, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "request queue full: 2 of 2 waiting");
}

TEST(Scheduler, RejectsBadOptions) {
  FakeModel model(4, 8);
  SchedulerOptions o = baseOptions();
  o.mtp_draft_tokens = 4;
  auto s = Scheduler::create(model, nullptr, o);
  EXPECT_EQ(s.status().message(), "mtp draft tokens must be 0 to 3, got 4");
  o = baseOptions();
  o.max_requests = 0;
  s = Scheduler::create(model, nullptr, o);
  EXPECT_EQ(s.status().message(),
            "scheduler: max_requests (0) and num_blocks (64) must be positive");
}

TEST(Engine, ThreadedSubmitMatchesReference) {
  SchedulerOptions o = baseOptions();
  o.mtp_draft_tokens = 2;
  o.enable_prefix_cache = true;
  auto model = std::make_unique<FakeModel>(
      o.num_blocks, schedulerStateSlots(o, FakeModel(1, 1).geometry()));
  auto engine = Engine::create(std::move(model), nullptr, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto prompts = testPrompts();
  std::mutex mutex;
  std::vector<std::vector<int32_t>> out(prompts.size());
  std::vector<int> finished(prompts.size(), 0);
  SamplingParams params;
  params.max_tokens = 15;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto id = (*engine)->submit(prompts[i], params,
                                [&, i](const RequestOutput &o) {
                                  std::lock_guard<std::mutex> lock(mutex);
                                  out[i].insert(out[i].end(), o.tokens.begin(),
                                                o.tokens.end());
                                  finished[i] += o.finished;
                                });
    ASSERT_TRUE(id.ok()) << id.status().message();
  }
  (*engine)->waitIdle();
  expectReference(out, 15);
  EXPECT_EQ(finished, std::vector<int>(prompts.size(), 1));
  SchedulerStats s = (*engine)->stats();
  EXPECT_EQ(s.kv.used_blocks, 0u);
  EXPECT_EQ(s.running, 0u);
  std::string metrics = (*engine)->metricsText();
  EXPECT_THAT(metrics, ::testing::HasSubstr("strata_mtp_draft_tokens_total"));
  EXPECT_THAT(metrics, ::testing::HasSubstr("strata_kv_cache_used_blocks 0"));
  EXPECT_EQ((*engine)->cancel(999).code(), StatusCode::kNotFound);
}

TEST(Engine, SubmitAllArrivesBeforeTheFirstStep) {
  // The prompts of one submitAll reach the scheduler together: the steps
  // taken equal those of a scheduler given every prompt before stepping,
  // however the engine thread is scheduled.
  SchedulerOptions o = baseOptions();
  o.mtp_draft_tokens = 2;
  Harness reference(o);
  expectReference(reference.run(testPrompts(), 9), 9);
  uint64_t reference_steps = reference.scheduler->stats().steps;
  SamplingParams params;
  params.max_tokens = 9;
  for (int round = 0; round < 20; ++round) {
    auto engine = Engine::create(
        std::make_unique<FakeModel>(
            o.num_blocks, schedulerStateSlots(o, FakeModel(1, 1).geometry())),
        nullptr, o);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    std::vector<Engine::Request> requests;
    for (const std::vector<int32_t> &prompt : testPrompts())
      requests.push_back({prompt, params, nullptr});
    auto ids = (*engine)->submitAll(std::move(requests));
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    EXPECT_EQ(ids->size(), testPrompts().size());
    (*engine)->waitIdle();
    ASSERT_EQ((*engine)->stats().steps, reference_steps) << "round " << round;
  }
}

TEST(Engine, SubmitAllQueuesAllOrNone) {
  SchedulerOptions o = baseOptions();
  auto engine = Engine::create(
      std::make_unique<FakeModel>(
          o.num_blocks, schedulerStateSlots(o, FakeModel(1, 1).geometry())),
      nullptr, o);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  int callbacks = 0;
  auto count = [&](const RequestOutput &) { ++callbacks; };
  SamplingParams params;
  params.max_tokens = 4;
  SamplingParams bad = params;
  bad.top_p = 1.5;
  auto ids = (*engine)->submitAll(
      {{{1, 2}, params, count}, {{3}, bad, count}, {{4}, params, count}});
  EXPECT_EQ(ids.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ids.status().message(),
            "prompt 1: top_p must be in (0, 1], got 1.5");
  std::vector<Engine::Request> too_many(257, // max_queued 0 is 256
                                        Engine::Request{{1}, params, count});
  ids = (*engine)->submitAll(std::move(too_many));
  EXPECT_EQ(ids.status().code(), StatusCode::kUnavailable);
  (*engine)->waitIdle();
  EXPECT_EQ(callbacks, 0);
  EXPECT_EQ((*engine)->stats().steps, 0u);
}

} // namespace
} // namespace strata::runtime
