//===- glm_chat.h - GLM-4.6-style chat prompt renderer ----------------------===//
//
// Part of strata. Renders a conversation into the GLM-4.6 prompt text that the
// model's chat template produces (the template's rules, re-implemented
// without a Jinja engine; docs/Tokenizer.md lists them). The result spells
// special tokens ([gMASK], <sop>, <|system|>, ...) as text; Tokenizer::encode
// turns them into their ids, since added tokens are matched first.
//
//   [gMASK]<sop><|system|>\nSYS<|user|>\nQ<|assistant|>\n<think></think>\nA
//   <|user|>\nQ2<|assistant|>            (with add_generation_prompt)
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_GLM_CHAT_H
#define STRATA_RUNTIME_TOKENIZER_GLM_CHAT_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime::tokenizer {

/// One function call of an assistant message.
struct ChatToolCall {
  std::string name;
  /// The arguments as a JSON object text (OpenAI's `arguments`); empty means
  /// no arguments.
  std::string arguments_json;
};

struct ChatMessage {
  /// "system", "user", "assistant" or "tool".
  std::string role;
  std::string content;
  /// The assistant's reasoning when given separately; when absent, reasoning
  /// is taken from a "<think>...</think>" prefix of `content`.
  std::optional<std::string> reasoning_content;
  /// Assistant tool calls, rendered after the content.
  std::vector<ChatToolCall> tool_calls;
};

/// Zero-initialized options render like the template's defaults.
struct GlmChatOptions {
  /// End with "<|assistant|>" so the model answers next (default false).
  bool add_generation_prompt = false;
  /// Unset (default): thinking on, nothing added. false: user turns get a
  /// "/nothink" suffix and the generation prompt an empty think block.
  std::optional<bool> enable_thinking;
  /// Tool (function) definitions, each a JSON object text; listed in a system
  /// block before the messages when non-empty (default none).
  std::vector<std::string> tools_json;
};

/// Renders `messages`. INVALID_ARGUMENT for an unknown role, a tool call
/// without a name, or tool/argument JSON that does not parse to an object.
StatusOr<std::string> renderGlmChat(const std::vector<ChatMessage> &messages,
                                    const GlmChatOptions &options = {});

/// JSON text of `json_text` re-serialized as Python's json.dumps does with
/// ensure_ascii=False (", " and ": " separators, keys in input order), which
/// is what the template's `tojson` filter prints. INVALID_ARGUMENT when the
/// text is not JSON.
StatusOr<std::string> toPythonJson(std::string_view json_text);

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_GLM_CHAT_H
