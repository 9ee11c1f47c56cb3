//===- api.h - OpenAI request parsing and response JSON ---------------------===//
//
// Part of strata. The wire format of strata-serve, without any HTTP: parses
// and validates /v1/completions and /v1/chat/completions bodies, builds the
// response objects and stream chunks, frames server-sent events, and spells
// OpenAI-style error bodies. docs/Serving.md lists every accepted field.
//
// Validation is strict: an unknown field, a wrong type or an unsupported value
// is an error naming the field (`param`), never silently ignored. Fields
// OpenAI defines that do not change the output (user, metadata, ...) are
// accepted and ignored; vLLM's sampling extensions (repetition_penalty,
// min_p, min_tokens, ignore_eos, stop_token_ids, skip_special_tokens,
// include_stop_str_in_output, stream_options.continuous_usage_stats) are
// implemented; what strata cannot do (best_of > 1, echo with logprobs, ...)
// is an error.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_API_H
#define STRATA_RUNTIME_SERVE_API_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/serve/engine.h"
#include "runtime/tokenizer/glm_chat.h"

namespace strata::runtime::serve {

enum class Endpoint { kCompletions, kChatCompletions };

/// An HTTP error in OpenAI's shape:
///   {"error": {"message", "type", "param", "code"}}
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::optional<std::string> param;
  std::optional<std::string> code;
};

/// The JSON body of `error`.
std::string errorBody(const ApiError &error);

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

/// One prompt of /v1/completions: text, or token ids.
struct PromptInput {
  std::string text;
  std::optional<std::vector<int32_t>> ids;
};

/// A validated request, before rendering and tokenization.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  /// "model" as sent (empty when absent).
  std::string model;
  /// /v1/completions: the prompts (a batch: several; choice index =
  /// prompt index * n + sample index, as OpenAI numbers them).
  std::vector<PromptInput> prompts;
  /// /v1/chat/completions: the conversation.
  std::vector<tokenizer::ChatMessage> messages;
  /// chat_template_kwargs.enable_thinking (chat only).
  std::optional<bool> enable_thinking;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with usage before [DONE].
  bool include_usage = false;
  /// stream_options.continuous_usage_stats (vLLM extension): usage in every
  /// chunk.
  bool continuous_usage_stats = false;
  /// max_tokens (or max_completion_tokens); unset: the server's default.
  std::optional<int32_t> max_tokens;
  double temperature = 1.0;
  double top_p = 1.0;
  int32_t top_k = 0;
  /// min_p (vLLM extension), in [0, 1].
  double min_p = 0.0;
  /// repetition_penalty (vLLM extension), > 0; presence and frequency
  /// penalties in [-2, 2].
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  /// logit_bias: (token id, bias clamped to [-100, 100]).
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;
  /// Samples per prompt (n); seeds of sample i are seed + i.
  int32_t n = 1;
  /// Stop strings (at most 4, none empty).
  std::vector<std::string> stop;
  /// stop_token_ids (vLLM extension): ids that also end generation.
  std::vector<int32_t> stop_token_ids;
  /// ignore_eos (vLLM extension): end-of-sequence ids do not stop
  /// generation (fixed-length benchmarking).
  bool ignore_eos = false;
  /// min_tokens (vLLM extension): end-of-sequence ids cannot be generated
  /// before this many tokens; at most max_tokens.
  int32_t min_tokens = 0;
  /// skip_special_tokens (vLLM extension; default true): special tokens are
  /// left out of the text.
  bool skip_special_tokens = true;
  /// include_stop_str_in_output (vLLM extension): a matched stop string is
  /// part of the text.
  bool include_stop_str_in_output = false;
  /// Log-probabilities: -1 none; completions `logprobs: k`, chat
  /// `logprobs: true` with `top_logprobs: k` (0 when absent).
  int32_t logprobs = -1;
  /// echo (completions): the prompt text precedes each choice's text; with
  /// logprobs, the choice's logprobs begin with the prompt's tokens (the
  /// first with null log-probabilities: it has no context).
  bool echo = false;
  /// prompt_logprobs (vLLM extension, both endpoints, not with stream): -1
  /// none, k >= 0 each prompt token's log-probability and the k most likely
  /// tokens at its position, returned as vLLM's `prompt_logprobs`.
  int32_t prompt_logprobs = -1;
  /// Chat tools: each tool object's JSON text (rendered into the prompt),
  /// and per function name its parameters of schema type "string".
  std::vector<std::string> tools_json;
  std::map<std::string, std::vector<std::string>> tool_string_params;
  /// tool_choice: none (no parsing), auto (parse calls), required / named
  /// (the assistant turn is prefilled with "<tool_call>" / "<tool_call>NAME"
  /// so the model must write a call; not grammar-constrained). Default:
  /// auto with tools, none without.
  ToolChoice tool_choice = ToolChoice::kNone;
  std::string tool_choice_name;
};

/// The most prompts of one batched /v1/completions request, and the most
/// choices (prompts x n) of one request.
inline constexpr size_t kMaxBatchPrompts = 64;
inline constexpr size_t kMaxChoices = 64;

/// Limits the parser checks.
struct ParseLimits {
  /// Most stop strings (OpenAI: 4). 0 means 4.
  size_t max_stop_strings = 0;
};

/// Parses and validates a request body for `endpoint`. Errors are
/// INVALID_ARGUMENT with a message for the client; `out_param` (when not
/// null) receives the offending field ("messages[1].role"), empty when the
/// whole body is at fault.
StatusOr<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                   Endpoint endpoint,
                                                   std::string *out_param,
                                                   const ParseLimits &limits = {});

/// Token counts of a finished request (all choices).
struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  /// Prompt tokens served from the prefix cache (prompt_tokens_details).
  int32_t cached_tokens = 0;
};

/// Identity of one response: the same in every chunk of a stream.
struct ResponseIds {
  std::string id;      // "cmpl-N" or "chatcmpl-N"
  std::string model;
  int64_t created = 0; // unix seconds
};

/// Log-probabilities of generated tokens, with their texts, as the
/// response shows them.
struct LogprobEntry {
  /// The token's text and raw bytes (tokenizer.h appendTokenBytes).
  std::string token;
  std::string bytes;
  double logprob = 0;
  /// An echoed prompt's first token: it has no context, so its logprob and
  /// top_logprobs are null (completions).
  bool null = false;
  /// The best alternatives (text, bytes, logprob), best first.
  struct Alternative {
    std::string token, bytes;
    double logprob = 0;
  };
  std::vector<Alternative> top;
};

/// The `logprobs` object of a choice (or of one chunk): completions'
/// {tokens, token_logprobs, top_logprobs, text_offset} with offsets from
/// `text_offset`, or chat's {content: [{token, logprob, bytes,
/// top_logprobs}]}.
nlohmann::json logprobsJson(Endpoint endpoint,
                            const std::vector<LogprobEntry> &entries,
                            size_t text_offset);

/// One position of vLLM's prompt_logprobs: the prompt token first, then the
/// most likely tokens other than it, each with its log-probability, rank
/// and text.
struct PromptLogprobPosition {
  struct Token {
    int32_t id = 0;
    double logprob = 0;
    int64_t rank = 0;
    std::string text;
  };
  std::vector<Token> tokens;
};

/// vLLM's `prompt_logprobs` list: null for the prompt's first token, then
/// per position an object {"<token id>": {"logprob", "rank",
/// "decoded_token"}} in `positions` order.
nlohmann::json
promptLogprobsJson(const std::vector<PromptLogprobPosition> &positions);

/// One finished choice of a non-streaming response.
struct ChoiceResult {
  int32_t index = 0;
  std::string text;
  /// Chat with a reasoning parser: the text between <think> and </think>
  /// (unset: no reasoning_content field).
  std::optional<std::string> reasoning;
  FinishReason finish = FinishReason::kStop;
  /// Set when log-probabilities were asked for.
  std::optional<nlohmann::json> logprobs;
  /// Set when prompt_logprobs were asked for (promptLogprobsJson): in the
  /// choice for completions, at the top of the response for chat (vLLM).
  std::optional<nlohmann::json> prompt_logprobs;
  /// Chat: the tool calls of the answer (message.tool_calls), each
  /// {id, type: "function", function: {name, arguments}}.
  nlohmann::json tool_calls;
};

/// The non-streaming response object.
nlohmann::json completionResponse(Endpoint endpoint, const ResponseIds &ids,
                                  const std::vector<ChoiceResult> &choices,
                                  const Usage &usage);

/// One stream chunk with `text` as delta for choice `index`; `finish` set
/// on the last one. For chat, `first` adds the assistant role to the delta.
nlohmann::json streamChunk(Endpoint endpoint, const ResponseIds &ids,
                           int32_t index, const std::string &text,
                           std::optional<FinishReason> finish, bool first,
                           const nlohmann::json *logprobs = nullptr,
                           const std::string &reasoning = "",
                           const nlohmann::json *tool_calls = nullptr);

/// The usage-only chunk (stream_options.include_usage): empty choices.
nlohmann::json usageChunk(Endpoint endpoint, const ResponseIds &ids,
                          const Usage &usage);

/// The usage object {prompt_tokens, completion_tokens, total_tokens,
/// prompt_tokens_details: {cached_tokens}}.
nlohmann::json usageJson(const Usage &usage);

/// One server-sent event: "data: <compact json>\n\n".
std::string sseEvent(const nlohmann::json &payload);
/// The stream terminator "data: [DONE]\n\n".
std::string sseDone();

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_API_H
