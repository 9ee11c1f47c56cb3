//===- api_test.cpp - OpenAI request parsing and response JSON ------------===//
//
// Part of strata. Every validation error of parseCompletionRequest (message
// and param), the accepted forms of each field, and the response and SSE
// shapes.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/api.h"

#include <gtest/gtest.h>

namespace strata::runtime::serve {
namespace {

using nlohmann::json;

struct Failure {
  std::string message;
  std::string param;
};

Failure parseError(const std::string &body,
                   Endpoint endpoint = Endpoint::kCompletions) {
  std::string param = "unset";
  StatusOr<CompletionRequest> r = parseCompletionRequest(body, endpoint, &param);
  EXPECT_FALSE(r.ok()) << body;
  if (r.ok())
    return {};
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return {std::string(r.status().message()), param};
}

Failure chatError(const std::string &body) {
  return parseError(body, Endpoint::kChatCompletions);
}

CompletionRequest parseOk(const std::string &body,
                          Endpoint endpoint = Endpoint::kCompletions) {
  std::string param;
  StatusOr<CompletionRequest> r = parseCompletionRequest(body, endpoint, &param);
  EXPECT_TRUE(r.ok()) << body << ": " << r.status().toString();
  return r.ok() ? *r : CompletionRequest();
}

// Tests the whole-body errors: bad JSON and a non-object.
TEST(ServeApi, MalformedBody) {
  Failure f = parseError("{\"prompt\": ");
  EXPECT_EQ(f.message, "request body is not valid JSON");
  EXPECT_EQ(f.param, "");
  f = parseError("[1, 2]");
  EXPECT_EQ(f.message, "request body must be a JSON object, got array");
  f = parseError("");
  EXPECT_EQ(f.message, "request body is not valid JSON");
}

// Tests that the prompt or messages field is required and non-empty.
TEST(ServeApi, MissingOrEmptyPrompt) {
  EXPECT_EQ(parseError("{}").message, "prompt: missing");
  EXPECT_EQ(parseError("{}").param, "prompt");
  EXPECT_EQ(parseError(R"({"prompt": ""})").message, "prompt: must not be empty");
  EXPECT_EQ(parseError(R"({"prompt": []})").message, "prompt: must not be empty");
  EXPECT_EQ(parseError(R"({"prompt": null})").message,
            "prompt: expected a string, an array of one string or an array of "
            "token ids, got null");
  EXPECT_EQ(parseError(R"({"prompt": 5})").param, "prompt");
  EXPECT_EQ(parseError(R"({"prompt": ["a", "b"]})").message,
            "prompt: only one prompt per request is supported, got 2");
  EXPECT_EQ(parseError(R"({"prompt": [[1, 2]]})").message,
            "prompt: batched token-id prompts are not supported");
  Failure f = parseError(R"({"prompt": [1, "x"]})");
  EXPECT_EQ(f.message, "prompt[1]: expected an integer, got string");
  EXPECT_EQ(f.param, "prompt[1]");
  EXPECT_EQ(parseError(R"({"prompt": [1, -2]})").message,
            "prompt[1]: token id out of range: -2");
  EXPECT_EQ(chatError("{}").message, "messages: missing");
  EXPECT_EQ(chatError(R"({"messages": []})").message,
            "messages: must not be empty");
  EXPECT_EQ(chatError(R"({"messages": "hi"})").message,
            "messages: expected an array, got string");
}

// Tests the accepted prompt forms.
TEST(ServeApi, PromptForms) {
  EXPECT_EQ(parseOk(R"({"prompt": "hi"})").prompt, "hi");
  EXPECT_EQ(parseOk(R"({"prompt": ["hi"]})").prompt, "hi");
  CompletionRequest r = parseOk(R"({"prompt": [3, 1, 2]})");
  ASSERT_TRUE(r.prompt_ids);
  EXPECT_EQ(*r.prompt_ids, (std::vector<int32_t>{3, 1, 2}));
}

// Tests message validation: shape, role, content, unknown fields.
TEST(ServeApi, MessageErrors) {
  Failure f = chatError(R"({"messages": [1]})");
  EXPECT_EQ(f.message, "messages[0]: expected an object, got number");
  f = chatError(R"({"messages": [{"content": "x"}]})");
  EXPECT_EQ(f.message, "messages[0].role: missing");
  EXPECT_EQ(f.param, "messages[0].role");
  f = chatError(R"({"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "x"}]})");
  EXPECT_EQ(f.message, "messages[1].role: expected system, developer, user, "
                       "assistant or tool, got \"robot\"");
  EXPECT_EQ(f.param, "messages[1].role");
  f = chatError(R"({"messages": [{"role": "user"}]})");
  EXPECT_EQ(f.message, "messages[0].content: missing");
  f = chatError(R"({"messages": [{"role": "user", "content": 3}]})");
  EXPECT_EQ(f.message, "messages[0].content: expected a string or an array "
                       "of content parts, got number");
  f = chatError(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})");
  EXPECT_EQ(f.message, "messages[0].content[0].type: only \"text\" content "
                       "parts are supported, got \"image_url\"");
  f = chatError(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})");
  EXPECT_EQ(f.message, "messages[0].content[0].text: missing");
  f = chatError(R"({"messages": [{"role": "user", "content": "x", "mood": 1}]})");
  EXPECT_EQ(f.message, "messages[0].mood: unknown field");
  EXPECT_EQ(f.param, "messages[0].mood");
  f = chatError(R"({"messages": [{"role": "user", "content": "x", "name": 1}]})");
  EXPECT_EQ(f.message, "messages[0].name: expected a string, got number");
  f = chatError(R"({"messages": [{"role": "user", "content": "x", "reasoning_content": "r"}]})");
  EXPECT_EQ(f.message, "messages[0].reasoning_content: unknown field");
}

// Tests the accepted message forms: parts are joined, developer is system,
// assistant content may be null, reasoning_content is kept.
TEST(ServeApi, MessageForms) {
  CompletionRequest r = parseOk(
      R"({"messages": [
        {"role": "developer", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "u"},
        {"role": "assistant", "content": null, "reasoning_content": "hmm"},
        {"role": "tool", "content": "42", "tool_call_id": "t1"}],
        "chat_template_kwargs": {"enable_thinking": false}})",
      Endpoint::kChatCompletions);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[2].reasoning_content, "hmm");
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.enable_thinking, false);
}

// Tests that unknown fields are rejected and ignorable ones accepted.
TEST(ServeApi, UnknownAndIgnoredFields) {
  Failure f = parseError(R"({"prompt": "x", "temprature": 1})");
  EXPECT_EQ(f.message, "temprature: unknown field");
  EXPECT_EQ(f.param, "temprature");
  // Chat-only fields are unknown on /v1/completions and vice versa.
  EXPECT_EQ(parseError(R"({"prompt": "x", "messages": []})").message,
            "messages: unknown field");
  EXPECT_EQ(chatError(R"({"messages": [{"role": "user", "content": "x"}], "prompt": "x"})")
                .message,
            "prompt: unknown field");
  EXPECT_EQ(chatError(R"({"messages": [{"role": "user", "content": "x"}], "echo": false})")
                .message,
            "echo: unknown field");
  parseOk(R"({"prompt": "x", "user": "u", "metadata": {"a": "b"}, "store": false,
              "service_tier": "auto", "n": 1, "best_of": 1, "echo": false,
              "suffix": "", "logit_bias": {}, "presence_penalty": 0,
              "frequency_penalty": 0.0, "logprobs": null, "seed": null})");
  parseOk(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false,
              "top_logprobs": null, "response_format": {"type": "text"},
              "tools": [], "tool_choice": "none", "parallel_tool_calls": true,
              "max_completion_tokens": 5})",
          Endpoint::kChatCompletions);
}

// Tests wrong types and out-of-range values of every sampling field.
TEST(ServeApi, WrongTypesAndRanges) {
  struct Case {
    const char *field;
    const char *value;
    const char *message;
  } cases[] = {
      {"model", "3", "model: expected a string, got number"},
      {"stream", "\"yes\"", "stream: expected a boolean, got string"},
      {"max_tokens", "\"5\"", "max_tokens: expected an integer, got string"},
      {"max_tokens", "1.5", "max_tokens: expected an integer, got a non-integer number"},
      {"max_tokens", "0", "max_tokens: must be at least 1, got 0"},
      {"max_tokens", "18446744073709551615", "max_tokens: integer out of range: 18446744073709551615"},
      {"temperature", "\"hot\"", "temperature: expected a number, got string"},
      {"temperature", "2.5", "temperature: must be in [0, 2], got 2.5"},
      {"temperature", "-1", "temperature: must be in [0, 2], got -1"},
      {"top_p", "0", "top_p: must be in (0, 1], got 0"},
      {"top_p", "1.5", "top_p: must be in (0, 1], got 1.5"},
      {"top_k", "-2", "top_k: must be -1, 0 (disabled) or positive, got -2"},
      {"top_k", "true", "top_k: expected an integer, got boolean"},
      {"n", "2", "n: only 1 is supported, got 2"},
      {"n", "0", "n: only 1 is supported, got 0"},
      {"best_of", "3", "best_of: only 1 is supported, got 3"},
      {"seed", "1.5", "seed: expected an integer, got a non-integer number"},
      {"stop", "5", "stop: expected a string or an array of strings, got number"},
      {"stop", "[\"a\", 1]", "stop[1]: expected a string, got number"},
      {"stop", "[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop: at most 4 stop sequences are supported, got 5"},
      {"stop", "\"\"", "stop: stop sequences must not be empty"},
      {"presence_penalty", "0.5", "presence_penalty: only 0 is supported, got 0.5"},
      {"frequency_penalty", "\"x\"", "frequency_penalty: expected a number, got string"},
      {"logit_bias", "{\"1\": 5}", "logit_bias: logit_bias is not supported"},
      {"logit_bias", "[]", "logit_bias: expected an object, got array"},
      {"logprobs", "1", "logprobs: logprobs are not supported"},
      {"echo", "true", "echo: echo is not supported"},
      {"suffix", "\"end\"", "suffix: suffix is not supported"},
      {"stream_options", "1", "stream_options: expected an object, got number"},
      {"stream_options", "{\"include_usage\": true}", "stream_options: only allowed when stream is true"},
      {"stream_options", "{\"x\": true}", "stream_options.x: unknown field"},
  };
  for (const Case &c : cases) {
    std::string body =
        std::string("{\"prompt\": \"x\", \"") + c.field + "\": " + c.value + "}";
    Failure f = parseError(body);
    EXPECT_EQ(f.message, c.message) << body;
    EXPECT_EQ(f.param.substr(0, std::string(c.field).size()), c.field) << body;
  }
  struct Case chat_cases[] = {
      {"logprobs", "true", "logprobs: logprobs are not supported"},
      {"logprobs", "2", "logprobs: expected a boolean, got number"},
      {"top_logprobs", "2", "top_logprobs: logprobs are not supported"},
      {"response_format", "{\"type\": \"json_object\"}", "response_format: only {\"type\": \"text\"} is supported"},
      {"tools", "[{\"type\": \"function\"}]", "tools: tools are not supported"},
      {"tools", "{}", "tools: expected an array, got object"},
      {"tool_choice", "\"required\"", "tool_choice: only \"none\" and \"auto\" without tools are supported"},
      {"max_completion_tokens", "-3", "max_completion_tokens: must be at least 1, got -3"},
      {"chat_template_kwargs", "{\"foo\": 1}", "chat_template_kwargs.foo: unknown field"},
      {"chat_template_kwargs", "{\"enable_thinking\": 1}", "chat_template_kwargs.enable_thinking: expected a boolean, got number"},
      {"chat_template_kwargs", "3", "chat_template_kwargs: expected an object, got number"},
      {"parallel_tool_calls", "3", "parallel_tool_calls: expected a boolean, got number"},
  };
  for (const Case &c : chat_cases) {
    std::string body =
        std::string(R"({"messages": [{"role": "user", "content": "x"}], ")") +
        c.field + "\": " + c.value + "}";
    EXPECT_EQ(chatError(body).message, c.message) << body;
  }
}

// Tests that valid sampling fields land in the request.
TEST(ServeApi, SamplingFields) {
  CompletionRequest r = parseOk(
      R"({"prompt": "x", "max_tokens": 7, "temperature": 0, "top_p": 0.5,
          "top_k": -1, "seed": 42, "stop": ["a", "bc"], "stream": true,
          "stream_options": {"include_usage": true}, "model": "m"})");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_EQ(r.temperature, 0);
  EXPECT_EQ(r.top_p, 0.5);
  EXPECT_EQ(r.top_k, 0);
  EXPECT_EQ(r.seed, 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(parseOk(R"({"prompt": "x", "stop": "\n"})").stop,
            std::vector<std::string>{"\n"});
  // Null is the default for optional fields.
  EXPECT_FALSE(parseOk(R"({"prompt": "x", "max_tokens": null})").max_tokens);
}

// Tests the vLLM extensions for fixed-length benchmarking: ignore_eos and
// min_tokens (at most max_tokens), in both endpoints.
TEST(ServeApi, IgnoreEosAndMinTokens) {
  CompletionRequest r = parseOk(
      R"({"prompt": "x", "max_tokens": 8, "ignore_eos": true, "min_tokens": 8})");
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.min_tokens, 8);
  r = parseOk(R"({"messages": [{"role": "user", "content": "x"}],
                  "ignore_eos": false, "min_tokens": 3})",
              Endpoint::kChatCompletions);
  EXPECT_FALSE(r.ignore_eos);
  EXPECT_EQ(r.min_tokens, 3);
  EXPECT_EQ(parseOk(R"({"prompt": "x"})").min_tokens, 0);
  Failure f = parseError(R"({"prompt": "x", "ignore_eos": 1})");
  EXPECT_EQ(f.message, "ignore_eos: expected a boolean, got number");
  EXPECT_EQ(f.param, "ignore_eos");
  f = parseError(R"({"prompt": "x", "min_tokens": -1})");
  EXPECT_EQ(f.message, "min_tokens: must be non-negative, got -1");
  EXPECT_EQ(f.param, "min_tokens");
  f = parseError(R"({"prompt": "x", "max_tokens": 4, "min_tokens": 5})");
  EXPECT_EQ(f.message, "min_tokens: must not exceed max_tokens 4, got 5");
  EXPECT_EQ(f.param, "min_tokens");
}

// Tests the OpenAI error body.
TEST(ServeApi, ErrorBody) {
  ApiError e;
  e.message = "n: only 1 is supported, got 2";
  e.param = "n";
  json j = json::parse(errorBody(e));
  EXPECT_EQ(j["error"]["message"], "n: only 1 is supported, got 2");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
}

// Tests the response objects of both endpoints.
TEST(ServeApi, Responses) {
  ResponseIds ids{"cmpl-7", "m", 100};
  json c = completionResponse(Endpoint::kCompletions, ids, "hi",
                              FinishReason::kLength, Usage{3, 2});
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "hi");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c["usage"],
            json({{"prompt_tokens", 3}, {"completion_tokens", 2},
                  {"total_tokens", 5}}));
  json chat = completionResponse(Endpoint::kChatCompletions, ids, "yo",
                                 FinishReason::kStop, Usage{1, 1});
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"],
            json({{"role", "assistant"}, {"content", "yo"}}));
  EXPECT_EQ(chat["choices"][0]["finish_reason"], "stop");
}

// Tests the stream chunks: the role in the first chat delta, null
// finish_reason until the last, the usage-only chunk.
TEST(ServeApi, StreamChunks) {
  ResponseIds ids{"chatcmpl-1", "m", 5};
  json first = streamChunk(Endpoint::kChatCompletions, ids, "He", std::nullopt,
                           true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"],
            json({{"role", "assistant"}, {"content", "He"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json last = streamChunk(Endpoint::kChatCompletions, ids, "", FinishReason::kStop,
                          false);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  json text = streamChunk(Endpoint::kCompletions, ids, "x", std::nullopt, true);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
  json usage = usageChunk(Endpoint::kChatCompletions, ids, Usage{2, 3});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
}

// Tests SSE framing: one data line per event (newlines escaped), blank line
// after, and the [DONE] terminator.
TEST(ServeApi, SseFraming) {
  EXPECT_EQ(sseEvent(json({{"a", "x\ny"}})), "data: {\"a\":\"x\\ny\"}\n\n");
  EXPECT_EQ(sseDone(), "data: [DONE]\n\n");
  // Invalid UTF-8 is replaced, not thrown.
  EXPECT_EQ(sseEvent(json({{"a", std::string("\xff")}})),
            "data: {\"a\":\"\xEF\xBF\xBD\"}\n\n");
}

} // namespace
} // namespace strata::runtime::serve
