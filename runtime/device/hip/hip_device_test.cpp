//===- hip_device_test.cpp - tests of HIP runtime loading -----------------===//
//
// Part of strata. The errors of createHipDevice when there is no usable HIP
// runtime or GPU. Everything else the HIP backend does is tested by
// runtime/device/cts on a machine with a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/hip/hip_device.h"

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Tests the message when the runtime library cannot be loaded.
TEST(HipDevice, MissingRuntimeIsUnavailable) {
  auto device = createHipDevice({0, "libstrata-no-such-amdhip64.so"});
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(startsWith(device.status().message(),
                         "no HIP runtime: libstrata-no-such-amdhip64.so not "
                         "found ("))
      << device.status().message();
}

// Tests that the default runtime either gives a device or one of the two
// clear "no runtime" / "no GPU" errors (Debian's libamdhip64 without an AMD
// GPU gives the latter).
TEST(HipDevice, DefaultRuntimeIsClearWhenAbsent) {
  auto device = createHipDevice();
  if (device.ok())
    GTEST_SKIP() << "an AMD GPU is present: " << (*device)->description();
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  std::string_view message = device.status().message();
  EXPECT_TRUE(
      startsWith(message, "no HIP runtime: libamdhip64.so not found (") ||
      startsWith(message, "no GPU: "))
      << message;
}

// Tests that a library without the runtime entry points is named with the
// first missing one.
TEST(HipDevice, LibraryWithoutEntryPointsIsUnavailable) {
  auto device = createHipDevice({0, "libm.so.6"});
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().message(),
            "unusable HIP runtime: libm.so.6 lacks hipInit");
}

} // namespace
} // namespace strata::runtime
