//===- prefix_cache.h - hash-chained reuse of committed KV blocks -*- C++ -*-===//
//
// Part of strata. Content-addressed reuse of full, committed KV blocks and of
// KDA state snapshots for GLM-5.3-Flash (shared/spec/glm5_next-indexer-mtp-
// cache.md §5). docs/KVCache.md explains the rules; in short:
//
// * A block's key is its chain hash: hash(parent chain hash, the block's B
//   token ids), 64-bit, the root parent being kRootHash. The entry also keeps
//   the parent hash and the tokens, and a lookup compares them, so a hash
//   collision is a miss, never a wrong hit.
// * Only full blocks whose tokens are all committed are registered
//   (commitBlock, called after the step that wrote them). The tail ring, the
//   incomplete pool and partial blocks are never registered.
// * Registered blocks stay resident with refcount 0 (cached idle, see
//   BlockAllocator) and are evicted least recently released first, only
//   when no free block is left.
// * Models with KDA layers resume only where a KDA snapshot (recurrent + conv
//   state after exactly h tokens) exists. Snapshots are taken every
//   checkpoint_interval_tokens C (a multiple of B) and attached to the block
//   ending at that boundary; their slots come from a SlotAllocator and are
//   recycled least recently used first when the pool is full, never while a
//   request is restoring from them (pinned).
// * The hit length h for a prompt of N tokens with m hash-matched blocks is
//   the largest h with: h <= m·B, minus one block (B) with MTP drafting;
//   h <= N - 1; h a multiple of C with a snapshot at h (KDA models) or of B.
//   Hence h is always a multiple of B and of index_kpool: the hit never
//   resumes mid-pool and needs nothing from the tail ring.
//
// Ownership: the cache keeps references to a BlockAllocator and an optional
// SlotAllocator (snapshots) that must outlive it; it installs itself as the
// allocator's eviction callback. Thread-safety: none.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_PREFIX_CACHE_H
#define STRATA_RUNTIME_KV_CACHE_PREFIX_CACHE_H

#include <cstdint>
#include <initializer_list>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/kv_cache/block_allocator.h"
#include "runtime/kv_cache/slot_allocator.h"

namespace strata::runtime {

/// A read-only view of token ids (the project is C++17: no std::span).
struct TokenSpan {
  const int32_t *data = nullptr;
  size_t size = 0;
  TokenSpan() = default;
  TokenSpan(const int32_t *data, size_t size) : data(data), size(size) {}
  TokenSpan(const std::vector<int32_t> &tokens)
      : data(tokens.data()), size(tokens.size()) {}
  /// For call arguments only: the list lives until the end of the call.
  TokenSpan(std::initializer_list<int32_t> tokens)
      : data(tokens.begin()), size(tokens.size()) {}
  const int32_t *begin() const { return data; }
  const int32_t *end() const { return data + size; }
  /// Tokens [offset, offset + count); the caller keeps it in range.
  TokenSpan sub(size_t offset, size_t count) const {
    return TokenSpan(data + offset, count);
  }
};

/// Prometheus names of the prefix-cache counters (read by strata-eval).
inline constexpr const char *kPrefixCacheQueriedTokensMetric =
    "strata_prefix_cache_queried_tokens_total";
inline constexpr const char *kPrefixCacheHitTokensMetric =
    "strata_prefix_cache_hit_tokens_total";

/// Options of PrefixCache::create.
struct PrefixCacheOptions {
  /// Tokens per KV block B. Required (> 0).
  uint64_t page_size_tokens = 0;
  /// KDA checkpoint interval C in tokens, a multiple of B. Default 0 means
  /// 16·B (1024 for B = 64, within the spec's 256..1024 range).
  uint64_t checkpoint_interval_tokens = 0;
  /// The model has KDA layers: a hit needs a snapshot at its end. Requires a
  /// snapshot SlotAllocator with at least one slot. Default false.
  bool needs_snapshots = false;
  /// MTP drafting is on: the last hash-matched block is dropped from a hit
  /// (its last draft row depends on the token after it). Default false.
  bool mtp = false;
  /// Test hook replacing the block hash; default nullptr (hashBlock).
  uint64_t (*hash_function)(uint64_t parent,
                            TokenSpan tokens) = nullptr;
};

/// The reusable prefix of a prompt.
struct PrefixMatch {
  /// h: tokens whose KV (and KDA state) the request reuses.
  uint64_t hit_tokens = 0;
  /// Tokens of the blocks matched by hash, before the MTP, N - 1 and
  /// snapshot rules cut them down to hit_tokens.
  uint64_t matched_tokens = 0;
  /// The h / B hit blocks, in order.
  std::vector<BlockId> blocks;
  /// Their chain hashes.
  std::vector<uint64_t> hashes;
  /// KDA slot holding the state after h tokens (KDA models, h > 0).
  std::optional<uint32_t> snapshot_slot;
};

/// The prefix cache (one per KvCache).
class PrefixCache {
public:
  /// Parent hash of block 0.
  static constexpr uint64_t kRootHash = 0x5354524154413031ull; // "STRATA01"
  /// The chain hash of a block: `parent` mixed with every token id.
  static uint64_t hashBlock(uint64_t parent, TokenSpan tokens);

  /// INVALID_ARGUMENT for B = 0, C not a multiple of B, or snapshots needed
  /// without a snapshot pool.
  static StatusOr<std::unique_ptr<PrefixCache>>
  create(BlockAllocator &blocks, SlotAllocator *snapshot_slots,
         const PrefixCacheOptions &options);
  ~PrefixCache();
  PrefixCache(const PrefixCache &) = delete;
  PrefixCache &operator=(const PrefixCache &) = delete;

  /// The hit `prompt` would get now; no side effects.
  PrefixMatch lookup(TokenSpan prompt) const;
  /// lookup, then retains the hit blocks, pins the snapshot and counts
  /// N queried and h hit tokens. The caller releases the blocks through the
  /// BlockAllocator and calls unpinSnapshot once the state is copied.
  StatusOr<PrefixMatch> acquire(TokenSpan prompt);

  /// What commitBlock did.
  struct Committed {
    /// The block's chain hash (the parent of the next block).
    uint64_t hash = 0;
    /// The hash is registered for different content (a 64-bit collision):
    /// the caller must stop registering this chain, since children chained
    /// on `hash` would be reachable from the other content.
    bool collision = false;
  };
  /// Registers in-use block `block` holding the B committed `tokens` after the
  /// chain `parent`. When the same content is already registered (another
  /// request committed it first), the existing entry stays and `block`
  /// remains unregistered.
  StatusOr<Committed> commitBlock(uint64_t parent, TokenSpan tokens,
                                  BlockId block);

  /// A snapshot slot for a new checkpoint: a free one, else the least
  /// recently used unpinned cached snapshot is dropped and its slot reused.
  /// RESOURCE_EXHAUSTED when every slot is pending or pinned.
  StatusOr<uint32_t> allocateSnapshotSlot();
  /// Returns a pending (never attached) snapshot slot.
  Status releaseSnapshotSlot(uint32_t slot);
  /// Attaches pending snapshot `slot`, the KDA state after the block with
  /// chain hash `hash`, to that block's entry. Returns false when the entry
  /// is gone or already has a snapshot; the slot then stays the caller's.
  bool attachSnapshot(uint64_t hash, uint32_t slot);
  /// Undoes one pin of acquire().
  Status unpinSnapshot(uint32_t slot);

  const PrefixCacheOptions &options() const { return options_; }
  /// Registered blocks.
  uint64_t cachedBlocks() const { return entries_.size(); }
  /// Snapshots attached to registered blocks.
  uint64_t cachedSnapshots() const { return snapshots_.size(); }
  /// Prompt tokens looked up by acquire().
  uint64_t queriedTokens() const { return queried_tokens_; }
  /// Prompt tokens served from the cache by acquire().
  uint64_t hitTokens() const { return hit_tokens_; }

private:
  struct Entry {
    BlockId block;
    uint64_t parent;
    std::vector<int32_t> tokens;
    std::optional<uint32_t> snapshot;
  };
  struct Snapshot {
    uint64_t hash;
    uint32_t pins = 0;
    std::list<uint32_t>::iterator lru; // valid iff pins == 0
  };

  PrefixCache(BlockAllocator &blocks, SlotAllocator *snapshot_slots,
              const PrefixCacheOptions &options);
  uint64_t hash(uint64_t parent, TokenSpan tokens) const;
  void onEvict(BlockId block);
  void dropSnapshot(uint32_t slot);

  BlockAllocator &blocks_;
  SlotAllocator *snapshot_slots_;
  PrefixCacheOptions options_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::unordered_map<BlockId, uint64_t> block_hash_;
  std::unordered_map<uint32_t, Snapshot> snapshots_;
  std::list<uint32_t> snapshot_lru_; // unpinned attached snapshots, LRU first
  uint64_t queried_tokens_ = 0;
  uint64_t hit_tokens_ = 0;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_KV_CACHE_PREFIX_CACHE_H
