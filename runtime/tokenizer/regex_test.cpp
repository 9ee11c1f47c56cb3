//===- regex_test.cpp - tests of the PCRE2 wrapper -------------------------===//

#include "runtime/tokenizer/regex.h"

#include <gtest/gtest.h>

namespace strata::runtime::tokenizer {
namespace {

std::vector<std::string> matches(const Regex &regex, const std::string &text) {
  StatusOr<std::vector<Span>> spans = regex.findAll(text);
  EXPECT_TRUE(spans.ok()) << spans.status().toString();
  std::vector<std::string> out;
  if (spans.ok())
    for (const Span &s : *spans)
      out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(RegexTest, UnicodePropertiesAndLookahead) {
  StatusOr<Regex> regex = Regex::compile("\\p{L}+|\\p{N}{1,3}|\\s+(?!\\S)|\\s+");
  ASSERT_TRUE(regex.ok()) << regex.status().toString();
  EXPECT_EQ(matches(*regex, "h\xC3\xA9llo 12345  x"),
            (std::vector<std::string>{"h\xC3\xA9llo", " ", "123", "45", " ",
                                      " ", "x"}));
}

TEST(RegexTest, CaseInsensitiveGroupAndNel) {
  StatusOr<Regex> contraction = Regex::compile("(?i:'s|'ll)");
  ASSERT_TRUE(contraction.ok());
  EXPECT_EQ(matches(*contraction, "IT'S we'LL"),
            (std::vector<std::string>{"'S", "'LL"}));
  // U+0085 (NEL) is \s, as in Oniguruma.
  StatusOr<Regex> space = Regex::compile("\\s");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(matches(*space, "a\xC2\x85" "b").size(), 1u);
}

TEST(RegexTest, EmptyMatchesAdvanceByCodePoint) {
  StatusOr<Regex> regex = Regex::compile("x*");
  ASSERT_TRUE(regex.ok());
  // Empty matches at 0 and after the 2-byte character, then "x", then end.
  StatusOr<std::vector<Span>> spans = regex->findAll("\xC3\xA9x");
  ASSERT_TRUE(spans.ok());
  ASSERT_EQ(spans->size(), 3u);
  EXPECT_EQ((*spans)[0].begin, 0u);
  EXPECT_EQ((*spans)[0].end, 0u);
  EXPECT_EQ((*spans)[1].begin, 2u);
  EXPECT_EQ((*spans)[1].end, 3u);
  EXPECT_EQ((*spans)[2].begin, 3u);
}

TEST(RegexTest, LiteralQuotesMetacharacters) {
  StatusOr<Regex> regex = Regex::compileLiteral("a.\\E*");
  ASSERT_TRUE(regex.ok()) << regex.status().toString();
  EXPECT_EQ(matches(*regex, "ab\\E* a.\\E*"),
            (std::vector<std::string>{"a.\\E*"}));
}

TEST(RegexTest, SyntaxErrorIsInvalidArgument) {
  StatusOr<Regex> regex = Regex::compile("(a");
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(regex.status().message(),
            "invalid regex at offset 2: missing closing parenthesis");
}

TEST(RegexTest, MatchesAtIsAnchored) {
  StatusOr<Regex> regex = Regex::compile("b");
  ASSERT_TRUE(regex.ok());
  EXPECT_FALSE(*regex->matchesAt("ab", 0));
  EXPECT_TRUE(*regex->matchesAt("ab", 1));
}

} // namespace
} // namespace strata::runtime::tokenizer
