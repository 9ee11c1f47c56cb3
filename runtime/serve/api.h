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
// accepted and ignored; fields that would change the output are accepted only
// at their neutral value (n 1, echo false, logprobs off, penalties 0, ...).
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_API_H
#define STRATA_RUNTIME_SERVE_API_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// A validated request, before rendering and tokenization.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  /// "model" as sent (empty when absent).
  std::string model;
  /// /v1/completions: the prompt text, or the prompt as token ids.
  std::string prompt;
  std::optional<std::vector<int32_t>> prompt_ids;
  /// /v1/chat/completions: the conversation.
  std::vector<tokenizer::ChatMessage> messages;
  /// chat_template_kwargs.enable_thinking (chat only).
  std::optional<bool> enable_thinking;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with usage before [DONE].
  bool include_usage = false;
  /// max_tokens (or max_completion_tokens); unset: the rest of the context.
  std::optional<int32_t> max_tokens;
  double temperature = 1.0;
  double top_p = 1.0;
  int32_t top_k = 0;
  std::optional<uint64_t> seed;
  /// Stop strings (at most 4, none empty).
  std::vector<std::string> stop;
  /// ignore_eos (vLLM extension): end-of-sequence ids do not stop
  /// generation (fixed-length benchmarking).
  bool ignore_eos = false;
  /// min_tokens (vLLM extension): end-of-sequence ids cannot be generated
  /// before this many tokens; at most max_tokens.
  int32_t min_tokens = 0;
};

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

/// Token counts of a finished request.
struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
};

/// Identity of one response: the same in every chunk of a stream.
struct ResponseIds {
  std::string id;      // "cmpl-N" or "chatcmpl-N"
  std::string model;
  int64_t created = 0; // unix seconds
};

/// The non-streaming response object.
nlohmann::json completionResponse(Endpoint endpoint, const ResponseIds &ids,
                                  const std::string &text,
                                  FinishReason finish, const Usage &usage);

/// One stream chunk with `text` as delta; `finish` set on the last one. For
/// chat, `first` adds the assistant role to the delta.
nlohmann::json streamChunk(Endpoint endpoint, const ResponseIds &ids,
                           const std::string &text,
                           std::optional<FinishReason> finish, bool first);

/// The usage-only chunk (stream_options.include_usage): empty choices.
nlohmann::json usageChunk(Endpoint endpoint, const ResponseIds &ids,
                          const Usage &usage);

/// The usage object {prompt_tokens, completion_tokens, total_tokens}.
nlohmann::json usageJson(const Usage &usage);

/// One server-sent event: "data: <compact json>\n\n".
std::string sseEvent(const nlohmann::json &payload);
/// The stream terminator "data: [DONE]\n\n".
std::string sseDone();

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_API_H
