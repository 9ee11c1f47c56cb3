//===- speculative.h - verification of MTP draft tokens --------------------===//
//
// Part of strata. Verifies k = 1..3 draft tokens (from the MTP draft layer,
// docs spec glm5_next-indexer-mtp-cache.md §4.4-4.5) against the target's
// logits at the k + 1 verified positions, and counts acceptance.
//
// Greedy requests (temperature 0): draft i is accepted while it equals the
// argmax of target row i; at the first mismatch the target's argmax is emitted
// as the correction and verification stops; when all k are accepted the argmax
// of row k is the bonus token. The committed tokens are then exactly those of
// plain greedy decoding.
//
// Sampling requests (temperature > 0): speculative rejection sampling (Leviathan
// et al. 2023, Chen et al. 2023). With p_i the processed target distribution of
// row i and q_i the processed draft distribution the draft was drawn from,
// draft x is accepted with probability min(1, p_i(x) / q_i(x)); on rejection the
// replacement is drawn from max(0, p_i - q_i) renormalised, and when all k are
// accepted the bonus token is drawn from p_k. Each committed token is then
// distributed exactly as if sampled from the target. Drafts chosen by argmax
// (the MTP drafter, both serving engines) have a one-hot q: x is accepted with
// probability p_i(x) and the replacement comes from p_i without x. p and q are
// both processed with the request's parameters (sampler.h).
//
// Random draws come from the request's Sampler stream (one uniform per
// acceptance test, one per replacement or bonus draw), so a seeded request is
// reproducible; its tokens differ from non-speculative sampling with the same
// seed (same distribution, different draws).
//
// Ownership: verifyDrafts reads the logits rows it is given and keeps no
// pointer. Thread-safety: verifyDrafts is reentrant (the Sampler is per
// request); MtpAcceptanceCounters may be updated and read from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_SPECULATIVE_H
#define STRATA_RUNTIME_SAMPLING_SPECULATIVE_H

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/schemas/mtp_draft_limit.h"
#include "runtime/sampling/sampler.h"

namespace strata::runtime {

/// The most draft tokens one verification takes (the MTP layer chains 3;
/// the compiler's verify plans are sized by the same constant).
inline constexpr size_t kMaxDraftTokens = kMaxMtpDraftTokens;

/// Acceptance counters of speculative decoding, exposed on /metrics as
///   strata_mtp_draft_tokens_total, strata_mtp_accepted_tokens_total,
///   strata_mtp_draft_tokens_by_position_total{position="k"},
///   strata_mtp_accepted_tokens_by_position_total{position="k"}
/// (position 1..kMaxDraftTokens is the draft's index in its chain, 1-based;
/// the names strata-eval reads, docs/Eval.md).
class MtpAcceptanceCounters {
public:
  struct Snapshot {
    uint64_t draft_tokens = 0;
    uint64_t accepted_tokens = 0;
    std::array<uint64_t, kMaxDraftTokens> draft_by_position{};
    std::array<uint64_t, kMaxDraftTokens> accepted_by_position{};
  };

  /// Counts one verification of `drafted` drafts of which the first
  /// `accepted` were accepted (accepted <= drafted <= kMaxDraftTokens; larger
  /// values are clamped).
  void record(size_t drafted, size_t accepted);
  /// The current values (each counter read atomically).
  Snapshot snapshot() const;
  /// Appends the four counters in Prometheus text exposition format (HELP and
  /// TYPE lines, one sample per position).
  void appendPrometheus(std::string &out) const;

private:
  std::atomic<uint64_t> draft_tokens_{0};
  std::atomic<uint64_t> accepted_tokens_{0};
  std::array<std::atomic<uint64_t>, kMaxDraftTokens> draft_by_position_{};
  std::array<std::atomic<uint64_t>, kMaxDraftTokens> accepted_by_position_{};
};

/// One request's verification input.
struct DraftVerification {
  /// k + 1 rows of target logits, row-major [k + 1, vocab_size]: row i (i < k)
  /// is the target's prediction at draft i's position, row k the bonus
  /// position. Required.
  const float *target_logits = nullptr;
  /// Entries per logits row. Required (> 0).
  size_t vocab_size = 0;
  /// The k draft tokens, 1 <= k <= kMaxDraftTokens, each in [0, vocab_size).
  std::vector<int32_t> draft_tokens;
  /// Optional (default nullptr: greedy drafts, q one-hot at each draft): k
  /// rows [k, vocab_size] of draft logits the drafts were *sampled* from; q_i
  /// is their processed distribution. Ignored for greedy requests.
  const float *draft_logits = nullptr;
};

/// The outcome of one verification.
struct DraftVerificationResult {
  /// Drafts accepted, 0..k.
  size_t accepted = 0;
  /// The committed tokens: the accepted drafts, then the correction (first
  /// rejection) or the bonus token (all accepted); accepted + 1 entries. A
  /// caller applying stop conditions (stop_matcher.h) feeds them one by one
  /// and drops what follows a stop.
  std::vector<int32_t> tokens;
};

/// Verifies `input.draft_tokens` for the request of `sampler` (see the file
/// comment) and, when `counters` is given, records the outcome there.
/// INVALID_ARGUMENT for a bad k, a draft id out of range, bad logits rows, or
/// a sampled draft that has probability 0 under its own q.
StatusOr<DraftVerificationResult>
verifyDrafts(const DraftVerification &input, Sampler &sampler,
             MtpAcceptanceCounters *counters = nullptr);

/// Greedy verification from the target's greedy tokens alone (the device's
/// argmax of each of the k + 1 rows, StepResult::greedy): the drafts are
/// accepted while each equals the target's token at its position, then the
/// target's token at the first mismatch (or the bonus token) is committed.
/// The outcome of verifyDrafts with a greedy sampler over those rows, without
/// copying their logits. INVALID_ARGUMENT for a bad k, target_tokens not k + 1
/// long, or a negative target token (a row without a finite maximum).
StatusOr<DraftVerificationResult>
verifyGreedyDrafts(const std::vector<int32_t> &target_tokens,
                   const std::vector<int32_t> &draft_tokens,
                   MtpAcceptanceCounters *counters = nullptr);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_SPECULATIVE_H
