//===- glm_chat.cpp - GLM-4.6-style chat prompt renderer --------------------===//

#include "runtime/tokenizer/glm_chat.h"

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

using ordered_json = nlohmann::ordered_json;

namespace {

void dumpPython(const ordered_json &value, std::string &out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first)
        out += ", ";
      first = false;
      out += ordered_json(it.key()).dump(-1, ' ', /*ensure_ascii=*/false);
      out += ": ";
      dumpPython(it.value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const ordered_json &element : value) {
      if (!first)
        out += ", ";
      first = false;
      dumpPython(element, out);
    }
    out += ']';
  } else {
    out += value.dump(-1, ' ', /*ensure_ascii=*/false);
  }
}

StatusOr<ordered_json> parseJson(std::string_view text, std::string_view what) {
  ordered_json value = ordered_json::parse(text.begin(), text.end(), nullptr,
                                           /*allow_exceptions=*/false);
  if (value.is_discarded())
    return invalidArgument("{} is not valid json", what);
  return value;
}

/// Python's str.isspace for one code point: White_Space plus the
/// information separators U+001C..U+001F.
bool isPythonSpace(uint32_t cp) {
  return isUnicodeWhitespace(cp) || (cp >= 0x1C && cp <= 0x1F);
}

/// Python's str.strip() with no arguments.
std::string strip(std::string_view text) {
  std::string valid = toValidUtf8Lossy(text);
  size_t begin = 0, end = valid.size();
  while (begin < end) {
    uint32_t cp = 0;
    size_t n = decodeUtf8(valid, begin, &cp);
    if (!isPythonSpace(cp))
      break;
    begin += n;
  }
  while (end > begin) {
    size_t pos = end - 1;
    while (pos > begin && (static_cast<unsigned char>(valid[pos]) & 0xC0) == 0x80)
      --pos;
    uint32_t cp = 0;
    decodeUtf8(valid, pos, &cp);
    if (!isPythonSpace(cp))
      break;
    end = pos;
  }
  return valid.substr(begin, end - begin);
}

std::string_view stripChar(std::string_view text, char c, bool left) {
  if (left) {
    while (!text.empty() && text.front() == c)
      text.remove_prefix(1);
  } else {
    while (!text.empty() && text.back() == c)
      text.remove_suffix(1);
  }
  return text;
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

constexpr std::string_view kToolsPreamble =
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with "
    "the user query.\n\nYou are provided with function signatures within "
    "<tools></tools> XML tags:\n<tools>\n";
constexpr std::string_view kToolsPostamble =
    "</tools>\n\nFor each function call, output the function name and "
    "arguments within the following XML format:\n<tool_call>{function-name}\n"
    "<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
    "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n"
    "...\n</tool_call>";

Status renderAssistant(const ChatMessage &m, bool after_last_user,
                       size_t index, std::string &out) {
  out += "<|assistant|>";
  std::string reasoning;
  std::string content = m.content;
  if (m.reasoning_content) {
    reasoning = *m.reasoning_content;
  } else if (size_t close = content.find("</think>");
             close != std::string::npos) {
    // content.split('</think>')[0].rstrip('\n').split('<think>')[-1]
    //   .lstrip('\n'), and the text after the last '</think>'.
    std::string_view head =
        stripChar(std::string_view(content).substr(0, close), '\n', false);
    size_t open = head.rfind("<think>");
    if (open != std::string_view::npos)
      head = head.substr(open + 7);
    reasoning = std::string(stripChar(head, '\n', true));
    size_t last_close = content.rfind("</think>");
    content = std::string(
        stripChar(std::string_view(content).substr(last_close + 8), '\n', true));
  }
  if (after_last_user && !reasoning.empty())
    out += "\n<think>" + strip(reasoning) + "</think>";
  else
    out += "\n<think></think>";
  std::string stripped = strip(content);
  if (!stripped.empty())
    out += "\n" + stripped;
  for (size_t c = 0; c < m.tool_calls.size(); ++c) {
    const ChatToolCall &call = m.tool_calls[c];
    if (call.name.empty())
      return invalidArgument("message {}: tool call {} has no name", index, c);
    out += "\n<tool_call>" + call.name + "\n";
    if (!call.arguments_json.empty()) {
      STRATA_ASSIGN_OR_RETURN(
          ordered_json args,
          parseJson(call.arguments_json,
                    fmt::format("message {}: tool call {} arguments", index, c)));
      if (!args.is_object() && !args.is_null())
        return invalidArgument(
            "message {}: tool call {} arguments must be a json object, got {}",
            index, c, args.type_name());
      if (args.is_object()) {
        for (auto it = args.begin(); it != args.end(); ++it) {
          out += "<arg_key>" + it.key() + "</arg_key>\n<arg_value>";
          if (it.value().is_string())
            out += it.value().get<std::string>();
          else
            dumpPython(it.value(), out);
          out += "</arg_value>\n";
        }
      }
    }
    out += "</tool_call>";
  }
  return okStatus();
}

} // namespace

StatusOr<std::string> toPythonJson(std::string_view json_text) {
  STRATA_ASSIGN_OR_RETURN(ordered_json value, parseJson(json_text, "value"));
  std::string out;
  dumpPython(value, out);
  return out;
}

StatusOr<std::string> renderGlmChat(const std::vector<ChatMessage> &messages,
                                    const GlmChatOptions &options) {
  std::string out = "[gMASK]<sop>";
  if (!options.tools_json.empty()) {
    out += kToolsPreamble;
    for (size_t t = 0; t < options.tools_json.size(); ++t) {
      STRATA_ASSIGN_OR_RETURN(
          ordered_json tool,
          parseJson(options.tools_json[t], fmt::format("tool {}", t)));
      if (!tool.is_object())
        return invalidArgument("tool {} must be a json object, got {}", t,
                               tool.type_name());
      dumpPython(tool, out);
      out += "\n";
    }
    out += kToolsPostamble;
  }
  bool no_thinking =
      options.enable_thinking.has_value() && !*options.enable_thinking;
  long last_user = -1;
  for (size_t i = 0; i < messages.size(); ++i)
    if (messages[i].role == "user")
      last_user = static_cast<long>(i);

  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage &m = messages[i];
    if (m.role == "user") {
      out += "<|user|>\n" + m.content;
      if (no_thinking && !endsWith(m.content, "/nothink"))
        out += "/nothink";
    } else if (m.role == "assistant") {
      STRATA_RETURN_IF_ERROR(
          renderAssistant(m, static_cast<long>(i) > last_user, i, out));
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool")
        out += "<|observation|>";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
    } else if (m.role == "system") {
      out += "<|system|>\n" + m.content;
    } else {
      return invalidArgument(
          "message {}: unknown role \"{}\", expected system, user, assistant "
          "or tool",
          i, m.role);
    }
  }
  if (options.add_generation_prompt) {
    out += "<|assistant|>";
    if (no_thinking)
      out += "\n<think></think>";
  }
  return out;
}

} // namespace strata::runtime::tokenizer
