//===- cache_geometry.cpp - cache sizes and the memory budget split -------===//
//
// Part of strata. See cache_geometry.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kv_cache/cache_geometry.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace strata::runtime {

namespace {

/// a * b, or nullopt on 64-bit overflow.
std::optional<uint64_t> mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// a + b, or nullopt on 64-bit overflow.
std::optional<uint64_t> add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// `value` rounded up to `alignment` (a power of two), or nullopt on overflow.
std::optional<uint64_t> alignUp(uint64_t value, uint64_t alignment) {
  std::optional<uint64_t> sum = add(value, alignment - 1);
  if (!sum)
    return std::nullopt;
  return *sum & ~(alignment - 1);
}

Status overflow(const char *what) {
  return invalidArgument("cache size overflows 64 bits: {}", what);
}

} // namespace

StatusOr<CacheGeometry>
CacheGeometry::fromLayout(const artifact::CacheLayout &layout) {
  CacheGeometry g;
  g.alignment = layout.alignment();
  if (g.alignment == 0 || (g.alignment & (g.alignment - 1)) != 0)
    return invalidArgument("cache layout alignment {} is not a power of two",
                           g.alignment);
  g.page_size_tokens = layout.page_size_tokens();
  if (const artifact::MlaLatentCache *mla = layout.mla_latent()) {
    g.latent_layers = mla->num_layers();
    g.latent_page_bytes = mla->page_bytes();
  }
  if (const artifact::IndexPageCache *index = layout.index_pages()) {
    g.index_layers = index->num_layers();
    g.index_page_bytes = index->page_bytes();
  }
  if (const artifact::TailRingCache *ring = layout.tail_ring()) {
    g.ring_layers = ring->num_layers();
    g.ring_bytes_per_layer = ring->bytes_per_layer();
  }
  if (const artifact::SharedSelectionCache *shared =
          layout.shared_selection()) {
    g.shared_selection_layers = shared->num_layers();
    g.shared_selection_bytes_per_layer = shared->bytes_per_layer();
  }
  if (const artifact::KdaStateCache *kda = layout.kda()) {
    g.kda_layers = kda->num_layers();
    g.kda_recurrent_bytes_per_layer = kda->recurrent_bytes_per_layer();
    g.kda_conv_bytes_per_layer = kda->conv_bytes_per_layer();
  }
  if (g.page_size_tokens == 0)
    return invalidArgument("cache layout page_size_tokens is 0");
  uint64_t latent, index, ring, rec, conv;
  if (__builtin_mul_overflow(uint64_t(g.latent_layers), g.latent_page_bytes,
                             &latent) ||
      __builtin_mul_overflow(uint64_t(g.index_layers), g.index_page_bytes,
                             &index) ||
      __builtin_add_overflow(latent, index, &latent))
    return overflow("block bytes");
  if (latent == 0)
    return invalidArgument("cache layout has no paged cache (no mla_latent or "
                           "index_pages bytes): nothing to allocate blocks of");
  uint64_t shared;
  if (__builtin_mul_overflow(uint64_t(g.ring_layers), g.ring_bytes_per_layer,
                             &ring) ||
      __builtin_mul_overflow(uint64_t(g.shared_selection_layers),
                             g.shared_selection_bytes_per_layer, &shared) ||
      __builtin_add_overflow(ring, shared, &ring))
    return overflow("ring bytes per slot");
  if (__builtin_mul_overflow(uint64_t(g.kda_layers),
                             g.kda_recurrent_bytes_per_layer, &rec) ||
      __builtin_mul_overflow(uint64_t(g.kda_layers),
                             g.kda_conv_bytes_per_layer, &conv) ||
      __builtin_add_overflow(rec, conv, &rec))
    return overflow("kda bytes per slot");
  return g;
}

uint64_t CacheGeometry::blockBytes() const {
  return uint64_t(latent_layers) * latent_page_bytes +
         uint64_t(index_layers) * index_page_bytes;
}

uint64_t CacheGeometry::ringBytesPerSlot() const {
  return uint64_t(ring_layers) * ring_bytes_per_layer +
         uint64_t(shared_selection_layers) * shared_selection_bytes_per_layer;
}

uint64_t CacheGeometry::kdaBytesPerSlot() const {
  return uint64_t(kda_layers) *
         (kda_recurrent_bytes_per_layer + kda_conv_bytes_per_layer);
}

StatusOr<CacheMemoryPlan> planCacheMemory(const CacheGeometry &geometry,
                                          const CacheMemoryOptions &options) {
  if (options.memory_budget_bytes == 0)
    return invalidArgument("cache memory budget is 0 bytes");
  if (options.max_requests == 0)
    return invalidArgument("max_requests is 0");
  if (geometry.blockBytes() == 0)
    return invalidArgument("cache geometry has 0 bytes per block");
  CacheMemoryPlan plan;
  plan.geometry = geometry;
  plan.num_state_slots = options.max_requests;
  plan.num_snapshot_slots = geometry.hasKda() ? options.num_snapshot_slots : 0;
  uint64_t kda_slots =
      geometry.hasKda() ? uint64_t(options.max_requests) +
                              options.num_snapshot_slots
                        : 0;
  if (kda_slots > std::numeric_limits<uint32_t>::max())
    return invalidArgument("{} kda slots do not fit 32-bit slot ids",
                           kda_slots);
  plan.num_kda_slots = uint32_t(kda_slots);

  // Fixed part: rings of every request, KDA states of every request and
  // snapshot. The blocks region comes first but is sized last.
  std::optional<uint64_t> rings =
      mul(geometry.ringBytesPerSlot(), options.max_requests);
  std::optional<uint64_t> kda = mul(geometry.kdaBytesPerSlot(), kda_slots);
  if (!rings || !kda)
    return overflow("per-request state");
  plan.rings_bytes = *rings;
  plan.kda_bytes = *kda;
  std::optional<uint64_t> rings_aligned = alignUp(*rings, geometry.alignment);
  std::optional<uint64_t> kda_aligned = alignUp(*kda, geometry.alignment);
  if (!rings_aligned || !kda_aligned || !add(*rings_aligned, *kda_aligned))
    return overflow("per-request state");
  uint64_t fixed = *rings_aligned + *kda_aligned;
  if (fixed >= options.memory_budget_bytes)
    return resourceExhausted(
        "cache memory budget {} bytes does not cover the {} bytes of fixed "
        "state ({} requests x {} ring bytes + {} kda slots x {} kda bytes)",
        options.memory_budget_bytes, fixed, options.max_requests,
        geometry.ringBytesPerSlot(), kda_slots, geometry.kdaBytesPerSlot());
  // The blocks region starts at 0 and ends aligned (its pages are aligned,
  // so num_blocks * block_bytes is already a multiple of the alignment when
  // the layout is valid; alignUp keeps the plan right for any input).
  uint64_t left = options.memory_budget_bytes - fixed;
  uint64_t block_bytes = geometry.blockBytes();
  uint64_t blocks = left / block_bytes;
  while (blocks > 0) {
    std::optional<uint64_t> aligned =
        alignUp(blocks * block_bytes, geometry.alignment);
    if (aligned && *aligned <= left)
      break;
    --blocks;
  }
  if (blocks == 0)
    return resourceExhausted(
        "cache memory budget {} bytes leaves {} bytes after the fixed state, "
        "less than one kv block of {} bytes",
        options.memory_budget_bytes, left, block_bytes);
  blocks = std::min<uint64_t>(blocks, std::numeric_limits<uint32_t>::max());
  plan.num_blocks = blocks;
  plan.blocks_offset = 0;
  plan.blocks_bytes = blocks * block_bytes;
  plan.rings_offset = *alignUp(plan.blocks_bytes, geometry.alignment);
  plan.kda_offset = plan.rings_offset + *rings_aligned;
  plan.total_bytes = plan.kda_offset + plan.kda_bytes;
  return plan;
}

uint64_t CacheMemoryPlan::latentPageOffset(uint32_t layer,
                                           uint64_t block) const {
  return blocks_offset +
         (uint64_t(layer) * num_blocks + block) * geometry.latent_page_bytes;
}

uint64_t CacheMemoryPlan::indexPageOffset(uint32_t layer,
                                          uint64_t block) const {
  return blocks_offset +
         uint64_t(geometry.latent_layers) * num_blocks *
             geometry.latent_page_bytes +
         (uint64_t(layer) * num_blocks + block) * geometry.index_page_bytes;
}

uint64_t CacheMemoryPlan::ringOffset(uint32_t layer, uint32_t slot) const {
  return rings_offset + (uint64_t(layer) * num_state_slots + slot) *
                            geometry.ring_bytes_per_layer;
}

uint64_t CacheMemoryPlan::kdaRecurrentOffset(uint32_t layer,
                                             uint32_t slot) const {
  return kda_offset + (uint64_t(layer) * num_kda_slots + slot) *
                          geometry.kda_recurrent_bytes_per_layer;
}

uint64_t CacheMemoryPlan::kdaConvOffset(uint32_t layer, uint32_t slot) const {
  return kda_offset +
         uint64_t(geometry.kda_layers) * num_kda_slots *
             geometry.kda_recurrent_bytes_per_layer +
         (uint64_t(layer) * num_kda_slots + slot) *
             geometry.kda_conv_bytes_per_layer;
}

} // namespace strata::runtime
