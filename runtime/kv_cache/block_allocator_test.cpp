//===- block_allocator_test.cpp - tests of the KV block pool --------------===//

#include "runtime/kv_cache/block_allocator.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests that a fresh pool hands out 0, 1, 2, ... and counts used blocks.
TEST(BlockAllocator, AllocateInOrder) {
  BlockAllocator blocks(4);
  EXPECT_EQ(*blocks.allocate(), 0u);
  EXPECT_EQ(*blocks.allocate(), 1u);
  EXPECT_EQ(blocks.usedBlocks(), 2u);
  EXPECT_EQ(blocks.freeBlocks(), 2u);
  ASSERT_TRUE(blocks.release(0).ok());
  EXPECT_EQ(blocks.usedBlocks(), 1u);
  EXPECT_EQ(*blocks.allocate(), 0u);
}

// Tests the out-of-blocks error, and that a multi-block allocation is all or
// nothing.
TEST(BlockAllocator, OutOfBlocks) {
  BlockAllocator blocks(3);
  std::vector<BlockId> table;
  ASSERT_TRUE(blocks.allocate(2, table).ok());
  Status status = blocks.allocate(2, table);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "out of kv blocks: need 2, 1 free of 3 (2 in use)");
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(blocks.usedBlocks(), 2u);
  ASSERT_TRUE(blocks.allocate().ok());
  StatusOr<BlockId> none = blocks.allocate();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "out of kv blocks: need 1, 0 free of 3 (3 in use)");
}

// Tests reference counting: a block returns to the pool only when the last
// reference is dropped; over-release and retaining a free block are errors.
TEST(BlockAllocator, RefCounts) {
  BlockAllocator blocks(2);
  BlockId b = *blocks.allocate();
  ASSERT_TRUE(blocks.retain(b).ok());
  EXPECT_EQ(blocks.refCount(b), 2u);
  ASSERT_TRUE(blocks.release(b).ok());
  EXPECT_EQ(blocks.usedBlocks(), 1u);
  ASSERT_TRUE(blocks.release(b).ok());
  EXPECT_EQ(blocks.usedBlocks(), 0u);
  EXPECT_EQ(blocks.freeBlocks(), 2u);
  Status over = blocks.release(b);
  EXPECT_EQ(over.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(over.message(), "release of kv block 0 with refcount 0");
  EXPECT_EQ(blocks.retain(b).code(), StatusCode::kFailedPrecondition);
  Status range = blocks.retain(7);
  EXPECT_EQ(range.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(range.message(), "retain of kv block 7: only 2 blocks");
}

// Tests that cached blocks outlive their last reference (cached idle) and
// are evicted least recently released first, only once no block is free,
// with the eviction callback called; in-use cached blocks are never evicted.
TEST(BlockAllocator, CachedIdleLruEviction) {
  BlockAllocator blocks(4);
  std::vector<BlockId> evicted;
  blocks.setEvictionCallback([&](BlockId b) { evicted.push_back(b); });
  std::vector<BlockId> t;
  ASSERT_TRUE(blocks.allocate(4, t).ok());
  for (BlockId b : {0u, 1u, 2u})
    ASSERT_TRUE(blocks.markCached(b).ok());
  // Release order 2, 0, 1 -> LRU order 2, 0, 1. Block 3 is uncached.
  for (BlockId b : {2u, 3u, 0u, 1u})
    ASSERT_TRUE(blocks.release(b).ok());
  EXPECT_EQ(blocks.usedBlocks(), 0u);
  EXPECT_EQ(blocks.cachedIdleBlocks(), 3u);
  EXPECT_EQ(blocks.freeBlocks(), 1u);
  EXPECT_EQ(blocks.idleLruOrder(), (std::vector<BlockId>{2, 0, 1}));
  // The free block goes first, without evicting.
  EXPECT_EQ(*blocks.allocate(), 3u);
  EXPECT_TRUE(evicted.empty());
  // A hit on block 0 takes it out of the LRU list.
  ASSERT_TRUE(blocks.retain(0).ok());
  EXPECT_EQ(blocks.idleLruOrder(), (std::vector<BlockId>{2, 1}));
  EXPECT_EQ(*blocks.allocate(), 2u);
  EXPECT_EQ(evicted, (std::vector<BlockId>{2}));
  EXPECT_FALSE(blocks.isCached(2));
  EXPECT_EQ(*blocks.allocate(), 1u);
  EXPECT_EQ(evicted, (std::vector<BlockId>{2, 1}));
  // Block 0 is cached but in use: not evictable.
  EXPECT_EQ(blocks.allocate().status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(blocks.isCached(0));
}

// Tests that marking requires a block in use and unmarking an idle block
// frees it.
TEST(BlockAllocator, MarkAndUnmarkCached) {
  BlockAllocator blocks(2);
  EXPECT_EQ(blocks.markCached(0).code(), StatusCode::kFailedPrecondition);
  BlockId b = *blocks.allocate();
  ASSERT_TRUE(blocks.markCached(b).ok());
  ASSERT_TRUE(blocks.release(b).ok());
  EXPECT_EQ(blocks.cachedIdleBlocks(), 1u);
  ASSERT_TRUE(blocks.unmarkCached(b).ok());
  EXPECT_EQ(blocks.cachedIdleBlocks(), 0u);
  EXPECT_EQ(blocks.freeBlocks(), 2u);
}

} // namespace
} // namespace strata::runtime
