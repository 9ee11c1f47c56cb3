//===- weight_slice.h - one rank's box of a checkpoint tensor ---*- C++ -*-===//
//
// Part of strata. A rank of a sharded artifact reads, of each checkpoint
// tensor, the box its RankManifest names (ParallelLayout, docs/Parallel.md):
// `extents` elements per dimension starting at `offsets`. weightBox() derives
// the box of one checkpoint tensor from the manifest entry and the rank's
// slice; copyTensorBox() packs it out of the tensor's row-major bytes (the
// checkpoint's mapping) with one copy per contiguous run, so no resharded
// copy of the checkpoint is ever written.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_WEIGHT_SLICE_H
#define STRATA_RUNTIME_LOADER_WEIGHT_SLICE_H

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// A box of a row-major tensor of extents `shape`.
struct TensorBox {
  /// The whole tensor's extents.
  std::vector<int64_t> shape;
  /// Where the box starts, per dimension.
  std::vector<int64_t> offsets;
  /// The box's extents, per dimension.
  std::vector<int64_t> extents;
};

/// The box of checkpoint tensor `name` (of extents `shape`) that a rank
/// reads: `offsets` (the rank's WeightSlice offsets restricted to the
/// tensor's dimensions) and the manifest's per-rank `extents`.
/// INVALID_ARGUMENT naming the tensor when the ranks differ or the box is
/// not inside the tensor.
StatusOr<TensorBox> weightBox(std::string_view name,
                              std::vector<int64_t> shape,
                              std::vector<int64_t> offsets,
                              std::vector<int64_t> extents);

/// Whether `box` is the whole tensor.
bool coversWholeTensor(const TensorBox &box);

/// Bytes of the box packed, `element_bytes` per element.
uint64_t boxBytes(const TensorBox &box, uint32_t element_bytes);

/// Copies the box out of `tensor` (the whole tensor, row-major) into `out`
/// (boxBytes bytes, row-major over the box's extents).
void copyTensorBox(const uint8_t *tensor, const TensorBox &box,
                   uint32_t element_bytes, uint8_t *out);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_WEIGHT_SLICE_H
