//===- memory_sizing_test.cpp - tests of --gpu-memory-utilization sizing --===//

#include "runtime/serve/memory_sizing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace strata::runtime::serve {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t(1) << 20;
constexpr uint64_t kGiB = uint64_t(1) << 30;

// A geometry with 1 MiB KV blocks (1 latent + 1 index layer of 512 KiB) and
// 10 MiB state slots (2 MiB of rings, 8 MiB of KDA state).
MemorySizingInput input() {
  MemorySizingInput in;
  in.device = "test device";
  in.memory.total_bytes = 100 * kGiB;
  in.memory.free_bytes = 40 * kGiB; // 60 GiB in use (weights and others).
  in.utilization = 0.9;             // 90 GiB usable.
  in.weight_bytes = 58 * kGiB;
  in.step_reserve_bytes = 2 * kGiB; // 28 GiB left for the caches.
  in.step_reserve_note = "test";
  CacheGeometry &g = in.geometry;
  g.alignment = 256;
  g.page_size_tokens = 64;
  g.latent_layers = 1;
  g.latent_page_bytes = 512 * 1024;
  g.index_layers = 1;
  g.index_page_bytes = 512 * 1024;
  g.ring_layers = 1;
  g.ring_bytes_per_layer = 2 * kMiB;
  g.kda_layers = 2;
  g.kda_recurrent_bytes_per_layer = 3 * kMiB;
  g.kda_conv_bytes_per_layer = 1 * kMiB;
  in.scheduler.max_requests = 256;
  in.scheduler.enable_prefix_cache = true;
  return in;
}

// Tests the split: 256 states of 10 MiB, 512 snapshots (2 per request, under
// a quarter of the rest), the remainder in 1 MiB blocks.
TEST(MemorySizingTest, SplitsTheBudget) {
  auto s = sizeCachesFromMemory(input());
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->budget_bytes, 28 * kGiB);
  EXPECT_EQ(s->state_slots, 256u);
  EXPECT_EQ(s->state_bytes, 2560 * kMiB);
  EXPECT_EQ(s->snapshot_slots, 512u);
  EXPECT_EQ(s->snapshot_bytes, 5120 * kMiB);
  EXPECT_EQ(s->num_blocks, 28 * 1024 - 2560 - 5120u);
  EXPECT_THAT(s->log, HasSubstr("test device: 100.0 GiB total, "
                                "--gpu-memory-utilization 0.9 = 90.0 GiB"));
  EXPECT_THAT(s->log, HasSubstr("512 KDA snapshots (2 per running request)"));
  EXPECT_THAT(s->log, HasSubstr("20992 KV blocks x 1.0 MiB = 20.5 GiB "
                                "(1343488 tokens, 5248 per running request)"));
}

// Tests that snapshots are capped at a quarter of what the states leave,
// that MTP k multiplies the state slots by k + 1, and that --snapshot-slots
// wins.
TEST(MemorySizingTest, CapsSnapshotsAndCountsMtpScratch) {
  MemorySizingInput in = input();
  in.memory.free_bytes = 32 * kGiB; // 20 GiB budget.
  in.scheduler.mtp_draft_tokens = 2;
  auto s = sizeCachesFromMemory(in);
  ASSERT_TRUE(s.ok()) << s.status().toString();
  EXPECT_EQ(s->state_slots, 768u); // running + 2 x verify scratch
  // (20480 - 7680) MiB left, a quarter is 3200 MiB = 320 slots.
  EXPECT_EQ(s->snapshot_slots, 320u);
  EXPECT_EQ(s->num_blocks, 20480 - 7680 - 3200u);
  EXPECT_THAT(s->log, HasSubstr("25 % of the rest; 2 per running request "
                                "would be 512"));
  in.scheduler.num_snapshot_slots = 7;
  s = sizeCachesFromMemory(in);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot_slots, 7u);
  EXPECT_THAT(s->log, HasSubstr("7 KDA snapshots (--snapshot-slots)"));
}

// Tests that a model without KDA layers, or with the prefix cache off, has
// no snapshots.
TEST(MemorySizingTest, NoSnapshotsWithoutKdaOrPrefixCache) {
  MemorySizingInput in = input();
  in.scheduler.enable_prefix_cache = false;
  auto s = sizeCachesFromMemory(in);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot_slots, 0u);
  EXPECT_EQ(s->num_blocks, 28 * 1024 - 2560u);
  EXPECT_THAT(s->log, HasSubstr("(prefix cache off)"));
}

// Tests the errors: no room, states that do not fit, a bad utilization.
TEST(MemorySizingTest, Errors) {
  MemorySizingInput in = input();
  in.utilization = 0.5; // 50 GiB usable, 60 in use.
  auto s = sizeCachesFromMemory(in);
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.status().message(),
            "--gpu-memory-utilization 0.5 of 100.0 GiB leaves nothing for "
            "the caches (60.0 GiB in use after the weights, 2.0 GiB step "
            "reserve): no room at all (raise --gpu-memory-utilization or "
            "lower --max-requests)");
  in = input();
  in.scheduler.max_requests = 4000; // 40 GiB of states.
  s = sizeCachesFromMemory(in);
  EXPECT_EQ(s.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.status().message(),
              HasSubstr("leaves 28.0 GiB for the caches (60.0 GiB in use after "
                        "the weights, 2.0 GiB step reserve): 4000 state slots "
                        "of 10.0 MiB and one KV block of 1.0 MiB need 39.1 "
                        "GiB"));
  in = input();
  in.utilization = 1.5;
  s = sizeCachesFromMemory(in);
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "--gpu-memory-utilization must be in (0, 1], got 1.5");
}

// Tests the default tokens per step on GPU targets: vLLM's 8192 from 70 GiB
// of device memory (H100's 79.6 GiB, H200's 139.8 GiB), 2048 below.
TEST(MemorySizingTest, DefaultStepTokensFollowVllm) {
  constexpr uint64_t GiB = uint64_t(1) << 30;
  EXPECT_EQ(defaultMaxStepTokens(0), 2048u);
  EXPECT_EQ(defaultMaxStepTokens(48 * GiB), 2048u);
  EXPECT_EQ(defaultMaxStepTokens(70 * GiB - 1), 2048u);
  EXPECT_EQ(defaultMaxStepTokens(70 * GiB), 8192u);
  EXPECT_EQ(defaultMaxStepTokens(uint64_t(79.6 * GiB)), 8192u);
  EXPECT_EQ(defaultMaxStepTokens(uint64_t(139.8 * GiB)), 8192u);
}

} // namespace
} // namespace strata::runtime::serve
