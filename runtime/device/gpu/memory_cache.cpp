//===- memory_cache.cpp - reuse of freed device allocations ---------------===//
//
// Part of strata. See memory_cache.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/gpu/memory_cache.h"

#include <algorithm>

namespace strata::runtime {

namespace {
/// The largest power of two not above `v` (> 0).
uint64_t powerOfTwoFloor(uint64_t v) {
  uint64_t p = 1;
  while (p <= v / 2)
    p *= 2;
  return p;
}
} // namespace

uint64_t DeviceMemoryCache::sizeClass(uint64_t size) {
  constexpr uint64_t kMinGranule = 512;
  if (size <= kMinGranule)
    return kMinGranule;
  uint64_t granule = std::max(kMinGranule, powerOfTwoFloor(size) / 4);
  return (size + granule - 1) / granule * granule;
}

Status DeviceMemoryCache::allocate(uint64_t size, uint64_t &out_address,
                                   uint64_t &out_class) {
  out_class = sizeClass(size);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = free_blocks_.find(out_class);
    if (found != free_blocks_.end()) {
      if (released_since_sync_) {
        STRATA_RETURN_IF_ERROR(sync_());
        released_since_sync_ = false;
      }
      out_address = found->second;
      free_blocks_.erase(found);
      cached_bytes_ -= out_class;
      return okStatus();
    }
  }
  Status allocated = alloc_(out_class, out_address);
  if (allocated.ok())
    return allocated;
  STRATA_RETURN_IF_ERROR(trim());
  return alloc_(out_class, out_address);
}

void DeviceMemoryCache::release(uint64_t address, uint64_t size_class) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_blocks_.emplace(size_class, address);
  cached_bytes_ += size_class;
  released_since_sync_ = true;
}

Status DeviceMemoryCache::trim() {
  std::multimap<uint64_t, uint64_t> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_blocks_);
    cached_bytes_ = 0;
  }
  Status first = okStatus();
  for (const auto &[size_class, address] : blocks) {
    Status freed = free_(address);
    if (first.ok() && !freed.ok())
      first = freed;
  }
  return first;
}

uint64_t DeviceMemoryCache::cachedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

} // namespace strata::runtime
