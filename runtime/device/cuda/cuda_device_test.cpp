//===- cuda_device_test.cpp - tests of CUDA driver loading ----------------===//
//
// Part of strata. The errors of createCudaDevice when there is no usable
// driver or GPU: a missing library, a library without the driver entry
// points, and a driver whose cuInit finds no device (testdata/
// fake_libcuda.c, built beside the test binary). Everything else the CUDA
// backend does is tested by runtime/device/cts on a machine with a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cuda/cuda_device.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

std::string testdataPath(const std::string &name) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return name;
  exe[n] = 0;
  std::string dir(exe);
  return dir.substr(0, dir.rfind('/')) + "/testdata/" + name;
}

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Tests the message when the driver library cannot be loaded.
TEST(CudaDevice, MissingDriverIsUnavailable) {
  auto device = createCudaDevice({0, "libstrata-no-such-cuda.so.1"});
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(startsWith(device.status().message(),
                         "no CUDA driver: libstrata-no-such-cuda.so.1 not "
                         "found ("))
      << device.status().message();
}

// Tests that the default driver either gives a device or one of the two
// clear "no driver" / "no GPU" errors.
TEST(CudaDevice, DefaultDriverIsClearWhenAbsent) {
  auto device = createCudaDevice();
  if (device.ok())
    GTEST_SKIP() << "a CUDA GPU is present: " << (*device)->description();
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  std::string_view message = device.status().message();
  EXPECT_TRUE(startsWith(message, "no CUDA driver: libcuda.so.1 not found (") ||
              startsWith(message, "no GPU: "))
      << message;
}

// Tests that a library without the driver entry points is named with the
// first missing one.
TEST(CudaDevice, LibraryWithoutEntryPointsIsUnavailable) {
  auto device = createCudaDevice({0, "libm.so.6"});
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(device.status().message(),
            "unusable CUDA driver: libm.so.6 lacks cuInit");
}

// Tests the "no GPU" error with a driver whose cuInit finds no device.
TEST(CudaDevice, DriverWithoutDeviceSaysNoGpu) {
  auto device =
      createCudaDevice({0, testdataPath("libstrata_fake_cuda_driver.so")});
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(device.status().message(),
            "no GPU: cuInit: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
            "detected)");
}

} // namespace
} // namespace strata::runtime
