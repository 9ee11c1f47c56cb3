//===- MhcMix.h - mHC's mixing projection in slices of the streams -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The contract between llm.mhc_pre's two kernels (HyperConnectionOps.cpp).
// `mhc_mix` reads a token's flattened streams r (h * d values) in S =
// mhcMixSlices(h * d) contiguous slices and stores, for slice s of token
// t, row [t, s, :] of a [T, S, mix + 1] f32 buffer: the slice's dot product
// with each of the mix rows of fn (mix values), then its sum of squares.
// `mhc_pre` adds the S slices of a token in slice order and takes
// m[j] = dot[j] * rsqrt(sum of squares / (h * d) + norm_eps).
// The slices give a GPU kernel blocks to spread one token over (decode
// steps of one token) without a cross-block reduction; S is fixed, so a
// token's values do not depend on the step it is in. How a producer sums
// inside a slice is its choice: the generic kernel in k order, the GPU's
// mhc_mix (LLMToGPU/MhcMixKernel.cpp) over its lanes.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_MHCMIX_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_MHCMIX_H

#include <cstdint>

namespace mlir::strata {

/// Slices of a token's streams (when they divide its h * d values).
inline constexpr int64_t kMhcMixSlices = 16;

/// S for streams of `width` = h * d values: kMhcMixSlices when it divides
/// them, else 1.
inline int64_t mhcMixSlices(int64_t width) {
  return width % kMhcMixSlices == 0 ? kMhcMixSlices : 1;
}

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_MHCMIX_H
