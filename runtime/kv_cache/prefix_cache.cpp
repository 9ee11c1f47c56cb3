//===- prefix_cache.cpp - hash-chained reuse of committed KV blocks -------===//
//
// Part of strata. See prefix_cache.h and docs/KVCache.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/kv_cache/prefix_cache.h"

#include <algorithm>

namespace strata::runtime {

namespace {

/// splitmix64's finalizer: a bijective 64-bit mix with full avalanche.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

} // namespace

uint64_t PrefixCache::hashBlock(uint64_t parent, TokenSpan tokens) {
  uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ull);
  for (int32_t token : tokens)
    h = mix64(h ^ (uint64_t(uint32_t(token)) + 0x9e3779b97f4a7c15ull));
  return mix64(h ^ tokens.size);
}

PrefixCache::PrefixCache(BlockAllocator &blocks, SlotAllocator *snapshot_slots,
                         const PrefixCacheOptions &options)
    : blocks_(blocks), snapshot_slots_(snapshot_slots), options_(options) {
  blocks_.setEvictionCallback([this](BlockId block) { onEvict(block); });
}

PrefixCache::~PrefixCache() { blocks_.setEvictionCallback(nullptr); }

StatusOr<std::unique_ptr<PrefixCache>>
PrefixCache::create(BlockAllocator &blocks, SlotAllocator *snapshot_slots,
                    const PrefixCacheOptions &options) {
  PrefixCacheOptions o = options;
  if (o.page_size_tokens == 0)
    return invalidArgument("prefix cache page_size_tokens is 0");
  if (o.checkpoint_interval_tokens == 0)
    o.checkpoint_interval_tokens = 16 * o.page_size_tokens;
  if (o.checkpoint_interval_tokens % o.page_size_tokens != 0)
    return invalidArgument("kda checkpoint interval {} tokens is not a "
                           "multiple of the page size {}",
                           o.checkpoint_interval_tokens, o.page_size_tokens);
  if (o.needs_snapshots && (!snapshot_slots || snapshot_slots->capacity() == 0))
    return invalidArgument("prefix caching of a model with kda layers needs "
                           "kda snapshot slots, got 0");
  return std::unique_ptr<PrefixCache>(
      new PrefixCache(blocks, snapshot_slots, o));
}

uint64_t PrefixCache::hash(uint64_t parent, TokenSpan tokens) const {
  return options_.hash_function ? options_.hash_function(parent, tokens)
                                : hashBlock(parent, tokens);
}

PrefixMatch PrefixCache::lookup(TokenSpan prompt) const {
  PrefixMatch match;
  const uint64_t b = options_.page_size_tokens;
  const uint64_t n = prompt.size;
  // 1. Longest chain of registered blocks, content verified.
  uint64_t parent = kRootHash;
  std::vector<const Entry *> chain;
  for (uint64_t start = 0; start + b <= n; start += b) {
    TokenSpan tokens = prompt.sub(start, b);
    uint64_t h = hash(parent, tokens);
    auto it = entries_.find(h);
    if (it == entries_.end() || it->second.parent != parent ||
        !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(),
                    it->second.tokens.end()))
      break;
    chain.push_back(&it->second);
    match.hashes.push_back(h);
    parent = h;
  }
  match.matched_tokens = chain.size() * b;
  // 2. MTP: drop the last matched block; 3. keep the last token to compute.
  uint64_t limit = match.matched_tokens;
  if (options_.mtp && limit > 0)
    limit -= b;
  if (n > 0)
    limit = std::min(limit, n - 1);
  // 4. Align down to a block, and for KDA models to a resident snapshot.
  uint64_t h = limit / b * b;
  if (options_.needs_snapshots) {
    const uint64_t c = options_.checkpoint_interval_tokens;
    h = limit / c * c;
    while (h > 0 && !chain[h / b - 1]->snapshot)
      h -= c;
    if (h > 0)
      match.snapshot_slot = chain[h / b - 1]->snapshot;
  }
  match.hit_tokens = h;
  match.hashes.resize(h / b);
  for (uint64_t i = 0; i < h / b; ++i)
    match.blocks.push_back(chain[i]->block);
  return match;
}

StatusOr<PrefixMatch> PrefixCache::acquire(TokenSpan prompt) {
  PrefixMatch match = lookup(prompt);
  for (size_t i = 0; i < match.blocks.size(); ++i) {
    Status status = blocks_.retain(match.blocks[i]);
    if (!status.ok()) {
      for (size_t j = i; j > 0; --j)
        (void)blocks_.release(match.blocks[j - 1]);
      return status.withContext("prefix cache hit");
    }
  }
  if (match.snapshot_slot) {
    Snapshot &snap = snapshots_.at(*match.snapshot_slot);
    if (snap.pins++ == 0)
      snapshot_lru_.erase(snap.lru);
  }
  queried_tokens_ += prompt.size;
  hit_tokens_ += match.hit_tokens;
  return match;
}

StatusOr<PrefixCache::Committed>
PrefixCache::commitBlock(uint64_t parent, TokenSpan tokens, BlockId block) {
  if (tokens.size != options_.page_size_tokens)
    return invalidArgument("commit of kv block {} with {} tokens, expected a "
                           "full block of {}",
                           block, tokens.size, options_.page_size_tokens);
  if (blocks_.refCount(block) == 0)
    return failedPrecondition("commit of kv block {} that is not in use",
                              block);
  Committed result;
  result.hash = hash(parent, tokens);
  auto known = block_hash_.find(block);
  if (known != block_hash_.end()) {
    if (known->second == result.hash)
      return result;
    return failedPrecondition("kv block {} is already registered with other "
                              "content",
                              block);
  }
  auto it = entries_.find(result.hash);
  if (it != entries_.end()) {
    result.collision =
        it->second.parent != parent ||
        !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(),
                    it->second.tokens.end());
    return result;
  }
  STRATA_RETURN_IF_ERROR(blocks_.markCached(block));
  entries_.emplace(result.hash,
                   Entry{block, parent,
                         std::vector<int32_t>(tokens.begin(), tokens.end()),
                         std::nullopt});
  block_hash_.emplace(block, result.hash);
  return result;
}

void PrefixCache::onEvict(BlockId block) {
  auto known = block_hash_.find(block);
  if (known == block_hash_.end())
    return;
  auto it = entries_.find(known->second);
  if (it != entries_.end()) {
    if (it->second.snapshot)
      dropSnapshot(*it->second.snapshot);
    entries_.erase(it);
  }
  block_hash_.erase(known);
}

void PrefixCache::dropSnapshot(uint32_t slot) {
  auto it = snapshots_.find(slot);
  if (it == snapshots_.end())
    return;
  if (it->second.pins == 0)
    snapshot_lru_.erase(it->second.lru);
  auto entry = entries_.find(it->second.hash);
  if (entry != entries_.end())
    entry->second.snapshot.reset();
  snapshots_.erase(it);
  (void)snapshot_slots_->release(slot);
}

StatusOr<uint32_t> PrefixCache::allocateSnapshotSlot() {
  if (!snapshot_slots_)
    return failedPrecondition("prefix cache has no kda snapshot slots");
  if (snapshot_slots_->freeSlots() == 0 && !snapshot_lru_.empty())
    dropSnapshot(snapshot_lru_.front());
  return snapshot_slots_->allocate();
}

Status PrefixCache::releaseSnapshotSlot(uint32_t slot) {
  if (!snapshot_slots_)
    return failedPrecondition("prefix cache has no kda snapshot slots");
  if (snapshots_.count(slot))
    return failedPrecondition("snapshot slot {} is attached to a cached "
                              "block, not pending",
                              slot);
  return snapshot_slots_->release(slot);
}

bool PrefixCache::attachSnapshot(uint64_t hash, uint32_t slot) {
  auto it = entries_.find(hash);
  if (it == entries_.end() || it->second.snapshot || snapshots_.count(slot))
    return false;
  it->second.snapshot = slot;
  Snapshot &snap = snapshots_[slot];
  snap.hash = hash;
  snap.lru = snapshot_lru_.insert(snapshot_lru_.end(), slot);
  return true;
}

Status PrefixCache::unpinSnapshot(uint32_t slot) {
  auto it = snapshots_.find(slot);
  if (it == snapshots_.end() || it->second.pins == 0)
    return failedPrecondition("unpin of snapshot slot {} that is not pinned",
                              slot);
  if (--it->second.pins == 0)
    it->second.lru = snapshot_lru_.insert(snapshot_lru_.end(), slot);
  return okStatus();
}

} // namespace strata::runtime
