//===- kv_cache.cpp - per-request cache bookkeeping for serving -----------===//
//
// Part of strata. See kv_cache.h and docs/KVCache.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/kv_cache/kv_cache.h"

#include <fmt/format.h>

namespace strata::runtime {

//===----------------------------------------------------------------------===//
// KvCache
//===----------------------------------------------------------------------===//

KvCache::KvCache(const CacheMemoryPlan &plan)
    : plan_(plan), blocks_(uint32_t(plan.num_blocks)),
      state_slots_("state slot", 0, plan.num_state_slots) {
  if (plan.num_snapshot_slots > 0)
    snapshot_slots_ = std::make_unique<SlotAllocator>(
        "kda snapshot slot", plan.num_state_slots, plan.num_snapshot_slots);
}

KvCache::~KvCache() = default;

StatusOr<std::unique_ptr<KvCache>>
KvCache::create(const CacheGeometry &geometry, const KvCacheOptions &options) {
  STRATA_ASSIGN_OR_RETURN(CacheMemoryPlan plan,
                          planCacheMemory(geometry, options.memory));
  std::unique_ptr<KvCache> cache(new KvCache(plan));
  if (!options.disable_prefix_cache) {
    PrefixCacheOptions prefix;
    prefix.page_size_tokens = geometry.page_size_tokens;
    prefix.checkpoint_interval_tokens = options.checkpoint_interval_tokens;
    prefix.needs_snapshots = geometry.hasKda();
    prefix.mtp = options.mtp;
    prefix.hash_function = options.hash_function;
    STRATA_ASSIGN_OR_RETURN(
        cache->prefix_, PrefixCache::create(cache->blocks_,
                                            cache->snapshot_slots_.get(),
                                            prefix));
    cache->checkpoint_interval_ =
        cache->prefix_->options().checkpoint_interval_tokens;
  }
  return cache;
}

StatusOr<std::unique_ptr<KvCache>>
KvCache::create(const artifact::CacheLayout &layout,
                const KvCacheOptions &options) {
  STRATA_ASSIGN_OR_RETURN(CacheGeometry geometry,
                          CacheGeometry::fromLayout(layout));
  return create(geometry, options);
}

StatusOr<std::unique_ptr<SequenceCache>>
KvCache::admit(TokenSpan prompt, const AdmitOptions &options) {
  if (prompt.size == 0)
    return invalidArgument("admit of an empty prompt");
  STRATA_ASSIGN_OR_RETURN(uint32_t slot, state_slots_.allocate());
  std::unique_ptr<SequenceCache> seq(new SequenceCache(*this));
  seq->state_slot_ = slot;
  seq->tokens_.assign(prompt.begin(), prompt.end());
  seq->skip_prefix_cache_ = options.skip_prefix_cache;
  if (seq->cachingOn()) {
    StatusOr<PrefixMatch> match = prefix_->acquire(prompt);
    if (!match.ok()) {
      seq->release();
      return match.status();
    }
    seq->hit_tokens_ = match->hit_tokens;
    seq->num_computed_ = match->hit_tokens;
    seq->block_table_ = std::move(match->blocks);
    seq->chain_ = std::move(match->hashes);
    seq->restore_ = match->snapshot_slot;
  }
  return seq;
}

KvCacheStats KvCache::stats() const {
  KvCacheStats s;
  s.num_blocks = blocks_.numBlocks();
  s.used_blocks = blocks_.usedBlocks();
  s.cached_idle_blocks = blocks_.cachedIdleBlocks();
  s.state_slots = state_slots_.capacity();
  s.used_state_slots = state_slots_.usedSlots();
  if (snapshot_slots_) {
    s.snapshot_slots = snapshot_slots_->capacity();
    s.used_snapshot_slots = snapshot_slots_->usedSlots();
  }
  if (prefix_) {
    s.prefix_queried_tokens = prefix_->queriedTokens();
    s.prefix_hit_tokens = prefix_->hitTokens();
  }
  return s;
}

std::string formatKvCacheMetrics(const KvCacheStats &s) {
  std::string out;
  auto metric = [&](const char *name, const char *type, const char *help,
                    uint64_t value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name,
                       type, name, value);
  };
  metric(kPrefixCacheQueriedTokensMetric, "counter",
         "Prompt tokens looked up in the prefix cache.",
         s.prefix_queried_tokens);
  metric(kPrefixCacheHitTokensMetric, "counter",
         "Prompt tokens served from the prefix cache.", s.prefix_hit_tokens);
  metric("strata_kv_cache_blocks", "gauge", "KV blocks in the pool.",
         s.num_blocks);
  metric("strata_kv_cache_used_blocks", "gauge",
         "KV blocks referenced by running requests.", s.used_blocks);
  metric("strata_kv_cache_cached_idle_blocks", "gauge",
         "Unreferenced KV blocks kept for prefix hits.", s.cached_idle_blocks);
  metric("strata_kv_cache_used_state_slots", "gauge",
         "Request state slots (tail ring + KDA state) in use.",
         s.used_state_slots);
  metric("strata_kv_cache_used_snapshot_slots", "gauge",
         "KDA snapshot slots in use.", s.used_snapshot_slots);
  return out;
}

//===----------------------------------------------------------------------===//
// SequenceCache
//===----------------------------------------------------------------------===//

uint64_t SequenceCache::capacityTokens() const {
  return block_table_.size() * cache_.pageSizeTokens();
}

Status SequenceCache::appendTokens(TokenSpan tokens) {
  if (released_)
    return failedPrecondition("append to a released sequence");
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return okStatus();
}

Status SequenceCache::reserve(uint64_t num_positions) {
  if (released_)
    return failedPrecondition("reserve on a released sequence");
  const uint64_t b = cache_.pageSizeTokens();
  uint64_t needed = (num_positions + b - 1) / b;
  if (needed > block_table_.size())
    STRATA_RETURN_IF_ERROR(
        cache_.blocks_
            .allocate(needed - block_table_.size(), block_table_)
            .withContext(fmt::format("reserve of {} positions",
                                     num_positions)));
  // Snapshot slots for the checkpoint boundaries this step may reach. A
  // boundary t > numComputed() still needs position t - 1 (re)computed by a
  // later step, which writes the slot; so a slot assigned now is always
  // written before commitFullBlocks can attach it.
  if (!cachingOn() || chain_broken_ || !cache_.snapshot_slots_)
    return okStatus();
  const uint64_t c = cache_.checkpoint_interval_;
  uint64_t from = num_computed_;
  if (!pending_.empty())
    from = std::max(from, pending_.back().tokens);
  for (uint64_t t = (from / c + 1) * c; t <= num_positions; t += c) {
    StatusOr<uint32_t> slot = cache_.prefix_->allocateSnapshotSlot();
    if (!slot.ok())
      break; // Best effort: no snapshot at t means no hit ending at t.
    pending_.push_back({t, *slot});
  }
  return okStatus();
}

Status SequenceCache::commitFullBlocks(uint64_t num_computed) {
  if (released_)
    return failedPrecondition("commit on a released sequence");
  if (num_computed < num_computed_)
    return invalidArgument("commit of {} computed tokens after {}: computed "
                           "tokens never decrease",
                           num_computed, num_computed_);
  if (num_computed > tokens_.size())
    return outOfRange("commit of {} computed tokens, but only {} token ids "
                      "are committed",
                      num_computed, tokens_.size());
  if (num_computed > capacityTokens())
    return outOfRange("commit of {} computed tokens beyond the {} positions "
                      "of the block table",
                      num_computed, capacityTokens());
  num_computed_ = num_computed;
  if (restore_) {
    // The first step has copied the snapshot into the running state.
    if (cache_.prefix_)
      (void)cache_.prefix_->unpinSnapshot(*restore_);
    restore_.reset();
  }
  if (!cachingOn())
    return okStatus();
  const uint64_t b = cache_.pageSizeTokens();
  TokenSpan all(tokens_);
  for (uint64_t j = chain_.size();
       !chain_broken_ && (j + 1) * b <= num_computed_; ++j) {
    uint64_t parent = j == 0 ? PrefixCache::kRootHash : chain_[j - 1];
    STRATA_ASSIGN_OR_RETURN(
        PrefixCache::Committed committed,
        cache_.prefix_->commitBlock(parent, all.sub(j * b, b), block_table_[j]));
    if (committed.collision) {
      // Nothing after this block can be registered under this chain.
      chain_broken_ = true;
      break;
    }
    chain_.push_back(committed.hash);
  }
  size_t kept = 0;
  for (const SnapshotRequest &snap : pending_) {
    if (snap.tokens > num_computed_ && !chain_broken_) {
      pending_[kept++] = snap;
      continue;
    }
    if (chain_broken_ || snap.tokens / b > chain_.size() ||
        !cache_.prefix_->attachSnapshot(chain_[snap.tokens / b - 1],
                                        snap.kda_slot))
      (void)cache_.prefix_->releaseSnapshotSlot(snap.kda_slot);
  }
  pending_.resize(kept);
  return okStatus();
}

void SequenceCache::release() {
  if (released_)
    return;
  released_ = true;
  // Last block first: it becomes the least recently used idle block, so
  // eviction takes a chain's leaves before the prefix they extend.
  for (size_t j = block_table_.size(); j > 0; --j)
    (void)cache_.blocks_.release(block_table_[j - 1]);
  block_table_.clear();
  if (cache_.prefix_) {
    for (const SnapshotRequest &snap : pending_)
      (void)cache_.prefix_->releaseSnapshotSlot(snap.kda_slot);
    if (restore_)
      (void)cache_.prefix_->unpinSnapshot(*restore_);
  }
  pending_.clear();
  restore_.reset();
  (void)cache_.state_slots_.release(state_slot_);
}

} // namespace strata::runtime
