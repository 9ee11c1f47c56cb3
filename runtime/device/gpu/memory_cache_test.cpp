//===- memory_cache_test.cpp - tests of DeviceMemoryCache -----------------===//
//
// Part of strata. The cache over a fake vendor allocator that counts calls.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/gpu/memory_cache.h"

#include <set>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

/// A vendor allocator that hands out increasing addresses, can be told to
/// fail, and records what is live.
struct FakeAllocator {
  uint64_t next = 0x1000;
  int allocs = 0, frees = 0, syncs = 0;
  bool fail_next = false;
  std::set<uint64_t> live;

  DeviceMemoryCache makeCache() {
    return DeviceMemoryCache(
        [this](uint64_t size, uint64_t &address) -> Status {
          if (fail_next) {
            fail_next = false;
            return resourceExhausted("out of device memory");
          }
          ++allocs;
          address = next;
          next += size;
          live.insert(address);
          return okStatus();
        },
        [this](uint64_t address) -> Status {
          ++frees;
          live.erase(address);
          return okStatus();
        },
        [this]() -> Status {
          ++syncs;
          return okStatus();
        });
  }
};

// Tests that size classes cover the request with at most 25 % more bytes
// (and 512 at the least), and that nearby sizes share a class.
TEST(DeviceMemoryCache, SizeClasses) {
  EXPECT_EQ(DeviceMemoryCache::sizeClass(1), 512u);
  EXPECT_EQ(DeviceMemoryCache::sizeClass(512), 512u);
  EXPECT_EQ(DeviceMemoryCache::sizeClass(513), 1024u);
  EXPECT_EQ(DeviceMemoryCache::sizeClass(4096), 4096u);
  EXPECT_EQ(DeviceMemoryCache::sizeClass(4097), 5120u);
  EXPECT_EQ(DeviceMemoryCache::sizeClass(16u << 20), 16u << 20);
  EXPECT_EQ(DeviceMemoryCache::sizeClass((16u << 20) + 1), 20u << 20);
  for (uint64_t size : {600u, 5000u, 70000u, 3000000u, 123456789u}) {
    uint64_t c = DeviceMemoryCache::sizeClass(size);
    EXPECT_GE(c, size);
    EXPECT_LE(c, size + size / 4 + 512);
  }
}

// Tests that a released block is handed out again for a request of its
// class without a vendor allocation (after one wait for the device since it
// was released), and a block of another class is not.
TEST(DeviceMemoryCache, ReusesReleasedBlocks) {
  FakeAllocator fake;
  DeviceMemoryCache cache = fake.makeCache();
  uint64_t a = 0, ca = 0;
  ASSERT_TRUE(cache.allocate(5000, a, ca).ok());
  EXPECT_EQ(fake.allocs, 1);
  cache.release(a, ca);
  EXPECT_EQ(cache.cachedBytes(), ca);
  uint64_t b = 0, cb = 0;
  ASSERT_TRUE(cache.allocate(4900, b, cb).ok());
  EXPECT_EQ(b, a);
  EXPECT_EQ(cb, ca);
  EXPECT_EQ(fake.allocs, 1);
  EXPECT_EQ(fake.syncs, 1);
  EXPECT_EQ(cache.cachedBytes(), 0u);
  uint64_t c = 0, cc = 0;
  ASSERT_TRUE(cache.allocate(50000, c, cc).ok());
  EXPECT_NE(c, a);
  EXPECT_EQ(fake.allocs, 2);
  EXPECT_EQ(fake.frees, 0);
  // Two blocks released, both taken back: one wait, before the first.
  cache.release(b, cb);
  cache.release(c, cc);
  uint64_t d = 0, cd = 0, e = 0, ce = 0;
  ASSERT_TRUE(cache.allocate(5000, d, cd).ok());
  ASSERT_TRUE(cache.allocate(50000, e, ce).ok());
  EXPECT_EQ(d, a);
  EXPECT_EQ(e, c);
  EXPECT_EQ(fake.syncs, 2);
}

// Tests that a failed vendor allocation frees the cached blocks and tries
// again, and that trim and the destructor free what is cached.
TEST(DeviceMemoryCache, TrimsOnFailureAndDestruction) {
  FakeAllocator fake;
  {
    DeviceMemoryCache cache = fake.makeCache();
    uint64_t a = 0, ca = 0, b = 0, cb = 0;
    ASSERT_TRUE(cache.allocate(1000, a, ca).ok());
    ASSERT_TRUE(cache.allocate(9000, b, cb).ok());
    cache.release(a, ca);
    fake.fail_next = true;
    uint64_t c = 0, cc = 0;
    ASSERT_TRUE(cache.allocate(70000, c, cc).ok());
    EXPECT_EQ(fake.frees, 1);
    EXPECT_EQ(fake.live.count(a), 0u);
    EXPECT_EQ(cache.cachedBytes(), 0u);
    cache.release(b, cb);
    cache.release(c, cc);
    EXPECT_EQ(cache.cachedBytes(), cb + cc);
  }
  EXPECT_TRUE(fake.live.empty());
  EXPECT_EQ(fake.frees, 3);
}

} // namespace
} // namespace strata::runtime
