//===- roofline_test.cpp - tests of the roofline helpers and matrix flags -===//
//
// Part of strata. computeStepRoofline on real artifacts is checked by
// test/runtime/bench/bench.test (check_matrix.py); here the pieces that need
// no artifact.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_matrix.h"
#include "runtime/bench/roofline.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests that the floor is the larger of the memory and compute times, and
// the memory time alone without a GEMM rate.
TEST(Roofline, FloorIsTheSlowerCeiling) {
  StepRoofline r;
  r.weight_bytes = 3e9;
  r.expert_bytes = 1e9;
  r.state_bytes = 0;
  r.flops = 8e12;
  EXPECT_DOUBLE_EQ(r.bytes(), 4e9);
  EXPECT_DOUBLE_EQ(r.floorSeconds(4e12, 0), 1e-3);
  EXPECT_DOUBLE_EQ(r.floorSeconds(4e12, 4e15), 2e-3);
  EXPECT_DOUBLE_EQ(r.floorSeconds(4e12, 16e15), 1e-3);
}

// Tests that repeated expert ids count once.
TEST(Roofline, CountsDistinctExperts) {
  EXPECT_EQ(countDistinctExperts({}), 0u);
  EXPECT_EQ(countDistinctExperts({3, 1, 3, 7, 1, 1}), 3u);
}

// Tests the matrix's list flags: values, and each malformed spelling.
TEST(BenchMatrix, ParsesLists) {
  auto batches = parsePositiveList("--batches", "1,8,32");
  ASSERT_TRUE(batches.ok());
  EXPECT_EQ(*batches, (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(parsePositiveList("--batches", "1,,2").status().message(),
            "--batches: '' is not an integer");
  EXPECT_EQ(parsePositiveList("--batches", "4,-1").status().message(),
            "--batches: -1 is not positive");
  auto prefill = parsePrefillList("--prefill", "1x2048,4x512");
  ASSERT_TRUE(prefill.ok());
  ASSERT_EQ(prefill->size(), 2u);
  EXPECT_EQ((*prefill)[1].requests, 4);
  EXPECT_EQ((*prefill)[1].tokens, 512);
  EXPECT_EQ(parsePrefillList("--prefill", "1x").status().message(),
            "--prefill: '' is not an integer");
  EXPECT_EQ(parsePrefillList("--prefill", "0x8").status().message(),
            "--prefill: '0x8' needs positive requests and tokens");
}

} // namespace
} // namespace strata::runtime
