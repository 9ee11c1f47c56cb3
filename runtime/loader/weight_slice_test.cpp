//===- weight_slice_test.cpp - one rank's box of a checkpoint tensor ------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/weight_slice.h"

#include <numeric>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

/// The box of `values` (a row-major tensor of `shape` holding 0, 1, 2, ...).
std::vector<int32_t> slice(const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &extents) {
  int64_t total = 1;
  for (int64_t e : shape)
    total *= e;
  std::vector<int32_t> values(total);
  std::iota(values.begin(), values.end(), 0);
  StatusOr<TensorBox> box = weightBox("t", shape, offsets, extents);
  EXPECT_TRUE(box.ok()) << box.status().message();
  std::vector<int32_t> out(boxBytes(*box, 4) / 4);
  copyTensorBox(reinterpret_cast<const uint8_t *>(values.data()), *box, 4,
                reinterpret_cast<uint8_t *>(out.data()));
  return out;
}

// Tests rows (a split of dimension 0) and columns (an inner split: one run
// per row) of a 4 x 6 tensor, and a box of a 3-d tensor split in two
// dimensions (the stacked experts' ep x tp split).
TEST(WeightSlice, CopiesBoxes) {
  EXPECT_EQ(slice({4, 6}, {2, 0}, {2, 6}),
            (std::vector<int32_t>{12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                  23}));
  EXPECT_EQ(slice({4, 6}, {0, 3}, {4, 3}),
            (std::vector<int32_t>{3, 4, 5, 9, 10, 11, 15, 16, 17, 21, 22,
                                  23}));
  EXPECT_EQ(slice({2, 2, 4}, {1, 0, 2}, {1, 2, 2}),
            (std::vector<int32_t>{10, 11, 14, 15}));
  EXPECT_EQ(slice({5}, {1}, {3}), (std::vector<int32_t>{1, 2, 3}));
}

// Tests the whole-tensor test and the errors naming the tensor.
TEST(WeightSlice, ChecksBoxes) {
  StatusOr<TensorBox> whole = weightBox("w", {4, 6}, {0, 0}, {4, 6});
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(coversWholeTensor(*whole));
  StatusOr<TensorBox> part = weightBox("w", {4, 6}, {0, 3}, {4, 3});
  ASSERT_TRUE(part.ok());
  EXPECT_FALSE(coversWholeTensor(*part));
  EXPECT_EQ(weightBox("w", {4, 6}, {0, 4}, {4, 3}).status().message(),
            "tensor 'w' of shape [4, 6]: the slice at [0, 4] of extents "
            "[4, 3] is outside it in dimension 1");
  EXPECT_EQ(weightBox("w", {4, 6}, {0}, {4, 3}).status().message(),
            "tensor 'w' of shape [4, 6]: a slice at [0] of extents [4, 3] "
            "has another rank");
}

} // namespace
} // namespace strata::runtime
