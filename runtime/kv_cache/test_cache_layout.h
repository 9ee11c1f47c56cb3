//===- test_cache_layout.h - CacheLayouts for kv_cache tests -----*- C++ -*-===//
//
// Part of strata. Test-only: builds an artifact::CacheLayout flatbuffer with
// the byte formulas of runtime/schemas/strata_artifact_def.fbs (sizes rounded
// up to the alignment). The defaults are GLM-5.3-Flash at TP1: page 64
// tokens, 11 + 1 MLA layers with 576-wide bf16 latent rows (1152 B), fp8
// pooled index rows of 128 B + an f32 scale (16 per page), a 16-deep tail
// ring of 2 x 128 bf16, 34 KDA layers of 64 x 128 x 128 f32 + 3 x 24576 bf16.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_KV_CACHE_TEST_CACHE_LAYOUT_H
#define STRATA_RUNTIME_KV_CACHE_TEST_CACHE_LAYOUT_H

#include <cstdint>

#include "runtime/schemas/strata_artifact_def_generated.h"

namespace strata::runtime::testing {

struct TestLayoutParams {
  uint64_t alignment = 256;
  uint64_t page_size_tokens = 64;
  uint32_t kpool = 4;
  uint32_t mla_layers = 12;
  uint64_t latent_row_elements = 576; // bf16
  uint64_t index_value_bytes = 128;   // fp8 values; + 4 B f32 scale per row
  uint32_t ring_depth = 16;
  uint64_t ring_row_elements = 128; // bf16, 2 planes
  uint32_t kda_layers = 34;
  uint32_t kda_heads = 64;
  uint32_t kda_head_dim = 128;
  uint32_t conv_kernel_size = 4;
  uint64_t conv_channels = 3 * 8192; // bf16
};

inline uint64_t testAlignUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

/// Owns a CacheLayout flatbuffer.
class TestCacheLayout {
public:
  explicit TestCacheLayout(const TestLayoutParams &p = {}) {
    namespace fb = strata::artifact;
    flatbuffers::Offset<fb::MlaLatentCache> mla;
    flatbuffers::Offset<fb::IndexPageCache> index;
    flatbuffers::Offset<fb::TailRingCache> ring;
    if (p.mla_layers > 0) {
      uint64_t row = p.latent_row_elements * 2;
      mla = fb::CreateMlaLatentCache(
          b_, p.mla_layers, fb::DType::bf16, p.latent_row_elements, row,
          testAlignUp(p.page_size_tokens * row, p.alignment));
      uint64_t rows = p.page_size_tokens / p.kpool;
      index = fb::CreateIndexPageCache(
          b_, p.mla_layers, rows, fb::DType::f8e4m3fn, p.index_value_bytes,
          fb::DType::f32, fb::IndexScaleLayout::values_then_scales,
          p.index_value_bytes,
          testAlignUp(rows * (p.index_value_bytes + 4), p.alignment));
      ring = fb::CreateTailRingCache(
          b_, p.mla_layers, p.ring_depth, 2, p.ring_row_elements,
          fb::DType::bf16,
          testAlignUp(2ull * p.ring_depth * p.ring_row_elements * 2,
                      p.alignment));
    }
    flatbuffers::Offset<fb::KdaStateCache> kda;
    if (p.kda_layers > 0)
      kda = fb::CreateKdaStateCache(
          b_, p.kda_layers, p.kda_heads, p.kda_head_dim, p.kda_head_dim,
          fb::DType::f32,
          testAlignUp(uint64_t(p.kda_heads) * p.kda_head_dim * p.kda_head_dim *
                          4,
                      p.alignment),
          p.conv_kernel_size, p.conv_channels, fb::DType::bf16,
          testAlignUp(uint64_t(p.conv_kernel_size - 1) * p.conv_channels * 2,
                      p.alignment));
    b_.Finish(fb::CreateCacheLayout(b_, p.alignment, p.page_size_tokens, mla,
                                    index, ring, kda));
  }
  const strata::artifact::CacheLayout &get() const {
    return *flatbuffers::GetRoot<strata::artifact::CacheLayout>(
        b_.GetBufferPointer());
  }

private:
  flatbuffers::FlatBufferBuilder b_;
};

} // namespace strata::runtime::testing

#endif // STRATA_RUNTIME_KV_CACHE_TEST_CACHE_LAYOUT_H
