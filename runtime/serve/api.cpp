//===- api.cpp - OpenAI request parsing and response JSON -------------------===//
//
// Part of strata. Field rules follow the OpenAI API reference for
// completions and chat completions; docs/Serving.md has the table.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/api.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "runtime/sampling/sampling_params.h"

#include <fmt/format.h>

namespace strata::runtime::serve {

using nlohmann::json;

std::string errorBody(const ApiError &error) {
  json e = {{"message", error.message},
            {"type", error.type},
            {"param", error.param ? json(*error.param) : json(nullptr)},
            {"code", error.code ? json(*error.code) : json(nullptr)}};
  return json({{"error", e}}).dump(-1, ' ', false,
                                    json::error_handler_t::replace);
}

//===----------------------------------------------------------------------===//
// Request parsing
//===----------------------------------------------------------------------===//

namespace {

/// Collects the first error and its parameter name.
class Parser {
public:
  explicit Parser(std::string *out_param) : out_param_(out_param) {}

  template <typename... Args>
  Status fail(const std::string &param, fmt::format_string<Args...> format,
              Args &&...args) {
    if (out_param_)
      *out_param_ = param;
    std::string message = fmt::format(format, std::forward<Args>(args)...);
    return invalidArgument("{}", param.empty() ? message
                                               : param + ": " + message);
  }

  Status checkBool(const json &v, const std::string &param, bool &out) {
    if (!v.is_boolean())
      return fail(param, "expected a boolean, got {}", v.type_name());
    out = v.get<bool>();
    return okStatus();
  }

  Status checkInt(const json &v, const std::string &param, int64_t &out) {
    if (!v.is_number_integer())
      return fail(param, "expected an integer, got {}", typeName(v));
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return fail(param, "integer out of range: {}", v.dump());
    out = v.get<int64_t>();
    return okStatus();
  }

  Status checkNumber(const json &v, const std::string &param, double &out) {
    if (!v.is_number())
      return fail(param, "expected a number, got {}", v.type_name());
    out = v.get<double>();
    return okStatus();
  }

  Status checkString(const json &v, const std::string &param,
                     std::string &out) {
    if (!v.is_string())
      return fail(param, "expected a string, got {}", v.type_name());
    out = v.get<std::string>();
    return okStatus();
  }

  static std::string typeName(const json &v) {
    return v.is_number_float() ? "a non-integer number" : v.type_name();
  }

private:
  std::string *out_param_;
};

// Fields of both endpoints that change nothing in the output and are
// accepted and ignored.
const std::set<std::string> kIgnoredFields = {"user", "metadata", "store",
                                              "service_tier"};

Status parseStop(Parser &p, const json &v, size_t max_count,
                 std::vector<std::string> &out) {
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > max_count)
      return p.fail("stop", "at most {} stop sequences are supported, got {}",
                    max_count, v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      std::string s;
      STRATA_RETURN_IF_ERROR(
          p.checkString(v[i], fmt::format("stop[{}]", i), s));
      out.push_back(std::move(s));
    }
  } else {
    return p.fail("stop", "expected a string or an array of strings, got {}",
                  v.type_name());
  }
  for (const std::string &s : out)
    if (s.empty())
      return p.fail("stop", "stop sequences must not be empty");
  return okStatus();
}

Status parseMessageContent(Parser &p, const json &v, const std::string &param,
                           std::string &out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return okStatus();
  }
  if (!v.is_array())
    return p.fail(param, "expected a string or an array of content parts, got {}",
                  v.type_name());
  for (size_t i = 0; i < v.size(); ++i) {
    std::string part = fmt::format("{}[{}]", param, i);
    const json &c = v[i];
    if (!c.is_object())
      return p.fail(part, "expected an object, got {}", c.type_name());
    if (!c.contains("type") || !c["type"].is_string())
      return p.fail(part + ".type", "expected a string");
    if (c["type"] != "text")
      return p.fail(part + ".type",
                    "only \"text\" content parts are supported, got {}",
                    c["type"].dump());
    for (auto &[key, value] : c.items())
      if (key != "type" && key != "text")
        return p.fail(part + "." + key, "unknown field");
    if (!c.contains("text"))
      return p.fail(part + ".text", "missing");
    std::string text;
    STRATA_RETURN_IF_ERROR(p.checkString(c["text"], part + ".text", text));
    out += text;
  }
  return okStatus();
}

/// An assistant message's tool_calls: [{id, type: "function", function:
/// {name, arguments: JSON object text}}].
Status parseToolCalls(Parser &p, const json &v, const std::string &param,
                      std::vector<tokenizer::ChatToolCall> &out) {
  if (!v.is_array())
    return p.fail(param, "expected an array, got {}", v.type_name());
  for (size_t i = 0; i < v.size(); ++i) {
    std::string at = fmt::format("{}[{}]", param, i);
    const json &c = v[i];
    if (!c.is_object())
      return p.fail(at, "expected an object, got {}", c.type_name());
    tokenizer::ChatToolCall call;
    bool has_function = false;
    for (auto &[key, value] : c.items()) {
      if (key == "id") {
        std::string ignored;
        STRATA_RETURN_IF_ERROR(p.checkString(value, at + ".id", ignored));
      } else if (key == "type") {
        if (value != "function")
          return p.fail(at + ".type", "expected \"function\", got {}",
                        value.dump());
      } else if (key == "function") {
        if (!value.is_object())
          return p.fail(at + ".function", "expected an object, got {}",
                        value.type_name());
        for (auto &[fk, fv] : value.items()) {
          std::string fat = at + ".function." + fk;
          if (fk == "name") {
            STRATA_RETURN_IF_ERROR(p.checkString(fv, fat, call.name));
          } else if (fk == "arguments") {
            STRATA_RETURN_IF_ERROR(p.checkString(fv, fat, call.arguments_json));
            json args = json::parse(call.arguments_json, nullptr, false);
            if (!call.arguments_json.empty() && !args.is_object())
              return p.fail(fat, "expected a JSON object text");
          } else {
            return p.fail(fat, "unknown field");
          }
        }
        has_function = true;
      } else {
        return p.fail(at + "." + key, "unknown field");
      }
    }
    if (!has_function || call.name.empty())
      return p.fail(at + ".function.name", "missing");
    out.push_back(std::move(call));
  }
  return okStatus();
}

/// tools: [{type: "function", function: {name, description, parameters,
/// strict}}].
Status parseTools(Parser &p, const json &v, CompletionRequest &r) {
  if (!v.is_array())
    return p.fail("tools", "expected an array, got {}", v.type_name());
  for (size_t i = 0; i < v.size(); ++i) {
    std::string at = fmt::format("tools[{}]", i);
    const json &t = v[i];
    if (!t.is_object())
      return p.fail(at, "expected an object, got {}", t.type_name());
    if (!t.contains("type") || t["type"] != "function")
      return p.fail(at + ".type", "expected \"function\"");
    if (!t.contains("function") || !t["function"].is_object())
      return p.fail(at + ".function", "expected an object");
    const json &f = t["function"];
    std::string name;
    for (auto &[key, value] : t.items())
      if (key != "type" && key != "function")
        return p.fail(at + "." + key, "unknown field");
    for (auto &[key, value] : f.items()) {
      std::string fat = at + ".function." + key;
      if (key == "name") {
        STRATA_RETURN_IF_ERROR(p.checkString(value, fat, name));
      } else if (key == "description") {
        std::string ignored;
        STRATA_RETURN_IF_ERROR(p.checkString(value, fat, ignored));
      } else if (key == "parameters") {
        if (!value.is_object())
          return p.fail(fat, "expected a JSON schema object, got {}",
                        value.type_name());
      } else if (key == "strict") {
        bool ignored;
        STRATA_RETURN_IF_ERROR(p.checkBool(value, fat, ignored));
      } else {
        return p.fail(fat, "unknown field");
      }
    }
    if (name.empty())
      return p.fail(at + ".function.name", "missing");
    std::vector<std::string> &strings = r.tool_string_params[name];
    if (f.contains("parameters") && f["parameters"].contains("properties") &&
        f["parameters"]["properties"].is_object())
      for (auto &[pname, schema] : f["parameters"]["properties"].items())
        if (schema.is_object() && schema.value("type", json()) == "string")
          strings.push_back(pname);
    r.tools_json.push_back(
        t.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return okStatus();
}

Status parseMessages(Parser &p, const json &v,
                     std::vector<tokenizer::ChatMessage> &out) {
  if (!v.is_array())
    return p.fail("messages", "expected an array, got {}", v.type_name());
  if (v.empty())
    return p.fail("messages", "must not be empty");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string param = fmt::format("messages[{}]", i);
    const json &m = v[i];
    if (!m.is_object())
      return p.fail(param, "expected an object, got {}", m.type_name());
    if (!m.contains("role"))
      return p.fail(param + ".role", "missing");
    tokenizer::ChatMessage msg;
    STRATA_RETURN_IF_ERROR(p.checkString(m["role"], param + ".role", msg.role));
    if (msg.role == "developer")
      msg.role = "system";
    if (msg.role != "system" && msg.role != "user" &&
        msg.role != "assistant" && msg.role != "tool")
      return p.fail(param + ".role",
                    "expected system, developer, user, assistant or tool, got "
                    "\"{}\"",
                    msg.role);
    bool has_content = false;
    for (auto &[key, value] : m.items()) {
      std::string field = param + "." + key;
      if (key == "role") {
        continue;
      } else if (key == "content") {
        if (value.is_null() && msg.role == "assistant")
          continue;
        STRATA_RETURN_IF_ERROR(
            parseMessageContent(p, value, field, msg.content));
        has_content = true;
      } else if (key == "name") {
        std::string ignored;
        STRATA_RETURN_IF_ERROR(p.checkString(value, field, ignored));
      } else if (key == "reasoning_content" && msg.role == "assistant") {
        if (value.is_null())
          continue;
        std::string reasoning;
        STRATA_RETURN_IF_ERROR(p.checkString(value, field, reasoning));
        msg.reasoning_content = std::move(reasoning);
      } else if (key == "tool_call_id" && msg.role == "tool") {
        std::string ignored;
        STRATA_RETURN_IF_ERROR(p.checkString(value, field, ignored));
      } else if (key == "tool_calls" && msg.role == "assistant") {
        if (value.is_null())
          continue;
        STRATA_RETURN_IF_ERROR(parseToolCalls(p, value, field, msg.tool_calls));
      } else {
        return p.fail(field, "unknown field");
      }
    }
    if (!has_content && msg.role != "assistant")
      return p.fail(param + ".content", "missing");
    out.push_back(std::move(msg));
  }
  return okStatus();
}

Status parseTokenIds(Parser &p, const json &v, const std::string &param,
                     std::vector<int32_t> &out) {
  if (v.empty())
    return p.fail(param, "must not be empty");
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t id;
    std::string at = fmt::format("{}[{}]", param, i);
    STRATA_RETURN_IF_ERROR(p.checkInt(v[i], at, id));
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      return p.fail(at, "token id out of range: {}", id);
    out.push_back(static_cast<int32_t>(id));
  }
  return okStatus();
}

/// prompt: a string, an array of token ids, or a batch (an array of
/// strings or of token-id arrays).
Status parsePrompt(Parser &p, const json &v, CompletionRequest &r) {
  if (v.is_string()) {
    PromptInput in;
    in.text = v.get<std::string>();
    if (in.text.empty())
      return p.fail("prompt", "must not be empty");
    r.prompts.push_back(std::move(in));
    return okStatus();
  }
  if (!v.is_array())
    return p.fail("prompt",
                  "expected a string, an array of strings, an array of token "
                  "ids or an array of token-id arrays, got {}",
                  v.type_name());
  if (v.empty())
    return p.fail("prompt", "must not be empty");
  if (!v[0].is_string() && !v[0].is_array()) {
    PromptInput in;
    in.ids.emplace();
    STRATA_RETURN_IF_ERROR(parseTokenIds(p, v, "prompt", *in.ids));
    r.prompts.push_back(std::move(in));
    return okStatus();
  }
  if (v.size() > kMaxBatchPrompts)
    return p.fail("prompt", "at most {} prompts per request, got {}",
                  kMaxBatchPrompts, v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    std::string at = fmt::format("prompt[{}]", i);
    PromptInput in;
    if (v[i].is_string()) {
      in.text = v[i].get<std::string>();
      if (in.text.empty())
        return p.fail(at, "must not be empty");
    } else if (v[i].is_array()) {
      in.ids.emplace();
      STRATA_RETURN_IF_ERROR(parseTokenIds(p, v[i], at, *in.ids));
    } else {
      return p.fail(at,
                    "expected a string or an array of token ids (all prompts "
                    "of a batch alike), got {}",
                    v[i].type_name());
    }
    r.prompts.push_back(std::move(in));
  }
  return okStatus();
}

/// logit_bias: {"token id": bias}; biases are clamped to [-100, 100] as
/// vLLM does.
Status parseLogitBias(Parser &p, const json &v,
                      std::vector<std::pair<int32_t, float>> &out) {
  if (!v.is_object())
    return p.fail("logit_bias", "expected an object, got {}", v.type_name());
  for (auto &[key, value] : v.items()) {
    std::string at = "logit_bias." + key;
    char *end = nullptr;
    long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || !end || *end != '\0' || id < 0 ||
        id > std::numeric_limits<int32_t>::max())
      return p.fail(at, "keys must be token ids (non-negative integers)");
    double bias;
    STRATA_RETURN_IF_ERROR(p.checkNumber(value, at, bias));
    bias = std::clamp(bias, -100.0, 100.0);
    out.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
  return okStatus();
}

} // namespace

StatusOr<CompletionRequest> parseCompletionRequest(std::string_view body,
                                                   Endpoint endpoint,
                                                   std::string *out_param,
                                                   const ParseLimits &limits) {
  Parser p(out_param);
  if (out_param)
    out_param->clear();
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return p.fail("", "request body is not valid JSON");
  if (!j.is_object())
    return p.fail("", "request body must be a JSON object, got {}",
                  j.type_name());
  const bool chat = endpoint == Endpoint::kChatCompletions;
  const char *required = chat ? "messages" : "prompt";
  if (!j.contains(required))
    return p.fail(required, "missing");

  CompletionRequest r;
  r.endpoint = endpoint;
  bool has_stream_options = false;
  bool chat_logprobs = false;
  std::optional<ToolChoice> tool_choice;
  std::optional<int32_t> top_logprobs;
  std::optional<int64_t> best_of;
  size_t max_stop = limits.max_stop_strings ? limits.max_stop_strings : 4;
  for (auto &[key, v] : j.items()) {
    const std::string &k = key;
    if (kIgnoredFields.count(k))
      continue;
    // Null means "use the default" for every optional field.
    if (v.is_null() && k != required)
      continue;
    if (k == "model") {
      STRATA_RETURN_IF_ERROR(p.checkString(v, k, r.model));
    } else if (k == "prompt" && !chat) {
      STRATA_RETURN_IF_ERROR(parsePrompt(p, v, r));
    } else if (k == "messages" && chat) {
      STRATA_RETURN_IF_ERROR(parseMessages(p, v, r.messages));
    } else if (k == "stream") {
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, r.stream));
    } else if (k == "stream_options") {
      if (!v.is_object())
        return p.fail(k, "expected an object, got {}", v.type_name());
      for (auto &[sk, sv] : v.items()) {
        std::string at = k + "." + sk;
        if (sv.is_null())
          continue;
        if (sk == "include_usage")
          STRATA_RETURN_IF_ERROR(p.checkBool(sv, at, r.include_usage));
        else if (sk == "continuous_usage_stats")
          STRATA_RETURN_IF_ERROR(
              p.checkBool(sv, at, r.continuous_usage_stats));
        else
          return p.fail(at, "unknown field");
      }
      has_stream_options = true;
    } else if (k == "max_tokens" || (chat && k == "max_completion_tokens")) {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < 1 || n > std::numeric_limits<int32_t>::max())
        return p.fail(k, "must be at least 1, got {}", n);
      r.max_tokens = static_cast<int32_t>(n);
    } else if (k == "ignore_eos") {
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, r.ignore_eos));
    } else if (k == "min_tokens") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < 0 || n > std::numeric_limits<int32_t>::max())
        return p.fail(k, "must be non-negative, got {}", n);
      r.min_tokens = static_cast<int32_t>(n);
    } else if (k == "temperature") {
      STRATA_RETURN_IF_ERROR(p.checkNumber(v, k, r.temperature));
      if (!(r.temperature >= 0 && r.temperature <= 2))
        return p.fail(k, "must be in [0, 2], got {}", r.temperature);
    } else if (k == "top_p") {
      STRATA_RETURN_IF_ERROR(p.checkNumber(v, k, r.top_p));
      if (!(r.top_p > 0 && r.top_p <= 1))
        return p.fail(k, "must be in (0, 1], got {}", r.top_p);
    } else if (k == "top_k") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < -1 || n > std::numeric_limits<int32_t>::max())
        return p.fail(k, "must be -1, 0 (disabled) or positive, got {}", n);
      r.top_k = n < 0 ? 0 : static_cast<int32_t>(n);
    } else if (k == "n") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < 1 || n > int64_t(kMaxChoices))
        return p.fail(k, "must be in [1, {}], got {}", kMaxChoices, n);
      r.n = static_cast<int32_t>(n);
    } else if (!chat && k == "best_of") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      best_of = n;
    } else if (k == "seed") {
      int64_t seed;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, seed));
      r.seed = static_cast<uint64_t>(seed);
    } else if (k == "stop") {
      STRATA_RETURN_IF_ERROR(parseStop(p, v, max_stop, r.stop));
    } else if (k == "stop_token_ids") {
      if (!v.is_array())
        return p.fail(k, "expected an array of token ids, got {}",
                      v.type_name());
      if (!v.empty())
        STRATA_RETURN_IF_ERROR(parseTokenIds(p, v, k, r.stop_token_ids));
    } else if (k == "presence_penalty" || k == "frequency_penalty") {
      double x;
      STRATA_RETURN_IF_ERROR(p.checkNumber(v, k, x));
      if (!(x >= -2 && x <= 2))
        return p.fail(k, "must be in [-2, 2], got {}", x);
      (k == "presence_penalty" ? r.presence_penalty : r.frequency_penalty) = x;
    } else if (k == "repetition_penalty") {
      STRATA_RETURN_IF_ERROR(p.checkNumber(v, k, r.repetition_penalty));
      if (!(r.repetition_penalty > 0) || !std::isfinite(r.repetition_penalty))
        return p.fail(k, "must be a finite number > 0, got {}",
                      r.repetition_penalty);
    } else if (k == "min_p") {
      STRATA_RETURN_IF_ERROR(p.checkNumber(v, k, r.min_p));
      if (!(r.min_p >= 0 && r.min_p <= 1))
        return p.fail(k, "must be in [0, 1], got {}", r.min_p);
    } else if (k == "logit_bias") {
      STRATA_RETURN_IF_ERROR(parseLogitBias(p, v, r.logit_bias));
    } else if (k == "skip_special_tokens") {
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, r.skip_special_tokens));
    } else if (k == "include_stop_str_in_output") {
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, r.include_stop_str_in_output));
    } else if (k == "logprobs") {
      if (chat) {
        STRATA_RETURN_IF_ERROR(p.checkBool(v, k, chat_logprobs));
      } else {
        int64_t n;
        STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
        if (n < 0 || n > kMaxLogprobs)
          return p.fail(k, "must be in [0, {}], got {}", kMaxLogprobs, n);
        r.logprobs = static_cast<int32_t>(n);
      }
    } else if (chat && k == "top_logprobs") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < 0 || n > kMaxLogprobs)
        return p.fail(k, "must be in [0, {}], got {}", kMaxLogprobs, n);
      top_logprobs = static_cast<int32_t>(n);
    } else if (!chat && k == "echo") {
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, r.echo));
    } else if (k == "prompt_logprobs") {
      int64_t n;
      STRATA_RETURN_IF_ERROR(p.checkInt(v, k, n));
      if (n < 0 || n > kMaxLogprobs)
        return p.fail(k, "must be in [0, {}], got {}", kMaxLogprobs, n);
      r.prompt_logprobs = static_cast<int32_t>(n);
    } else if (!chat && k == "suffix") {
      std::string suffix;
      STRATA_RETURN_IF_ERROR(p.checkString(v, k, suffix));
      if (!suffix.empty())
        return p.fail(k, "suffix is not supported");
    } else if (chat && k == "response_format") {
      if (!v.is_object() || !v.contains("type") || v["type"] != "text" ||
          v.size() != 1)
        return p.fail(k, "only {{\"type\": \"text\"}} is supported");
    } else if (chat && k == "tools") {
      STRATA_RETURN_IF_ERROR(parseTools(p, v, r));
    } else if (chat && k == "tool_choice") {
      if (v.is_string() && (v == "none" || v == "auto" || v == "required")) {
        tool_choice = v == "none"   ? ToolChoice::kNone
                      : v == "auto" ? ToolChoice::kAuto
                                    : ToolChoice::kRequired;
      } else if (v.is_object() && v.value("type", json()) == "function" &&
                 v.contains("function") && v["function"].is_object() &&
                 v["function"].contains("name") &&
                 v["function"]["name"].is_string()) {
        tool_choice = ToolChoice::kNamed;
        r.tool_choice_name = v["function"]["name"].get<std::string>();
      } else {
        return p.fail(k, "expected \"none\", \"auto\", \"required\" or "
                         "{{\"type\": \"function\", \"function\": "
                         "{{\"name\": ...}}}}");
      }
    } else if (chat && k == "parallel_tool_calls") {
      bool ignored;
      STRATA_RETURN_IF_ERROR(p.checkBool(v, k, ignored));
    } else if (chat && k == "chat_template_kwargs") {
      if (!v.is_object())
        return p.fail(k, "expected an object, got {}", v.type_name());
      for (auto &[ck, cv] : v.items()) {
        if (ck != "enable_thinking")
          return p.fail(k + "." + ck, "unknown field");
        bool on;
        STRATA_RETURN_IF_ERROR(p.checkBool(cv, k + "." + ck, on));
        r.enable_thinking = on;
      }
    } else {
      return p.fail(k, "unknown field");
    }
  }
  if (has_stream_options && !r.stream)
    return p.fail("stream_options", "only allowed when stream is true");
  if (best_of && *best_of != 1 && *best_of != r.n)
    return p.fail("best_of",
                  "only 1 or n ({}) is supported (vLLM's V1 engine has no "
                  "best_of either), got {}",
                  r.n, *best_of);
  if (chat) {
    if (top_logprobs && !chat_logprobs)
      return p.fail("top_logprobs", "requires logprobs: true");
    if (chat_logprobs)
      r.logprobs = top_logprobs ? *top_logprobs : 0;
  }
  if (chat) {
    r.tool_choice = tool_choice ? *tool_choice
                                : (r.tools_json.empty() ? ToolChoice::kNone
                                                        : ToolChoice::kAuto);
    if (r.tools_json.empty() && r.tool_choice != ToolChoice::kNone &&
        r.tool_choice != ToolChoice::kAuto)
      return p.fail("tool_choice", "needs tools");
    if (r.tool_choice == ToolChoice::kNamed &&
        !r.tool_string_params.count(r.tool_choice_name))
      return p.fail("tool_choice", "names \"{}\", which is not in tools",
                    r.tool_choice_name);
  }
  if (r.prompt_logprobs >= 0 && r.stream)
    return p.fail("prompt_logprobs",
                  "is not available when stream is true (as in vLLM)");
  if (r.prompts.size() * size_t(r.n) > kMaxChoices)
    return p.fail("n", "{} prompts x n {} exceed the {} choices of one request",
                  r.prompts.size(), r.n, kMaxChoices);
  if (r.max_tokens && r.min_tokens > *r.max_tokens)
    return p.fail("min_tokens", "must not exceed max_tokens {}, got {}",
                  *r.max_tokens, r.min_tokens);
  return r;
}

//===----------------------------------------------------------------------===//
// Responses
//===----------------------------------------------------------------------===//

json usageJson(const Usage &usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

static json finishJson(std::optional<FinishReason> finish) {
  return finish ? json(std::string(finishReasonName(*finish))) : json(nullptr);
}

/// A logprob as JSON: -inf (a masked token) has no JSON spelling; OpenAI
/// clients read -9999.0 for it, as vLLM sends.
static json logprobValue(double x) {
  return std::isfinite(x) ? json(x) : json(-9999.0);
}

static json bytesJson(const std::string &bytes) {
  json out = json::array();
  for (unsigned char c : bytes)
    out.push_back(int(c));
  return out;
}

json logprobsJson(Endpoint endpoint, const std::vector<LogprobEntry> &entries,
                  size_t text_offset) {
  if (endpoint == Endpoint::kChatCompletions) {
    json content = json::array();
    for (const LogprobEntry &e : entries) {
      json top = json::array();
      // Chat never echoes the prompt: no null entries.
      for (const LogprobEntry::Alternative &a : e.top)
        top.push_back({{"token", a.token},
                       {"logprob", logprobValue(a.logprob)},
                       {"bytes", bytesJson(a.bytes)}});
      content.push_back({{"token", e.token},
                         {"logprob", logprobValue(e.logprob)},
                         {"bytes", bytesJson(e.bytes)},
                         {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_logprobs = json::array(),
       top_logprobs = json::array(), offsets = json::array();
  size_t offset = text_offset;
  for (const LogprobEntry &e : entries) {
    tokens.push_back(e.token);
    offsets.push_back(offset);
    offset += e.token.size();
    if (e.null) {
      token_logprobs.push_back(nullptr);
      top_logprobs.push_back(nullptr);
      continue;
    }
    token_logprobs.push_back(logprobValue(e.logprob));
    json top = json::object();
    // Tokens with the same text (e.g. bytes of an incomplete UTF-8
    // sequence, all "\ufffd") share a key: the likeliest one keeps it.
    for (const LogprobEntry::Alternative &a : e.top)
      if (!top.contains(a.token))
        top[a.token] = logprobValue(a.logprob);
    top_logprobs.push_back(top);
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_logprobs},
          {"top_logprobs", top_logprobs},
          {"text_offset", offsets}};
}

json promptLogprobsJson(const std::vector<PromptLogprobPosition> &positions) {
  json out = json::array({nullptr});
  for (const PromptLogprobPosition &position : positions) {
    json entry = json::object();
    for (const PromptLogprobPosition::Token &t : position.tokens)
      entry[std::to_string(t.id)] = {{"logprob", logprobValue(t.logprob)},
                                     {"rank", t.rank},
                                     {"decoded_token", t.text}};
    out.push_back(std::move(entry));
  }
  return out;
}

json completionResponse(Endpoint endpoint, const ResponseIds &ids,
                        const std::vector<ChoiceResult> &choices,
                        const Usage &usage) {
  bool chat = endpoint == Endpoint::kChatCompletions;
  json out_choices = json::array();
  for (const ChoiceResult &c : choices) {
    json choice = {{"index", c.index},
                   {"logprobs", c.logprobs ? *c.logprobs : json(nullptr)},
                   {"finish_reason", finishJson(c.finish)}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (c.reasoning)
        choice["message"]["reasoning_content"] =
            c.reasoning->empty() ? json(nullptr) : json(*c.reasoning);
      if (c.tool_calls.is_array() && !c.tool_calls.empty()) {
        choice["message"]["tool_calls"] = c.tool_calls;
        if (c.text.find_first_not_of(" \t\r\n") == std::string::npos)
          choice["message"]["content"] = nullptr;
      }
    } else {
      choice["text"] = c.text;
      if (c.prompt_logprobs)
        choice["prompt_logprobs"] = *c.prompt_logprobs;
    }
    out_choices.push_back(std::move(choice));
  }
  json out = {{"id", ids.id},
              {"object", chat ? "chat.completion" : "text_completion"},
              {"created", ids.created},
              {"model", ids.model},
              {"choices", std::move(out_choices)},
              {"usage", usageJson(usage)}};
  // Chat has one prompt: its prompt_logprobs go at the top (vLLM).
  if (chat && !choices.empty() && choices.front().prompt_logprobs)
    out["prompt_logprobs"] = *choices.front().prompt_logprobs;
  return out;
}

json streamChunk(Endpoint endpoint, const ResponseIds &ids, int32_t index,
                 const std::string &text, std::optional<FinishReason> finish,
                 bool first, const json *logprobs,
                 const std::string &reasoning, const json *tool_calls) {
  json choice = {{"index", index},
                 {"logprobs", logprobs ? *logprobs : json(nullptr)},
                 {"finish_reason", finishJson(finish)}};
  bool chat = endpoint == Endpoint::kChatCompletions;
  if (chat) {
    json delta = json::object();
    if (first)
      delta["role"] = "assistant";
    if (!reasoning.empty())
      delta["reasoning_content"] = reasoning;
    if (!text.empty() ||
        (first && !finish && reasoning.empty() && !tool_calls))
      delta["content"] = text;
    if (tool_calls)
      delta["tool_calls"] = *tool_calls;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  return {{"id", ids.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", json::array({choice})}};
}

json usageChunk(Endpoint endpoint, const ResponseIds &ids, const Usage &usage) {
  bool chat = endpoint == Endpoint::kChatCompletions;
  return {{"id", ids.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", ids.created},
          {"model", ids.model},
          {"choices", json::array()},
          {"usage", usageJson(usage)}};
}

std::string sseEvent(const json &payload) {
  // dump() escapes control characters, so the payload holds no newline and
  // one "data:" line frames it.
  return "data: " +
         payload.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string sseDone() { return "data: [DONE]\n\n"; }

} // namespace strata::runtime::serve
