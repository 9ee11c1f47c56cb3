//===- rank_commands_test.cpp - tests of the rank commands' bytes ---------===//

#include "runtime/scheduler/rank_commands.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests that a step with two requests (hidden rows on one) and the other
// kinds come back as they were sent.
TEST(RankCommands, RoundTrip) {
  RankCommand step;
  step.kind = RankCommandKind::kStep;
  step.step = artifact::StepKind::mtp_verify;
  step.outputs.logits = false;
  step.with_draft = true;
  step.chain_passes = 3;
  step.outputs.keep_hidden = true;
  StepRequest a;
  a.tokens = {5, 17, 300};
  a.start_position = 40;
  a.block_table = {3, 9};
  a.slot = 2;
  a.state_src_slot = 2;
  a.state_dst_slot = 11;
  a.state_token_slots = {2, 6, 11};
  a.all_logits = true;
  StepRequest b;
  b.tokens = {7};
  b.shared_selection_row = 2;
  b.target_hidden_row = 9;
  b.hidden = {1, 2, 3, 4};
  step.requests = {a, b};
  StatusOr<RankCommand> back = decodeRankCommand(encodeRankCommand(step));
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->kind, RankCommandKind::kStep);
  EXPECT_EQ(back->step, artifact::StepKind::mtp_verify);
  EXPECT_FALSE(back->outputs.logits);
  EXPECT_TRUE(back->outputs.hidden);
  EXPECT_TRUE(back->with_draft);
  EXPECT_EQ(back->chain_passes, 3u);
  EXPECT_TRUE(back->outputs.keep_hidden);
  EXPECT_EQ(back->requests[1].target_hidden_row, 9);
  EXPECT_EQ(back->requests[0].target_hidden_row, -1);
  ASSERT_EQ(back->requests.size(), 2u);
  EXPECT_EQ(back->requests[0].tokens, a.tokens);
  EXPECT_EQ(back->requests[0].start_position, 40);
  EXPECT_EQ(back->requests[0].block_table, a.block_table);
  EXPECT_EQ(back->requests[0].slot, 2);
  EXPECT_EQ(back->requests[0].state_src_slot, 2);
  EXPECT_EQ(back->requests[0].state_dst_slot, 11);
  EXPECT_EQ(back->requests[0].state_token_slots, a.state_token_slots);
  EXPECT_TRUE(back->requests[1].state_token_slots.empty());
  EXPECT_TRUE(back->requests[0].all_logits);
  EXPECT_EQ(back->requests[1].hidden, b.hidden);
  EXPECT_EQ(back->requests[0].shared_selection_row, -1);
  EXPECT_EQ(back->requests[1].shared_selection_row, 2);

  RankCommand copy;
  copy.kind = RankCommandKind::kCopySlot;
  copy.slot = 4;
  copy.dst_slot = 7;
  copy.slot_count = 3;
  copy.pools = StatePools::kda;
  back = decodeRankCommand(encodeRankCommand(copy));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->slot, 4);
  EXPECT_EQ(back->dst_slot, 7);
  EXPECT_EQ(back->slot_count, 3);
  EXPECT_EQ(back->pools, StatePools::kda);

  RankCommand caches;
  caches.kind = RankCommandKind::kAllocateCaches;
  caches.kv_pages = uint64_t(1) << 33;
  caches.state_slots = 12;
  back = decodeRankCommand(encodeRankCommand(caches));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->kv_pages, uint64_t(1) << 33);
  EXPECT_EQ(back->state_slots, 12u);
}

// Tests that every prefix of a step is refused as truncated, and that
// trailing bytes, an unknown kind and an unknown step kind are refused.
TEST(RankCommands, MalformedBytesAreRefused) {
  RankCommand step;
  step.kind = RankCommandKind::kStep;
  StepRequest a;
  a.tokens = {1, 2};
  step.requests = {a};
  std::vector<uint8_t> bytes = encodeRankCommand(step);
  StatusOr<RankCommand> plain = decodeRankCommand(bytes);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->with_draft);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    StatusOr<RankCommand> back = decodeRankCommand(prefix);
    EXPECT_EQ(back.status().code(), StatusCode::kInvalidArgument) << n;
  }
  bytes.push_back(0);
  EXPECT_EQ(decodeRankCommand(bytes).status().message(),
            "rank command: " + std::to_string(bytes.size()) +
                " bytes, 1 of them trailing");
  EXPECT_EQ(decodeRankCommand({9}).status().message(),
            "rank command: unknown kind 9");
  EXPECT_EQ(decodeRankCommand({1, 7}).status().message(),
            "rank command: unknown step kind 7");
  step.chain_passes = 0;
  EXPECT_EQ(decodeRankCommand(encodeRankCommand(step)).status().message(),
            "rank command: a draft chain of no passes");
}

} // namespace
} // namespace strata::runtime
