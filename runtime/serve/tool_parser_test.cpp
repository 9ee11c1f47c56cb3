//===- tool_parser_test.cpp - GLM-4.5+ tool calls in generated text -------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/tool_parser.h"

#include <gtest/gtest.h>

namespace strata::runtime::serve {
namespace {

// Tests a GLM-4.5 call with content before it: values are JSON unless the
// schema says string; the call's text is not content.
TEST(GlmToolParser, OneCall) {
  GlmToolParser parser({{"get_weather", {"city"}}});
  ToolParseOutput out = parser.push(
      "Let me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
      "<arg_value>42</arg_value>\n<arg_key>days</arg_key>\n"
      "<arg_value>3</arg_value>\n<arg_key>opts</arg_key>\n"
      "<arg_value>{\"unit\": \"C\"}</arg_value>\n</tool_call>");
  EXPECT_EQ(out.content, "Let me check.\n");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments,
            R"({"city":"42","days":3,"opts":{"unit":"C"}})");
  EXPECT_EQ(parser.finish().content, "");
}

// Tests streaming: markers split across pushes are held back, two calls in
// the GLM-4.7 form (no newlines), text that is not JSON stays a string.
TEST(GlmToolParser, StreamedTwoCalls) {
  GlmToolParser parser;
  std::string content;
  std::vector<ToolCall> calls;
  for (const char *piece :
       {"ok <tool", "_call>a<arg_key>x</arg_key><arg_value>hi there",
        "</arg_value></tool_call><tool_call>b</tool_call>"}) {
    ToolParseOutput out = parser.push(piece);
    content += out.content;
    calls.insert(calls.end(), out.calls.begin(), out.calls.end());
  }
  EXPECT_EQ(content, "ok ");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].name, "a");
  EXPECT_EQ(calls[0].arguments, R"({"x":"hi there"})");
  EXPECT_EQ(calls[1].name, "b");
  EXPECT_EQ(calls[1].arguments, "{}");
}

// Tests that an unterminated call comes back as content, and that a text
// without calls is content (a held "<" released at the end).
TEST(GlmToolParser, UnterminatedAndPlain) {
  GlmToolParser parser;
  EXPECT_EQ(parser.push("<tool_call>f<arg_key>k").content, "");
  EXPECT_EQ(parser.finish().content, "<tool_call>f<arg_key>k");
  GlmToolParser plain;
  EXPECT_EQ(plain.push("a < b <").content, "a < b ");
  EXPECT_EQ(plain.finish().content, "<");
}

} // namespace
} // namespace strata::runtime::serve
