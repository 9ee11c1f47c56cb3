//===- sampling_params.h - per-request sampling parameters -----------------===//
//
// Part of strata. The parameters of one generation request that decide which
// token comes next (temperature, top-k, top-p, seed) and when the generation
// ends (max_tokens, stop strings, stop token ids), and their validation. The
// server turns the OpenAI request fields into this struct and answers HTTP 400
// with the message of validateSamplingParams when it fails.
//
// Ownership: a plain value. Thread-safety: none needed.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SAMPLING_SAMPLING_PARAMS_H
#define STRATA_RUNTIME_SAMPLING_SAMPLING_PARAMS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// Sampling and stopping parameters of one request. A default-constructed
/// value is valid: greedy decoding without a token limit or stop conditions.
struct SamplingParams {
  /// Softmax temperature; 0 (default) means greedy decoding (argmax, lowest
  /// id on ties). Must be finite and >= 0.
  float temperature = 0.0f;
  /// Nucleus sampling: keep the smallest set of most probable tokens whose
  /// probability reaches top_p. Must be in (0, 1]; default 1 (off).
  float top_p = 1.0f;
  /// Keep only the top_k most probable tokens (ties at the boundary are all
  /// kept). 0 (default) turns it off; must be >= 0.
  int32_t top_k = 0;
  /// Seed of the request's random stream (default 0). The server draws one for
  /// requests that give none. Unused when greedy.
  uint64_t seed = 0;
  /// Maximum number of generated tokens, the stop token included; 0 (default)
  /// means no limit here (the server caps by the context window). Must be >= 0.
  int64_t max_tokens = 0;
  /// Stop strings (default none): generation ends when the text contains one;
  /// the output ends just before it. Each must be non-empty valid UTF-8.
  std::vector<std::string> stop;
  /// Stop token ids such as eos (default none): generation ends when one is
  /// generated; its text is not part of the output. Each must be >= 0.
  std::vector<int32_t> stop_token_ids;
  /// Generated tokens before which no stop token id can be sampled: their
  /// logits are masked (vLLM's min_tokens). Default 0 (off); must be >= 0
  /// and at most max_tokens when that is set.
  int64_t min_tokens = 0;
  /// Minimum probability relative to the most likely token: after the
  /// temperature, tokens with p < min_p * p_max are dropped (vLLM's min_p).
  /// Must be in [0, 1]; default 0 (off).
  float min_p = 0.0f;
  /// vLLM's repetition_penalty over the prompt and output tokens
  /// (logits_processors.h). Must be finite and > 0; default 1 (off).
  float repetition_penalty = 1.0f;
  /// OpenAI's presence and frequency penalties over the output tokens
  /// (logits_processors.h). Each must be in [-2, 2]; default 0 (off).
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  /// (token id, bias) pairs added to the logits before sampling (OpenAI's
  /// logit_bias; the server clamps the bias to [-100, 100]). Ids must be >= 0
  /// and, when known, below the vocabulary; biases finite. Default none.
  std::vector<std::pair<int32_t, float>> logit_bias;
  /// Log-probabilities to return with each generated token: -1 (default)
  /// none, 0 the sampled token's only, n > 0 also the n most likely tokens
  /// (at most kMaxLogprobs).
  int32_t logprobs = -1;
  /// Log-probabilities of the prompt's tokens (vLLM's prompt_logprobs): -1
  /// (default) none, 0 each prompt token's own (from the first token on:
  /// the first has none), n > 0 also the n most likely tokens at each
  /// position (at most kMaxLogprobs). Needs the logits of every prompt
  /// position, so the request takes no prefix-cache hits.
  int32_t prompt_logprobs = -1;
};

/// The most top log-probabilities a request can ask for (OpenAI's
/// top_logprobs limit).
inline constexpr int32_t kMaxLogprobs = 20;

/// Checks `params`; INVALID_ARGUMENT with a message naming the field and the
/// value otherwise ("top_p must be in (0, 1], got 1.5"). When `vocab_size` is
/// non-zero, stop token ids must also be below it.
Status validateSamplingParams(const SamplingParams &params,
                              size_t vocab_size = 0);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SAMPLING_SAMPLING_PARAMS_H
