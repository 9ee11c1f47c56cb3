//===- glm_chat_test.cpp - tests of the GLM chat renderer ------------------===//
//
// Expected strings were produced by rendering GLM-4.6's chat template with
// Jinja2 (trim_blocks, lstrip_blocks, Python json.dumps as tojson), as
// transformers does, for the same conversations.
//
//===----------------------------------------------------------------------===//

#include "runtime/tokenizer/glm_chat.h"

#include <gtest/gtest.h>

namespace strata::runtime::tokenizer {
namespace {

ChatMessage msg(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

std::string render(const std::vector<ChatMessage> &messages,
                   const GlmChatOptions &options = {}) {
  StatusOr<std::string> text = renderGlmChat(messages, options);
  EXPECT_TRUE(text.ok()) << text.status().toString();
  return text.ok() ? *text : std::string();
}

TEST(GlmChatTest, SystemUserAndGenerationPrompt) {
  GlmChatOptions options;
  options.add_generation_prompt = true;
  EXPECT_EQ(render({msg("system", "You are helpful."),
                    msg("user", "What is 2+2?")},
                   options),
            "[gMASK]<sop><|system|>\nYou are helpful.<|user|>\nWhat is "
            "2+2?<|assistant|>");
  EXPECT_EQ(render({}), "[gMASK]<sop>");
}

TEST(GlmChatTest, MultiTurnStripsAssistantContent) {
  GlmChatOptions options;
  options.add_generation_prompt = true;
  EXPECT_EQ(render({msg("user", "Q1"), msg("assistant", "  A1\n"),
                    msg("user", "Q2")},
                   options),
            "[gMASK]<sop><|user|>\nQ1<|assistant|>\n<think></think>\nA1"
            "<|user|>\nQ2<|assistant|>");
}

TEST(GlmChatTest, ThinkingDisabled) {
  GlmChatOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = false;
  EXPECT_EQ(render({msg("user", "Q1"), msg("user", "Q2 /nothink")}, options),
            "[gMASK]<sop><|user|>\nQ1/nothink<|user|>\nQ2 "
            "/nothink<|assistant|>\n<think></think>");
}

TEST(GlmChatTest, ReasoningToolCallsAndObservations) {
  ChatMessage call = msg("assistant", "");
  call.reasoning_content = "\n need tool \n";
  call.tool_calls.push_back(
      {"get_weather",
       R"({"city": "Paris", "days": 3, "opts": {"a": [1, 2.5, null, true], "s": "é\"x"}})"});
  std::string expected =
      "[gMASK]<sop><|user|>\nWeather?<|assistant|>\n<think>need "
      "tool</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
      "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3"
      "</arg_value>\n<arg_key>opts</arg_key>\n<arg_value>{\"a\": [1, 2.5, "
      "null, true], \"s\": \"é\\\"x\"}</arg_value>\n</tool_call>"
      "<|observation|>\n<tool_response>\nsunny\n</tool_response>\n"
      "<tool_response>\nrain\n</tool_response><|assistant|>\n<think>thought"
      "</think>\nIt is sunny.";
  EXPECT_EQ(render({msg("user", "Weather?"), call, msg("tool", "sunny"),
                    msg("tool", "rain"),
                    msg("assistant",
                        "<think>\nthought\n</think>\n\nIt is sunny.")}),
            expected);
}

TEST(GlmChatTest, ReasoningBeforeLastUserIsDropped) {
  EXPECT_EQ(render({msg("user", "Q1"),
                    msg("assistant", "<think>old reasoning</think>\nA1"),
                    msg("user", "Q2")}),
            "[gMASK]<sop><|user|>\nQ1<|assistant|>\n<think></think>\nA1"
            "<|user|>\nQ2");
}

TEST(GlmChatTest, ToolsBlock) {
  GlmChatOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = true;
  options.tools_json = {
      R"({"type":"function","function":{"name":"f","description":"Does f.","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}})",
      R"({"name":"g"})"};
  EXPECT_EQ(
      render({msg("user", "hi")}, options),
      "[gMASK]<sop><|system|>\n# Tools\n\nYou may call one or more functions "
      "to assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": "
      "\"function\", \"function\": {\"name\": \"f\", \"description\": \"Does "
      "f.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"x\": "
      "{\"type\": \"integer\"}}}}}\n{\"name\": \"g\"}\n</tools>\n\nFor each "
      "function call, output the function name and arguments within the "
      "following XML format:\n<tool_call>{function-name}\n<arg_key>{arg-key-1}"
      "</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n<arg_key>{arg-key-2}"
      "</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>"
      "<|user|>\nhi<|assistant|>");
}

TEST(GlmChatTest, PythonJson) {
  StatusOr<std::string> text =
      toPythonJson(R"({"b":1,"a":[true,{"x":"\u00e9\n"}],"c":1.5})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"b\": 1, \"a\": [true, {\"x\": \"\xC3\xA9\\n\"}], \"c\": 1.5}");
  EXPECT_EQ(toPythonJson("{").status().message(), "value is not valid json");
}

TEST(GlmChatTest, Errors) {
  StatusOr<std::string> text = renderGlmChat({msg("user", "a"), msg("robot", "b")});
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "message 1: unknown role \"robot\", expected system, user, "
            "assistant or tool");
  ChatMessage call = msg("assistant", "");
  call.tool_calls.push_back({"f", "[1, 2]"});
  EXPECT_EQ(renderGlmChat({call}).status().message(),
            "message 0: tool call 0 arguments must be a json object, got array");
  call.tool_calls[0].arguments_json = "{bad";
  EXPECT_EQ(renderGlmChat({call}).status().message(),
            "message 0: tool call 0 arguments is not valid json");
  call.tool_calls[0] = {"", "{}"};
  EXPECT_EQ(renderGlmChat({call}).status().message(),
            "message 0: tool call 0 has no name");
  GlmChatOptions options;
  options.tools_json = {"[]"};
  EXPECT_EQ(renderGlmChat({}, options).status().message(),
            "tool 0 must be a json object, got array");
}

} // namespace
} // namespace strata::runtime::tokenizer
