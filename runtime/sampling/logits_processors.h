//===- logits_processors.h - per-request logits processing -----------------===//
//
// Part of strata. What happens to one row of raw logits before the sampler
// (sampler.h) turns it into a token, following vLLM's V1 sampler in order:
//   1. min_tokens: while fewer than min_tokens tokens have been generated,
//      the stop token ids get -inf;
//   2. logit_bias: bias[id] is added to logit[id];
//   3. repetition_penalty r (tokens of the prompt or of the output so far):
//      a logit l > 0 becomes l / r, any other l * r;
//   4. frequency_penalty f and presence_penalty p (tokens of the output so
//      far, OpenAI's definition): l -= f * count(id) + p * [count(id) > 0].
// Greedy requests take the argmax of the processed row; sampling requests
// then get temperature, min_p, top-k and top-p (processLogits).
//
// Log-probabilities (computeLogprobs) are vLLM's default "raw" ones: the
// log-softmax of the model's logits before any of the above.
//
// Cost: penalties touch only the distinct tokens of the request (a sorted
// prompt set and an output count map kept up to date as tokens commit), so a
// row costs O(distinct tokens), not O(context) or O(vocab); logit_bias is
// O(entries); min_tokens O(stop ids). computeLogprobs is two passes over the
// vocabulary plus a partial sort of top_n entries.
//
// Ownership: PenaltyTracker is a per-request value. Thread-safety: one
// thread at a time per tracker; the free functions are reentrant.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_LOGITS_PROCESSORS_H
#define STRATA_RUNTIME_SAMPLING_LOGITS_PROCESSORS_H

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/sampling/sampling_params.h"

namespace strata::runtime {

/// Whether `params` has a penalty other than the neutral value.
bool hasPenalties(const SamplingParams &params);

/// The prompt and output tokens of one request, as penalties see them.
class PenaltyTracker {
public:
  PenaltyTracker() = default;
  /// Starts with the prompt's tokens and no output.
  explicit PenaltyTracker(const std::vector<int32_t> &prompt);
  /// One more generated token.
  void addOutput(int32_t token);
  /// Applies steps 3-4 of the file comment to `row` (vocab entries), with
  /// `extra` (n_extra tokens, MTP drafts not yet committed) counted as output
  /// after the committed ones.
  void apply(const SamplingParams &params, const int32_t *extra,
             size_t n_extra, float *row, size_t vocab) const;

private:
  std::vector<int32_t> prompt_ids_; // sorted, unique
  std::unordered_map<int32_t, int32_t> output_counts_;
};

/// Applies steps 1-4 of the file comment to `row` in place. `generated` is
/// the number of tokens generated before the one this row samples;
/// `penalties` may be null when hasPenalties(params) is false.
void processLogitsRow(const SamplingParams &params, uint64_t generated,
                      const PenaltyTracker *penalties, const int32_t *extra,
                      size_t n_extra, float *row, size_t vocab);

/// Whether processLogitsRow changes anything for a row sampling token
/// number `generated` (0-based) or later.
bool needsLogitsProcessing(const SamplingParams &params, uint64_t generated);

/// The log-probability of one generated token and the most likely
/// alternatives at its position.
struct TokenLogprobs {
  int32_t token = 0;
  double logprob = 0;
  /// The token's rank at its position: 1 + the number of tokens with a
  /// higher logit (vLLM's Logprob.rank); 0 for an id outside the vocabulary.
  int64_t rank = 0;
  /// The top_n most likely tokens, most likely first (lower id first on
  /// ties), with their log-probabilities.
  std::vector<std::pair<int32_t, double>> top;
};

/// Raw log-probabilities of `row` (log-softmax in double) for `token` (with
/// its rank) and the `top_n` best tokens. -inf entries have logprob -inf.
TokenLogprobs computeLogprobs(const float *row, size_t vocab, int32_t token,
                              size_t top_n);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_LOGITS_PROCESSORS_H
