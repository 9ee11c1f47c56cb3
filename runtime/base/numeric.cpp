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
  const uint8_t sign = std::signbit(value) ? 0x80u : 0x00u;
  if (std::isnan(value))
    return static_cast<uint8_t>(sign | 0x7fu);
  const float magnitude = std::fabs(value);
  if (magnitude >= kE4m3Max) // Includes infinity: saturate.
    return static_cast<uint8_t>(sign | 0x7eu);
  if (magnitude < 0.015625f) {
    // Subnormal range (below 2^-6): steps of 2^-9. A result of 8 is the
    // smallest normal, whose code is also 8 (exponent 1, mantissa 0).
    const float steps = std::nearbyint(magnitude * 512.0f);
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(steps));
  }
  int exponent; // magnitude = fraction * 2^exponent, fraction in [0.5, 1).
  const float fraction = std::frexp(magnitude, &exponent);
  // Unbiased exponent of the leading bit is exponent - 1; 3 mantissa bits
  // means the significand in units of 2^(e-1-3) lies in [8, 16).
  float significand = std::nearbyint(fraction * 16.0f);
  int unbiased = exponent - 1;
  if (significand == 16.0f) {
    significand = 8.0f;
    ++unbiased;
  }
  const int biased = unbiased + 7;
  unsigned code = (static_cast<unsigned>(biased) << 3) |
                  (static_cast<unsigned>(significand) - 8u);
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
