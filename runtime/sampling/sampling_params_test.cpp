//===- sampling_params_test.cpp - tests of sampling parameter checks -------===//
//
// Every rejected value has a case with its exact message (these become the
// HTTP 400 bodies of the server).
//
//===----------------------------------------------------------------------===//

#include "runtime/sampling/sampling_params.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

void expectInvalid(const SamplingParams &params, const std::string &message,
                   size_t vocab_size = 0) {
  Status s = validateSamplingParams(params, vocab_size);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
  EXPECT_EQ(s.message(), message);
}

// Tests that the default parameters (greedy, no limits) and typical sampling
// parameters are accepted.
TEST(SamplingParams, AcceptsDefaultsAndTypicalValues) {
  EXPECT_TRUE(validateSamplingParams(SamplingParams{}).ok());
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.95f;
  p.top_k = 40;
  p.seed = 1234;
  p.max_tokens = 256;
  p.stop = {"\n\n", "Question:", "日本"};
  p.stop_token_ids = {154820, 0};
  EXPECT_TRUE(validateSamplingParams(p, 154880).ok());
  p.top_p = 1.0f; // the upper bound is allowed
  EXPECT_TRUE(validateSamplingParams(p).ok());
}

// Tests that a negative, NaN or infinite temperature is rejected.
TEST(SamplingParams, RejectsBadTemperature) {
  SamplingParams p;
  p.temperature = -0.5f;
  expectInvalid(p, "temperature must be a finite number >= 0, got -0.5");
  p.temperature = std::numeric_limits<float>::quiet_NaN();
  expectInvalid(p, "temperature must be a finite number >= 0, got nan");
  p.temperature = std::numeric_limits<float>::infinity();
  expectInvalid(p, "temperature must be a finite number >= 0, got inf");
}

// Tests that top_p outside (0, 1] is rejected.
TEST(SamplingParams, RejectsTopPOutsideUnitInterval) {
  SamplingParams p;
  p.top_p = 0.0f;
  expectInvalid(p, "top_p must be in (0, 1], got 0");
  p.top_p = 1.5f;
  expectInvalid(p, "top_p must be in (0, 1], got 1.5");
  p.top_p = -0.1f;
  expectInvalid(p, "top_p must be in (0, 1], got -0.1");
  p.top_p = std::numeric_limits<float>::quiet_NaN();
  expectInvalid(p, "top_p must be in (0, 1], got nan");
}

// Tests that a negative top_k is rejected (0 disables top-k).
TEST(SamplingParams, RejectsNegativeTopK) {
  SamplingParams p;
  p.top_k = -1;
  expectInvalid(p, "top_k must be >= 0 (0 disables it), got -1");
}

// Tests that a negative max_tokens is rejected.
TEST(SamplingParams, RejectsNegativeMaxTokens) {
  SamplingParams p;
  p.max_tokens = -3;
  expectInvalid(p, "max_tokens must be >= 0 (0: no limit), got -3");
}

// Tests that min_tokens is non-negative and at most max_tokens (when set).
TEST(SamplingParams, RejectsBadMinTokens) {
  SamplingParams p;
  p.min_tokens = -1;
  expectInvalid(p, "min_tokens must be >= 0, got -1");
  p.min_tokens = 5;
  p.max_tokens = 4;
  expectInvalid(p, "min_tokens 5 exceeds max_tokens 4");
  p.max_tokens = 0; // no limit
  EXPECT_TRUE(validateSamplingParams(p).ok());
}

// Tests that empty and non-UTF-8 stop strings are rejected with their index.
TEST(SamplingParams, RejectsBadStopStrings) {
  SamplingParams p;
  p.stop = {"ok", ""};
  expectInvalid(p, "stop string 1 is empty");
  p.stop = {"\xE6\x97"}; // a truncated character
  expectInvalid(p, "stop string 0 is not valid UTF-8");
}

// Tests that negative stop token ids, and ids past a given vocabulary, are
// rejected.
TEST(SamplingParams, RejectsBadStopTokenIds) {
  SamplingParams p;
  p.stop_token_ids = {5, -2};
  expectInvalid(p, "stop token id must be >= 0, got -2");
  p.stop_token_ids = {100};
  EXPECT_TRUE(validateSamplingParams(p).ok()); // no vocabulary given
  expectInvalid(p, "stop token id 100 is outside the vocabulary of 100 ids",
                100);
}

} // namespace
} // namespace strata::runtime
