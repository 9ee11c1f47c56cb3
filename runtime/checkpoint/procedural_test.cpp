//===- procedural_test.cpp - tests of the procedural weight definition ----===//
//
// Hash functions are checked against published test vectors; element values
// against an independent double-precision evaluation of the definition.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/procedural.h"

#include "runtime/base/numeric.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::runtime {
namespace {

TEST(ProceduralTest, HashesMatchPublishedVectors) {
  // FNV-1a-64 reference vectors (Fowler/Noll/Vo test suite).
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // splitmix64 seeded with 0: first output of Vigna's reference generator.
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);
}

TEST(ProceduralTest, RoleTableFirstMatchWins) {
  auto role = [](const char *name, std::vector<int64_t> shape) {
    return proceduralRole(name, shape);
  };
  EXPECT_EQ(role("x.input_layernorm.weight", {8}).offset, 1.0f);
  EXPECT_EQ(role("x.input_layernorm.weight", {8}).amplitude, 0.1f);
  EXPECT_EQ(role("x.self_attn.o_norm.weight", {8}).offset, 1.0f);
  EXPECT_EQ(role("x.indexer.k_norm.bias", {8}).offset, 0.0f);
  EXPECT_EQ(role("x.indexer.k_norm.bias", {8}).amplitude, 0.1f);
  EXPECT_EQ(role("x.self_attn.A_log", {8}).amplitude, 1.0f);
  EXPECT_EQ(role("x.self_attn.q_conv1d.weight", {8, 1, 4}).amplitude, 0.5f);
  EXPECT_EQ(role("x.hc_attn_base", {24}).amplitude, 1.0f);
  EXPECT_EQ(role("x.hc_ffn_scale", {3}).offset, 1.0f);
  EXPECT_EQ(role("x.hc_ffn_scale", {3}).amplitude, 0.5f);
  EXPECT_EQ(role("x.mlp.gate.e_score_correction_bias", {16}).amplitude, 0.1f);
  // Rank 2 but matched by name first.
  EXPECT_EQ(role("x.indexer.index_kpool_compress_ape", {4, 128}).amplitude,
            1.0f);
  EXPECT_EQ(role("m.embed_tokens.weight", {512, 256}).amplitude, 1.0f);
  // Rank 2: 1/sqrt(in) rounded to fp32.
  EXPECT_EQ(role("x.hc_attn_fn", {24, 1024}).amplitude, 0.03125f);
  EXPECT_EQ(role("lm_head.weight", {512, 3}).amplitude,
            static_cast<float>(1.0 / std::sqrt(3.0)));
  EXPECT_EQ(role("x.other", {5}).amplitude, 1.0f);
}

// Independent evaluation: m * amplitude * 2^-23 is exact in double (24-bit by
// 24-bit), so one rounding to float equals the fp32 product; then the fp32
// addition of the offset.
float reference(const std::string &name, std::vector<int64_t> shape,
                uint64_t i) {
  ProceduralRole role = proceduralRole(name, shape);
  uint64_t z = splitmix64(fnv1a64(name) + i);
  double m = static_cast<double>(z >> 40) - 8388608.0;
  float product = static_cast<float>(m * role.amplitude / 8388608.0);
  volatile float sum = product + role.offset;
  return sum;
}

TEST(ProceduralTest, ValuesFollowTheDefinition) {
  for (const auto &[name, shape] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"model.language_model.layers.3.self_attn.q_a_proj.weight",
            {256, 256}},
           {"model.language_model.norm.weight", {256}},
           {"model.language_model.layers.0.hc_attn_scale", {3}},
           {"lm_head.weight", {512, 3}}}) {
    ProceduralTensor gen(name, shape);
    ProceduralRole role = proceduralRole(name, shape);
    for (uint64_t i : {0ull, 1ull, 2ull, 255ull, 1000ull, 65535ull}) {
      float v = gen.value(i);
      EXPECT_EQ(v, reference(name, shape, i)) << name << "[" << i << "]";
      EXPECT_GE(v, role.offset - role.amplitude);
      EXPECT_LT(v, role.offset + role.amplitude);
    }
    float chunk[4];
    gen.values(10, 4, chunk);
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(chunk[k], gen.value(10 + k));
  }
}

TEST(ProceduralTest, Fp8BlockQuantizationFollowsTheDefinition) {
  // [130, 200]: edge blocks in both dimensions.
  const std::string name = "w.weight";
  const int64_t rows = 130, in = 200;
  ProceduralTensor gen(name, {rows, in});
  for (int64_t r0 : {0, 128}) {
    const int64_t n = std::min<int64_t>(128, rows - r0);
    std::vector<uint8_t> codes(n * in);
    float scales[2];
    quantizeProceduralRows(gen, in, r0, n, codes.data(), scales);
    for (int b = 0; b < 2; ++b) {
      float amax = 0;
      for (int64_t r = r0; r < r0 + n; ++r)
        for (int64_t c = b * 128; c < std::min<int64_t>(in, b * 128 + 128); ++c)
          amax = std::max(amax, std::fabs(gen.value(r * in + c)));
      EXPECT_EQ(scales[b], amax / 448.0f);
      for (int64_t r = r0; r < r0 + n; ++r)
        for (int64_t c = b * 128; c < std::min<int64_t>(in, b * 128 + 128);
             ++c) {
          float v = gen.value(r * in + c);
          uint8_t code = codes[(r - r0) * in + c];
          EXPECT_EQ(code, f32ToE4m3(v / scales[b]));
          // Dequantized within e4m3's half-ulp (2^-4 relative) or subnormal
          // step.
          float back = e4m3ToF32(code) * scales[b];
          EXPECT_LE(std::fabs(back - v),
                    std::max(std::fabs(v) / 16, scales[b] / 512) * 1.0001f);
        }
    }
  }
}

} // namespace
} // namespace strata::runtime
