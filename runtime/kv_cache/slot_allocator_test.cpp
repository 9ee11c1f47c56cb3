//===- slot_allocator_test.cpp - tests of fixed slot pools ----------------===//

#include "runtime/kv_cache/slot_allocator.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests that ids start at first_id, lowest free first, and exhaustion is a
// RESOURCE_EXHAUSTED error naming the pool.
TEST(SlotAllocator, AllocateAndExhaust) {
  SlotAllocator slots("state slot", 10, 2);
  EXPECT_EQ(*slots.allocate(), 10u);
  EXPECT_EQ(*slots.allocate(), 11u);
  StatusOr<uint32_t> none = slots.allocate();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(none.status().message(), "no free state slot: 2 of 2 in use");
  ASSERT_TRUE(slots.release(10).ok());
  EXPECT_EQ(slots.usedSlots(), 1u);
  EXPECT_FALSE(slots.isAllocated(10));
  EXPECT_EQ(*slots.allocate(), 10u);
}

// Tests that releasing a free or foreign id is an error.
TEST(SlotAllocator, BadRelease) {
  SlotAllocator slots("snapshot slot", 4, 2);
  Status twice = slots.release(4);
  EXPECT_EQ(twice.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(twice.message(), "release of snapshot slot 4 that is not in use");
  Status foreign = slots.release(3);
  EXPECT_EQ(foreign.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(foreign.message(), "release of snapshot slot 3: ids are 4 .. 5");
  EXPECT_EQ(slots.release(6).code(), StatusCode::kOutOfRange);
}

} // namespace
} // namespace strata::runtime
