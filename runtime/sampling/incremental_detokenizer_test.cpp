//===- incremental_detokenizer_test.cpp - tests of streamed detokenizing ---===//
//
// The UTF-8 completion rule on hand-picked and random byte streams (compared
// with the tokenizer's lossy decoder), characters split across tokens, special
// and unknown ids, and the real tokenizer.json files of test_tokenizers.h
// (skipped when none is present).
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/incremental_detokenizer.h"

#include <random>

#include <gtest/gtest.h>

#include "runtime/sampling/test_tokenizers.h"
#include "runtime/tokenizer/utf8.h"

namespace strata::runtime {
namespace {

using Ids = std::vector<int32_t>;
using tokenizer::isValidUtf8;
using tokenizer::toValidUtf8Lossy;
const std::string kFffd = "\xEF\xBF\xBD";

std::string complete(std::string_view bytes, size_t *out_used) {
  std::string out;
  *out_used = decodeCompleteUtf8(bytes, out);
  return out;
}

// Tests the completion rule: complete characters pass, a valid but truncated
// tail is left unconsumed, and each maximal invalid subsequence is one U+FFFD.
TEST(IncrementalDetokenizer, DecodeCompleteUtf8) {
  size_t used;
  EXPECT_EQ(complete("ab", &used), "ab");
  EXPECT_EQ(used, 2u);
  EXPECT_EQ(complete("a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80", &used),
            "a\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80"); // a é 日 😀
  EXPECT_EQ(used, 10u);
  for (std::string_view tail : {"\xC3", "\xE6", "\xE6\x97", "\xF0\x9F\x98",
                                "\xE0\xA0", "\xED\x9F", "\xF4\x8F\xBF"}) {
    std::string bytes = "x" + std::string(tail);
    EXPECT_EQ(complete(bytes, &used), "x") << tail.size();
    EXPECT_EQ(used, 1u);
  }
  // Invalid: stray continuation, C0/C1 and F5+ leads, overlong E0 80,
  // surrogate ED A0, above U+10FFFF F4 90, an interrupted sequence.
  for (std::string_view bad :
       {"\x80", "\xC0\xAF", "\xC1", "\xF5", "\xFF", "\xE0\x80\x80",
        "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xF0\x9F\x41", "\xE6\x97\xE6\x97\xA5"}) {
    std::string out = complete(bad, &used);
    EXPECT_EQ(out, toValidUtf8Lossy(bad)) << bad.size();
    EXPECT_EQ(used, bad.size());
  }
  EXPECT_EQ(complete("\xF0\x9F\x41", &used), kFffd + "A");
}

// Tests that any byte stream cut into any chunks gives, concatenated, the
// lossy decoding of the whole stream, with every delta valid UTF-8 (byte
// tokens 0..255 of the tiny tokenizer; 2000 random streams).
TEST(IncrementalDetokenizer, RandomByteStreamsMatchLossyDecode) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  std::mt19937_64 rng(31);
  const std::vector<std::string> pieces = {
      "a", " ", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x98\x80", "\xED\x9F\xBF",
      "\xF4\x8F\xBF\xBF", "\xE0\xA0\x80"};
  size_t held_seen = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes;
    int n = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) {
      if (rng() % 4 == 0) {
        bytes += static_cast<char>(rng() % 256); // noise
      } else {
        const std::string &p = pieces[rng() % pieces.size()];
        // Sometimes only a prefix of a character.
        bytes += rng() % 5 == 0 ? p.substr(0, 1 + rng() % p.size()) : p;
      }
    }
    IncrementalDetokenizer detok(*tok);
    std::string text;
    for (unsigned char b : bytes) {
      std::string delta = detok.push(b);
      EXPECT_TRUE(isValidUtf8(delta));
      held_seen += detok.heldBytes() > 0;
      EXPECT_LE(detok.heldBytes(), 3u);
      text += delta;
    }
    text += detok.finish();
    ASSERT_EQ(text, toValidUtf8Lossy(bytes)) << "trial " << trial;
    EXPECT_EQ(detok.heldBytes(), 0u);
  }
  EXPECT_GT(held_seen, 1000u); // characters really were split
}

// Tests characters split across BPE tokens: 日 is [E6 97][A5], 本 is
// [E6][9C][AC], 😀 is [F0][9F 98][80]; nothing is released mid-character.
TEST(IncrementalDetokenizer, MultiByteCharacterAcrossTokens) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  StatusOr<Ids> ids = tok->encode("hello日本😀");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(*ids, (Ids{259, 261, 0xA5, 0xE6, 0x9C, 0xAC, 0xF0, 262, 0x80}));
  IncrementalDetokenizer detok(*tok);
  std::vector<std::string> deltas;
  for (int32_t id : *ids)
    deltas.push_back(detok.push(id));
  EXPECT_EQ(deltas, (std::vector<std::string>{"hello", "", "日", "", "", "本",
                                              "", "", "😀"}));
  EXPECT_EQ(detok.finish(), "");
}

// Tests that a character cut off by the end of the stream becomes U+FFFD only
// at finish(), and that the stream can go on after it.
TEST(IncrementalDetokenizer, IncompleteTailAtFinish) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push('a'), "a");
  EXPECT_EQ(detok.push(261), ""); // E6 97
  EXPECT_EQ(detok.heldBytes(), 2u);
  EXPECT_EQ(detok.finish(), kFffd);
  EXPECT_EQ(detok.finish(), "");
  EXPECT_EQ(detok.push('b'), "b");
  // An invalid byte in the middle is replaced right away.
  EXPECT_EQ(detok.push(0xE6), "");
  EXPECT_EQ(detok.push('c'), kFffd + "c");
}

// Tests special tokens (kept or skipped as decode does) and unknown ids.
TEST(IncrementalDetokenizer, SpecialAndUnknownIds) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  IncrementalDetokenizer keep(*tok);
  EXPECT_EQ(keep.push(testing::kTinyFirstSpecial), "<|endoftext|>");
  EXPECT_EQ(keep.push(99999), "");
  EXPECT_EQ(keep.push(-5), "");
  tokenizer::DecodeOptions skip;
  skip.skip_special_tokens = true;
  IncrementalDetokenizer drop(*tok, skip);
  EXPECT_EQ(drop.push(0xE6), "");
  EXPECT_EQ(drop.push(testing::kTinyFirstSpecial), "");
  EXPECT_EQ(drop.push(0x97), "");
  EXPECT_EQ(drop.push(0xA5), "日"); // the special token did not split it
}

/// Streams `ids` and checks the deltas against decode(ids); counts deltas
/// released while bytes were held.
void checkStream(const tokenizer::Tokenizer &tok, const Ids &ids,
                 const tokenizer::DecodeOptions &options,
                 size_t *out_held_steps) {
  IncrementalDetokenizer detok(tok, options);
  std::string text;
  for (int32_t id : ids) {
    std::string delta = detok.push(id);
    ASSERT_TRUE(isValidUtf8(delta));
    *out_held_steps += detok.heldBytes() > 0;
    text += delta;
  }
  text += detok.finish();
  StatusOr<std::string> expected = tok.decode(ids, options);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(text, *expected);
}

// Tests the real tokenizer files: streamed multilingual text and random id
// sequences equal Tokenizer::decode, deltas are always valid UTF-8, and some
// characters really are split across tokens.
TEST(IncrementalDetokenizer, RealTokenizers) {
  auto files = testing::realTokenizerFiles();
  if (files.empty())
    GTEST_SKIP() << "no tokenizer.json found";
  const std::vector<std::string> texts = {
      "Natalia sold clips to 48 of her friends in April.\n\nQuestion: 12+30=?",
      "日本語のテキストと中文混合，还有한국어도 있습니다。",
      "emoji 😀🎉👍🏽 and flags 🇩🇪🇯🇵, math ∑∫√ and café naïve Ærø",
      "[gMASK]<sop><|user|>\n你好<|assistant|>\n<think></think>\n👋 Привет!",
      "\xF0\x9F\xA6\x84\xF0\x9F\xA6\x84\xF0\x9F\xA6\x84 \xE2\x80\x8D\xE2\x80\x8D"};
  for (const auto &[name, path] : files) {
    SCOPED_TRACE(name);
    auto tok = tokenizer::Tokenizer::fromFile(path);
    ASSERT_TRUE(tok.ok()) << tok.status().toString();
    size_t held_steps = 0;
    for (bool skip : {false, true}) {
      tokenizer::DecodeOptions options;
      options.skip_special_tokens = skip;
      for (const std::string &text : texts) {
        StatusOr<Ids> ids = (*tok)->encode(text);
        ASSERT_TRUE(ids.ok());
        checkStream(**tok, *ids, options, &held_steps);
      }
      std::mt19937_64 rng(7);
      for (int trial = 0; trial < 200; ++trial) {
        Ids ids;
        for (int i = 0; i < 20; ++i)
          ids.push_back(static_cast<int32_t>(rng() % (*tok)->idLimit()));
        checkStream(**tok, ids, options, &held_steps);
      }
    }
    EXPECT_GT(held_steps, 0u);
  }
}

} // namespace
} // namespace strata::runtime
