//===- procedural.cpp - procedural test weights ---------------------------===//
//
// Part of strata. See procedural.h and docs/ProceduralWeights.md. The two
// fp32 operations of step 4 are separate statements and contraction into an
// FMA is switched off, so compilers cannot fuse them.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/procedural.h"

#include "runtime/base/numeric.h"

#include <algorithm>
#include <cmath>
#include <string>

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace strata::runtime {

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : bytes) {
    h ^= static_cast<uint8_t>(ch);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

ProceduralRole proceduralRole(std::string_view name,
                              const std::vector<int64_t> &shape) {
  if (endsWith(name, "norm.weight") || endsWith(name, "layernorm.weight"))
    return {0.1f, 1.0f};
  if (endsWith(name, "norm.bias"))
    return {0.1f, 0.0f};
  if (endsWith(name, "A_log") || endsWith(name, "dt_bias"))
    return {1.0f, 0.0f};
  if (endsWith(name, "conv1d.weight"))
    return {0.5f, 0.0f};
  if (endsWith(name, "_base"))
    return {1.0f, 0.0f};
  if (endsWith(name, "_scale"))
    return {0.5f, 1.0f};
  if (endsWith(name, "e_score_correction_bias"))
    return {0.1f, 0.0f};
  if (endsWith(name, "index_kpool_compress_ape") ||
      endsWith(name, "embed_tokens.weight"))
    return {1.0f, 0.0f};
  if (shape.size() == 2)
    return {static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape[1]))),
            0.0f};
  return {1.0f, 0.0f};
}

ProceduralTensor::ProceduralTensor(std::string_view name,
                                   const std::vector<int64_t> &shape) {
  ProceduralRole role = proceduralRole(name, shape);
  hash_ = fnv1a64(name);
  scale_ = std::ldexp(role.amplitude, -23); // Exact power-of-two scaling.
  offset_ = role.offset;
}

float ProceduralTensor::value(uint64_t index) const {
  const uint64_t z = splitmix64(hash_ + index);
  const int32_t m = static_cast<int32_t>(z >> 40) - (int32_t(1) << 23);
  const float product = static_cast<float>(m) * scale_;
  const float v = product + offset_;
  return v;
}

void ProceduralTensor::values(uint64_t begin, uint64_t count, float *out) const {
  for (uint64_t i = 0; i < count; ++i)
    out[i] = value(begin + i);
}

void quantizeProceduralRows(const ProceduralTensor &tensor, int64_t in,
                            int64_t row_begin, int64_t rows, uint8_t *out_codes,
                            float *out_scales) {
  std::vector<float> v(static_cast<std::size_t>(rows * in));
  tensor.values(static_cast<uint64_t>(row_begin * in),
                static_cast<uint64_t>(rows * in), v.data());
  const int64_t blocks = (in + 127) / 128;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * 128, c1 = std::min(in, c0 + 128);
    float amax = 0.0f;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = c0; col < c1; ++col)
        amax = std::max(amax, std::fabs(v[r * in + col]));
    const float scale_inv = amax == 0.0f ? 1.0f : amax / kE4m3Max;
    if (out_scales)
      out_scales[b] = scale_inv;
    if (!out_codes)
      continue;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t col = c0; col < c1; ++col) {
        const float scaled = v[r * in + col] / scale_inv;
        out_codes[r * in + col] = f32ToE4m3(scaled);
      }
  }
}

} // namespace strata::runtime
