//===- kv_cache_test.cpp - tests of KvCache and SequenceCache -------------===//

#include "runtime/kv_cache/kv_cache.h"

#include <numeric>

#include "runtime/eval/eval_client.h"
#include "runtime/kv_cache/test_cache_layout.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

constexpr uint64_t kB = 4;

std::vector<int32_t> iota(size_t n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

/// A tiny model: page 4 tokens, one 64-byte latent page per block, one
/// 64-byte ring per request, one KDA layer of 64 + 64 bytes (or none).
CacheGeometry tinyGeometry(bool kda) {
  CacheGeometry g;
  g.alignment = 64;
  g.page_size_tokens = kB;
  g.latent_layers = 1;
  g.latent_page_bytes = 64;
  g.ring_layers = 1;
  g.ring_bytes_per_layer = 64;
  if (kda) {
    g.kda_layers = 1;
    g.kda_recurrent_bytes_per_layer = 64;
    g.kda_conv_bytes_per_layer = 64;
  }
  return g;
}

/// Options giving exactly `blocks` blocks for the tiny geometry.
KvCacheOptions tinyOptions(bool kda, uint64_t blocks, uint32_t requests,
                           uint32_t snapshots) {
  KvCacheOptions o;
  o.memory.max_requests = requests;
  o.memory.num_snapshot_slots = snapshots;
  o.memory.memory_budget_bytes =
      blocks * 64 + requests * 64 + (kda ? (requests + snapshots) * 128 : 0);
  o.checkpoint_interval_tokens = 2 * kB;
  return o;
}

std::unique_ptr<KvCache> makeCache(bool kda, uint64_t blocks,
                                   uint32_t requests = 4,
                                   uint32_t snapshots = 4, bool mtp = false) {
  KvCacheOptions o = tinyOptions(kda, blocks, requests, snapshots);
  o.mtp = mtp;
  StatusOr<std::unique_ptr<KvCache>> cache =
      KvCache::create(tinyGeometry(kda), o);
  EXPECT_TRUE(cache.ok()) << cache.status().toString();
  EXPECT_EQ((*cache)->plan().num_blocks, blocks);
  return std::move(*cache);
}

/// Admits `prompt`, failing the test on an error.
std::unique_ptr<SequenceCache> admitOk(KvCache &cache, TokenSpan prompt,
                                       const AdmitOptions &options = {}) {
  StatusOr<std::unique_ptr<SequenceCache>> seq = cache.admit(prompt, options);
  EXPECT_TRUE(seq.ok()) << seq.status().toString();
  return seq.ok() ? std::move(seq).value() : nullptr;
}

/// Runs a whole prefill of `seq`'s prompt in one step and commits it,
/// writing (pretend) every pending snapshot.
void prefill(SequenceCache &seq) {
  ASSERT_TRUE(seq.reserve(seq.numTokens()).ok());
  ASSERT_TRUE(seq.commitFullBlocks(seq.numTokens()).ok());
}

// Tests the life of one request: admit, grow, commit, release; afterwards
// no block or slot is in use and the committed full blocks stay cached.
TEST(KvCache, AdmitGrowCommitRelease) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  StatusOr<std::unique_ptr<SequenceCache>> seq = cache->admit(iota(10));
  ASSERT_TRUE(seq.ok());
  SequenceCache &s = **seq;
  EXPECT_EQ(s.hitTokens(), 0u);
  EXPECT_EQ(s.stateSlot(), 0u);
  ASSERT_TRUE(s.reserve(10).ok());
  EXPECT_EQ(s.blockTable(), (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(s.capacityTokens(), 12u);
  ASSERT_TRUE(s.commitFullBlocks(10).ok());
  // Decode: token 10 sampled, then computed.
  ASSERT_TRUE(s.appendTokens({std::vector<int32_t>{42}}).ok());
  ASSERT_TRUE(s.reserve(11).ok());
  ASSERT_TRUE(s.commitFullBlocks(11).ok());
  ASSERT_TRUE(s.appendTokens({std::vector<int32_t>{43}}).ok());
  ASSERT_TRUE(s.reserve(12).ok());
  ASSERT_TRUE(s.commitFullBlocks(12).ok());
  EXPECT_EQ(cache->blocks().usedBlocks(), 3u);
  EXPECT_EQ(cache->prefixCache()->cachedBlocks(), 3u);
  s.release();
  EXPECT_TRUE(s.released());
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
  EXPECT_EQ(cache->blocks().cachedIdleBlocks(), 3u);
  EXPECT_EQ(cache->stateSlots().usedSlots(), 0u);
  s.release(); // idempotent
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
}

// Tests that a second request with the same prefix hits the committed
// blocks, sharing them (refcount 2) and starting with numComputed() = h.
TEST(KvCache, SecondRequestHits) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(9));
  prefill(*a);
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(11));
  EXPECT_EQ(b->hitTokens(), 8u);
  EXPECT_EQ(b->numComputed(), 8u);
  EXPECT_EQ(b->blockTable(), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(cache->blocks().refCount(0), 2u);
  EXPECT_EQ(cache->stats().prefix_queried_tokens, 20u);
  EXPECT_EQ(cache->stats().prefix_hit_tokens, 8u);
  ASSERT_TRUE(b->reserve(11).ok());
  EXPECT_EQ(b->blockTable().size(), 3u);
  a.reset(); // destruction releases
  b.reset();
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
}

// Tests that an aborted request (released before its blocks were committed)
// frees everything and leaves nothing hittable.
TEST(KvCache, AbortBeforeCommit) {
  std::unique_ptr<KvCache> cache = makeCache(true, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(17));
  ASSERT_TRUE(a->reserve(17).ok());
  EXPECT_EQ(a->pendingSnapshots().size(), 2u); // boundaries 8 and 16
  a->release();
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
  EXPECT_EQ(cache->blocks().cachedIdleBlocks(), 0u);
  EXPECT_EQ(cache->snapshotSlots()->usedSlots(), 0u);
  EXPECT_EQ(cache->stateSlots().usedSlots(), 0u);
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(17));
  EXPECT_EQ(b->hitTokens(), 0u);
}

// Tests the out-of-blocks error of reserve: all or nothing, the sequence
// unchanged; another request's release makes room.
TEST(KvCache, OutOfBlocks) {
  std::unique_ptr<KvCache> cache = makeCache(false, 4);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(12));
  ASSERT_TRUE(a->reserve(12).ok());
  std::unique_ptr<SequenceCache> b = admitOk(*cache, {100, 101});
  ASSERT_TRUE(b->reserve(4).ok());
  Status status = b->reserve(9);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(status.message(), "reserve of 9 positions: out of kv blocks: need "
                              "2, 0 free of 4 (4 in use)");
  EXPECT_EQ(b->blockTable().size(), 1u);
  a->release(); // nothing committed: blocks go back to the free list
  ASSERT_TRUE(b->reserve(9).ok());
  EXPECT_EQ(b->blockTable().size(), 3u);
}

// Tests that admission fails cleanly when max_requests are running, and for
// an empty prompt.
TEST(KvCache, StateSlotsExhausted) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8, /*requests=*/2);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, {1});
  std::unique_ptr<SequenceCache> b = admitOk(*cache, {2});
  EXPECT_EQ(b->stateSlot(), 1u);
  StatusOr<std::unique_ptr<SequenceCache>> c = cache->admit({3});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.status().message(), "no free state slot: 2 of 2 in use");
  a.reset();
  StatusOr<std::unique_ptr<SequenceCache>> d = cache->admit({3});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->stateSlot(), 0u);
  StatusOr<std::unique_ptr<SequenceCache>> empty =
      cache->admit(std::vector<int32_t>{});
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

// Tests the commit preconditions.
TEST(KvCache, CommitErrors) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(6));
  Status beyond_capacity = a->commitFullBlocks(4);
  EXPECT_EQ(beyond_capacity.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(beyond_capacity.message(),
            "commit of 4 computed tokens beyond the 0 positions of the block "
            "table");
  ASSERT_TRUE(a->reserve(12).ok());
  Status beyond_tokens = a->commitFullBlocks(7);
  EXPECT_EQ(beyond_tokens.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(beyond_tokens.message(),
            "commit of 7 computed tokens, but only 6 token ids are committed");
  ASSERT_TRUE(a->commitFullBlocks(6).ok());
  Status backwards = a->commitFullBlocks(5);
  EXPECT_EQ(backwards.code(), StatusCode::kInvalidArgument);
  a->release();
  EXPECT_EQ(a->reserve(12).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->commitFullBlocks(6).code(), StatusCode::kFailedPrecondition);
}

// Tests KDA snapshots end to end: reserve names the boundaries to snapshot,
// commit makes them resumable, a hit resumes at the last snapshot boundary
// with the snapshot pinned until the first step commits.
TEST(KvCache, SnapshotsAndRestore) {
  std::unique_ptr<KvCache> cache = makeCache(true, 16);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(13));
  ASSERT_TRUE(a->reserve(8).ok()); // chunk 1: [0, 8)
  ASSERT_EQ(a->pendingSnapshots().size(), 1u);
  EXPECT_EQ(a->pendingSnapshots()[0].tokens, 8u);
  uint32_t slot8 = a->pendingSnapshots()[0].kda_slot;
  EXPECT_EQ(slot8, 4u); // snapshot slots follow the 4 state slots
  ASSERT_TRUE(a->commitFullBlocks(8).ok());
  EXPECT_TRUE(a->pendingSnapshots().empty());
  ASSERT_TRUE(a->reserve(13).ok()); // chunk 2: [8, 13), no boundary
  EXPECT_TRUE(a->pendingSnapshots().empty());
  ASSERT_TRUE(a->commitFullBlocks(13).ok());
  a.reset();
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
  // 12 tokens matched by hash, 8 resumable (snapshot boundary).
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(14));
  EXPECT_EQ(b->hitTokens(), 8u);
  ASSERT_TRUE(b->restoreSnapshotSlot().has_value());
  EXPECT_EQ(*b->restoreSnapshotSlot(), slot8);
  ASSERT_TRUE(b->reserve(14).ok());
  ASSERT_TRUE(b->commitFullBlocks(14).ok());
  EXPECT_FALSE(b->restoreSnapshotSlot().has_value());
  b.reset();
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
  EXPECT_EQ(cache->snapshotSlots()->usedSlots(), 1u); // the cached one
}

// Tests an MTP verify that crosses a checkpoint boundary but is rejected
// before it: the snapshot stays pending (the re-run writes it again) and is
// attached only once the boundary is committed.
TEST(KvCache, RejectedDraftsKeepSnapshotPending) {
  std::unique_ptr<KvCache> cache =
      makeCache(true, 16, 4, 4, /*mtp=*/true);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(6));
  ASSERT_TRUE(a->reserve(6).ok());
  ASSERT_TRUE(a->commitFullBlocks(6).ok());
  ASSERT_TRUE(a->appendTokens({std::vector<int32_t>{7}}).ok()); // t_6
  // Verify [t_6, d_7, d_8, d_9] at positions 6..9: crosses boundary 8.
  ASSERT_TRUE(a->reserve(10).ok());
  ASSERT_EQ(a->pendingSnapshots().size(), 1u);
  uint32_t slot = a->pendingSnapshots()[0].kda_slot;
  // d_7 rejected: positions 6 committed, correction token sampled.
  ASSERT_TRUE(a->appendTokens({std::vector<int32_t>{8}}).ok());
  ASSERT_TRUE(a->commitFullBlocks(7).ok());
  ASSERT_EQ(a->pendingSnapshots().size(), 1u);
  EXPECT_EQ(cache->prefixCache()->cachedSnapshots(), 0u);
  // Next verify at 7..10, all accepted.
  ASSERT_TRUE(a->reserve(11).ok());
  EXPECT_EQ(a->pendingSnapshots().size(), 1u); // no duplicate request
  ASSERT_TRUE(a->appendTokens({std::vector<int32_t>{9, 10, 11, 12}}).ok());
  ASSERT_TRUE(a->commitFullBlocks(11).ok());
  EXPECT_TRUE(a->pendingSnapshots().empty());
  EXPECT_EQ(cache->prefixCache()->cachedSnapshots(), 1u);
  // One more decode step fills block 2 (positions 8..11).
  ASSERT_TRUE(a->appendTokens({std::vector<int32_t>{13}}).ok());
  ASSERT_TRUE(a->reserve(12).ok());
  ASSERT_TRUE(a->commitFullBlocks(12).ok());
  a.reset();
  // With MTP the last matched block is dropped: 8 matched tokens leave 4,
  // below the first boundary (no hit); 12 matched leave 8, the snapshot.
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(9));
  EXPECT_EQ(b->hitTokens(), 0u);
  b.reset();
  std::unique_ptr<SequenceCache> c = admitOk(*cache, iota(13));
  EXPECT_EQ(c->hitTokens(), 8u);
  EXPECT_EQ(*c->restoreSnapshotSlot(), slot);
}

// Tests that a model with KDA layers cannot prefix-cache without snapshot
// slots, and works with the prefix cache disabled.
TEST(KvCache, KdaNeedsSnapshotSlots) {
  KvCacheOptions o = tinyOptions(true, 8, 2, 0);
  StatusOr<std::unique_ptr<KvCache>> cache = KvCache::create(tinyGeometry(true), o);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kInvalidArgument);
  o.disable_prefix_cache = true;
  cache = KvCache::create(tinyGeometry(true), o);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->prefixCache(), nullptr);
  std::unique_ptr<SequenceCache> a = admitOk(**cache, iota(9));
  prefill(*a);
  EXPECT_TRUE(a->pendingSnapshots().empty());
  a.reset();
  EXPECT_EQ((*cache)->blocks().cachedIdleBlocks(), 0u);
}

// Tests that skip_prefix_cache neither looks up nor registers.
TEST(KvCache, SkipPrefixCache) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(9));
  prefill(*a);
  a.reset();
  AdmitOptions skip;
  skip.skip_prefix_cache = true;
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(13), skip);
  EXPECT_EQ(b->hitTokens(), 0u);
  prefill(*b);
  EXPECT_EQ(cache->prefixCache()->cachedBlocks(), 2u);
  EXPECT_EQ(cache->stats().prefix_queried_tokens, 9u);
}

// Tests two concurrent requests with the same prompt: both write their own
// blocks, only the first commit is registered, and all is freed after.
TEST(KvCache, ConcurrentDuplicates) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(9));
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(9));
  prefill(*a);
  prefill(*b);
  EXPECT_EQ(cache->prefixCache()->cachedBlocks(), 2u);
  EXPECT_EQ(cache->blocks().usedBlocks(), 6u);
  a.reset();
  b.reset();
  EXPECT_EQ(cache->blocks().usedBlocks(), 0u);
  EXPECT_EQ(cache->blocks().cachedIdleBlocks(), 2u);
  EXPECT_EQ(cache->blocks().freeBlocks(), 6u);
}

uint64_t firstTokenHash(uint64_t parent, TokenSpan tokens) {
  return parent * 31 + uint64_t(tokens.data[0]);
}

// Tests a hash collision inside a request: the colliding request stops
// registering its chain (no wrong hits through it), frees its pending
// snapshots, and the first request's chain stays intact.
TEST(KvCache, CollisionStopsRegistration) {
  KvCacheOptions o = tinyOptions(true, 16, 4, 4);
  o.hash_function = firstTokenHash; // collides when first tokens agree
  std::unique_ptr<KvCache> cache =
      std::move(KvCache::create(tinyGeometry(true), o)).value();
  std::vector<int32_t> first = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<int32_t> second = {1, 9, 9, 9, 50, 60, 70, 80, 0};
  std::unique_ptr<SequenceCache> a = admitOk(*cache, first);
  prefill(*a);
  EXPECT_EQ(cache->prefixCache()->cachedBlocks(), 2u);
  std::unique_ptr<SequenceCache> b = admitOk(*cache, second);
  EXPECT_EQ(b->hitTokens(), 0u); // block 0 collides: content check misses
  ASSERT_TRUE(b->reserve(9).ok());
  EXPECT_EQ(b->pendingSnapshots().size(), 1u);
  ASSERT_TRUE(b->commitFullBlocks(9).ok());
  EXPECT_TRUE(b->pendingSnapshots().empty());
  EXPECT_EQ(cache->prefixCache()->cachedBlocks(), 2u);
  EXPECT_EQ(cache->prefixCache()->cachedSnapshots(), 1u);
  a.reset();
  b.reset();
  EXPECT_EQ(cache->snapshotSlots()->usedSlots(), 1u);
  EXPECT_EQ(admitOk(*cache, second)->hitTokens(), 0u);
  EXPECT_EQ(admitOk(*cache, first)->hitTokens(), 8u);
  // Had `second` registered its block 1 under the colliding parent hash,
  // this prompt would wrongly hit 8 tokens computed after {1, 9, 9, 9}.
  EXPECT_EQ(admitOk(*cache, {1, 2, 3, 4, 50, 60, 70, 80, 0})->hitTokens(), 0u);
}

// Tests the /metrics text against strata-eval's parser (same names).
TEST(KvCache, MetricsParsedByEval) {
  std::unique_ptr<KvCache> cache = makeCache(false, 8);
  std::unique_ptr<SequenceCache> a = admitOk(*cache, iota(9));
  prefill(*a);
  std::unique_ptr<SequenceCache> b = admitOk(*cache, iota(10));
  std::string text = formatKvCacheMetrics(cache->stats());
  StatusOr<eval::ServerCounters> counters = eval::parseServerCounters(text);
  ASSERT_TRUE(counters.ok()) << counters.status().toString();
  EXPECT_EQ(counters->prefixQueriedTokens, 19.0);
  EXPECT_EQ(counters->prefixHitTokens, 8.0);
  EXPECT_NE(text.find("strata_kv_cache_used_blocks 3\n"), std::string::npos);
}

// Tests KvCache at real-model scale from a CacheLayout: 100 GiB, 32
// requests, 16 snapshots; a 10000-token prompt takes ceil(10000 / 64) = 157
// blocks, its 9 snapshot boundaries (every 1024 tokens) get slots, and
// everything is free after release.
TEST(KvCache, RealScale) {
  testing::TestCacheLayout layout;
  KvCacheOptions o;
  o.memory.memory_budget_bytes = uint64_t(100) << 30;
  o.memory.max_requests = 32;
  o.memory.num_snapshot_slots = 16;
  o.mtp = true;
  StatusOr<std::unique_ptr<KvCache>> cache = KvCache::create(layout.get(), o);
  ASSERT_TRUE(cache.ok()) << cache.status().toString();
  const CacheMemoryPlan &plan = (*cache)->plan();
  // (107374182400 - 32 x 98304 - 48 x 147619840) / 912384 = 109915.
  EXPECT_EQ(plan.num_blocks, 109915u);
  std::unique_ptr<SequenceCache> a = admitOk(**cache, iota(10000));
  ASSERT_TRUE(a->reserve(10000).ok());
  EXPECT_EQ(a->blockTable().size(), 157u);
  EXPECT_EQ(a->pendingSnapshots().size(), 9u);
  EXPECT_EQ(a->pendingSnapshots().back().tokens, 9216u);
  ASSERT_TRUE(a->commitFullBlocks(10000).ok());
  a.reset();
  EXPECT_EQ((*cache)->blocks().usedBlocks(), 0u);
  // MTP: 156 full blocks match, drop one -> 9920, down to 9216.
  std::unique_ptr<SequenceCache> b = admitOk(**cache, iota(10001));
  EXPECT_EQ(b->hitTokens(), 9216u);
  ASSERT_TRUE(b->restoreSnapshotSlot().has_value());
  EXPECT_GE(*b->restoreSnapshotSlot(), 32u);
}

} // namespace
} // namespace strata::runtime
