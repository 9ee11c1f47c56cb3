//===- block_allocator.cpp - reference-counted KV block ids ---------------===//
//
// Part of strata. See block_allocator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kv_cache/block_allocator.h"

namespace strata::runtime {

BlockAllocator::BlockAllocator(uint32_t num_blocks)
    : refcount_(num_blocks, 0), cached_(num_blocks, 0),
      prev_(num_blocks, kNone), next_(num_blocks, kNone) {
  free_.reserve(num_blocks);
  for (uint32_t i = num_blocks; i > 0; --i)
    free_.push_back(i - 1);
}

Status BlockAllocator::checkId(BlockId block, const char *what) const {
  if (block >= refcount_.size())
    return outOfRange("{} of kv block {}: only {} blocks", what, block,
                      refcount_.size());
  return okStatus();
}

void BlockAllocator::lruPushBack(BlockId block) {
  prev_[block] = lru_tail_;
  next_[block] = kNone;
  if (lru_tail_ != kNone)
    next_[lru_tail_] = block;
  else
    lru_head_ = block;
  lru_tail_ = block;
  ++idle_count_;
}

void BlockAllocator::lruRemove(BlockId block) {
  if (prev_[block] != kNone)
    next_[prev_[block]] = next_[block];
  else
    lru_head_ = next_[block];
  if (next_[block] != kNone)
    prev_[next_[block]] = prev_[block];
  else
    lru_tail_ = prev_[block];
  prev_[block] = next_[block] = kNone;
  --idle_count_;
}

BlockId BlockAllocator::take() {
  BlockId block;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else {
    block = lru_head_;
    lruRemove(block);
    cached_[block] = 0;
    if (on_evict_)
      on_evict_(block);
  }
  refcount_[block] = 1;
  ++used_;
  return block;
}

StatusOr<BlockId> BlockAllocator::allocate() {
  if (availableBlocks() == 0)
    return resourceExhausted("out of kv blocks: need 1, 0 free of {} ({} in "
                             "use)",
                             numBlocks(), used_);
  return take();
}

Status BlockAllocator::allocate(uint64_t count, std::vector<BlockId> &out) {
  if (count > availableBlocks())
    return resourceExhausted("out of kv blocks: need {}, {} free of {} ({} in "
                             "use)",
                             count, availableBlocks(), numBlocks(), used_);
  out.reserve(out.size() + count);
  for (uint64_t i = 0; i < count; ++i)
    out.push_back(take());
  return okStatus();
}

Status BlockAllocator::retain(BlockId block) {
  STRATA_RETURN_IF_ERROR(checkId(block, "retain"));
  if (refcount_[block] == 0) {
    if (!cached_[block])
      return failedPrecondition("retain of free kv block {}", block);
    lruRemove(block);
    ++used_;
  }
  ++refcount_[block];
  return okStatus();
}

Status BlockAllocator::release(BlockId block) {
  STRATA_RETURN_IF_ERROR(checkId(block, "release"));
  if (refcount_[block] == 0)
    return failedPrecondition("release of kv block {} with refcount 0", block);
  if (--refcount_[block] > 0)
    return okStatus();
  --used_;
  if (cached_[block])
    lruPushBack(block);
  else
    free_.push_back(block);
  return okStatus();
}

Status BlockAllocator::markCached(BlockId block) {
  STRATA_RETURN_IF_ERROR(checkId(block, "mark cached"));
  if (refcount_[block] == 0)
    return failedPrecondition("mark cached of kv block {} not in use", block);
  cached_[block] = 1;
  return okStatus();
}

Status BlockAllocator::unmarkCached(BlockId block) {
  STRATA_RETURN_IF_ERROR(checkId(block, "unmark cached"));
  if (!cached_[block])
    return okStatus();
  cached_[block] = 0;
  if (refcount_[block] == 0) {
    lruRemove(block);
    free_.push_back(block);
  }
  return okStatus();
}

uint32_t BlockAllocator::refCount(BlockId block) const {
  return block < refcount_.size() ? refcount_[block] : 0;
}

bool BlockAllocator::isCached(BlockId block) const {
  return block < cached_.size() && cached_[block];
}

std::vector<BlockId> BlockAllocator::idleLruOrder() const {
  std::vector<BlockId> order;
  for (uint32_t b = lru_head_; b != kNone; b = next_[b])
    order.push_back(b);
  return order;
}

} // namespace strata::runtime
