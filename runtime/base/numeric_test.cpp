//===- numeric_test.cpp - tests of the fp32/bf16/f16/fp8 conversions -------===//
//
// The e4m3fn tests are exhaustive over all 256 codes and compare the encoder
// against a brute-force nearest-value search written independently here.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace strata::runtime {
namespace {

// Reference decoder written from the OCP definition: (-1)^S 2^(E-7) (1+M/8)
// for E > 0, (-1)^S 2^-6 (M/8) for E == 0, NaN for S.1111.111.
double referenceE4m3(int code) {
  int s = (code >> 7) & 1, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7)
    return std::numeric_limits<double>::quiet_NaN();
  double mag = e == 0 ? std::pow(2.0, -6) * (m / 8.0)
                      : std::pow(2.0, e - 7) * (1.0 + m / 8.0);
  return s ? -mag : mag;
}

// Reference encoder: nearest finite code by exhaustive search, ties to the
// code with an even mantissa, magnitudes above 448 saturate.
uint8_t referenceEncode(float x) {
  double ax = std::fabs(static_cast<double>(x));
  int best = 0;
  double bestErr = std::numeric_limits<double>::infinity();
  for (int code = 0; code <= 0x7e; ++code) {
    double err = std::fabs(referenceE4m3(code) - ax);
    if (err < bestErr || (err == bestErr && (code & 1) == 0)) {
      best = code;
      bestErr = err;
    }
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(NumericTest, E4m3DecodesAll256Codes) {
  int nans = 0;
  for (int code = 0; code < 256; ++code) {
    float got = e4m3ToF32(static_cast<uint8_t>(code));
    double want = referenceE4m3(code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << code;
      ++nans;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), want) << "code " << code;
    EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code " << code;
  }
  EXPECT_EQ(nans, 2);
  EXPECT_EQ(e4m3ToF32(0x7e), 448.0f);
  EXPECT_EQ(e4m3ToF32(0x01), std::ldexp(1.0f, -9));
}

TEST(NumericTest, E4m3RoundTripsAllFiniteCodes) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f)
      continue;
    float v = e4m3ToF32(static_cast<uint8_t>(code));
    EXPECT_EQ(f32ToE4m3(v), code) << "value " << v;
  }
}

TEST(NumericTest, E4m3MidpointsRoundToEven) {
  // Between every pair of adjacent non-negative codes: the midpoint goes to
  // the even code, one ulp (fp32) either side goes to the nearer one.
  for (int code = 0; code < 0x7e; ++code) {
    float lo = e4m3ToF32(static_cast<uint8_t>(code));
    float hi = e4m3ToF32(static_cast<uint8_t>(code + 1));
    float mid = (lo + hi) / 2; // Exact: both have few mantissa bits.
    int even = (code & 1) == 0 ? code : code + 1;
    EXPECT_EQ(f32ToE4m3(mid), even) << "midpoint " << mid;
    EXPECT_EQ(f32ToE4m3(-mid), 0x80 | even) << "midpoint " << -mid;
    EXPECT_EQ(f32ToE4m3(std::nextafter(mid, 0.0f)), code) << mid;
    EXPECT_EQ(f32ToE4m3(std::nextafter(mid, 1000.0f)), code + 1) << mid;
  }
}

// The encoder as first written (frexp / nearbyint), kept as the reference of
// the bit-level one.
uint8_t frexpE4m3(float value) {
  const uint8_t sign = std::signbit(value) ? 0x80u : 0x00u;
  if (std::isnan(value))
    return static_cast<uint8_t>(sign | 0x7fu);
  const float magnitude = std::fabs(value);
  if (magnitude >= kE4m3Max)
    return static_cast<uint8_t>(sign | 0x7eu);
  if (magnitude < 0.015625f)
    return static_cast<uint8_t>(
        sign | static_cast<uint8_t>(std::nearbyint(magnitude * 512.0f)));
  int exponent;
  const float fraction = std::frexp(magnitude, &exponent);
  float significand = std::nearbyint(fraction * 16.0f);
  int unbiased = exponent - 1;
  if (significand == 16.0f) {
    significand = 8.0f;
    ++unbiased;
  }
  unsigned code = (static_cast<unsigned>(unbiased + 7) << 3) |
                  (static_cast<unsigned>(significand) - 8u);
  return static_cast<uint8_t>(sign | std::min(code, 0x7eu));
}

// Tests the bit-level encoder against the frexp one: every exponent and
// sign, every 3-bit mantissa head with the tails around the rounding point
// (0, 1, half - 1, half, half + 1, all ones), and 2^22 pseudo-random bit
// patterns.
TEST(NumericTest, E4m3BitEncoderMatchesFrexpEncoder) {
  const uint32_t tails[] = {0, 1, 0x7ffff, 0x80000, 0x80001, 0xfffff};
  for (uint32_t sign = 0; sign < 2; ++sign)
    for (uint32_t exponent = 0; exponent < 256; ++exponent)
      for (uint32_t head = 0; head < 8; ++head)
        for (uint32_t tail : tails) {
          const uint32_t bits = sign << 31 | exponent << 23 | head << 20 | tail;
          const float v = f32FromBits(bits);
          ASSERT_EQ(f32ToE4m3(v), frexpE4m3(v)) << std::hex << bits;
        }
  uint64_t z = 1;
  for (int i = 0; i < (1 << 22); ++i) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    const float v = f32FromBits(static_cast<uint32_t>(z >> 32));
    ASSERT_EQ(f32ToE4m3(v), frexpE4m3(v)) << v;
  }
}

TEST(NumericTest, E4m3SaturatesAndKeepsNan) {
  EXPECT_EQ(f32ToE4m3(448.0f), 0x7e);
  EXPECT_EQ(f32ToE4m3(460.0f), 0x7e);
  EXPECT_EQ(f32ToE4m3(1e9f), 0x7e);
  EXPECT_EQ(f32ToE4m3(-1e9f), 0xfe);
  EXPECT_EQ(f32ToE4m3(INFINITY), 0x7e);
  EXPECT_EQ(f32ToE4m3(-INFINITY), 0xfe);
  EXPECT_EQ(f32ToE4m3(std::nanf("")), 0x7f);
  EXPECT_EQ(f32ToE4m3(-0.0f), 0x80);
  EXPECT_EQ(f32ToE4m3(std::ldexp(1.0f, -11)), 0x00); // Below half a step.
  EXPECT_EQ(f32ToE4m3(std::ldexp(1.0f, -10)), 0x00); // Tie, to even 0.
  EXPECT_EQ(f32ToE4m3(std::ldexp(3.0f, -11)), 0x01);
}

TEST(NumericTest, E4m3EncoderMatchesBruteForceOnAFp32Sweep) {
  // Every 8209th fp32 bit pattern in [0, 512], both signs.
  const uint32_t end = f32Bits(512.0f);
  int checked = 0;
  for (uint32_t bits = 0; bits <= end; bits += 8209) {
    float x = f32FromBits(bits);
    ASSERT_EQ(f32ToE4m3(x), referenceEncode(x)) << "x = " << x;
    ASSERT_EQ(f32ToE4m3(-x), referenceEncode(-x)) << "x = " << -x;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

TEST(NumericTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  // 1 + 2^-8 is exactly between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(f32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1.0078125 + 2^-8 is the tie above an odd mantissa: rounds up.
  EXPECT_EQ(f32ToBf16(1.0078125f + std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32ToBf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)),
            0x3f81);
  EXPECT_EQ(f32ToBf16(-2.5f), 0xc020);
  EXPECT_EQ(f32ToBf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32ToBf16(3.4028235e38f), 0x7f80); // Rounds up to infinity.
  uint16_t nan = f32ToBf16(std::nanf(""));
  EXPECT_TRUE(std::isnan(bf16ToF32(nan)));
  // A NaN whose payload sits only in the low bits must stay NaN.
  EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBf16(f32FromBits(0x7f800001u)))));
}

TEST(NumericTest, Bf16RoundTripsEveryBf16Value) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float v = bf16ToF32(static_cast<uint16_t>(b));
    if (std::isnan(v))
      continue;
    EXPECT_EQ(f32ToBf16(v), b);
  }
}

TEST(NumericTest, F16Decodes) {
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToF32(0x7c00), INFINITY);
  EXPECT_TRUE(std::isnan(f16ToF32(0x7e00)));
}

} // namespace
} // namespace strata::runtime
