//===- tool_parser.h - GLM-4.5+ tool calls in generated text ----------------===//
//
// Part of strata. Finds the function calls GLM-4.5 and later models write
// (the format their chat template teaches, glm_chat.cpp kToolsPostamble):
//
//   <tool_call>get_weather
//   <arg_key>city</arg_key>
//   <arg_value>Paris</arg_value>
//   <arg_key>days</arg_key>
//   <arg_value>3</arg_value>
//   </tool_call>
//
// (GLM-4.7 writes the same without the newlines.) Text before the first
// <tool_call> is content; each complete call becomes {name, arguments}: a
// value is kept as a string when the tool's JSON schema declares the
// parameter a string (or the tool or parameter is unknown and the value is
// not JSON), else parsed as JSON. The markers are special tokens, so the
// server decodes with special tokens kept while it parses (as vLLM's GLM
// parsers require).
//
// Streaming: push() takes text deltas and returns the content that is final
// (text that may be the start of "<tool_call>" is held back) and the calls
// completed by this delta; finish() releases the rest (an unterminated call
// is returned as content, as vLLM does).
//
// Ownership: a value per choice. Thread-safety: one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_TOOL_PARSER_H
#define STRATA_RUNTIME_SERVE_TOOL_PARSER_H

#include <map>
#include <string>
#include <vector>

namespace strata::runtime::serve {

/// One parsed call.
struct ToolCall {
  std::string name;
  /// JSON object text of the arguments.
  std::string arguments;
};

/// What one push() released.
struct ToolParseOutput {
  std::string content;
  std::vector<ToolCall> calls;
};

class GlmToolParser {
public:
  /// `string_params`: per tool name, its parameters whose schema type is
  /// "string" (their values are never parsed as JSON).
  explicit GlmToolParser(
      std::map<std::string, std::vector<std::string>> string_params = {});

  ToolParseOutput push(const std::string &text);
  ToolParseOutput finish();
  /// Calls found so far.
  size_t callCount() const { return calls_; }

private:
  ToolCall parseCall(const std::string &body) const;

  std::map<std::string, std::vector<std::string>> string_params_;
  std::string buffer_;
  bool in_call_ = false;
  size_t calls_ = 0;
};

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_TOOL_PARSER_H
