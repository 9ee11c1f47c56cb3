//===- logits_processors_test.cpp - per-request logits processing ---------===//
//
// Part of strata. The rules against hand-computed rows; the numeric
// comparison with a Python model of vLLM over many cases is
// test/runtime/sampling/vllm-sampling-reference.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/logits_processors.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests each rule on a row with logits of both signs.
TEST(LogitsProcessors, RulesByHand) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.frequency_penalty = 0.5f;
  params.presence_penalty = 0.25f;
  params.logit_bias = {{3, 1.0f}};
  PenaltyTracker tracker({0, 1, 1});
  tracker.addOutput(2);
  tracker.addOutput(2);
  std::vector<float> row = {4.0f, -4.0f, 1.0f, 0.0f, 3.0f};
  processLogitsRow(params, 2, &tracker, nullptr, 0, row.data(), row.size());
  EXPECT_FLOAT_EQ(row[0], 2.0f);                 // prompt, positive: / 2
  EXPECT_FLOAT_EQ(row[1], -8.0f);                // prompt, negative: * 2
  EXPECT_FLOAT_EQ(row[2], 0.5f - 1.0f - 0.25f);  // output twice
  EXPECT_FLOAT_EQ(row[3], 1.0f);                 // bias only
  EXPECT_FLOAT_EQ(row[4], 3.0f);                 // untouched
}

// Tests that drafts count as output after the committed tokens, and that
// min_tokens masks stop ids only before min_tokens.
TEST(LogitsProcessors, DraftsAndMinTokens) {
  SamplingParams params;
  params.frequency_penalty = 1.0f;
  params.min_tokens = 3;
  params.stop_token_ids = {4};
  PenaltyTracker tracker(std::vector<int32_t>{});
  tracker.addOutput(1);
  const int32_t drafts[] = {1, 2};
  std::vector<float> row(5, 0.0f);
  processLogitsRow(params, 3, &tracker, drafts, 2, row.data(), row.size());
  EXPECT_FLOAT_EQ(row[1], -2.0f);
  EXPECT_FLOAT_EQ(row[2], -1.0f);
  EXPECT_FLOAT_EQ(row[4], 0.0f); // 3 generated: no mask
  std::vector<float> early(5, 0.0f);
  processLogitsRow(params, 2, &tracker, drafts, 1, early.data(), early.size());
  EXPECT_EQ(early[4], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(needsLogitsProcessing(params, 0));
  SamplingParams neutral;
  EXPECT_FALSE(needsLogitsProcessing(neutral, 0));
}

// Tests raw log-probabilities: log-softmax values, the top list order (ties:
// lower id first) and the token's rank (1 + the ids with a higher logit: tied
// ids share a rank).
TEST(LogitsProcessors, Logprobs) {
  std::vector<float> row = {1.0f, 3.0f, 3.0f, -std::numeric_limits<float>::infinity()};
  TokenLogprobs lp = computeLogprobs(row.data(), row.size(), 0, 3);
  double log_z = std::log(std::exp(1.0) + 2 * std::exp(3.0));
  EXPECT_NEAR(lp.logprob, 1.0 - log_z, 1e-12);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_NEAR(lp.top[0].second, 3.0 - log_z, 1e-12);
  EXPECT_EQ(lp.rank, 3);
  EXPECT_EQ(computeLogprobs(row.data(), row.size(), 2, 0).rank, 1);
  TokenLogprobs masked = computeLogprobs(row.data(), row.size(), 3, 0);
  EXPECT_EQ(masked.logprob, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(masked.rank, 4);
  EXPECT_TRUE(masked.top.empty());
  EXPECT_EQ(computeLogprobs(row.data(), row.size(), 7, 0).rank, 0);
}

} // namespace
} // namespace strata::runtime
