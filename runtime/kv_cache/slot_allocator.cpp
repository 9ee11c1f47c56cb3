//===- slot_allocator.cpp - fixed pools of per-request slot ids -----------===//
//
// Part of strata. See slot_allocator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kv_cache/slot_allocator.h"

namespace strata::runtime {

SlotAllocator::SlotAllocator(std::string name, uint32_t first_id,
                             uint32_t count)
    : name_(std::move(name)), first_id_(first_id), in_use_(count, 0) {
  for (uint32_t i = 0; i < count; ++i)
    free_.insert(free_.end(), i);
}

StatusOr<uint32_t> SlotAllocator::allocate() {
  if (free_.empty())
    return resourceExhausted("no free {}: {} of {} in use", name_, used_,
                             capacity());
  uint32_t offset = *free_.begin();
  free_.erase(free_.begin());
  in_use_[offset] = 1;
  ++used_;
  return first_id_ + offset;
}

Status SlotAllocator::release(uint32_t id) {
  if (id < first_id_ || id - first_id_ >= in_use_.size())
    return outOfRange("release of {} {}: ids are {} .. {}", name_, id,
                      first_id_, uint64_t(first_id_) + in_use_.size() - 1);
  uint32_t offset = id - first_id_;
  if (!in_use_[offset])
    return failedPrecondition("release of {} {} that is not in use", name_,
                              id);
  in_use_[offset] = 0;
  free_.insert(offset);
  --used_;
  return okStatus();
}

bool SlotAllocator::isAllocated(uint32_t id) const {
  return id >= first_id_ && id - first_id_ < in_use_.size() &&
         in_use_[id - first_id_];
}

} // namespace strata::runtime
