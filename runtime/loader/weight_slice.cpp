//===- weight_slice.cpp - one rank's box of a checkpoint tensor -----------===//
//
// Part of strata. See weight_slice.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/weight_slice.h"

#include <cstring>

#include <fmt/ranges.h>

namespace strata::runtime {

StatusOr<TensorBox> weightBox(std::string_view name,
                              std::vector<int64_t> shape,
                              std::vector<int64_t> offsets,
                              std::vector<int64_t> extents) {
  if (offsets.size() != shape.size() || extents.size() != shape.size())
    return invalidArgument("tensor '{}' of shape [{}]: a slice at [{}] of "
                           "extents [{}] has another rank",
                           name, fmt::join(shape, ", "),
                           fmt::join(offsets, ", "), fmt::join(extents, ", "));
  for (size_t d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || extents[d] < 0 || offsets[d] + extents[d] > shape[d])
      return invalidArgument("tensor '{}' of shape [{}]: the slice at [{}] of "
                             "extents [{}] is outside it in dimension {}",
                             name, fmt::join(shape, ", "),
                             fmt::join(offsets, ", "),
                             fmt::join(extents, ", "), d);
  return TensorBox{std::move(shape), std::move(offsets), std::move(extents)};
}

bool coversWholeTensor(const TensorBox &box) {
  for (size_t d = 0; d < box.shape.size(); ++d)
    if (box.offsets[d] != 0 || box.extents[d] != box.shape[d])
      return false;
  return true;
}

uint64_t boxBytes(const TensorBox &box, uint32_t element_bytes) {
  uint64_t bytes = element_bytes;
  for (int64_t extent : box.extents)
    bytes *= static_cast<uint64_t>(extent);
  return bytes;
}

void copyTensorBox(const uint8_t *tensor, const TensorBox &box,
                   uint32_t element_bytes, uint8_t *out) {
  size_t rank = box.shape.size();
  if (rank == 0) {
    std::memcpy(out, tensor, element_bytes);
    return;
  }
  if (boxBytes(box, element_bytes) == 0)
    return;
  // Element strides of the tensor; the innermost dimension is one run.
  std::vector<uint64_t> stride(rank, 1);
  for (size_t d = rank - 1; d > 0; --d)
    stride[d - 1] = stride[d] * static_cast<uint64_t>(box.shape[d]);
  uint64_t run = static_cast<uint64_t>(box.extents[rank - 1]) * element_bytes;
  // Odometer over the box's outer dimensions.
  std::vector<int64_t> index(rank, 0);
  for (;;) {
    uint64_t element = 0;
    for (size_t d = 0; d < rank; ++d)
      element += static_cast<uint64_t>(box.offsets[d] + index[d]) * stride[d];
    std::memcpy(out, tensor + element * element_bytes, run);
    out += run;
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++index[d] < box.extents[d])
        break;
      index[d] = 0;
      if (d == 0)
        return;
    }
    if (rank == 1)
      return;
  }
}

} // namespace strata::runtime
