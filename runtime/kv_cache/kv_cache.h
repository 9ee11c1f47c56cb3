//===- kv_cache.h - per-request cache bookkeeping for serving ----*- C++ -*-===//
//
// Part of strata. The public API of runtime/kv_cache (docs/KVCache.md): the
// KvCache owns the block pool, the per-request state slots, the KDA snapshot
// slots and the prefix cache, sized from the artifact's CacheLayout and a
// memory budget (CacheMemoryPlan). The scheduler admits a request
// (KvCache::admit) and gets a SequenceCache: the request's block table, its
// state slot (tail rings + running KDA state, one id, spec §3.1) and the
// prefix hit. Per step:
//   1. reserve(end)            block table covers positions [0, end) of the
//                              step; new checkpoint boundaries in the range
//                              get snapshot slots (pendingSnapshots());
//   2. the executor runs the step: it reads blockTable()/stateSlot(), before
//      the first step copies restoreSnapshotSlot()'s KDA state into
//      stateSlot(), and writes the KDA state after exactly `tokens` tokens
//      into each pending snapshot slot whose boundary the step reaches;
//   3. appendTokens(accepted)  the committed new token ids;
//   4. commitFullBlocks(n)     positions [0, n) are final: full blocks in
//                              them become hittable, reached snapshots
//                              become resumable.
// release() (or destroying the SequenceCache) frees everything at once, for
// finished and aborted requests alike.
//
// Ownership: KvCache owns all bookkeeping (no device memory: the executor
// allocates CacheMemoryPlan::total_bytes and uses its offsets). A
// SequenceCache points into its KvCache, which must outlive it.
// Thread-safety: none; the scheduler thread owns both.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_KV_CACHE_H
#define STRATA_RUNTIME_KV_CACHE_KV_CACHE_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/kv_cache/block_allocator.h"
#include "runtime/kv_cache/cache_geometry.h"
#include "runtime/kv_cache/prefix_cache.h"
#include "runtime/kv_cache/slot_allocator.h"

namespace strata::runtime {

class SequenceCache;

/// Options of KvCache::create.
struct KvCacheOptions {
  /// Budget split (memory_budget_bytes and max_requests are required).
  CacheMemoryOptions memory;
  /// KDA checkpoint interval C in tokens, a multiple of the page size.
  /// Default 0: 16 pages.
  uint64_t checkpoint_interval_tokens = 0;
  /// MTP speculative decoding is used: prefix hits drop their last matched
  /// block (spec §5.3). Default false.
  bool mtp = false;
  /// Turns the prefix cache off (no lookups, no registration, no snapshots).
  /// Default false; a model with KDA layers then needs
  /// memory.num_snapshot_slots > 0.
  bool disable_prefix_cache = false;
  /// Test hook replacing the block hash (PrefixCacheOptions::hash_function);
  /// default nullptr.
  uint64_t (*hash_function)(uint64_t parent, TokenSpan tokens) = nullptr;
};

/// Per-request admission options.
struct AdmitOptions {
  /// Neither look up nor register this request's blocks (e.g. it needs
  /// prompt log-probs, spec §5.4). Default false.
  bool skip_prefix_cache = false;
};

/// A KDA snapshot the executor must write: the KDA state (every layer,
/// recurrent + conv) after exactly `tokens` tokens, into KDA slot `kda_slot`.
struct SnapshotRequest {
  uint64_t tokens = 0;
  uint32_t kda_slot = 0;
};

/// Counters and gauges for /metrics.
struct KvCacheStats {
  uint64_t num_blocks = 0, used_blocks = 0, cached_idle_blocks = 0;
  uint64_t state_slots = 0, used_state_slots = 0;
  uint64_t snapshot_slots = 0, used_snapshot_slots = 0;
  uint64_t prefix_queried_tokens = 0, prefix_hit_tokens = 0;
};

/// Prometheus text exposition of `stats` (the prefix counters under
/// kPrefixCacheQueriedTokensMetric / kPrefixCacheHitTokensMetric, plus
/// strata_kv_cache_* gauges).
std::string formatKvCacheMetrics(const KvCacheStats &stats);

/// The cache bookkeeping of one model instance.
class KvCache {
public:
  /// Plans the memory (planCacheMemory) and builds the pools. Errors are
  /// those of planCacheMemory and PrefixCache::create.
  static StatusOr<std::unique_ptr<KvCache>>
  create(const CacheGeometry &geometry, const KvCacheOptions &options);
  /// The same from an artifact's cache layout.
  static StatusOr<std::unique_ptr<KvCache>>
  create(const artifact::CacheLayout &layout, const KvCacheOptions &options);
  ~KvCache();

  /// Admits a request with `prompt`: takes a state slot (RESOURCE_EXHAUSTED
  /// when max_requests are running), looks up the prefix cache and retains
  /// the hit blocks. INVALID_ARGUMENT for an empty prompt.
  StatusOr<std::unique_ptr<SequenceCache>>
  admit(TokenSpan prompt, const AdmitOptions &options = {});

  const CacheMemoryPlan &plan() const { return plan_; }
  uint64_t pageSizeTokens() const { return plan_.geometry.page_size_tokens; }
  const BlockAllocator &blocks() const { return blocks_; }
  const SlotAllocator &stateSlots() const { return state_slots_; }
  /// Null when the model has no KDA layers or no snapshot slots.
  const SlotAllocator *snapshotSlots() const { return snapshot_slots_.get(); }
  /// Null when the prefix cache is disabled.
  const PrefixCache *prefixCache() const { return prefix_.get(); }
  KvCacheStats stats() const;

private:
  friend class SequenceCache;
  explicit KvCache(const CacheMemoryPlan &plan);

  CacheMemoryPlan plan_;
  BlockAllocator blocks_;
  SlotAllocator state_slots_;
  std::unique_ptr<SlotAllocator> snapshot_slots_;
  std::unique_ptr<PrefixCache> prefix_;
  uint64_t checkpoint_interval_ = 0;
};

/// One request's cache state. Created by KvCache::admit.
class SequenceCache {
public:
  ~SequenceCache() { release(); }
  SequenceCache(const SequenceCache &) = delete;
  SequenceCache &operator=(const SequenceCache &) = delete;

  /// Prompt tokens served by the prefix cache (a multiple of the page size;
  /// numComputed() starts here).
  uint64_t hitTokens() const { return hit_tokens_; }
  /// Committed token ids known so far (prompt + appended).
  uint64_t numTokens() const { return tokens_.size(); }
  const std::vector<int32_t> &tokens() const { return tokens_; }
  /// Positions [0, numComputed()) hold final KV from committed tokens.
  uint64_t numComputed() const { return num_computed_; }
  /// Positions the block table covers (blocks × page size).
  uint64_t capacityTokens() const;
  /// Block table: entry j holds positions [j·B, (j+1)·B).
  const std::vector<BlockId> &blockTable() const { return block_table_; }
  /// The request's state slot: its tail ring slot and its running KDA slot
  /// (the same id by rule, spec §3.1; the ring is logically empty at admit).
  uint32_t stateSlot() const { return state_slot_; }
  /// On a KDA prefix hit, the snapshot KDA slot the first step reads the
  /// state from (into stateSlot(); never advanced in place). Cleared by the
  /// first commitFullBlocks.
  std::optional<uint32_t> restoreSnapshotSlot() const { return restore_; }
  /// Snapshots the executor must write (see SnapshotRequest), by position.
  const std::vector<SnapshotRequest> &pendingSnapshots() const {
    return pending_;
  }
  /// Whether release() ran.
  bool released() const { return released_; }

  /// Appends committed token ids (sampled / accepted outputs).
  Status appendTokens(TokenSpan tokens);
  /// Grows the block table to cover positions [0, num_positions) (all or
  /// nothing; RESOURCE_EXHAUSTED "out of kv blocks: ..." when the pool is
  /// full) and assigns snapshot slots to the checkpoint boundaries in
  /// (numComputed(), num_positions]. Call with the end of each step's
  /// positions before the step.
  Status reserve(uint64_t num_positions);
  /// Marks positions [0, num_computed) final (monotonic, <= numTokens(), <=
  /// capacityTokens()); registers every newly full block with the prefix
  /// cache and attaches the reached snapshots.
  Status commitFullBlocks(uint64_t num_computed);
  /// Frees blocks (dropping references; cached blocks stay hittable),
  /// the state slot, pending snapshot slots and the restore pin. Idempotent.
  void release();

private:
  friend class KvCache;
  explicit SequenceCache(KvCache &cache) : cache_(cache) {}
  bool cachingOn() const { return cache_.prefix_ && !skip_prefix_cache_; }

  KvCache &cache_;
  std::vector<int32_t> tokens_;
  std::vector<BlockId> block_table_;
  std::vector<uint64_t> chain_; // chain hashes of registered blocks
  std::vector<SnapshotRequest> pending_;
  std::optional<uint32_t> restore_;
  uint64_t hit_tokens_ = 0;
  uint64_t num_computed_ = 0;
  uint32_t state_slot_ = 0;
  bool skip_prefix_cache_ = false;
  bool chain_broken_ = false; // a hash collision stopped registration
  bool released_ = false;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_KV_CACHE_KV_CACHE_H
