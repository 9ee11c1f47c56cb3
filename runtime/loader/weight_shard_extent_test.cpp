//===- weight_shard_extent_test.cpp - tests of WeightShard's rule ---------===//

#include "runtime/schemas/weight_shard_extent.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// Tests a plain split: part k at k * extent, the tensor parts * extent.
TEST(WeightShardExtent, PlainSplit) {
  EXPECT_EQ(weightShardOffset(3, 64, 0, 0), 192);
  EXPECT_EQ(weightShardWholeExtent(4, 64, 0, 0), 256);
  EXPECT_TRUE(isWellFormedScaleShard(64, 0, 0));
  EXPECT_FALSE(isWellFormedScaleShard(64, 128, 0));
}

// Tests the scales of data parts of whole blocks: 256-row parts in blocks
// of 128 read 2 scale rows each, rank k from 2k; 4 parts: 8 rows.
TEST(WeightShardExtent, WholeBlocks) {
  EXPECT_EQ(weightShardOffset(3, 2, 256, 128), 6);
  EXPECT_EQ(weightShardWholeExtent(4, 2, 256, 128), 8);
  EXPECT_TRUE(isWellFormedScaleShard(2, 256, 128));
  EXPECT_FALSE(isWellFormedScaleShard(1, 256, 128));
}

// Tests the scales of data parts inside one block: 32-row parts of a
// 128-row block all read that block's row (ranks 0-3 row 0, 4-7 row 1);
// 8 parts of 32 rows: 2 scale rows.
TEST(WeightShardExtent, PartsInsideOneBlock) {
  EXPECT_EQ(weightShardOffset(3, 1, 32, 128), 0);
  EXPECT_EQ(weightShardOffset(4, 1, 32, 128), 1);
  EXPECT_EQ(weightShardWholeExtent(8, 1, 32, 128), 2);
  EXPECT_EQ(weightShardWholeExtent(2, 1, 32, 128), 1);
  EXPECT_TRUE(isWellFormedScaleShard(1, 32, 128));
}

// Tests that a data part straddling blocks, or a non-positive data part,
// is not well formed.
TEST(WeightShardExtent, Straddling) {
  EXPECT_FALSE(isWellFormedScaleShard(1, 96, 128));
  EXPECT_FALSE(isWellFormedScaleShard(2, 192, 128));
  EXPECT_FALSE(isWellFormedScaleShard(0, 0, 128));
  EXPECT_FALSE(isWellFormedScaleShard(1, 64, -128));
}

} // namespace
} // namespace strata
