//===- text_stream_test.cpp - tests of tokens to client text ---------------===//
//
// The detokenizer and the stop matcher together: the end of a generation in
// the middle of a character, stop strings over multi-byte text, and a
// GSM8K-style stop on the real GLM-shaped tokenizer.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/text_stream.h"

#include <gtest/gtest.h>

#include "runtime/sampling/test_tokenizers.h"

namespace strata::runtime {
namespace {

using Ids = std::vector<int32_t>;
const std::string kFffd = "\xEF\xBF\xBD";
constexpr int32_t kEos = testing::kTinyFirstSpecial; // <|endoftext|>

TextStream makeStream(const tokenizer::Tokenizer &tok,
                      std::vector<std::string> stop, int64_t max_tokens = 0,
                      tokenizer::DecodeOptions options = {}) {
  SamplingParams p;
  p.stop = std::move(stop);
  p.stop_token_ids = {kEos};
  p.max_tokens = max_tokens;
  StatusOr<TextStream> s = TextStream::create(tok, p, options);
  EXPECT_TRUE(s.ok()) << s.status().toString();
  return std::move(s).value();
}

/// Pushes ids until the stream finishes; returns the text and the reason.
std::pair<std::string, FinishReason> run(TextStream &s, const Ids &ids) {
  std::string text;
  FinishReason reason = FinishReason::kNone;
  for (int32_t id : ids) {
    StatusOr<StopOutput> o = s.push(id);
    EXPECT_TRUE(o.ok()) << o.status().toString();
    text += o->text;
    reason = o->finish_reason;
    if (reason != FinishReason::kNone)
      break;
  }
  return {text, reason};
}

// Tests that eos after half a character flushes it as U+FFFD and that eos's
// own text is not output.
TEST(TextStream, EosAfterHalfCharacter) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  TextStream s = makeStream(*tok, {});
  EXPECT_EQ(run(s, {'o', 'k', 261, kEos}),
            std::make_pair("ok" + kFffd, FinishReason::kStop));
  EXPECT_EQ(s.push('x').status().code(), StatusCode::kFailedPrecondition);
}

// Tests max_tokens ending on half a character.
TEST(TextStream, LengthAfterHalfCharacter) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  TextStream s = makeStream(*tok, {}, 3);
  EXPECT_EQ(run(s, {'a', 0xF0, 262, 0x80}),
            std::make_pair("a" + kFffd, FinishReason::kLength));
}

// Tests a multi-byte stop string whose bytes are spread over tokens.
TEST(TextStream, StopStringOverSplitCharacters) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  StatusOr<Ids> ids = tok->encode("hello日本😀 world");
  ASSERT_TRUE(ids.ok());
  TextStream s = makeStream(*tok, {"本😀"});
  EXPECT_EQ(run(s, *ids), std::make_pair(std::string("hello日"),
                                         FinishReason::kStop));
  EXPECT_EQ(s.matcher().tokenCount(), 9u);
}

// Tests an outside finish (context window full) flushing held bytes.
TEST(TextStream, OutsideFinish) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  TextStream s = makeStream(*tok, {"he"});
  EXPECT_EQ(s.push('x')->text, "x");
  EXPECT_EQ(s.push('h')->text, "");
  EXPECT_EQ(s.push(0xE6)->text, ""); // held by the detokenizer
  StatusOr<StopOutput> o = s.finish(FinishReason::kLength);
  EXPECT_EQ(o->text, "h" + kFffd); // "h\uFFFD" is no prefix of "he"
  EXPECT_EQ(o->finish_reason, FinishReason::kLength);
  EXPECT_EQ(s.finish(FinishReason::kLength).status().code(),
            StatusCode::kFailedPrecondition);
}

// Tests that create validates the parameters.
TEST(TextStream, CreateValidates) {
  auto tok = testing::tinyByteTokenizer();
  ASSERT_TRUE(tok);
  SamplingParams p;
  p.top_k = -2;
  EXPECT_EQ(TextStream::create(*tok, p).status().message(),
            "top_k must be >= 0 (0 disables it), got -2");
}

// Tests a GSM8K-style few-shot stop on each real tokenizer: the answer up to
// "\n\nQuestion:" is output, the stop string and what follows are not.
TEST(TextStream, FewShotStopOnRealTokenizers) {
  auto files = testing::realTokenizerFiles();
  if (files.empty())
    GTEST_SKIP() << "no tokenizer.json found";
  const std::string answer =
      "Natalia sold 48/2 = 24 clips in May — 合计 72 个。\n#### 72";
  const std::string generated = answer + "\n\nQuestion: Weng earns $12";
  for (const auto &[name, path] : files) {
    SCOPED_TRACE(name);
    auto tok = tokenizer::Tokenizer::fromFile(path);
    ASSERT_TRUE(tok.ok()) << tok.status().toString();
    StatusOr<Ids> ids = (*tok)->encode(generated);
    ASSERT_TRUE(ids.ok());
    SamplingParams p;
    p.stop = {"Question:", "</s>", "<|im_end|>"};
    StatusOr<TextStream> s = TextStream::create(**tok, p);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(run(*s, *ids),
              std::make_pair(answer + "\n\n", FinishReason::kStop));
  }
}

} // namespace
} // namespace strata::runtime
