//===- numeric.h - scalar conversions between fp32, bf16, f16 and fp8 ------===//
//
// Part of strata. Bit-exact scalar conversions used by the checkpoint reader
// and writer and by CPU reference code:
//   * bf16 <-> fp32: fp32 -> bf16 rounds to nearest, ties to even (RNE); NaN
//     stays NaN (quiet); infinities are kept.
//   * e4m3fn (OCP FP8 E4M3, "F8_E4M3" in safetensors, torch.float8_e4m3fn)
//     <-> fp32: 4 exponent bits (bias 7), 3 mantissa bits, no infinities,
//     NaN = S.1111.111, largest finite 448. fp32 -> e4m3fn rounds to nearest
//     even, handles subnormals (2^-9 steps below 2^-6) exactly and SATURATES:
//     every finite or infinite magnitude above 448 becomes +-448; NaN becomes
//     0x7F (sign kept).
//   * f16 (IEEE binary16) -> fp32, exact.
// All functions are pure and thread-safe; none depends on the floating-point
// environment except that the process runs in the default round-to-nearest
// mode.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_NUMERIC_H
#define STRATA_RUNTIME_BASE_NUMERIC_H

#include <cstdint>
#include <cstring>

namespace strata::runtime {

/// The bits of `value`.
inline uint32_t f32Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// The float with bits `bits`.
inline float f32FromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

/// bf16 bits -> fp32 (exact).
inline float bf16ToF32(uint16_t bits) {
  return f32FromBits(static_cast<uint32_t>(bits) << 16);
}

/// fp32 -> bf16 bits, round to nearest even; NaN becomes a quiet NaN with the
/// same sign.
inline uint16_t f32ToBf16(float value) {
  uint32_t bits = f32Bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

/// Largest finite e4m3fn magnitude.
inline constexpr float kE4m3Max = 448.0f;

/// e4m3fn bits -> fp32 (exact; 0x7F and 0xFF are NaN).
float e4m3ToF32(uint8_t bits);

/// fp32 -> e4m3fn bits, round to nearest even, saturating to +-448 (also for
/// infinities); NaN -> 0x7F with the sign of the input.
uint8_t f32ToE4m3(float value);

/// IEEE binary16 bits -> fp32 (exact, including subnormals, inf and NaN).
float f16ToF32(uint16_t bits);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_NUMERIC_H
