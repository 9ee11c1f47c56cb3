//===- cache_geometry.h - cache sizes and the memory budget split -*- C++ -*-===//
//
// Part of strata. Turns the artifact's CacheLayout into byte counts
// (CacheGeometry) and splits a memory budget between the paged KV blocks and
// the fixed per-request / per-snapshot state (planCacheMemory). All sizes are
// 64-bit and every product is overflow-checked: at real-model scale one block
// is ~0.8 MB, one KDA state ~148 MB and the pool well past 4 GiB
// (shared/spec/glm5_next-indexer-mtp-cache.md §5.6).
//
// One KV block id addresses one page of every MLA latent layer and one page of
// every pooled index layer (11 target + 1 MTP layers on GLM-5.3-Flash), so
//   block_bytes = Σ_latent page_bytes + Σ_index page_bytes.
// Tail rings are per request (one per indexer layer); KDA states (recurrent +
// conv of every KDA layer) are per request and per prefix-cache snapshot.
//
// Ownership: plain values. Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_CACHE_GEOMETRY_H
#define STRATA_RUNTIME_KV_CACHE_CACHE_GEOMETRY_H

#include <cstdint>

#include "runtime/base/status.h"
#include "runtime/schemas/strata_artifact_def_generated.h"

namespace strata::runtime {

/// The byte sizes the cache bookkeeping needs, read from a CacheLayout.
struct CacheGeometry {
  /// Alignment of every page, ring and state (a power of two).
  uint64_t alignment = 1;
  /// KV page size B in tokens (a multiple of index_kpool).
  uint64_t page_size_tokens = 0;
  /// MLA latent layers in the paged pool (target + MTP) and their page size.
  uint32_t latent_layers = 0;
  uint64_t latent_page_bytes = 0;
  /// Pooled index layers in the paged pool and their page size.
  uint32_t index_layers = 0;
  uint64_t index_page_bytes = 0;
  /// Tail-ring layers and the bytes of one ring of one layer.
  uint32_t ring_layers = 0;
  uint64_t ring_bytes_per_layer = 0;
  /// Layers with an MTP shared selection cache (the draft chain's,
  /// index_share_for_mtp_iteration) and the bytes of one request's.
  uint32_t shared_selection_layers = 0;
  uint64_t shared_selection_bytes_per_layer = 0;
  /// KDA layers and the bytes of one layer's recurrent and conv state.
  uint32_t kda_layers = 0;
  uint64_t kda_recurrent_bytes_per_layer = 0;
  uint64_t kda_conv_bytes_per_layer = 0;

  /// Reads the geometry of a (validated) CacheLayout. Fails with
  /// INVALID_ARGUMENT when the layout has no paged cache (no block to
  /// allocate), when page_size_tokens is 0 or when a total overflows 64 bits.
  static StatusOr<CacheGeometry> fromLayout(const artifact::CacheLayout &layout);

  /// Bytes of one KV block (one page of every latent and index layer).
  uint64_t blockBytes() const;
  /// Bytes of one request's indexer state: its tail rings (every indexer
  /// layer) and shared selections (the MTP draft layer's).
  uint64_t ringBytesPerSlot() const;
  /// Bytes of one KDA state (every KDA layer, recurrent + conv); also the
  /// size of one prefix-cache snapshot.
  uint64_t kdaBytesPerSlot() const;
  /// Whether the model has KDA layers (prefix hits then need snapshots).
  bool hasKda() const { return kda_layers > 0; }
};

/// How to split the cache memory budget. Zero-initialized means "invalid":
/// the first two fields are required.
struct CacheMemoryOptions {
  /// Bytes available for every cache together. Required (> 0).
  uint64_t memory_budget_bytes = 0;
  /// Requests that can run at once; each reserves one state slot (its tail
  /// rings and its running KDA state). Required (> 0).
  uint32_t max_requests = 0;
  /// Prefix-cache KDA snapshot slots, each one KDA state. Default 0 (no
  /// snapshots: a model with KDA layers can then never hit the prefix cache).
  uint32_t num_snapshot_slots = 0;
};

/// The budget split and a single-arena layout of every cache. Regions, in
/// order, each starting at a multiple of the alignment:
///   blocks:    for each latent layer l: num_blocks pages of latent_page_bytes,
///              then for each index layer l: num_blocks pages of
///              index_page_bytes (page of block b of layer l is contiguous);
///   rings:     for each ring layer l: num_state_slots rings;
///   kda:       for each KDA layer l: num_kda_slots recurrent states, then for
///              each KDA layer l: num_kda_slots conv states.
/// KDA slot ids [0, num_state_slots) are the running states of requests,
/// [num_state_slots, num_kda_slots) the prefix-cache snapshots, so a snapshot
/// copy is a copy between two slots of the same per-layer arrays.
struct CacheMemoryPlan {
  CacheGeometry geometry;
  /// KV blocks (block ids 0 .. num_blocks - 1).
  uint64_t num_blocks = 0;
  /// Per-request state slots (tail ring + running KDA state) = max_requests.
  uint32_t num_state_slots = 0;
  /// Snapshot slots; their KDA slot ids start at num_state_slots.
  uint32_t num_snapshot_slots = 0;
  /// num_state_slots + num_snapshot_slots when the model has KDA layers, else 0.
  uint32_t num_kda_slots = 0;
  /// Region offsets and sizes in bytes.
  uint64_t blocks_offset = 0, blocks_bytes = 0;
  uint64_t rings_offset = 0, rings_bytes = 0;
  uint64_t kda_offset = 0, kda_bytes = 0;
  /// End of the last region (<= the budget).
  uint64_t total_bytes = 0;

  /// Byte offset of block `block`'s page of latent layer `layer`.
  uint64_t latentPageOffset(uint32_t layer, uint64_t block) const;
  /// Byte offset of block `block`'s page of index layer `layer`.
  uint64_t indexPageOffset(uint32_t layer, uint64_t block) const;
  /// Byte offset of state slot `slot`'s ring of ring layer `layer`.
  uint64_t ringOffset(uint32_t layer, uint32_t slot) const;
  /// Byte offset of KDA slot `slot`'s recurrent state of KDA layer `layer`.
  uint64_t kdaRecurrentOffset(uint32_t layer, uint32_t slot) const;
  /// Byte offset of KDA slot `slot`'s conv state of KDA layer `layer`.
  uint64_t kdaConvOffset(uint32_t layer, uint32_t slot) const;
};

/// Splits `options.memory_budget_bytes`: first the fixed part (max_requests
/// ring sets, max_requests + num_snapshot_slots KDA states), then as many KV
/// blocks as fit in the rest (at most 2^32 - 1, block ids are 32-bit).
/// INVALID_ARGUMENT for a zero budget or max_requests; RESOURCE_EXHAUSTED
/// naming the numbers when the fixed part or a single block does not fit.
StatusOr<CacheMemoryPlan> planCacheMemory(const CacheGeometry &geometry,
                                          const CacheMemoryOptions &options);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_KV_CACHE_CACHE_GEOMETRY_H
