//===- added_vocabulary_test.cpp - tests of added-token matching -----------===//

#include "runtime/tokenizer/added_vocabulary.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::tokenizer {
namespace {

AddedToken token(int32_t id, std::string content) {
  AddedToken t;
  t.id = id;
  t.content = std::move(content);
  t.special = true;
  return t;
}

/// Renders pieces as "text" or "[id:text]" for compact expectations.
std::string show(std::string_view text, const std::vector<TextPiece> &pieces) {
  std::string out;
  for (const TextPiece &p : pieces) {
    std::string s(text.substr(p.begin, p.end - p.begin));
    out += p.token_id >= 0 ? "[" + std::to_string(p.token_id) + ":" + s + "]"
                           : "(" + s + ")";
  }
  return out;
}

AddedVocabulary makeVocabulary(std::vector<AddedToken> tokens) {
  StatusOr<Normalizer> nfc =
      Normalizer::fromJson(nlohmann::json{{"type", "NFC"}});
  EXPECT_TRUE(nfc.ok());
  StatusOr<AddedVocabulary> vocab =
      AddedVocabulary::create(std::move(tokens), *nfc);
  EXPECT_TRUE(vocab.ok()) << vocab.status().toString();
  return vocab.ok() ? std::move(*vocab) : AddedVocabulary();
}

TEST(AddedVocabularyTest, LeftmostLongest) {
  AddedVocabulary vocab =
      makeVocabulary({token(1, "<a>"), token(2, "<a><b>"), token(3, "b>")});
  std::string text = "x<a><b>y<a>b><a";
  EXPECT_EQ(show(text, vocab.split(text, false)),
            "(x)[2:<a><b>](y)[1:<a>][3:b>](<a)");
  EXPECT_EQ(vocab.split("", false).size(), 0u);
}

TEST(AddedVocabularyTest, StripFlags) {
  AddedToken l = token(1, "<l>");
  l.lstrip = true;
  AddedToken r = token(2, "<r>");
  r.rstrip = true;
  AddedVocabulary vocab = makeVocabulary({l, r});
  std::string text = "a \t<l> b<r> \n c";
  EXPECT_EQ(show(text, vocab.split(text, false)),
            "(a)[1: \t<l>]( b)[2:<r> \n ](c)");
  // lstrip never reaches back into the previous match.
  text = "<r>  <l>";
  EXPECT_EQ(show(text, vocab.split(text, false)), "[2:<r>  ][1:<l>]");
}

TEST(AddedVocabularyTest, SingleWordNeedsNonWordNeighbours) {
  AddedToken hello = token(1, "hello");
  hello.single_word = true;
  AddedVocabulary vocab = makeVocabulary({hello});
  for (std::string text : {"hello", "say hello.", "(hello)", "\xC2\xBDhello"})
    EXPECT_NE(show(text, vocab.split(text, false)).find("[1:hello]"),
              std::string::npos)
        << text;
  for (std::string text : {"helloworld", "ohello", "hello_x", "hello2",
                           "e\xCC\x81hello", "hello\xE2\x80\x8D"})
    EXPECT_EQ(show(text, vocab.split(text, false)), "(" + text + ")") << text;
}

TEST(AddedVocabularyTest, NormalizedTokensMatchNormalizedText) {
  AddedToken cafe = token(1, "cafe\xCC\x81"); // decomposed
  cafe.normalized = true;
  cafe.special = false;
  AddedVocabulary vocab = makeVocabulary({cafe, token(2, "<s>")});
  // Only the normalized pass sees it, against NFC text.
  std::string text = "the caf\xC3\xA9<s>";
  EXPECT_EQ(show(text, vocab.split(text, false)), "(the caf\xC3\xA9)[2:<s>]");
  EXPECT_EQ(show(text, vocab.split(text, true)), "(the )[1:caf\xC3\xA9](<s>)");
  EXPECT_EQ(vocab.findById(1)->decoded_content, "caf\xC3\xA9");
  EXPECT_EQ(vocab.findById(2)->decoded_content, "<s>");
  EXPECT_FALSE(vocab.isSpecialContent("cafe\xCC\x81"));
  EXPECT_TRUE(vocab.isSpecialContent("<s>"));
  EXPECT_EQ(vocab.findByContent("<s>"), 2);
  EXPECT_EQ(vocab.findById(3), nullptr);
}

TEST(AddedVocabularyTest, RejectsBadTokens) {
  Normalizer identity;
  StatusOr<AddedVocabulary> vocab =
      AddedVocabulary::create({token(1, "a"), token(1, "b")}, identity);
  ASSERT_FALSE(vocab.ok());
  EXPECT_EQ(vocab.status().message(), "added tokens repeat the id 1");
  vocab = AddedVocabulary::create({token(4, "")}, identity);
  EXPECT_EQ(vocab.status().message(), "added token 4 has an empty content");
  vocab = AddedVocabulary::create({token(-2, "x")}, identity);
  EXPECT_EQ(vocab.status().message(), "added token \"x\" has a negative id -2");
  vocab = AddedVocabulary::create({token(5, "\xFF")}, identity);
  EXPECT_EQ(vocab.status().message(), "added token 5 is not valid utf-8");
}

} // namespace
} // namespace strata::runtime::tokenizer
