//===- pre_tokenizer_test.cpp - tests of tokenizer.json pre-tokenizers -----===//

#include "runtime/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::tokenizer {
namespace {

using json = nlohmann::json;
using Pieces = std::vector<std::string>;

/// The GLM / GPT-4 / Llama 3 Split pattern, as in tokenizer.json.
const char *kGlmPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

Pieces splitWith(const std::string &text, const char *pattern,
                 PreTokenizer::Behavior behavior, bool invert = false) {
  StatusOr<Regex> regex = Regex::compile(pattern);
  EXPECT_TRUE(regex.ok());
  Pieces out;
  EXPECT_TRUE(PreTokenizer::split(text, *regex, behavior, invert, out).ok());
  return out;
}

TEST(PreTokenizerTest, SplitBehaviors) {
  using B = PreTokenizer::Behavior;
  EXPECT_EQ(splitWith("a-b--c", "-", B::kIsolated),
            (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(splitWith("a-b--c", "-", B::kRemoved), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(splitWith("a-b--c", "-", B::kMergedWithPrevious),
            (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(splitWith("a-b--c", "-", B::kMergedWithNext),
            (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(splitWith("a-b--c", "-", B::kContiguous),
            (Pieces{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(splitWith("a-b--c", "-", B::kRemoved, /*invert=*/true),
            (Pieces{"-", "-", "-"}));
  EXPECT_EQ(splitWith("", "-", B::kIsolated), Pieces{});
}

TEST(PreTokenizerTest, GlmPatternGroupsLikeHuggingFace) {
  using B = PreTokenizer::Behavior;
  // Contractions, letters with one leading non-letter, 3-digit groups.
  EXPECT_EQ(splitWith("I'M don't 12345", kGlmPattern, B::kIsolated),
            (Pieces{"I", "'M", " don", "'t", " ", "123", "45"}));
  // Whitespace before a newline run joins it; trailing spaces stay apart
  // from the next word (\s+(?!\S)).
  EXPECT_EQ(splitWith("a  \n\n b", kGlmPattern, B::kIsolated),
            (Pieces{"a", "  \n\n", " b"}));
  EXPECT_EQ(splitWith("x   y", kGlmPattern, B::kIsolated),
            (Pieces{"x", "  ", " y"}));
  // U+0085 is whitespace (Hugging Face: "a", "\x85", "\x85b").
  EXPECT_EQ(splitWith("a\xC2\x85\xC2\x85" "b", kGlmPattern, B::kIsolated),
            (Pieces{"a", "\xC2\x85", "\xC2\x85" "b"}));
  // Punctuation runs keep trailing newlines.
  EXPECT_EQ(splitWith("hi!!\n\nyo", kGlmPattern, B::kIsolated),
            (Pieces{"hi", "!!\n\n", "yo"}));
}

TEST(PreTokenizerTest, SequenceOfSplitAndByteLevel) {
  json spec = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", kGlmPattern}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "ByteLevel"},
         {"add_prefix_space", false},
         {"use_regex", false}}}}};
  StatusOr<PreTokenizer> pre = PreTokenizer::fromJson(spec);
  ASSERT_TRUE(pre.ok()) << pre.status().toString();
  EXPECT_TRUE(pre->isByteLevel());
  Pieces pieces{"Hello world\n"};
  ASSERT_TRUE(pre->apply(pieces).ok());
  EXPECT_EQ(pieces, (Pieces{"Hello", "\xC4\xA0world", "\xC4\x8A"}));
}

TEST(PreTokenizerTest, ByteLevelWithRegexAndPrefixSpace) {
  StatusOr<PreTokenizer> pre = PreTokenizer::fromJson(
      json{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}});
  ASSERT_TRUE(pre.ok());
  Pieces pieces{"Hello world", " x"};
  ASSERT_TRUE(pre->apply(pieces).ok());
  // Every piece not starting with a space gets one.
  EXPECT_EQ(pieces, (Pieces{"\xC4\xA0Hello", "\xC4\xA0world", "\xC4\xA0x"}));
}

TEST(PreTokenizerTest, StringPatternIsLiteral) {
  StatusOr<PreTokenizer> pre = PreTokenizer::fromJson(json{
      {"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Removed"}});
  ASSERT_TRUE(pre.ok());
  Pieces pieces{"a.b.c"};
  ASSERT_TRUE(pre->apply(pieces).ok());
  EXPECT_EQ(pieces, (Pieces{"a", "b", "c"}));
}

TEST(PreTokenizerTest, RejectsUnsupportedAndMalformed) {
  StatusOr<PreTokenizer> pre = PreTokenizer::fromJson(json{{"type", "Whitespace"}});
  ASSERT_FALSE(pre.ok());
  EXPECT_EQ(pre.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(pre.status().message(), "pre_tokenizer: unsupported type Whitespace");
  pre = PreTokenizer::fromJson(json{
      {"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}});
  EXPECT_EQ(pre.status().message(),
            "pre_tokenizer: unknown Split behavior \"Sideways\"");
  pre = PreTokenizer::fromJson(json{{"type", "Split"}, {"pattern", {{"Glob", "*"}}}});
  EXPECT_EQ(pre.status().message(),
            "pre_tokenizer: Split pattern must hold a Regex or String, got "
            "{\"Glob\":\"*\"}");
  pre = PreTokenizer::fromJson(json{{"type", "Sequence"}});
  EXPECT_EQ(pre.status().message(),
            "pre_tokenizer: Sequence needs a pretokenizers array");
}

} // namespace
} // namespace strata::runtime::tokenizer
