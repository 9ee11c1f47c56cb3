//===- prefix_cache_test.cpp - tests of the prefix cache rules ------------===//

#include "runtime/kv_cache/prefix_cache.h"

#include <numeric>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

constexpr uint64_t kB = 4; // page size in tokens (a multiple of kpool 4)

std::vector<int32_t> iota(size_t n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

/// A block pool, a snapshot pool and a prefix cache on them.
class PrefixCacheTest : public ::testing::Test {
protected:
  void make(PrefixCacheOptions options, uint32_t blocks = 16,
            uint32_t snapshots = 2) {
    cache_.reset();
    blocks_ = std::make_unique<BlockAllocator>(blocks);
    snapshots_ =
        std::make_unique<SlotAllocator>("kda snapshot slot", 100, snapshots);
    options.page_size_tokens = kB;
    StatusOr<std::unique_ptr<PrefixCache>> cache =
        PrefixCache::create(*blocks_, snapshots_.get(), options);
    ASSERT_TRUE(cache.ok()) << cache.status().toString();
    cache_ = std::move(*cache);
  }

  /// Writes and commits the full blocks of `tokens` like a finished request
  /// would, attaching a snapshot at each of `snapshot_at` (token counts), then
  /// drops the request's references. Returns the block ids.
  std::vector<BlockId> commitChain(const std::vector<int32_t> &tokens,
                                   std::vector<uint64_t> snapshot_at = {},
                                   bool release = true) {
    std::vector<BlockId> table;
    uint64_t parent = PrefixCache::kRootHash;
    for (uint64_t j = 0; (j + 1) * kB <= tokens.size(); ++j) {
      BlockId b = *blocks_->allocate();
      table.push_back(b);
      PrefixCache::Committed c =
          *cache_->commitBlock(parent, TokenSpan(tokens).sub(j * kB, kB), b);
      EXPECT_FALSE(c.collision);
      parent = c.hash;
      for (uint64_t t : snapshot_at)
        if (t == (j + 1) * kB)
          EXPECT_TRUE(cache_->attachSnapshot(parent,
                                             *cache_->allocateSnapshotSlot()));
    }
    if (release)
      for (size_t j = table.size(); j > 0; --j)
        EXPECT_TRUE(blocks_->release(table[j - 1]).ok());
    return table;
  }

  std::unique_ptr<BlockAllocator> blocks_;
  std::unique_ptr<SlotAllocator> snapshots_;
  std::unique_ptr<PrefixCache> cache_;
};

// Tests that the chain hash depends on the parent and on every token.
TEST(PrefixCacheHash, Chain) {
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5};
  uint64_t root = PrefixCache::kRootHash;
  EXPECT_EQ(PrefixCache::hashBlock(root, a), PrefixCache::hashBlock(root, a));
  EXPECT_NE(PrefixCache::hashBlock(root, a), PrefixCache::hashBlock(root, b));
  EXPECT_NE(PrefixCache::hashBlock(root, a),
            PrefixCache::hashBlock(root + 1, a));
  std::vector<int32_t> swapped = {2, 1, 3, 4};
  EXPECT_NE(PrefixCache::hashBlock(root, a),
            PrefixCache::hashBlock(root, swapped));
}

// Tests that blocks are not hittable until committed.
TEST_F(PrefixCacheTest, NotHittableBeforeCommit) {
  make({});
  std::vector<int32_t> prompt = iota(9);
  std::vector<BlockId> table;
  ASSERT_TRUE(blocks_->allocate(2, table).ok()); // written, not committed
  EXPECT_EQ(cache_->lookup(prompt).hit_tokens, 0u);
  PrefixCache::Committed c =
      *cache_->commitBlock(PrefixCache::kRootHash, TokenSpan(prompt).sub(0, kB),
                           table[0]);
  EXPECT_EQ(cache_->lookup(prompt).hit_tokens, 4u);
  ASSERT_TRUE(
      cache_->commitBlock(c.hash, TokenSpan(prompt).sub(kB, kB), table[1]).ok());
  PrefixMatch m = cache_->lookup(prompt);
  EXPECT_EQ(m.hit_tokens, 8u);
  EXPECT_EQ(m.blocks, table);
}

// Tests that the same block tokens after a different prefix do not hit.
TEST_F(PrefixCacheTest, SameTokensDifferentPrefix) {
  make({});
  commitChain({1, 2, 3, 4, 9, 9, 9, 9});
  std::vector<int32_t> other = {5, 6, 7, 8, 9, 9, 9, 9, 0};
  EXPECT_EQ(cache_->lookup(other).hit_tokens, 0u);
  std::vector<int32_t> same = {1, 2, 3, 4, 9, 9, 9, 9, 0};
  EXPECT_EQ(cache_->lookup(same).hit_tokens, 8u);
  EXPECT_EQ(cache_->cachedBlocks(), 2u);
}

// Tests that the last prompt token is always recomputed (h <= N - 1).
TEST_F(PrefixCacheTest, LastTokenRecomputed) {
  make({});
  std::vector<int32_t> prompt = iota(8);
  commitChain(prompt);
  PrefixMatch m = cache_->lookup(prompt);
  EXPECT_EQ(m.matched_tokens, 8u);
  EXPECT_EQ(m.hit_tokens, 4u);
  EXPECT_EQ(cache_->lookup(iota(9)).hit_tokens, 8u);
}

// Tests that with MTP the last hash-matched block is dropped.
TEST_F(PrefixCacheTest, MtpDropsLastMatchedBlock) {
  make({});
  commitChain(iota(12));
  std::vector<int32_t> prompt = iota(20); // 3 blocks match, then a miss
  EXPECT_EQ(cache_->lookup(prompt).hit_tokens, 12u);
  PrefixCacheOptions mtp;
  mtp.mtp = true;
  make(mtp);
  commitChain(iota(12));
  PrefixMatch m = cache_->lookup(prompt);
  EXPECT_EQ(m.matched_tokens, 12u);
  EXPECT_EQ(m.hit_tokens, 8u);
  EXPECT_EQ(m.blocks.size(), 2u);
  // One matched block: nothing left.
  EXPECT_EQ(cache_->lookup({1, 2, 3, 4, 0, 0}).hit_tokens, 0u);
}

// Tests that a KDA model resumes only at a resident snapshot, at a multiple
// of the checkpoint interval.
TEST_F(PrefixCacheTest, HitLimitedToSnapshotBoundary) {
  PrefixCacheOptions o;
  o.needs_snapshots = true;
  o.checkpoint_interval_tokens = 2 * kB;
  make(o);
  commitChain(iota(16), /*snapshot_at=*/{8});
  PrefixMatch m = cache_->lookup(iota(17));
  EXPECT_EQ(m.matched_tokens, 16u);
  EXPECT_EQ(m.hit_tokens, 8u); // no snapshot at 16
  ASSERT_TRUE(m.snapshot_slot.has_value());
  EXPECT_EQ(*m.snapshot_slot, 100u);
  // 12 matched tokens: 12 is not a checkpoint boundary, 8 is.
  EXPECT_EQ(cache_->lookup(iota(13)).hit_tokens, 8u);
  // Below the first snapshot nothing can be resumed.
  EXPECT_EQ(cache_->lookup(iota(8)).hit_tokens, 0u);
}

// Tests MTP together with snapshots: the drop moves the hit to the earlier
// boundary, which needs its own snapshot.
TEST_F(PrefixCacheTest, MtpWithSnapshots) {
  PrefixCacheOptions o;
  o.needs_snapshots = true;
  o.mtp = true;
  o.checkpoint_interval_tokens = 2 * kB;
  make(o);
  commitChain(iota(16), /*snapshot_at=*/{8, 16});
  PrefixMatch m = cache_->lookup(iota(17));
  EXPECT_EQ(m.matched_tokens, 16u);
  EXPECT_EQ(m.hit_tokens, 8u); // 16 - 4 = 12, down to the boundary at 8
  EXPECT_EQ(*m.snapshot_slot, 100u);
}

// Tests acquire: retains the hit blocks, pins the snapshot (not recycled
// while pinned) and counts queried and hit tokens.
TEST_F(PrefixCacheTest, AcquirePinsAndCounts) {
  PrefixCacheOptions o;
  o.needs_snapshots = true;
  o.checkpoint_interval_tokens = kB;
  make(o, 16, /*snapshots=*/1);
  commitChain(iota(8), /*snapshot_at=*/{4});
  StatusOr<PrefixMatch> m = cache_->acquire(iota(6));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->hit_tokens, 4u);
  EXPECT_EQ(blocks_->refCount(m->blocks[0]), 1u);
  EXPECT_EQ(cache_->queriedTokens(), 6u);
  EXPECT_EQ(cache_->hitTokens(), 4u);
  // The only snapshot slot is pinned: no slot for a new checkpoint.
  StatusOr<uint32_t> slot = cache_->allocateSnapshotSlot();
  ASSERT_FALSE(slot.ok());
  EXPECT_EQ(slot.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(cache_->unpinSnapshot(100).ok());
  EXPECT_EQ(cache_->unpinSnapshot(100).code(), StatusCode::kFailedPrecondition);
  // Unpinned: recycled, and the old boundary no longer resumes.
  EXPECT_EQ(*cache_->allocateSnapshotSlot(), 100u);
  EXPECT_EQ(cache_->cachedSnapshots(), 0u);
  EXPECT_EQ(cache_->lookup(iota(6)).hit_tokens, 0u);
}

// Tests that snapshots are recycled least recently used first.
TEST_F(PrefixCacheTest, SnapshotLru) {
  PrefixCacheOptions o;
  o.needs_snapshots = true;
  o.checkpoint_interval_tokens = kB;
  make(o, 16, /*snapshots=*/2);
  commitChain({1, 1, 1, 1, 0}, {4});
  commitChain({2, 2, 2, 2, 0}, {4});
  // Using the first one makes the second the least recently used.
  StatusOr<PrefixMatch> m = cache_->acquire({1, 1, 1, 1, 0});
  ASSERT_EQ(m->hit_tokens, 4u);
  ASSERT_TRUE(cache_->unpinSnapshot(*m->snapshot_slot).ok());
  uint32_t recycled = *cache_->allocateSnapshotSlot();
  EXPECT_EQ(recycled, 101u);
  EXPECT_EQ(cache_->lookup({2, 2, 2, 2, 0}).hit_tokens, 0u);
  EXPECT_EQ(cache_->lookup({1, 1, 1, 1, 0}).hit_tokens, 4u);
  ASSERT_TRUE(cache_->releaseSnapshotSlot(recycled).ok());
  EXPECT_EQ(cache_->releaseSnapshotSlot(100).code(),
            StatusCode::kFailedPrecondition); // attached, not pending
}

// Tests LRU eviction of idle cached blocks: the least recently released
// chain goes first, leaves before their parents, and an evicted block no
// longer hits; blocks in use are never evicted.
TEST_F(PrefixCacheTest, LruEvictionOrder) {
  make({}, /*blocks=*/4);
  std::vector<BlockId> old_chain = commitChain({1, 1, 1, 1, 2, 2, 2, 2});
  std::vector<BlockId> new_chain = commitChain({3, 3, 3, 3, 4, 4, 4, 4});
  EXPECT_EQ(blocks_->idleLruOrder(),
            (std::vector<BlockId>{old_chain[1], old_chain[0], new_chain[1],
                                  new_chain[0]}));
  // Hold the new chain, then allocate: the old chain's leaf goes first.
  StatusOr<PrefixMatch> held = cache_->acquire({3, 3, 3, 3, 4, 4, 4, 4, 0});
  ASSERT_EQ(held->hit_tokens, 8u);
  EXPECT_EQ(*blocks_->allocate(), old_chain[1]);
  EXPECT_EQ(cache_->lookup({1, 1, 1, 1, 2, 2, 2, 2, 0}).hit_tokens, 4u);
  EXPECT_EQ(*blocks_->allocate(), old_chain[0]);
  EXPECT_EQ(cache_->lookup({1, 1, 1, 1, 2, 2, 2, 2, 0}).hit_tokens, 0u);
  EXPECT_EQ(cache_->cachedBlocks(), 2u);
  EXPECT_EQ(blocks_->allocate().status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(cache_->lookup({3, 3, 3, 3, 4, 4, 4, 4, 0}).hit_tokens, 8u);
}

// Tests that a second commit of the same content keeps the first entry.
TEST_F(PrefixCacheTest, DuplicateCommitKeepsFirst) {
  make({});
  std::vector<BlockId> first = commitChain(iota(4), {}, /*release=*/false);
  std::vector<BlockId> second = commitChain(iota(4), {}, /*release=*/false);
  EXPECT_TRUE(blocks_->isCached(first[0]));
  EXPECT_FALSE(blocks_->isCached(second[0]));
  EXPECT_EQ(cache_->lookup(iota(5)).blocks, first);
}

uint64_t weakHash(uint64_t parent, TokenSpan) { return parent + 1; }

// Tests that a hash collision is a miss, never a wrong hit, and that the
// colliding chain is reported so the caller stops registering it.
TEST_F(PrefixCacheTest, CollisionIsMiss) {
  PrefixCacheOptions o;
  o.hash_function = weakHash;
  make(o);
  commitChain({1, 1, 1, 1});
  EXPECT_EQ(cache_->lookup({1, 1, 1, 1, 0}).hit_tokens, 4u);
  EXPECT_EQ(cache_->lookup({2, 2, 2, 2, 0}).hit_tokens, 0u);
  BlockId b = *blocks_->allocate();
  PrefixCache::Committed c =
      *cache_->commitBlock(PrefixCache::kRootHash, {std::vector<int32_t>{2, 2, 2, 2}}, b);
  EXPECT_TRUE(c.collision);
  EXPECT_FALSE(blocks_->isCached(b));
}

// Tests the creation errors.
TEST(PrefixCacheCreate, Errors) {
  BlockAllocator blocks(4);
  PrefixCacheOptions o;
  StatusOr<std::unique_ptr<PrefixCache>> zero =
      PrefixCache::create(blocks, nullptr, o);
  EXPECT_EQ(zero.status().message(), "prefix cache page_size_tokens is 0");
  o.page_size_tokens = 64;
  o.checkpoint_interval_tokens = 96;
  StatusOr<std::unique_ptr<PrefixCache>> interval =
      PrefixCache::create(blocks, nullptr, o);
  EXPECT_EQ(interval.status().message(),
            "kda checkpoint interval 96 tokens is not a multiple of the page "
            "size 64");
  o.checkpoint_interval_tokens = 0;
  o.needs_snapshots = true;
  StatusOr<std::unique_ptr<PrefixCache>> no_slots =
      PrefixCache::create(blocks, nullptr, o);
  EXPECT_EQ(no_slots.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(no_slots.status().message(),
            "prefix caching of a model with kda layers needs kda snapshot "
            "slots, got 0");
  o.needs_snapshots = false;
  StatusOr<std::unique_ptr<PrefixCache>> ok =
      PrefixCache::create(blocks, nullptr, o);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->options().checkpoint_interval_tokens, 1024u); // 16 pages
}

} // namespace
} // namespace strata::runtime
