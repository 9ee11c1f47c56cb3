//===- MlaSplit.h - sparse MLA attention split over positions ---*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The contract of mla_attend and mla_combine for small steps
// (flash-decoding): a step of T tokens gives each token S(T) position
// ranges, S(T) = min(kMlaSplitMaxRanges, kMlaSplitSlots / T) for
// T <= kMlaSplitMaxTokens and 1 above.
// With S = 1 mla_attend stores each (token, head)'s attention output oh
// directly. With S > 1 it stores, for range s of token t, into row t * S + s
// of a [kMlaSplitSlots, heads, R + 2] f32 parts buffer: the range's
// softmax-weighted latent sum normalised by its own sum (R values, not read
// for an empty range), its largest scaled score (-inf when empty) and its
// sum of exp(score - that maximum) (0 when empty); mla_combine then writes
// oh[t, h] = sum_s (w_s / sum_s' w_s') o_s over the ranges with
// w_s = exp(m_s - max_s m_s) l_s > 0.
// How the positions are cut into the S ranges is the producer's choice:
// the GPU's matrix-unit mla_attend (LLMToGPU/MlaAttendKernel.cpp) takes
// [min(s L, count), min((s + 1) L, count)) with L = ceil(count / S) rounded
// up to kMlaSplitAlign positions, spreading a token over S blocks; the
// generic kernel (MlaOps.cpp) puts every position in range 0, for which
// mla_combine's weights are exactly 1, 0, ..., 0, so its results are those
// of the unsplit form bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_MLASPLIT_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_MLASPLIT_H

#include <cstdint>

#include "mlir/IR/Builders.h"

namespace mlir::strata {

/// Rows of the parts buffer: the (token, range) pairs of a split step. The
/// GPU kernel takes one block per pair, so a split step of T tokens keeps
/// T * S(T) = 128 blocks busy (one per SM of an H100 / H200 at 64 heads; an
/// MI300X has 304 CUs) where a step of T tokens alone would leave most of
/// them idle.
inline constexpr int64_t kMlaSplitSlots = 128;
/// The most ranges of one token: a range shorter than this many positions'
/// share of a decode token's top-k selection (2048 / 64 = 32, one chunk of
/// the GPU kernel) would spend more on loading the block's queries and on
/// the merge than on its rows.
inline constexpr int64_t kMlaSplitMaxRanges = 64;
/// The largest step that splits (at least 2 ranges per token).
inline constexpr int64_t kMlaSplitMaxTokens = kMlaSplitSlots / 2;
/// Ranges start at multiples of this many positions (the GPU kernel's
/// chunk).
inline constexpr int64_t kMlaSplitAlign = 32;

/// S(T) as an index value for a step of `tokens` tokens:
/// min(kMlaSplitMaxRanges, kMlaSplitSlots / T) for T <= kMlaSplitMaxTokens,
/// else 1. Every producer and mla_combine use this one definition.
Value buildMlaSplitsPerToken(OpBuilder &b, Location loc, Value tokens);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_MLASPLIT_H
