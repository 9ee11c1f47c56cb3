//===- block_allocator.h - reference-counted KV block ids --------*- C++ -*-===//
//
// Part of strata. Hands out KV block ids 0 .. num_blocks - 1. One block id
// addresses one page of every MLA latent layer and every pooled index layer
// (CacheMemoryPlan::latentPageOffset / indexPageOffset).
//
// Every block is in exactly one state:
//   free        refcount 0, not cached: on the free list;
//   in use      refcount > 0 (held by one or more sequences);
//   cached idle refcount 0 but registered in the prefix cache: its content is
//               kept and it sits in an LRU list; it is reused (evicted) only
//               when the free list is empty, least recently released first.
// allocate() takes a free block first and evicts the LRU cached-idle block
// only when none is free, calling the eviction callback so the prefix cache
// forgets it. Nothing in use is ever evicted.
//
// Ownership: the allocator owns only the bookkeeping (no device memory).
// Thread-safety: none; one scheduler thread owns it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_BLOCK_ALLOCATOR_H
#define STRATA_RUNTIME_KV_CACHE_BLOCK_ALLOCATOR_H

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// A KV block id (32-bit, like the block-table entries kernels read).
using BlockId = uint32_t;

/// The reference-counted pool of KV block ids.
class BlockAllocator {
public:
  /// Called with a cached-idle block just before allocate() reuses it.
  using EvictionCallback = std::function<void(BlockId)>;

  /// A pool of `num_blocks` free blocks; allocate() returns 0, 1, 2, ... on a
  /// fresh pool.
  explicit BlockAllocator(uint32_t num_blocks);

  /// One block with refcount 1. RESOURCE_EXHAUSTED when no block is free or
  /// cached idle ("out of kv blocks: ...").
  StatusOr<BlockId> allocate();
  /// Appends `count` new blocks (refcount 1) to `out`, all or nothing.
  Status allocate(uint64_t count, std::vector<BlockId> &out);
  /// Adds a reference. A cached-idle block leaves the LRU list (a prefix hit);
  /// a free block is FAILED_PRECONDITION (its content is gone).
  Status retain(BlockId block);
  /// Drops a reference. At 0 a cached block becomes the most recently used
  /// idle block, any other block returns to the free list.
  /// FAILED_PRECONDITION when the refcount is already 0.
  Status release(BlockId block);

  /// Marks an in-use block as registered in the prefix cache (kept when its
  /// refcount reaches 0). FAILED_PRECONDITION for a block not in use.
  Status markCached(BlockId block);
  /// Forgets the cached mark; a cached-idle block goes to the free list.
  Status unmarkCached(BlockId block);
  /// Installs the eviction callback (the prefix cache).
  void setEvictionCallback(EvictionCallback callback) {
    on_evict_ = std::move(callback);
  }

  uint32_t numBlocks() const { return uint32_t(refcount_.size()); }
  /// Blocks with refcount > 0: zero once every sequence is released.
  uint32_t usedBlocks() const { return used_; }
  /// Blocks on the free list.
  uint32_t freeBlocks() const { return uint32_t(free_.size()); }
  /// Cached-idle blocks (refcount 0, content kept, evictable).
  uint32_t cachedIdleBlocks() const { return idle_count_; }
  /// Blocks allocate() can hand out: free + cached idle.
  uint32_t availableBlocks() const { return freeBlocks() + idle_count_; }
  /// The refcount of `block` (0 for an id out of range).
  uint32_t refCount(BlockId block) const;
  /// Whether `block` is registered in the prefix cache.
  bool isCached(BlockId block) const;
  /// Cached-idle blocks from least to most recently released (eviction order).
  std::vector<BlockId> idleLruOrder() const;

private:
  static constexpr uint32_t kNone = 0xffffffffu;
  Status checkId(BlockId block, const char *what) const;
  void lruPushBack(BlockId block);
  void lruRemove(BlockId block);
  /// Pops one block (free first, else evicts the LRU idle one); the caller
  /// has checked availableBlocks() > 0.
  BlockId take();

  std::vector<uint32_t> refcount_;
  std::vector<uint8_t> cached_;
  std::vector<BlockId> free_; // a stack; back() is allocated next
  // Intrusive doubly-linked LRU list of cached-idle blocks.
  std::vector<uint32_t> prev_, next_;
  uint32_t lru_head_ = kNone, lru_tail_ = kNone;
  uint32_t idle_count_ = 0;
  uint32_t used_ = 0;
  EvictionCallback on_evict_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_KV_CACHE_BLOCK_ALLOCATOR_H
