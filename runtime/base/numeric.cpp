//===- numeric.cpp - scalar conversions between fp32, bf16, f16 and fp8 ----===//
//
// Part of strata. See numeric.h. The e4m3fn encoder works on exact values:
// frexp/ldexp scale by powers of two without rounding, and nearbyint in the
// default mode rounds half to even, so the only rounding is the intended one.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/numeric.h"

#include <cmath>

namespace strata::runtime {

float e4m3ToF32(uint8_t bits) {
  const bool negative = (bits & 0x80u) != 0;
  const unsigned exponent = (bits >> 3) & 0xfu;
  const unsigned mantissa = bits & 0x7u;
  float magnitude;
  if (exponent == 0xf && mantissa == 0x7)
    magnitude = std::nanf("");
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);
  else
    magnitude =
        std::ldexp(static_cast<float>(8 + mantissa), static_cast<int>(exponent) - 10);
  return negative ? -magnitude : magnitude;
}

uint8_t f32ToE4m3(float value) {
  // On the bits (no libm in the normal range: procedural real-width
  // checkpoints quantize ~10^11 values). fp32 exponent bias 127, e4m3 7.
  const uint32_t bits = f32Bits(value);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return static_cast<uint8_t>(sign | 0x7fu);
  if (magnitude >= 0x43e00000u) // >= 448, infinity included: saturate.
    return static_cast<uint8_t>(sign | 0x7eu);
  if (magnitude < 0x3c800000u) {
    // Subnormal range (below 2^-6): steps of 2^-9. A result of 8 is the
    // smallest normal, whose code is also 8 (exponent 1, mantissa 0).
    const float steps = std::nearbyint(f32FromBits(magnitude) * 512.0f);
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(steps));
  }
  // Round the 23-bit mantissa to 3 bits, nearest even (a carry moves into
  // the exponent), then rebias the exponent from 127 to 7.
  const uint32_t rounded = magnitude + 0x7ffffu + ((magnitude >> 20) & 1u);
  uint32_t code = (rounded >> 20) - (120u << 3);
  if (code > 0x7eu) // Rounded up past 448 (cannot happen below 448, kept safe).
    code = 0x7eu;
  return static_cast<uint8_t>(sign | code);
}

float f16ToF32(uint16_t bits) {
  const bool negative = (bits & 0x8000u) != 0;
  const unsigned exponent = (bits >> 10) & 0x1fu;
  const unsigned mantissa = bits & 0x3ffu;
  float magnitude;
  if (exponent == 0x1f)
    magnitude = mantissa ? std::nanf("") : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else
    magnitude = std::ldexp(static_cast<float>(1024 + mantissa),
                           static_cast<int>(exponent) - 25);
  return negative ? -magnitude : magnitude;
}

} // namespace strata::runtime
