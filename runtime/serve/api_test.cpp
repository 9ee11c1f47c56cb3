//===- api_test.cpp - OpenAI request parsing and response JSON ------------===//
//
// Part of strata. Every validation error of parseCompletionRequest (message
// and param), the accepted forms of each field, and the response and SSE
// shapes.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/api.h"

#include <limits>

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
            "prompt: expected a string, an array of strings, an array of "
            "token ids or an array of token-id arrays, got null");
  EXPECT_EQ(parseError(R"({"prompt": 5})").param, "prompt");
  EXPECT_EQ(parseError(R"({"prompt": ["a", 3]})").message,
            "prompt[1]: expected a string or an array of token ids (all "
            "prompts of a batch alike), got number");
  EXPECT_EQ(parseError(R"({"prompt": [[1, 2], []]})").message,
            "prompt[1]: must not be empty");
  EXPECT_EQ(parseError(R"({"prompt": ["a", ""]})").message,
            "prompt[1]: must not be empty");
  EXPECT_EQ(parseError(R"({"prompt": [[1, -2]]})").message,
            "prompt[0][1]: token id out of range: -2");
  EXPECT_EQ(parseError(R"({"prompt": ["a", "b"], "n": 40})").message,
            "n: 2 prompts x n 40 exceed the 64 choices of one request");
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
  EXPECT_EQ(parseOk(R"({"prompt": "hi"})").prompts.at(0).text, "hi");
  EXPECT_EQ(parseOk(R"({"prompt": ["hi"]})").prompts.at(0).text, "hi");
  CompletionRequest r = parseOk(R"({"prompt": [3, 1, 2]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  ASSERT_TRUE(r.prompts[0].ids);
  EXPECT_EQ(*r.prompts[0].ids, (std::vector<int32_t>{3, 1, 2}));
  // Batches: several strings, several token-id arrays.
  r = parseOk(R"({"prompt": ["a", "bc"]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].text, "bc");
  r = parseOk(R"({"prompt": [[5], [6, 7]]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(*r.prompts[1].ids, (std::vector<int32_t>{6, 7}));
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
      {"n", "0", "n: must be in [1, 64], got 0"},
      {"n", "65", "n: must be in [1, 64], got 65"},
      {"best_of", "3", "best_of: only 1 or n (1) is supported (vLLM's V1 engine has no best_of either), got 3"},
      {"seed", "1.5", "seed: expected an integer, got a non-integer number"},
      {"stop", "5", "stop: expected a string or an array of strings, got number"},
      {"stop", "[\"a\", 1]", "stop[1]: expected a string, got number"},
      {"stop", "[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop: at most 4 stop sequences are supported, got 5"},
      {"stop", "\"\"", "stop: stop sequences must not be empty"},
      {"presence_penalty", "2.5", "presence_penalty: must be in [-2, 2], got 2.5"},
      {"frequency_penalty", "\"x\"", "frequency_penalty: expected a number, got string"},
      {"frequency_penalty", "-3", "frequency_penalty: must be in [-2, 2], got -3"},
      {"repetition_penalty", "0", "repetition_penalty: must be a finite number > 0, got 0"},
      {"min_p", "1.5", "min_p: must be in [0, 1], got 1.5"},
      {"logit_bias", "{\"x\": 5}", "logit_bias.x: keys must be token ids (non-negative integers)"},
      {"logit_bias", "{\"1\": \"5\"}", "logit_bias.1: expected a number, got string"},
      {"logit_bias", "[]", "logit_bias: expected an object, got array"},
      {"logprobs", "21", "logprobs: must be in [0, 20], got 21"},
      {"logprobs", "true", "logprobs: expected an integer, got boolean"},
      {"stop_token_ids", "[1, -1]", "stop_token_ids[1]: token id out of range: -1"},
      {"stop_token_ids", "3", "stop_token_ids: expected an array of token ids, got number"},
      {"skip_special_tokens", "1", "skip_special_tokens: expected a boolean, got number"},
      {"include_stop_str_in_output", "\"y\"", "include_stop_str_in_output: expected a boolean, got string"},
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
      {"logprobs", "2", "logprobs: expected a boolean, got number"},
      {"top_logprobs", "2", "top_logprobs: requires logprobs: true"},
      {"top_logprobs", "30", "top_logprobs: must be in [0, 20], got 30"},
      {"response_format", "{\"type\": \"json_object\"}", "response_format: only {\"type\": \"text\"} is supported"},
      {"tools", "[{\"type\": \"function\"}]", "tools[0].function: expected an object"},
      {"tools", "[{\"type\": \"code\"}]", "tools[0].type: expected \"function\""},
      {"tools", "[{\"type\": \"function\", \"function\": {}}]", "tools[0].function.name: missing"},
      {"tools", "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"x\": 1}}]", "tools[0].function.x: unknown field"},
      {"tools", "{}", "tools: expected an array, got object"},
      {"tool_choice", "\"required\"", "tool_choice: needs tools"},
      {"tool_choice", "\"sometimes\"", "tool_choice: expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}"},
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

ChoiceResult choice(int32_t index, const std::string &text,
                    FinishReason finish) {
  ChoiceResult c;
  c.index = index;
  c.text = text;
  c.finish = finish;
  return c;
}

// Tests the response objects of both endpoints.
TEST(ServeApi, Responses) {
  ResponseIds ids{"cmpl-7", "m", 100};
  json c = completionResponse(Endpoint::kCompletions, ids,
                              {choice(0, "hi", FinishReason::kLength)},
                              Usage{3, 2, 1});
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "hi");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c["usage"],
            json({{"prompt_tokens", 3}, {"completion_tokens", 2},
                  {"total_tokens", 5},
                  {"prompt_tokens_details", {{"cached_tokens", 1}}}}));
  json chat = completionResponse(
      Endpoint::kChatCompletions, ids,
      {choice(0, "yo", FinishReason::kStop),
       choice(1, "ya", FinishReason::kLength)},
      Usage{1, 1, 0});
  EXPECT_EQ(chat["choices"][1]["index"], 1);
  EXPECT_EQ(chat["choices"][1]["message"]["content"], "ya");
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"],
            json({{"role", "assistant"}, {"content", "yo"}}));
  EXPECT_EQ(chat["choices"][0]["finish_reason"], "stop");
}

// Tests the stream chunks: the role in the first chat delta, null
// finish_reason until the last, the usage-only chunk.
TEST(ServeApi, StreamChunks) {
  ResponseIds ids{"chatcmpl-1", "m", 5};
  json first = streamChunk(Endpoint::kChatCompletions, ids, 0, "He",
                           std::nullopt, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"],
            json({{"role", "assistant"}, {"content", "He"}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json last = streamChunk(Endpoint::kChatCompletions, ids, 2, "",
                          FinishReason::kStop, false);
  EXPECT_EQ(last["choices"][0]["index"], 2);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  json text =
      streamChunk(Endpoint::kCompletions, ids, 0, "x", std::nullopt, true);
  EXPECT_EQ(text["object"], "text_completion");
  EXPECT_EQ(text["choices"][0]["text"], "x");
  json usage = usageChunk(Endpoint::kChatCompletions, ids, Usage{2, 3});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
}

// Tests that the vLLM extensions and penalties land in the request, and the
// exact bodies of the two standard load generators parse.
TEST(ServeApi, VllmFields) {
  CompletionRequest r = parseOk(
      R"({"prompt": "x", "repetition_penalty": 1.2, "presence_penalty": -1,
          "frequency_penalty": 0.5, "min_p": 0.1, "logit_bias": {"7": 300, "8": -2.5},
          "stop_token_ids": [4, 5], "skip_special_tokens": false,
          "include_stop_str_in_output": true, "n": 3, "best_of": 3,
          "logprobs": 2, "echo": false, "ignore_eos": true, "min_tokens": 2})");
  EXPECT_EQ(r.repetition_penalty, 1.2);
  EXPECT_EQ(r.presence_penalty, -1);
  EXPECT_EQ(r.frequency_penalty, 0.5);
  EXPECT_EQ(r.min_p, 0.1);
  ASSERT_EQ(r.logit_bias.size(), 2u);
  EXPECT_EQ(r.logit_bias[0], (std::pair<int32_t, float>{7, 100.0f})); // clamped
  EXPECT_EQ(r.logit_bias[1], (std::pair<int32_t, float>{8, -2.5f}));
  EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_FALSE(r.skip_special_tokens);
  EXPECT_TRUE(r.include_stop_str_in_output);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.logprobs, 2);
  r = parseOk(R"({"messages": [{"role": "user", "content": "x"}],
                  "logprobs": true, "top_logprobs": 3})",
              Endpoint::kChatCompletions);
  EXPECT_EQ(r.logprobs, 3);
  r = parseOk(R"({"messages": [{"role": "user", "content": "x"}],
                  "logprobs": true})",
              Endpoint::kChatCompletions);
  EXPECT_EQ(r.logprobs, 0);
  // echo with logprobs (the prompt's entries first); vLLM's
  // prompt_logprobs on both endpoints, not with stream.
  r = parseOk(R"({"prompt": "x", "echo": true, "logprobs": 1})");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.logprobs, 1);
  EXPECT_EQ(r.prompt_logprobs, -1);
  EXPECT_EQ(parseOk(R"({"prompt": "x", "prompt_logprobs": 0})").prompt_logprobs,
            0);
  EXPECT_EQ(parseOk(R"({"messages": [{"role": "user", "content": "x"}],
                        "prompt_logprobs": 20})",
                    Endpoint::kChatCompletions)
                .prompt_logprobs,
            20);
  EXPECT_EQ(parseError(R"({"prompt": "x", "prompt_logprobs": 21})").message,
            "prompt_logprobs: must be in [0, 20], got 21");
  EXPECT_EQ(parseError(R"({"prompt": "x", "prompt_logprobs": -1})").message,
            "prompt_logprobs: must be in [0, 20], got -1");
  EXPECT_EQ(parseError(R"({"prompt": "x", "prompt_logprobs": 1,
                           "stream": true})")
                .message,
            "prompt_logprobs: is not available when stream is true (as in "
            "vLLM)");
  // vllm bench serve, completions backend (vllm/benchmarks/lib/
  // endpoint_request_func.py), with --ignore-eos.
  r = parseOk(R"({"model": "m", "prompt": "hello", "repetition_penalty": 1.0,
                  "max_tokens": 128, "logprobs": null, "stream": true,
                  "stream_options": {"include_usage": true}, "ignore_eos": true})");
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, -1);
  // sglang.bench_serving, completions (python/sglang/bench_serving.py).
  r = parseOk(R"({"model": "m", "prompt": "hello", "temperature": 0.0,
                  "best_of": 1, "max_tokens": 128, "stream": true,
                  "ignore_eos": true})");
  EXPECT_TRUE(r.ignore_eos);
  r = parseOk(R"({"prompt": "x", "stream": true, "stream_options":
                  {"include_usage": true, "continuous_usage_stats": true}})");
  EXPECT_TRUE(r.continuous_usage_stats);
}

// Tests tools, tool_choice and assistant tool_calls in the history.
TEST(ServeApi, Tools) {
  const char *tools = R"("tools": [{"type": "function", "function": {"name": "get",
      "description": "d", "parameters": {"type": "object", "properties":
      {"city": {"type": "string"}, "n": {"type": "integer"}}}}}])";
  CompletionRequest r = parseOk(
      std::string(R"({"messages": [{"role": "user", "content": "x"}], )") +
          tools + "}",
      Endpoint::kChatCompletions);
  EXPECT_EQ(r.tool_choice, ToolChoice::kAuto);
  ASSERT_EQ(r.tools_json.size(), 1u);
  EXPECT_EQ(r.tool_string_params.at("get"), (std::vector<std::string>{"city"}));
  r = parseOk(std::string(R"({"messages": [{"role": "user", "content": "x"}],
                 "tool_choice": {"type": "function", "function": {"name": "get"}}, )") +
                  tools + "}",
              Endpoint::kChatCompletions);
  EXPECT_EQ(r.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r.tool_choice_name, "get");
  EXPECT_EQ(chatError(std::string(R"({"messages": [{"role": "user", "content": "x"}],
                 "tool_choice": {"type": "function", "function": {"name": "put"}}, )") +
                      tools + "}")
                .message,
            "tool_choice: names \"put\", which is not in tools");
  r = parseOk(R"({"messages": [{"role": "user", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
         "type": "function", "function": {"name": "get", "arguments": "{\"city\": \"P\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "22C"}]})",
              Endpoint::kChatCompletions);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments_json, "{\"city\": \"P\"}");
  EXPECT_EQ(chatError(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
        "function": {"name": "f", "arguments": "[1]"}}]}]})")
                .message,
            "messages[0].tool_calls[0].function.arguments: expected a JSON "
            "object text");
}

// Tests the logprobs objects of both endpoints.
TEST(ServeApi, LogprobsJson) {
  std::vector<LogprobEntry> entries(2);
  entries[0].token = "ab";
  entries[0].bytes = "ab";
  entries[0].logprob = -0.5;
  entries[0].top = {{"ab", "ab", -0.5}, {"c", "c", -1.5}};
  entries[1].token = "d";
  entries[1].bytes = "d";
  entries[1].logprob = -std::numeric_limits<double>::infinity();
  json c = logprobsJson(Endpoint::kCompletions, entries, 3);
  EXPECT_EQ(c["tokens"], json({"ab", "d"}));
  EXPECT_EQ(c["token_logprobs"], json({-0.5, -9999.0}));
  EXPECT_EQ(c["top_logprobs"][0], json({{"ab", -0.5}, {"c", -1.5}}));
  EXPECT_EQ(c["text_offset"], json({3, 5}));
  json chat = logprobsJson(Endpoint::kChatCompletions, entries, 0);
  EXPECT_EQ(chat["content"][0]["token"], "ab");
  EXPECT_EQ(chat["content"][0]["bytes"], json({97, 98}));
  EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "c");
  EXPECT_EQ(chat["content"][1]["logprob"], -9999.0);
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
