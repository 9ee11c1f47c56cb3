//===- sampler.h - next-token selection from one row of logits -------------===//
//
// Part of strata. Picks the next token of a request from one row of fp32
// logits (vocab V) under its SamplingParams:
//   - temperature == 0: greedy, the argmax; ties go to the lowest id.
//   - temperature > 0: the vLLM / Hugging Face order: divide by temperature,
//     min_p (tokens with p < min_p * p_max dropped, p at that temperature),
//     top-k (ties at the k-th logit kept), softmax, top-p (nucleus over the
//     sorted probabilities, at least one token kept), then one inverse-CDF draw
//     from the request's random stream.
// Penalties, logit_bias and min_tokens come before, on the raw row
// (logits_processors.h).
// The processed distribution (TokenDistribution) is also what speculative
// verification (speculative.h) compares draft and target with.
//
// Determinism: the random stream is std::mt19937_64 seeded with the request's
// seed (its output sequence is fixed by the C++ standard) turned into doubles
// by our own rule (top 53 bits / 2^53); std distributions are never used
// because their output differs between standard libraries. The same seed, the
// same logits and the same sequence of calls give the same tokens on every
// platform (the softmax uses std::exp in double, correctly rounded on glibc).
//
// Ownership: a Sampler is a per-request value that owns its random stream; it
// holds no pointer to the logits. Thread-safety: one Sampler per request and
// one thread at a time; the free functions are thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_SAMPLER_H
#define STRATA_RUNTIME_SAMPLING_SAMPLER_H

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/sampling/sampling_params.h"

namespace strata::runtime {

/// A request's pseudo-random stream of doubles in [0, 1).
class SamplingRng {
public:
  explicit SamplingRng(uint64_t seed = 0) : engine_(seed) {}
  /// The next uniform double in [0, 1): the top 53 bits of the next
  /// mt19937_64 output times 2^-53.
  double uniform() {
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }

private:
  std::mt19937_64 engine_;
};

/// A processed next-token distribution: the tokens left by temperature, top-k
/// and top-p with a non-zero probability, in ascending id order, and their
/// probabilities (summing to 1 up to rounding).
struct TokenDistribution {
  std::vector<int32_t> ids;
  std::vector<double> probs;

  /// Probability of `id`; 0 when it was filtered out.
  double prob(int32_t id) const;
};

/// Checks one row of logits: at least one entry, no NaN, no +inf, at least one
/// finite entry (-inf entries are masked tokens). INVALID_ARGUMENT otherwise.
Status checkLogits(const float *logits, size_t vocab_size);

/// The argmax of `logits`, the lowest id among equal maxima.
StatusOr<int32_t> greedyToken(const float *logits, size_t vocab_size);

/// Temperature, top-k, softmax and top-p applied to `logits` (see the file
/// comment). `params.temperature` must be > 0 (FAILED_PRECONDITION
/// otherwise; greedy requests have no distribution to speak of). Probabilities
/// are computed in double; a token whose exp((logit - max) / T) underflows to
/// 0 is dropped.
StatusOr<TokenDistribution> processLogits(const float *logits,
                                          size_t vocab_size,
                                          const SamplingParams &params);

/// One inverse-CDF draw from `dist` (non-empty) in ascending id order, using
/// one uniform of `rng`.
int32_t sampleToken(const TokenDistribution &dist, SamplingRng &rng);

/// The per-request sampler: validated parameters plus the random stream.
class Sampler {
public:
  /// Validates `params` (validateSamplingParams) and seeds the stream.
  static StatusOr<Sampler> create(const SamplingParams &params);

  /// The next token from one row of logits: greedyToken when the temperature
  /// is 0, else sampleToken(processLogits(...)).
  StatusOr<int32_t> sample(const float *logits, size_t vocab_size);

  /// processLogits with this sampler's parameters (temperature > 0 only).
  StatusOr<TokenDistribution> distribution(const float *logits,
                                           size_t vocab_size) const {
    return processLogits(logits, vocab_size, params_);
  }

  bool greedy() const { return params_.temperature == 0.0f; }
  const SamplingParams &params() const { return params_; }
  SamplingRng &rng() { return rng_; }

private:
  explicit Sampler(const SamplingParams &params)
      : params_(params), rng_(params.seed) {}

  SamplingParams params_;
  SamplingRng rng_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_SAMPLER_H
