//===- metrics_test.cpp - tests of the serving benchmark metrics ----------===//

#include "runtime/bench_serve/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::runtime::bench_serve {
namespace {

// Tests numpy's linear percentile: for [1, 2, 3, 4] the median is 2.5, p90
// 3.7 and p99 3.97 (np.percentile([1, 2, 3, 4], [50, 90, 99])).
TEST(BenchServeMetricsTest, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
  LatencyStats s = latencyStats(v);
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(1.25));
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
}

// Tests every metric on two completed requests and one failed one with
// known timings: TPOT = (E2E - TTFT) / (tokens - 1), ITL pooled over
// requests, throughputs over the duration, the failed request only counted.
TEST(BenchServeMetricsTest, ComputesVllmMetrics) {
  RequestRecord a;
  a.ok = true;
  a.ttft = 0.2;
  a.e2e = 0.5; // 4 tokens: TPOT 0.1
  a.itl = {0.1, 0.1, 0.1};
  a.prompt_tokens = 10;
  a.output_tokens = 4;
  a.expected_output_tokens = 4;
  RequestRecord b;
  b.ok = true;
  b.ttft = 0.4;
  b.e2e = 1.0; // 3 tokens: TPOT 0.3
  b.itl = {0.2, 0.4};
  b.prompt_tokens = 30;
  b.output_tokens = 3;
  b.expected_output_tokens = 8; // stopped early
  RequestRecord c;
  c.error = "HTTP 500: engine failure";
  c.prompt_tokens = 1000;
  BenchMetrics m = computeMetrics({a, b, c}, 2.0);
  EXPECT_EQ(m.completed, 2u);
  EXPECT_EQ(m.failed, 1u);
  EXPECT_EQ(m.short_outputs, 1u);
  EXPECT_EQ(m.total_input_tokens, 40);
  EXPECT_EQ(m.total_output_tokens, 7);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.input_throughput, 20.0);
  EXPECT_DOUBLE_EQ(m.output_throughput, 3.5);
  EXPECT_DOUBLE_EQ(m.total_throughput, 23.5);
  EXPECT_DOUBLE_EQ(m.ttft.mean, 0.3);
  EXPECT_DOUBLE_EQ(m.ttft.median, 0.3);
  EXPECT_NEAR(m.tpot.mean, 0.2, 1e-15);
  EXPECT_NEAR(m.tpot.p90, 0.1 + 0.9 * 0.2, 1e-15);
  EXPECT_EQ(m.itl.count, 5u);
  EXPECT_DOUBLE_EQ(m.itl.median, 0.1);
  EXPECT_NEAR(m.itl.p99, 0.2 + 0.96 * 0.2, 1e-15); // rank 3.96 of 5
  EXPECT_DOUBLE_EQ(m.e2e.max, 1.0);
}

// Tests that a one-token output has no TPOT and an empty run divides by
// nothing.
TEST(BenchServeMetricsTest, EdgeCases) {
  RequestRecord one;
  one.ok = true;
  one.ttft = one.e2e = 0.3;
  one.output_tokens = 1;
  BenchMetrics m = computeMetrics({one}, 0.3);
  EXPECT_EQ(m.tpot.count, 0u);
  EXPECT_EQ(m.ttft.count, 1u);
  BenchMetrics empty = computeMetrics({}, 0);
  EXPECT_EQ(empty.completed, 0u);
  EXPECT_EQ(empty.request_throughput, 0);
}

} // namespace
} // namespace strata::runtime::bench_serve
