//===- text_stream_test.cpp - ids to text deltas, with stop strings -------===//
//
// Part of strata. Uses the byte-level test tokenizer (one token per byte), so
// multi-byte UTF-8 characters arrive split over several tokens.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/text_stream.h"

#include <gtest/gtest.h>

#include "runtime/serve/test_engine.h"

namespace strata::runtime::serve {
namespace {

const tokenizer::Tokenizer &testTokenizer() {
  static std::unique_ptr<tokenizer::Tokenizer> t = [] {
    auto r = tokenizer::Tokenizer::fromJson(testing::testTokenizerJson());
    EXPECT_TRUE(r.ok()) << r.status().toString();
    return std::move(*r);
  }();
  return *t;
}

std::vector<int32_t> bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s)
    ids.push_back(c);
  return ids;
}

/// Pushes `text` one byte-token at a time; returns the deltas.
std::vector<std::string> pushEach(TextStream &ts, std::string_view text) {
  std::vector<std::string> deltas;
  for (int32_t id : bytes(text)) {
    StatusOr<std::string> d = ts.push({id});
    EXPECT_TRUE(d.ok());
    deltas.push_back(*d);
  }
  return deltas;
}

// Tests that ASCII tokens become text at once.
TEST(ServeTextStream, AsciiDeltas) {
  TextStream ts(testTokenizer(), {});
  EXPECT_EQ(pushEach(ts, "abc"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(*ts.finish(), "");
  EXPECT_EQ(ts.consumedTokens(), 3);
}

// Tests that a multi-byte character is held until complete.
TEST(ServeTextStream, SplitUtf8) {
  TextStream ts(testTokenizer(), {});
  // "é" is C3 A9; "€" is E2 82 AC.
  EXPECT_EQ(pushEach(ts, "\xC3\xA9x\xE2\x82\xAC"),
            (std::vector<std::string>{"", "\xC3\xA9", "x", "", "", "\xE2\x82\xAC"}));
}

// Tests that an incomplete character at the end is flushed as U+FFFD.
TEST(ServeTextStream, IncompleteTailOnFinish) {
  TextStream ts(testTokenizer(), {});
  EXPECT_EQ(*ts.push(bytes("a\xE2\x82")), "a");
  EXPECT_EQ(*ts.finish(), "\xEF\xBF\xBD");
}

// Tests that special tokens are skipped in the text.
TEST(ServeTextStream, SpecialTokensSkipped) {
  TextStream ts(testTokenizer(), {});
  EXPECT_EQ(*ts.push({'a', testing::kTestEndOfText + 1, 'b'}), "ab");
}

// Tests that a stop string ends the stream, is not emitted, and that text
// that may start a stop string is held back until it cannot.
TEST(ServeTextStream, StopString) {
  TextStream ts(testTokenizer(), {"END"});
  EXPECT_EQ(pushEach(ts, "abEN"),
            (std::vector<std::string>{"a", "b", "", ""}));
  EXPECT_EQ(*ts.push(bytes("x")), "ENx");
  EXPECT_FALSE(ts.stopped());
  EXPECT_EQ(pushEach(ts, "yEND"), (std::vector<std::string>{"y", "", "", ""}));
  EXPECT_TRUE(ts.stopped());
  EXPECT_EQ(ts.consumedTokens(), 9);
  // Further ids are ignored.
  EXPECT_EQ(*ts.push(bytes("zz")), "");
  EXPECT_EQ(ts.consumedTokens(), 9);
  EXPECT_EQ(*ts.finish(), "");
}

// Tests a stop string inside one multi-token push: the text before it is
// returned and consumedTokens counts up to the completing token.
TEST(ServeTextStream, StopStringInsideOnePush) {
  TextStream ts(testTokenizer(), {"\n\n", "Question:"});
  EXPECT_EQ(*ts.push(bytes("12\n\nQuestion: more")), "12");
  EXPECT_TRUE(ts.stopped());
  EXPECT_EQ(ts.consumedTokens(), 4);
}

// Tests that the earliest of several stop strings wins and that a held-back
// partial match is released at the end.
TEST(ServeTextStream, EarliestStopAndRelease) {
  TextStream a(testTokenizer(), {"bc", "abcd"});
  EXPECT_EQ(*a.push(bytes("xabcd")), "xa");
  TextStream b(testTokenizer(), {"STOP"});
  EXPECT_EQ(*b.push(bytes("ST")), "");
  EXPECT_EQ(*b.finish(), "ST");
  EXPECT_FALSE(b.stopped());
}

} // namespace
} // namespace strata::runtime::serve
