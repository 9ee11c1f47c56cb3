//===- sampling_params.cpp - validation of sampling parameters -------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/sampling_params.h"

#include <cmath>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime {

Status validateSamplingParams(const SamplingParams &params,
                              size_t vocab_size) {
  // The negated comparisons also reject NaN.
  if (!(params.temperature >= 0.0f) || std::isinf(params.temperature))
    return invalidArgument("temperature must be a finite number >= 0, got {}",
                           params.temperature);
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f))
    return invalidArgument("top_p must be in (0, 1], got {}", params.top_p);
  if (params.top_k < 0)
    return invalidArgument("top_k must be >= 0 (0 disables it), got {}",
                           params.top_k);
  if (params.max_tokens < 0)
    return invalidArgument("max_tokens must be >= 0 (0: no limit), got {}",
                           params.max_tokens);
  if (params.min_tokens < 0)
    return invalidArgument("min_tokens must be >= 0, got {}",
                           params.min_tokens);
  if (params.max_tokens > 0 && params.min_tokens > params.max_tokens)
    return invalidArgument("min_tokens {} exceeds max_tokens {}",
                           params.min_tokens, params.max_tokens);
  if (!(params.min_p >= 0.0f && params.min_p <= 1.0f))
    return invalidArgument("min_p must be in [0, 1], got {}", params.min_p);
  if (!(params.repetition_penalty > 0.0f) ||
      std::isinf(params.repetition_penalty))
    return invalidArgument("repetition_penalty must be a finite number > 0, "
                           "got {}",
                           params.repetition_penalty);
  if (!(params.presence_penalty >= -2.0f && params.presence_penalty <= 2.0f))
    return invalidArgument("presence_penalty must be in [-2, 2], got {}",
                           params.presence_penalty);
  if (!(params.frequency_penalty >= -2.0f &&
        params.frequency_penalty <= 2.0f))
    return invalidArgument("frequency_penalty must be in [-2, 2], got {}",
                           params.frequency_penalty);
  for (const auto &[id, bias] : params.logit_bias) {
    if (id < 0 || (vocab_size != 0 && static_cast<size_t>(id) >= vocab_size))
      return invalidArgument("logit_bias token id {} is outside the "
                             "vocabulary of {} ids",
                             id, vocab_size);
    if (!std::isfinite(bias))
      return invalidArgument("logit_bias of token {} must be finite, got {}",
                             id, bias);
  }
  if (params.logprobs < -1 || params.logprobs > kMaxLogprobs)
    return invalidArgument("logprobs must be -1 (off) or 0..{}, got {}",
                           kMaxLogprobs, params.logprobs);
  if (params.prompt_logprobs < -1 || params.prompt_logprobs > kMaxLogprobs)
    return invalidArgument("prompt_logprobs must be -1 (off) or 0..{}, got {}",
                           kMaxLogprobs, params.prompt_logprobs);
  for (size_t i = 0; i < params.stop.size(); ++i) {
    if (params.stop[i].empty())
      return invalidArgument("stop string {} is empty", i);
    if (!tokenizer::isValidUtf8(params.stop[i]))
      return invalidArgument("stop string {} is not valid UTF-8", i);
  }
  for (int32_t id : params.stop_token_ids) {
    if (id < 0)
      return invalidArgument("stop token id must be >= 0, got {}", id);
    if (vocab_size != 0 && static_cast<size_t>(id) >= vocab_size)
      return invalidArgument(
          "stop token id {} is outside the vocabulary of {} ids", id,
          vocab_size);
  }
  return okStatus();
}

} // namespace strata::runtime
