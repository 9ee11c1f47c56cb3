//===- sampler.cpp - next-token selection from one row of logits -----------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace strata::runtime {

double TokenDistribution::prob(int32_t id) const {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  if (it == ids.end() || *it != id)
    return 0.0;
  return probs[static_cast<size_t>(it - ids.begin())];
}

Status checkLogits(const float *logits, size_t vocab_size) {
  if (vocab_size == 0 || logits == nullptr)
    return invalidArgument("empty logits row");
  if (vocab_size > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalidArgument("logits row of {} entries exceeds the int32 id range",
                           vocab_size);
  bool any_finite = false;
  for (size_t i = 0; i < vocab_size; ++i) {
    float v = logits[i];
    if (std::isnan(v))
      return invalidArgument("logit of token {} is NaN", i);
    if (v == std::numeric_limits<float>::infinity())
      return invalidArgument("logit of token {} is +inf", i);
    any_finite |= std::isfinite(v);
  }
  if (!any_finite)
    return invalidArgument("all {} logits are -inf", vocab_size);
  return okStatus();
}

StatusOr<int32_t> greedyToken(const float *logits, size_t vocab_size) {
  STRATA_RETURN_IF_ERROR(checkLogits(logits, vocab_size));
  size_t best = 0;
  for (size_t i = 1; i < vocab_size; ++i)
    if (logits[i] > logits[best]) // strict: the first maximum wins ties
      best = i;
  return static_cast<int32_t>(best);
}

StatusOr<TokenDistribution> processLogits(const float *logits,
                                          size_t vocab_size,
                                          const SamplingParams &params) {
  if (!(params.temperature > 0.0f))
    return failedPrecondition(
        "no sampling distribution for temperature {} (greedy)",
        params.temperature);
  STRATA_RETURN_IF_ERROR(checkLogits(logits, vocab_size));

  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < vocab_size; ++i)
    max_logit = std::max(max_logit, logits[i]);

  // Candidates in ascending id order with their unnormalized softmax weights
  // exp((l - max) / T); -inf logits and underflowed weights are dropped. The
  // candidates are exactly the tokens with the largest logits.
  const double temperature = params.temperature;
  const double min_p = params.min_p;
  std::vector<int32_t> ids;
  std::vector<double> weights;
  ids.reserve(vocab_size);
  weights.reserve(vocab_size);
  for (size_t i = 0; i < vocab_size; ++i) {
    if (logits[i] == -std::numeric_limits<float>::infinity())
      continue;
    double w = std::exp((static_cast<double>(logits[i]) - max_logit) /
                        temperature);
    // min_p: w is p / p_max, so p < min_p * p_max is w < min_p.
    if (w > 0.0 && w >= min_p) {
      ids.push_back(static_cast<int32_t>(i));
      weights.push_back(w);
    }
  }

  // Top-k: keep every candidate whose logit is >= the k-th largest logit, so
  // ties at the boundary are all kept (as Hugging Face's TopKLogitsWarper and
  // vLLM's apply_top_k_top_p do).
  size_t top_k = static_cast<size_t>(params.top_k);
  if (top_k > 0 && top_k < ids.size()) {
    std::vector<float> values(ids.size());
    for (size_t j = 0; j < ids.size(); ++j)
      values[j] = logits[ids[j]];
    std::nth_element(values.begin(), values.begin() + (top_k - 1),
                     values.end(), std::greater<float>());
    float threshold = values[top_k - 1];
    size_t kept = 0;
    for (size_t j = 0; j < ids.size(); ++j) {
      if (logits[ids[j]] >= threshold) {
        ids[kept] = ids[j];
        weights[kept] = weights[j];
        ++kept;
      }
    }
    ids.resize(kept);
    weights.resize(kept);
  }

  // Top-p: in order of decreasing logit (lowest id first on ties), keep a
  // token while the mass before it is < top_p. This is Hugging Face's
  // `cumsum(ascending probs) <= 1 - top_p` removal rule written from the top;
  // the first token always stays.
  // The order is found by partial sorts of growing prefixes (256, 1024, ...):
  // the nucleus of a peaked LLM distribution is small, so a full sort of the
  // vocabulary is rarely needed. The order is a strict total order, so a
  // longer sorted prefix extends the shorter one.
  if (params.top_p < 1.0f) {
    std::vector<size_t> order(ids.size());
    std::iota(order.begin(), order.end(), size_t{0});
    auto before_in_order = [&](size_t a, size_t b) {
      float la = logits[ids[a]], lb = logits[ids[b]];
      return la != lb ? la > lb : ids[a] < ids[b];
    };
    double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    double limit = static_cast<double>(params.top_p) * total;
    std::vector<char> keep(ids.size(), 0);
    double before = 0.0;
    size_t scanned = 0, sorted = 0;
    bool done = false;
    while (!done && scanned < order.size()) {
      sorted = std::min(order.size(), std::max<size_t>(256, sorted * 4));
      std::partial_sort(order.begin() + scanned, order.begin() + sorted,
                        order.end(), before_in_order);
      for (; scanned < sorted; ++scanned) {
        if (before >= limit) {
          done = true;
          break;
        }
        keep[order[scanned]] = 1;
        before += weights[order[scanned]];
      }
    }
    size_t kept = 0;
    for (size_t j = 0; j < ids.size(); ++j) {
      if (keep[j]) {
        ids[kept] = ids[j];
        weights[kept] = weights[j];
        ++kept;
      }
    }
    ids.resize(kept);
    weights.resize(kept);
  }

  double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  TokenDistribution dist;
  dist.ids = std::move(ids);
  dist.probs = std::move(weights);
  for (double &p : dist.probs)
    p /= total;
  return dist;
}

int32_t sampleToken(const TokenDistribution &dist, SamplingRng &rng) {
  assert(!dist.ids.empty() && "sampleToken of an empty distribution");
  double total = std::accumulate(dist.probs.begin(), dist.probs.end(), 0.0);
  double target = rng.uniform() * total;
  double cumulative = 0.0;
  for (size_t j = 0; j < dist.ids.size(); ++j) {
    cumulative += dist.probs[j];
    if (target < cumulative)
      return dist.ids[j];
  }
  // Rounding left target at the very top: the last token with mass.
  for (size_t j = dist.ids.size(); j-- > 0;)
    if (dist.probs[j] > 0.0)
      return dist.ids[j];
  return dist.ids.back();
}

StatusOr<Sampler> Sampler::create(const SamplingParams &params) {
  STRATA_RETURN_IF_ERROR(validateSamplingParams(params));
  return Sampler(params);
}

StatusOr<int32_t> Sampler::sample(const float *logits, size_t vocab_size) {
  if (greedy())
    return greedyToken(logits, vocab_size);
  STRATA_ASSIGN_OR_RETURN(TokenDistribution dist,
                          processLogits(logits, vocab_size, params_));
  return sampleToken(dist, rng_);
}

} // namespace strata::runtime
