//===- tool_parser.cpp - GLM-4.5+ tool calls in generated text --------------===//
//
// Part of strata. See tool_parser.h. Written from the format; vLLM's
// glm4_moe / glm47 parsers were read for the value rules.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/tool_parser.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace strata::runtime::serve {

namespace {

constexpr std::string_view kCallStart = "<tool_call>";
constexpr std::string_view kCallEnd = "</tool_call>";
constexpr std::string_view kKeyStart = "<arg_key>";
constexpr std::string_view kKeyEnd = "</arg_key>";
constexpr std::string_view kValueStart = "<arg_value>";
constexpr std::string_view kValueEnd = "</arg_value>";

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

/// Length of the longest suffix of `s` that is a proper prefix of `marker`.
size_t partialSuffix(const std::string &s, std::string_view marker) {
  for (size_t k = std::min(marker.size() - 1, s.size()); k > 0; --k)
    if (s.compare(s.size() - k, k, marker.data(), k) == 0)
      return k;
  return 0;
}

} // namespace

GlmToolParser::GlmToolParser(
    std::map<std::string, std::vector<std::string>> string_params)
    : string_params_(std::move(string_params)) {}

ToolCall GlmToolParser::parseCall(const std::string &body) const {
  using nlohmann::ordered_json;
  ToolCall call;
  size_t first_key = body.find(kKeyStart);
  call.name = trim(std::string_view(body).substr(0, first_key));
  auto tool = string_params_.find(call.name);
  ordered_json args = ordered_json::object();
  size_t at = first_key;
  while (at != std::string::npos) {
    size_t key_end = body.find(kKeyEnd, at);
    size_t value_start = body.find(kValueStart, at);
    size_t value_end = body.find(kValueEnd, at);
    if (key_end == std::string::npos || value_start == std::string::npos ||
        value_end == std::string::npos || !(key_end < value_start) ||
        !(value_start < value_end))
      break;
    std::string key = trim(std::string_view(body).substr(
        at + kKeyStart.size(), key_end - at - kKeyStart.size()));
    std::string value = body.substr(value_start + kValueStart.size(),
                                    value_end - value_start -
                                        kValueStart.size());
    bool is_string =
        tool != string_params_.end() &&
        std::find(tool->second.begin(), tool->second.end(), key) !=
            tool->second.end();
    ordered_json parsed;
    if (!is_string)
      parsed = ordered_json::parse(trim(value), nullptr,
                                   /*allow_exceptions=*/false);
    if (is_string || parsed.is_discarded())
      args[key] = value;
    else
      args[key] = parsed;
    at = body.find(kKeyStart, value_end);
  }
  call.arguments = args.dump(-1, ' ', false,
                             ordered_json::error_handler_t::replace);
  return call;
}

ToolParseOutput GlmToolParser::push(const std::string &text) {
  buffer_ += text;
  ToolParseOutput out;
  for (;;) {
    if (!in_call_) {
      size_t start = buffer_.find(kCallStart);
      if (start == std::string::npos) {
        size_t hold = partialSuffix(buffer_, kCallStart);
        out.content += buffer_.substr(0, buffer_.size() - hold);
        buffer_.erase(0, buffer_.size() - hold);
        return out;
      }
      // Content between calls (whitespace only, usually) is dropped once a
      // call was seen, as vLLM's parsers do.
      if (calls_ == 0)
        out.content += buffer_.substr(0, start);
      buffer_.erase(0, start + kCallStart.size());
      in_call_ = true;
    }
    size_t end = buffer_.find(kCallEnd);
    if (end == std::string::npos)
      return out;
    out.calls.push_back(parseCall(buffer_.substr(0, end)));
    ++calls_;
    buffer_.erase(0, end + kCallEnd.size());
    in_call_ = false;
  }
}

ToolParseOutput GlmToolParser::finish() {
  ToolParseOutput out;
  if (in_call_)
    out.content = std::string(kCallStart) + buffer_;
  else if (calls_ == 0)
    out.content = buffer_;
  buffer_.clear();
  in_call_ = false;
  return out;
}

} // namespace strata::runtime::serve
