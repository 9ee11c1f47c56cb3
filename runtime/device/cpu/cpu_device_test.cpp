//===- cpu_device_test.cpp - tests of the CPU device backend --------------===//
//
// Part of strata. Loads a hand-written kernel library (testdata/
// test_kernels.c, built beside the test binary) through memfd and through the
// temporary-file fallback, dispatches it on real data and checks the argument
// and bounds checks.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cpu/cpu_device.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include <gtest/gtest.h>

namespace strata::runtime {
namespace {

std::vector<uint8_t> readTestKernels() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return {};
  exe[n] = 0;
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
  std::ifstream in(dir + "/testdata/libstrata_cpu_test_kernels.so",
                   std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

ExecutableSpec scaleSpec(const std::vector<uint8_t> &bytes) {
  ExecutableSpec spec;
  spec.data = bytes.data();
  spec.size = bytes.size();
  KernelSpec kernel;
  kernel.name = "scale";
  kernel.entry_symbol = "strata_test_scale";
  kernel.args = {{KernelArgKind::kBuffer, 1, 4},
                 {KernelArgKind::kBuffer, 1, 4},
                 {KernelArgKind::kScalar, 0, 4}};
  spec.kernels.push_back(kernel);
  return spec;
}

uint64_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// Runs scale(in[1..n], out, alpha) through `device` and checks the values.
void runScale(Device &device, Executable &executable) {
  constexpr int n = 7;
  auto in = device.allocate((n + 1) * 4, 0);
  auto out = device.allocate(n * 4, 0);
  ASSERT_TRUE(in.ok() && out.ok());
  float host[n + 1];
  for (int i = 0; i <= n; ++i)
    host[i] = 0.25f * static_cast<float>(i) - 1.0f;
  ASSERT_TRUE(device.copyToDevice(**in, 0, host, sizeof(host)).ok());
  std::vector<DispatchArg> args(3);
  args[0].buffer = in->get();
  args[0].offset_bytes = 4; // skip element 0
  args[0].shape = {n};
  args[1].buffer = out->get();
  args[1].shape = {n};
  args[2].scalar_bits = floatBits(1.5f);
  uint64_t grid[3] = {1, 1, 1};
  ASSERT_TRUE(device.dispatch(executable, 0, args, grid).ok());
  ASSERT_TRUE(device.synchronize().ok());
  float result[n];
  ASSERT_TRUE(device.copyFromDevice(**out, 0, result, sizeof(result)).ok());
  for (int i = 0; i < n; ++i)
    EXPECT_FLOAT_EQ(result[i], 1.5f * std::exp(host[i + 1])) << i;
}

// Tests that a kernel library loads through memfd and computes.
TEST(CpuDevice, LoadsFromMemfdAndDispatches) {
  std::vector<uint8_t> bytes = readTestKernels();
  ASSERT_FALSE(bytes.empty());
  auto device = createCpuDevice();
  auto executable = device->loadExecutable(scaleSpec(bytes));
  ASSERT_TRUE(executable.ok()) << executable.status().toString();
  runScale(*device, **executable);
}

// Tests the temporary-file fallback.
TEST(CpuDevice, LoadsFromTempFile) {
  std::vector<uint8_t> bytes = readTestKernels();
  auto device = createCpuDevice({/*force_temp_file=*/true});
  auto executable = device->loadExecutable(scaleSpec(bytes));
  ASSERT_TRUE(executable.ok()) << executable.status().toString();
  runScale(*device, **executable);
}

// Tests that loading, unloading and reloading (same fd number, same
// /proc/self/fd path) gives a working, independent object each time.
TEST(CpuDevice, ReloadsAfterUnload) {
  std::vector<uint8_t> bytes = readTestKernels();
  auto device = createCpuDevice();
  for (int round = 0; round < 3; ++round) {
    auto first = device->loadExecutable(scaleSpec(bytes));
    auto second = device->loadExecutable(scaleSpec(bytes));
    ASSERT_TRUE(first.ok() && second.ok());
    runScale(*device, **first);
    runScale(*device, **second);
  }
}

// Tests that a missing entry symbol names the kernel and the symbol.
TEST(CpuDevice, MissingSymbolIsNamed) {
  std::vector<uint8_t> bytes = readTestKernels();
  ExecutableSpec spec = scaleSpec(bytes);
  spec.kernels[0].entry_symbol = "no_such_kernel";
  auto device = createCpuDevice();
  auto executable = device->loadExecutable(spec);
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(executable.status().message(),
            "kernel 'scale': entry symbol 'no_such_kernel' not found in binary");
}

// Tests that bytes that are not an ELF object are rejected before dlopen.
TEST(CpuDevice, RejectsNonElf) {
  std::vector<uint8_t> bytes = {'n', 'o', 'p', 'e', 0, 0, 0, 0};
  auto device = createCpuDevice();
  auto executable = device->loadExecutable(scaleSpec(bytes));
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().message(), "kernel binary is not an ELF file");
}

// Tests that a truncated ELF object fails in dlopen with a status, not a crash.
TEST(CpuDevice, TruncatedElfFailsCleanly) {
  std::vector<uint8_t> bytes = readTestKernels();
  bytes.resize(64);
  auto device = createCpuDevice();
  auto executable = device->loadExecutable(scaleSpec(bytes));
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kUnavailable);
}

// Tests that dispatch checks argument count, rank and buffer bounds.
TEST(CpuDevice, DispatchChecksArguments) {
  std::vector<uint8_t> bytes = readTestKernels();
  auto device = createCpuDevice();
  auto executable = device->loadExecutable(scaleSpec(bytes));
  ASSERT_TRUE(executable.ok());
  auto buffer = device->allocate(16, 0);
  ASSERT_TRUE(buffer.ok());
  uint64_t grid[3] = {1, 1, 1};
  std::vector<DispatchArg> args(2);
  EXPECT_EQ(device->dispatch(**executable, 0, args, grid).message(),
            "kernel 'scale' takes 3 arguments, got 2");
  args.resize(3);
  args[0].buffer = buffer->get();
  args[0].shape = {4};
  args[1].buffer = buffer->get();
  args[1].shape = {2, 2};
  EXPECT_EQ(device->dispatch(**executable, 0, args, grid).message(),
            "kernel 'scale' argument 1: expected rank 1, got 2 extents");
  args[1].shape = {4};
  args[1].offset_bytes = 4;
  Status status = device->dispatch(**executable, 0, args, grid);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "kernel 'scale' argument 1: region [4, 20) "
                              "exceeds buffer of 16 bytes");
  EXPECT_EQ(device->dispatch(**executable, 1, args, grid).code(),
            StatusCode::kOutOfRange);
}

// Tests allocation: zeroed memory, alignment, invalid alignment.
TEST(CpuDevice, AllocatesAlignedZeroedMemory) {
  auto device = createCpuDevice();
  auto buffer = device->allocate(100, 256);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ((*buffer)->size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->hostPointer()) % 256, 0u);
  auto *bytes = static_cast<uint8_t *>((*buffer)->hostPointer());
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(bytes[i], 0);
  EXPECT_FALSE(device->allocate(8, 48).ok());
  uint8_t host[8] = {};
  EXPECT_EQ(device->copyToDevice(**buffer, 96, host, 8).code(),
            StatusCode::kOutOfRange);
}

} // namespace
} // namespace strata::runtime
