//===- speculative.cpp - verification of MTP draft tokens ------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/speculative.h"

#include <algorithm>

#include <fmt/format.h>

namespace strata::runtime {

//===----------------------------------------------------------------------===//
// MtpAcceptanceCounters
//===----------------------------------------------------------------------===//

void MtpAcceptanceCounters::record(size_t drafted, size_t accepted) {
  drafted = std::min(drafted, kMaxDraftTokens);
  accepted = std::min(accepted, drafted);
  draft_tokens_.fetch_add(drafted, std::memory_order_relaxed);
  accepted_tokens_.fetch_add(accepted, std::memory_order_relaxed);
  for (size_t i = 0; i < drafted; ++i)
    draft_by_position_[i].fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < accepted; ++i)
    accepted_by_position_[i].fetch_add(1, std::memory_order_relaxed);
}

MtpAcceptanceCounters::Snapshot MtpAcceptanceCounters::snapshot() const {
  Snapshot s;
  s.draft_tokens = draft_tokens_.load(std::memory_order_relaxed);
  s.accepted_tokens = accepted_tokens_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kMaxDraftTokens; ++i) {
    s.draft_by_position[i] = draft_by_position_[i].load(std::memory_order_relaxed);
    s.accepted_by_position[i] =
        accepted_by_position_[i].load(std::memory_order_relaxed);
  }
  return s;
}

void MtpAcceptanceCounters::appendPrometheus(std::string &out) const {
  Snapshot s = snapshot();
  auto counter = [&](const char *name, const char *help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
  };
  counter("strata_mtp_draft_tokens_total", "Draft tokens proposed by MTP.");
  out += fmt::format("strata_mtp_draft_tokens_total {}\n", s.draft_tokens);
  counter("strata_mtp_accepted_tokens_total",
          "Draft tokens accepted by verification.");
  out += fmt::format("strata_mtp_accepted_tokens_total {}\n", s.accepted_tokens);
  counter("strata_mtp_draft_tokens_by_position_total",
          "Draft tokens proposed, by 1-based position in the draft chain.");
  for (size_t i = 0; i < kMaxDraftTokens; ++i)
    out += fmt::format(
        "strata_mtp_draft_tokens_by_position_total{{position=\"{}\"}} {}\n",
        i + 1, s.draft_by_position[i]);
  counter("strata_mtp_accepted_tokens_by_position_total",
          "Draft tokens accepted, by 1-based position in the draft chain.");
  for (size_t i = 0; i < kMaxDraftTokens; ++i)
    out += fmt::format(
        "strata_mtp_accepted_tokens_by_position_total{{position=\"{}\"}} {}\n",
        i + 1, s.accepted_by_position[i]);
}

//===----------------------------------------------------------------------===//
// verifyDrafts
//===----------------------------------------------------------------------===//

namespace {

/// max(0, p - q) over the union of both supports, in ascending id order
/// (unnormalised; sampleToken normalises by the sum).
TokenDistribution residual(const TokenDistribution &p,
                           const TokenDistribution &q) {
  TokenDistribution r;
  size_t j = 0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    while (j < q.ids.size() && q.ids[j] < p.ids[i])
      ++j;
    double qv = (j < q.ids.size() && q.ids[j] == p.ids[i]) ? q.probs[j] : 0.0;
    double d = p.probs[i] - qv;
    if (d > 0.0) {
      r.ids.push_back(p.ids[i]);
      r.probs.push_back(d);
    }
  }
  return r;
}

/// p without `token` (the residual for a one-hot q).
TokenDistribution without(const TokenDistribution &p, int32_t token) {
  TokenDistribution r;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.ids[i] != token && p.probs[i] > 0.0) {
      r.ids.push_back(p.ids[i]);
      r.probs.push_back(p.probs[i]);
    }
  }
  return r;
}

/// The greedy rule: the drafts are accepted while each equals the target's
/// token at its position (`target_token(i)`, asked for in order and only as
/// far as needed), then the target's token at the first mismatch or the
/// bonus token is committed; the outcome is recorded in `counters`.
template <typename TargetToken>
StatusOr<DraftVerificationResult>
acceptGreedy(const std::vector<int32_t> &drafts, TargetToken target_token,
             MtpAcceptanceCounters *counters) {
  const size_t k = drafts.size();
  DraftVerificationResult result;
  for (size_t i = 0; i <= k; ++i) {
    STRATA_ASSIGN_OR_RETURN(int32_t best, target_token(i));
    result.tokens.push_back(best);
    if (i == k || best != drafts[i])
      break;
    ++result.accepted;
  }
  if (counters)
    counters->record(k, result.accepted);
  return result;
}

} // namespace

StatusOr<DraftVerificationResult>
verifyDrafts(const DraftVerification &input, Sampler &sampler,
             MtpAcceptanceCounters *counters) {
  const size_t k = input.draft_tokens.size();
  const size_t vocab = input.vocab_size;
  if (k == 0 || k > kMaxDraftTokens)
    return invalidArgument("expected 1 to {} draft tokens, got {}",
                           kMaxDraftTokens, k);
  if (input.target_logits == nullptr || vocab == 0)
    return invalidArgument("draft verification without target logits");
  for (size_t i = 0; i < k; ++i) {
    int32_t d = input.draft_tokens[i];
    if (d < 0 || static_cast<size_t>(d) >= vocab)
      return invalidArgument(
          "draft token {} at position {} is outside the vocabulary of {} ids",
          d, i + 1, vocab);
  }
  auto targetRow = [&](size_t i) { return input.target_logits + i * vocab; };

  if (sampler.greedy())
    return acceptGreedy(
        input.draft_tokens,
        [&](size_t i) { return greedyToken(targetRow(i), vocab); }, counters);
  DraftVerificationResult result;
  // Rejection sampling (speculative decoding's rule, see the file comment).
  for (size_t i = 0; i <= k; ++i) {
    STRATA_ASSIGN_OR_RETURN(TokenDistribution p,
                            sampler.distribution(targetRow(i), vocab));
    if (i == k) { // all drafts accepted: the bonus token
      result.tokens.push_back(sampleToken(p, sampler.rng()));
      break;
    }
    int32_t draft = input.draft_tokens[i];
    double p_x = p.prob(draft);
    if (input.draft_logits == nullptr) {
      // One-hot q: accept with probability p(x). When x is all of p's mass
      // (r empty) rejection is impossible (u < 1 = p(x)).
      TokenDistribution r;
      if (sampler.rng().uniform() >= p_x)
        r = without(p, draft);
      if (r.ids.empty()) {
        result.tokens.push_back(draft);
        ++result.accepted;
        continue;
      }
      result.tokens.push_back(sampleToken(r, sampler.rng()));
      break;
    }
    STRATA_ASSIGN_OR_RETURN(
        TokenDistribution q,
        sampler.distribution(input.draft_logits + i * vocab, vocab));
    double q_x = q.prob(draft);
    if (q_x <= 0.0)
      return invalidArgument("draft token {} at position {} has probability 0 "
                             "under its draft distribution",
                             draft, i + 1);
    // u < min(1, p/q)  <=>  u * q < p  for u in [0, 1).
    if (sampler.rng().uniform() * q_x < p_x) {
      result.tokens.push_back(draft);
      ++result.accepted;
      continue;
    }
    TokenDistribution r = residual(p, q);
    // An empty residual means p <= q everywhere, i.e. p == q up to
    // rounding, where rejection has probability ~0; fall back to p.
    result.tokens.push_back(
        sampleToken(r.ids.empty() ? p : r, sampler.rng()));
    break;
  }
  if (counters)
    counters->record(k, result.accepted);
  return result;
}

StatusOr<DraftVerificationResult>
verifyGreedyDrafts(const std::vector<int32_t> &target_tokens,
                   const std::vector<int32_t> &draft_tokens,
                   MtpAcceptanceCounters *counters) {
  const size_t k = draft_tokens.size();
  if (k == 0 || k > kMaxDraftTokens)
    return invalidArgument("expected 1 to {} draft tokens, got {}",
                           kMaxDraftTokens, k);
  if (target_tokens.size() != k + 1)
    return invalidArgument("{} drafts need {} target tokens, got {}", k, k + 1,
                           target_tokens.size());
  return acceptGreedy(
      draft_tokens,
      [&](size_t i) -> StatusOr<int32_t> {
        if (target_tokens[i] < 0)
          return invalidArgument("target row {} has no finite maximum (a NaN, "
                                 "a +inf or every entry -inf)",
                                 i);
        return target_tokens[i];
      },
      counters);
}

} // namespace strata::runtime
