//===- weight_shard_extent.h - WeightShard's offsets and extents -*- C++ -*-===//
//
// Part of strata. The rule of strata_artifact_def.fbs's WeightShard, shared
// by the compiler's writer (computeParallelLayout) and the runtime's checks
// (artifact validation, the weight manifest): along a shard's dimension, a
// rank's part is `extent` elements; a plain split starts part k at
// k * extent and the checkpoint tensor is parts * extent long. A split of a
// block-scale tensor (`block` > 0: the fp8 scales of another entry, whose
// part is `dataExtent` data elements) starts at k * dataExtent / block,
// rounded down, and the scale tensor is ceil(dataExtent * parts / block)
// long; a data part is whole blocks or lies inside one block.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEMAS_WEIGHT_SHARD_EXTENT_H
#define STRATA_RUNTIME_SCHEMAS_WEIGHT_SHARD_EXTENT_H

#include <cstdint>

namespace strata {

/// Where part `coordinate` starts along the shard's dimension.
inline int64_t weightShardOffset(uint64_t coordinate, int64_t extent,
                                 int64_t dataExtent, int64_t block) {
  if (block > 0)
    return static_cast<int64_t>(coordinate) * dataExtent / block;
  return static_cast<int64_t>(coordinate) * extent;
}

/// The checkpoint tensor's extent along the shard's dimension.
inline int64_t weightShardWholeExtent(int64_t parts, int64_t extent,
                                      int64_t dataExtent, int64_t block) {
  if (block > 0)
    return (dataExtent * parts + block - 1) / block;
  return extent * parts;
}

/// Whether a block-scale split is well formed: the data part is whole
/// blocks or inside one, and the scale part is ceil(dataExtent / block).
/// True for a plain split (block == 0).
inline bool isWellFormedScaleShard(int64_t extent, int64_t dataExtent,
                                   int64_t block) {
  if (block == 0)
    return dataExtent == 0;
  if (block < 0 || dataExtent <= 0)
    return false;
  if (dataExtent % block != 0 && block % dataExtent != 0)
    return false;
  return extent == (dataExtent + block - 1) / block;
}

} // namespace strata

#endif // STRATA_RUNTIME_SCHEMAS_WEIGHT_SHARD_EXTENT_H
