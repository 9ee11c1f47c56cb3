//===- device_ordinal_test.cpp - tests of resolveDeviceOrdinal ------------===//

#include "runtime/device/gpu/gpu_device.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

// Tests that an ordinal is taken as is, or modulo the GPUs for the ranks of
// a parallel run, and that one outside the GPUs is refused by name.
TEST(DeviceOrdinal, AsIsOrModuloTheGpus) {
  EXPECT_EQ(resolveDeviceOrdinal("cuda", 1, false, 2).value(), 1);
  EXPECT_EQ(resolveDeviceOrdinal("cuda", 5, true, 2).value(), 1);
  EXPECT_EQ(resolveDeviceOrdinal("hip", 7, true, 8).value(), 7);
  EXPECT_EQ(resolveDeviceOrdinal("cuda", 2, false, 2).status().message(),
            "cuda device 2 requested, 2 present");
  EXPECT_EQ(resolveDeviceOrdinal("hip", -1, true, 4).status().message(),
            "hip device -1 requested, 4 present");
}

} // namespace
} // namespace strata::runtime
