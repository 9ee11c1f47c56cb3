//===- step_bench_test.cpp - tests of the per-kernel aggregation ----------===//
//
// Part of strata. Tests aggregateTimings and the markdown report on
// hand-made timings; test/runtime/bench runs the whole tool.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/step_bench.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

DispatchTiming timing(size_t dispatch, size_t kernel, double seconds,
                      uint64_t bytes) {
  DispatchTiming t;
  t.dispatch_index = dispatch;
  t.kernel_index = kernel;
  t.seconds = seconds;
  t.bound_bytes = bytes;
  return t;
}

// Tests that two steps of three dispatches (kernels 0 and 2 share a name)
// aggregate into per-step counts and times, shares of the summed time,
// mean bytes per dispatch and bytes over time, largest time first.
TEST(StepBench, AggregatesByKernelName) {
  std::vector<DispatchTiming> timings;
  for (int step = 0; step < 2; ++step) {
    timings.push_back(timing(0, 0, 1.0, 100));
    timings.push_back(timing(1, 1, 6.0, 600));
    timings.push_back(timing(2, 2, 3.0, 300));
  }
  auto stats = aggregateTimings(timings, {"matmul", "attention", "matmul"}, 2);
  ASSERT_TRUE(stats.ok()) << stats.status().toString();
  ASSERT_EQ(stats->size(), 2u);
  const KernelStats &first = (*stats)[0], &second = (*stats)[1];
  EXPECT_EQ(first.name, "attention");
  EXPECT_EQ(first.dispatches, 1u);
  EXPECT_DOUBLE_EQ(first.seconds, 6.0);
  EXPECT_DOUBLE_EQ(first.share, 0.6);
  EXPECT_DOUBLE_EQ(first.bytes_per_dispatch, 600.0);
  EXPECT_DOUBLE_EQ(first.bytes_per_second, 100.0);
  EXPECT_EQ(second.name, "matmul");
  EXPECT_EQ(second.dispatches, 2u);
  EXPECT_DOUBLE_EQ(second.seconds, 4.0);
  EXPECT_DOUBLE_EQ(second.share, 0.4);
  EXPECT_DOUBLE_EQ(second.bytes_per_dispatch, 200.0);
  EXPECT_DOUBLE_EQ(second.bytes_per_second, 100.0);
}

// Tests the errors: a kernel index outside the name list, a non-positive
// repeat count.
TEST(StepBench, RejectsBadInput) {
  auto unknown = aggregateTimings({timing(0, 3, 1.0, 1)}, {"a"}, 1);
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("kernel 3"), std::string::npos);
  EXPECT_EQ(aggregateTimings({}, {"a"}, 0).status().code(),
            StatusCode::kInvalidArgument);
}

// Tests that the markdown report has a row per kernel, a total row, and the
// ceiling column only when a ceiling is known; ratios are of the copy
// bandwidth and of the ceiling.
TEST(StepBench, FormatsMarkdown) {
  StepBenchReport report;
  report.step = "decode";
  report.target = "sm_90";
  report.dispatches = 3;
  report.dispatch_seconds = 2e-6;
  report.copy_bytes = 1 << 30;
  report.copy_bytes_per_second = 4e12;
  report.ceiling_bytes_per_second = kH200BandwidthCeiling;
  KernelStats k;
  k.name = "gemv";
  k.dispatches = 3;
  k.seconds = 2e-6;
  k.share = 1.0;
  k.bytes_per_dispatch = 1e6;
  k.bytes_per_second = 1.5e12;
  report.kernels.push_back(k);
  std::string text = formatMarkdown(report);
  EXPECT_NE(text.find("| kernel | dispatches | time/step (us) | share | "
                      "bytes/dispatch | GB/s | of copy | of ceiling |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| gemv | 3 | 2.0 | 100.0% | 1.00 MB | 1500.00 | "
                      "37.50% | 36.59% |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| **total** | 3 | 2.0 | 100.0% |"), std::string::npos)
      << text;
  report.ceiling_bytes_per_second = 0;
  text = formatMarkdown(report);
  EXPECT_EQ(text.find("of ceiling"), std::string::npos) << text;
}

} // namespace
} // namespace strata::runtime
