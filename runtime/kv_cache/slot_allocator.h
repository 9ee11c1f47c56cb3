//===- slot_allocator.h - fixed pools of per-request slot ids ----*- C++ -*-===//
//
// Part of strata. A fixed set of slot ids [first_id, first_id + count) with a
// free list, used for per-request state slots (a request's tail rings and its
// running KDA state share one id, spec §3.1) and for prefix-cache KDA snapshot
// slots (ids after the state slots, CacheMemoryPlan). Exhaustion is
// RESOURCE_EXHAUSTED, a double or foreign release FAILED_PRECONDITION /
// OUT_OF_RANGE; the lowest free id is handed out first (deterministic).
//
// Ownership: bookkeeping only. Thread-safety: none.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_SLOT_ALLOCATOR_H
#define STRATA_RUNTIME_KV_CACHE_SLOT_ALLOCATOR_H

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// A fixed pool of slot ids.
class SlotAllocator {
public:
  /// `name` appears in errors ("state slot", "snapshot slot").
  SlotAllocator(std::string name, uint32_t first_id, uint32_t count);

  /// The lowest free id, or RESOURCE_EXHAUSTED ("no free state slot: 8 of 8
  /// in use").
  StatusOr<uint32_t> allocate();
  /// Returns `id` to the pool.
  Status release(uint32_t id);

  uint32_t firstId() const { return first_id_; }
  uint32_t capacity() const { return uint32_t(in_use_.size()); }
  uint32_t usedSlots() const { return used_; }
  uint32_t freeSlots() const { return capacity() - used_; }
  bool isAllocated(uint32_t id) const;

private:
  std::string name_;
  uint32_t first_id_;
  std::vector<uint8_t> in_use_;
  std::set<uint32_t> free_; // offsets from first_id_
  uint32_t used_ = 0;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_KV_CACHE_SLOT_ALLOCATOR_H
