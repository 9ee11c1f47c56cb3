//===- stop_matcher_test.cpp - tests of stop strings, tokens, max_tokens ---===//
//
// Each case streams deltas and checks what is released at every step, so the
// hold-back of possible stop-string prefixes is visible, not just the total.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/stop_matcher.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

StopMatcher makeMatcher(std::vector<std::string> stop,
                        std::vector<int32_t> stop_ids = {},
                        int64_t max_tokens = 0) {
  SamplingParams p;
  p.stop = std::move(stop);
  p.stop_token_ids = std::move(stop_ids);
  p.max_tokens = max_tokens;
  StatusOr<StopMatcher> m = StopMatcher::create(p);
  EXPECT_TRUE(m.ok()) << m.status().toString();
  return std::move(m).value();
}

/// Pushes `deltas` as tokens 1, 2, ... and returns the released text per step.
std::vector<std::string> stream(StopMatcher &m,
                                const std::vector<std::string> &deltas) {
  std::vector<std::string> out;
  for (size_t i = 0; i < deltas.size() && !m.finished(); ++i) {
    StatusOr<StopOutput> o = m.push(static_cast<int32_t>(1000 + i), deltas[i]);
    EXPECT_TRUE(o.ok()) << o.status().toString();
    out.push_back(o->text);
  }
  return out;
}

using Texts = std::vector<std::string>;

// Tests a stop string inside one delta: the output ends before it.
TEST(StopMatcher, StopStringInOneDelta) {
  StopMatcher m = makeMatcher({"wor"});
  StatusOr<StopOutput> o = m.push(1, "Hello world");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->text, "Hello ");
  EXPECT_EQ(o->finish_reason, FinishReason::kStop);
  EXPECT_EQ(o->stop_string_index, 0);
  EXPECT_EQ(o->stop_token, -1);
  EXPECT_TRUE(m.finished());
}

// Tests a stop string split over three tokens: its prefixes are held back and
// never released.
TEST(StopMatcher, StopStringSplitAcrossTokens) {
  StopMatcher m = makeMatcher({"\n\nQuestion:"});
  EXPECT_EQ(stream(m, {"The answer", " is 4.\n", "\nQues", "tion: next"}),
            (Texts{"The answer", " is 4.", "", ""}));
  EXPECT_EQ(m.finishReason(), FinishReason::kStop);
  EXPECT_EQ(m.heldBytes(), 0u);
}

// Tests that a held prefix that turns out not to be a stop string is released.
TEST(StopMatcher, ReleasesFalsePrefix) {
  StopMatcher m = makeMatcher({"abc"});
  EXPECT_EQ(stream(m, {"xa", "b", "d", "ab"}), (Texts{"x", "", "abd", ""}));
  EXPECT_FALSE(m.finished());
  EXPECT_EQ(m.heldBytes(), 2u);
}

// Tests self-overlapping stop strings: "aaab" against "aab" releases one "a".
TEST(StopMatcher, OverlappingPrefix) {
  StopMatcher m = makeMatcher({"aab"});
  EXPECT_EQ(stream(m, {"a", "a", "a", "b"}), (Texts{"", "", "a", ""}));
  EXPECT_EQ(m.finishReason(), FinishReason::kStop);
}

// Tests that of two stop strings completing in one step the earliest-starting
// wins, whatever their order in the list.
TEST(StopMatcher, EarliestMatchWins) {
  StopMatcher m = makeMatcher({"world", "lo w"});
  StatusOr<StopOutput> o = m.push(1, "hello world");
  EXPECT_EQ(o->text, "hel");
  EXPECT_EQ(o->stop_string_index, 1);
}

// Tests a multi-byte stop string arriving in two deltas.
TEST(StopMatcher, MultiByteStopString) {
  StopMatcher m = makeMatcher({"。\n"});
  EXPECT_EQ(stream(m, {"答案是四", "。", "\n后面"}), (Texts{"答案是四", "", ""}));
  EXPECT_TRUE(m.finished());
}

// Tests a stop token: it ends the generation, its text is not output, and held
// text is released.
TEST(StopMatcher, StopTokenReleasesHeldText) {
  StopMatcher m = makeMatcher({"\n\n"}, {0, 7});
  StatusOr<StopOutput> o = m.push(5, "a\n");
  EXPECT_EQ(o->text, "a");
  EXPECT_EQ(m.heldBytes(), 1u);
  EXPECT_FALSE(m.endsGeneration(5));
  EXPECT_TRUE(m.endsGeneration(7));
  o = m.push(7, "");
  EXPECT_EQ(o->text, "\n");
  EXPECT_EQ(o->finish_reason, FinishReason::kStop);
  EXPECT_EQ(o->stop_token, 7);
  EXPECT_EQ(o->stop_string_index, -1);
}

// Tests max_tokens: the last token's text and the held text are released with
// finish_reason "length"; pushing afterwards fails.
TEST(StopMatcher, MaxTokensFinishesWithLength) {
  StopMatcher m = makeMatcher({"xyz"}, {}, 3);
  EXPECT_FALSE(m.endsGeneration(1));
  EXPECT_EQ(stream(m, {"a", "b"}), (Texts{"a", "b"}));
  EXPECT_TRUE(m.endsGeneration(1));
  StatusOr<StopOutput> o = m.push(3, "cx");
  EXPECT_EQ(o->text, "cx");
  EXPECT_EQ(o->finish_reason, FinishReason::kLength);
  EXPECT_EQ(m.tokenCount(), 3u);
  StatusOr<StopOutput> after = m.push(4, "d");
  EXPECT_EQ(after.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(after.status().message(),
            "token 4 pushed after the generation finished (length)");
}

// Tests that a stop token or stop string on the max_tokens-th token reports
// "stop", not "length".
TEST(StopMatcher, StopWinsOverLength) {
  StopMatcher m = makeMatcher({"end"}, {0}, 2);
  ASSERT_TRUE(m.push(5, "x").ok());
  EXPECT_EQ(m.push(0, "")->finish_reason, FinishReason::kStop);
  StopMatcher n = makeMatcher({"end"}, {0}, 2);
  ASSERT_TRUE(n.push(5, "x").ok());
  StatusOr<StopOutput> o = n.push(6, "the end");
  EXPECT_EQ(o->finish_reason, FinishReason::kStop);
  EXPECT_EQ(o->text, "the ");
}

// Tests an outside finish: the tail is matched, held text is released, and
// the caller's reason is reported; a second finish fails.
TEST(StopMatcher, FinishReleasesHeldText) {
  StopMatcher m = makeMatcher({"STOP"});
  EXPECT_EQ(m.push(1, "go ST")->text, "go ");
  StatusOr<StopOutput> o = m.finish("\xEF\xBF\xBD", FinishReason::kLength);
  EXPECT_EQ(o->text, "ST\xEF\xBF\xBD");
  EXPECT_EQ(o->finish_reason, FinishReason::kLength);
  EXPECT_EQ(m.finish("", FinishReason::kLength).status().message(),
            "generation already finished (length)");

  StopMatcher n = makeMatcher({"STOP"});
  EXPECT_EQ(n.push(1, "go ST")->text, "go ");
  o = n.finish("OP!", FinishReason::kLength);
  EXPECT_EQ(o->text, "");
  EXPECT_EQ(o->finish_reason, FinishReason::kStop);

  StopMatcher k = makeMatcher({});
  EXPECT_EQ(k.finish("", FinishReason::kNone).status().message(),
            "finish needs a finish reason");
}

// Tests that without stop conditions everything streams through untouched.
TEST(StopMatcher, NoStopConditions) {
  StopMatcher m = makeMatcher({});
  EXPECT_EQ(stream(m, {"a", "", "bc"}), (Texts{"a", "", "bc"}));
  EXPECT_FALSE(m.finished());
}

// Tests that invalid parameters are rejected at creation.
TEST(StopMatcher, CreateValidates) {
  SamplingParams p;
  p.stop = {""};
  EXPECT_EQ(StopMatcher::create(p).status().message(), "stop string 0 is empty");
}

// Tests the OpenAI spellings of the finish reasons.
TEST(StopMatcher, FinishReasonNames) {
  EXPECT_EQ(finishReasonName(FinishReason::kStop), "stop");
  EXPECT_EQ(finishReasonName(FinishReason::kLength), "length");
  EXPECT_EQ(finishReasonName(FinishReason::kNone), "");
}

} // namespace
} // namespace strata::runtime
