//===- cache_geometry_test.cpp - tests of sizes and the budget split ------===//

#include "runtime/kv_cache/cache_geometry.h"

#include "runtime/kv_cache/test_cache_layout.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

using testing::TestCacheLayout;
using testing::TestLayoutParams;

constexpr uint64_t kGiB = uint64_t(1) << 30;

// Tests the per-block, per-ring-set and per-KDA-state bytes of the real
// GLM-5.3-Flash layout with 576-wide bf16 latent rows: 12 x 64 x 1152 B +
// 12 x 16 x (128 + 4) B (rounded to 256) per block; 12 rings of 2 x 16 x 128
// bf16; 34 x (4194304 + 147456) B of KDA state (spec §3.1, §5.1).
TEST(CacheGeometry, RealModel576) {
  TestCacheLayout layout;
  StatusOr<CacheGeometry> g = CacheGeometry::fromLayout(layout.get());
  ASSERT_TRUE(g.ok()) << g.status().toString();
  EXPECT_EQ(g->latent_page_bytes, 73728u);
  EXPECT_EQ(g->index_page_bytes, 2304u);
  EXPECT_EQ(g->blockBytes(), 12u * 73728 + 12u * 2304);
  EXPECT_EQ(g->ringBytesPerSlot(), 12u * 8192);
  EXPECT_EQ(g->kdaBytesPerSlot(), 34ull * 4341760);
  EXPECT_TRUE(g->hasKda());
}

// Tests the layout the compiler emits (512-wide latent rows, 1024 B).
TEST(CacheGeometry, RealModel512) {
  TestLayoutParams p;
  p.latent_row_elements = 512;
  TestCacheLayout layout(p);
  StatusOr<CacheGeometry> g = CacheGeometry::fromLayout(layout.get());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->blockBytes(), 814080u); // 12 x 65536 + 12 x 2304
}

// Tests that a layout without paged caches is rejected (nothing to page).
TEST(CacheGeometry, NoPagedCache) {
  TestLayoutParams p;
  p.mla_layers = 0;
  TestCacheLayout layout(p);
  StatusOr<CacheGeometry> g = CacheGeometry::fromLayout(layout.get());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("no paged cache"), std::string::npos);
}

// Tests that a per-block total beyond 64 bits is an error, not a wrap
// (12 layers x 2^62 bytes).
TEST(CacheGeometry, BlockBytesOverflow) {
  flatbuffers::FlatBufferBuilder b;
  auto mla = artifact::CreateMlaLatentCache(b, 12, artifact::DType::bf16, 512,
                                            1024, uint64_t(1) << 62);
  b.Finish(artifact::CreateCacheLayout(b, 256, 64, mla));
  StatusOr<CacheGeometry> g = CacheGeometry::fromLayout(
      *flatbuffers::GetRoot<artifact::CacheLayout>(b.GetBufferPointer()));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.status().message(), "cache size overflows 64 bits: block bytes");
}

// Tests the budget split at real-model scale (120 GiB, 64 requests, 32
// snapshots): the fixed part is 64 ring sets + 96 KDA states, the rest is
// blocks; page offsets are far beyond 4 GiB and exact in 64 bits; regions do
// not overlap and stay inside the budget.
TEST(CacheMemoryPlan, RealScaleBudget) {
  TestCacheLayout layout;
  CacheGeometry g = *CacheGeometry::fromLayout(layout.get());
  CacheMemoryOptions options;
  options.memory_budget_bytes = 120 * kGiB;
  options.max_requests = 64;
  options.num_snapshot_slots = 32;
  StatusOr<CacheMemoryPlan> plan = planCacheMemory(g, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  // fixed = 64 x 98304 + 96 x 147619840 = 14177796096 B;
  // blocks = (128849018880 - 14177796096) / 912384 = 125683.
  EXPECT_EQ(plan->num_blocks, 125683u);
  EXPECT_EQ(plan->num_state_slots, 64u);
  EXPECT_EQ(plan->num_snapshot_slots, 32u);
  EXPECT_EQ(plan->num_kda_slots, 96u);
  EXPECT_EQ(plan->rings_bytes, 64u * 98304);
  EXPECT_EQ(plan->kda_bytes, 96ull * 147619840);
  EXPECT_LE(plan->total_bytes, options.memory_budget_bytes);
  // The last latent page of the last layer sits ~103 GiB from the base.
  uint64_t last = plan->num_blocks - 1;
  EXPECT_EQ(plan->latentPageOffset(11, last), 111196200960ull);
  EXPECT_EQ(plan->indexPageOffset(0, 0), 12ull * 125683 * 73728);
  EXPECT_EQ(plan->indexPageOffset(11, last), 114671155968ull);
  EXPECT_EQ(plan->indexPageOffset(11, last) + 2304, plan->blocks_bytes);
  EXPECT_GE(plan->rings_offset, plan->blocks_bytes);
  EXPECT_EQ(plan->rings_offset % 256, 0u);
  EXPECT_EQ(plan->ringOffset(11, 63) + 8192,
            plan->rings_offset + plan->rings_bytes);
  EXPECT_GE(plan->kda_offset, plan->rings_offset + plan->rings_bytes);
  // Snapshot slot 95 of the last KDA layer's conv state ends the arena.
  EXPECT_EQ(plan->kdaConvOffset(33, 95) + 147456, plan->total_bytes);
  EXPECT_EQ(plan->kdaRecurrentOffset(1, 0) - plan->kdaRecurrentOffset(0, 0),
            96ull * 4194304);
}

// Tests that a model without KDA layers reserves no KDA slots.
TEST(CacheMemoryPlan, NoKda) {
  TestLayoutParams p;
  p.kda_layers = 0;
  TestCacheLayout layout(p);
  CacheGeometry g = *CacheGeometry::fromLayout(layout.get());
  StatusOr<CacheMemoryPlan> plan =
      planCacheMemory(g, {8 * kGiB, 4, /*num_snapshot_slots=*/8});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_kda_slots, 0u);
  EXPECT_EQ(plan->num_snapshot_slots, 0u);
  EXPECT_EQ(plan->kda_bytes, 0u);
  EXPECT_EQ(plan->num_blocks,
            (8 * kGiB - 4 * 98304) / g.blockBytes());
}

// Tests the required fields of CacheMemoryOptions.
TEST(CacheMemoryPlan, RequiredOptions) {
  TestCacheLayout layout;
  CacheGeometry g = *CacheGeometry::fromLayout(layout.get());
  StatusOr<CacheMemoryPlan> none = planCacheMemory(g, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "cache memory budget is 0 bytes");
  StatusOr<CacheMemoryPlan> no_requests = planCacheMemory(g, {kGiB, 0, 0});
  ASSERT_FALSE(no_requests.ok());
  EXPECT_EQ(no_requests.status().message(), "max_requests is 0");
}

// Tests that a budget below the fixed per-request state names the numbers.
TEST(CacheMemoryPlan, BudgetBelowFixedState) {
  TestCacheLayout layout;
  CacheGeometry g = *CacheGeometry::fromLayout(layout.get());
  StatusOr<CacheMemoryPlan> plan = planCacheMemory(g, {kGiB, 8, 0});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(plan.status().message(),
            "cache memory budget 1073741824 bytes does not cover the "
            "1181745152 bytes of fixed state (8 requests x 98304 ring bytes "
            "+ 8 kda slots x 147619840 kda bytes)");
}

// Tests that a budget leaving less than one block is an error.
TEST(CacheMemoryPlan, NoRoomForABlock) {
  TestCacheLayout layout;
  CacheGeometry g = *CacheGeometry::fromLayout(layout.get());
  uint64_t fixed = 98304 + 147619840;
  StatusOr<CacheMemoryPlan> plan =
      planCacheMemory(g, {fixed + g.blockBytes() - 1, 1, 0});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("less than one kv block of 912384"),
            std::string::npos);
  StatusOr<CacheMemoryPlan> one =
      planCacheMemory(g, {fixed + g.blockBytes(), 1, 0});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->num_blocks, 1u);
}

} // namespace
} // namespace strata::runtime
