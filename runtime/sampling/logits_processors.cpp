//===- logits_processors.cpp - per-request logits processing ----------------===//
//
// Part of strata. See logits_processors.h; the rules are vLLM's
// (vllm/v1/sample/sampler.py: apply_logits_processors, apply_penalties).
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/logits_processors.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::runtime {

bool hasPenalties(const SamplingParams &params) {
  return params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f ||
         params.frequency_penalty != 0.0f;
}

bool needsLogitsProcessing(const SamplingParams &params, uint64_t generated) {
  bool min_tokens = !params.stop_token_ids.empty() &&
                    generated < static_cast<uint64_t>(params.min_tokens);
  return min_tokens || !params.logit_bias.empty() || hasPenalties(params);
}

PenaltyTracker::PenaltyTracker(const std::vector<int32_t> &prompt)
    : prompt_ids_(prompt) {
  std::sort(prompt_ids_.begin(), prompt_ids_.end());
  prompt_ids_.erase(std::unique(prompt_ids_.begin(), prompt_ids_.end()),
                    prompt_ids_.end());
}

void PenaltyTracker::addOutput(int32_t token) { ++output_counts_[token]; }

void PenaltyTracker::apply(const SamplingParams &params, const int32_t *extra,
                           size_t n_extra, float *row, size_t vocab) const {
  const float r = params.repetition_penalty;
  auto penalize = [&](int32_t id, int32_t count) {
    if (id < 0 || static_cast<size_t>(id) >= vocab)
      return;
    float &l = row[id];
    if (r != 1.0f)
      l = l > 0.0f ? l / r : l * r;
    if (count > 0)
      l -= params.frequency_penalty * static_cast<float>(count) +
           params.presence_penalty;
  };
  auto extraCount = [&](int32_t id) {
    return static_cast<int32_t>(std::count(extra, extra + n_extra, id));
  };
  // Output tokens (committed, plus drafts), each once with its count.
  for (const auto &[id, count] : output_counts_)
    penalize(id, count + extraCount(id));
  for (size_t i = 0; i < n_extra; ++i) {
    int32_t id = extra[i];
    if (output_counts_.count(id) || std::find(extra, extra + i, id) != extra + i)
      continue;
    penalize(id, extraCount(id));
  }
  // Prompt tokens that are not output tokens: repetition only.
  if (r == 1.0f)
    return;
  for (int32_t id : prompt_ids_) {
    if (output_counts_.count(id) || extraCount(id) > 0)
      continue;
    penalize(id, 0);
  }
}

void processLogitsRow(const SamplingParams &params, uint64_t generated,
                      const PenaltyTracker *penalties, const int32_t *extra,
                      size_t n_extra, float *row, size_t vocab) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (generated < static_cast<uint64_t>(params.min_tokens))
    for (int32_t id : params.stop_token_ids)
      if (id >= 0 && static_cast<size_t>(id) < vocab)
        row[id] = kNegInf;
  for (const auto &[id, bias] : params.logit_bias)
    if (id >= 0 && static_cast<size_t>(id) < vocab)
      row[id] += bias;
  if (penalties && hasPenalties(params))
    penalties->apply(params, extra, n_extra, row, vocab);
}

TokenLogprobs computeLogprobs(const float *row, size_t vocab, int32_t token,
                              size_t top_n) {
  double max = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < vocab; ++i)
    max = std::max(max, static_cast<double>(row[i]));
  double sum = 0.0;
  for (size_t i = 0; i < vocab; ++i)
    sum += std::exp(static_cast<double>(row[i]) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](size_t i) { return static_cast<double>(row[i]) - log_z; };

  TokenLogprobs out;
  out.token = token;
  const bool known = token >= 0 && static_cast<size_t>(token) < vocab;
  out.logprob = known ? logprob(static_cast<size_t>(token))
                      : -std::numeric_limits<double>::infinity();
  if (known) {
    const float own = row[token];
    out.rank = 1 + std::count_if(row, row + vocab,
                                 [own](float x) { return x > own; });
  }
  top_n = std::min(top_n, vocab);
  if (top_n == 0)
    return out;
  std::vector<int32_t> ids(vocab);
  for (size_t i = 0; i < vocab; ++i)
    ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + top_n, ids.end(),
                    [&](int32_t a, int32_t b) {
                      return row[a] != row[b] ? row[a] > row[b] : a < b;
                    });
  out.top.reserve(top_n);
  for (size_t j = 0; j < top_n; ++j)
    out.top.emplace_back(ids[j], logprob(static_cast<size_t>(ids[j])));
  return out;
}

} // namespace strata::runtime
