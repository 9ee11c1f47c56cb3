//===- device_cts_test.cpp - the device conformance suite -----------------===//
//
// Part of strata. Every backend runs the same tests (parameterised over
// cpu, cuda, hip): memory round trips, strided (2D) copies, 64-bit sizes and
// offsets, kernel load and launch in the memref-descriptor ABI, streams,
// events, graph capture and replay, and the shared error paths. A backend whose device cannot be
// created on this machine (no driver, no GPU) skips every test with the
// reason (GTEST_SKIP); so does a kernel test when no kernel binary for the
// device was built. Kernel results are exact: inputs are chosen so that
// alpha * x + beta is representable, with or without fma.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/device/cpu/cpu_device.h"
#include "runtime/device/cts/cts_kernels.h"
#include "runtime/device/cuda/cuda_device.h"
#include "runtime/device/hip/hip_device.h"

namespace strata::runtime::cts {
namespace {

struct Backend {
  std::string name;
  std::function<StatusOr<std::unique_ptr<Device>>()> create;
};

/// Prints a backend by name in test failure messages.
void PrintTo(const Backend &backend, std::ostream *os) { *os << backend.name; }

uint64_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

class DeviceCts : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    auto device = GetParam().create();
    if (!device.ok())
      GTEST_SKIP() << GetParam().name
                   << " backend unavailable: " << device.status().toString();
    device_ = std::move(device).value();
  }

  /// Loads cts_axpb from the first candidate binary the device accepts;
  /// nullptr (and a skip reason in `out_skip`) if none.
  std::unique_ptr<Executable> loadAxpb(std::string &out_skip) {
    std::vector<CtsBinary> binaries = ctsBinaries(GetParam().name);
    std::string reasons;
    for (const CtsBinary &binary : binaries) {
      ExecutableSpec spec;
      spec.format = binary.format;
      spec.data = binary.bytes.data();
      spec.size = binary.bytes.size();
      spec.kernels.push_back(ctsAxpbSpec());
      auto executable = device_->loadExecutable(spec);
      if (executable.ok())
        return std::move(executable).value();
      reasons += "; " + binary.label + ": " + executable.status().toString();
    }
    out_skip = "no cts kernel binary loads on " + device_->description() +
               (binaries.empty() ? " (none built)" : reasons);
    return nullptr;
  }

  /// Dispatch arguments of axpb over n elements.
  static std::vector<DispatchArg> axpbArgs(Buffer &in, uint64_t in_offset,
                                           Buffer &out, uint64_t out_offset,
                                           int64_t n, float alpha, float beta) {
    std::vector<DispatchArg> args(4);
    args[0].buffer = &in;
    args[0].offset_bytes = in_offset;
    args[0].shape = {n};
    args[1].buffer = &out;
    args[1].offset_bytes = out_offset;
    args[1].shape = {n};
    args[2].scalar_bits = floatBits(alpha);
    args[3].scalar_bits = floatBits(beta);
    return args;
  }

  static void gridFor(int64_t n, uint64_t grid[3]) {
    grid[0] = static_cast<uint64_t>((n + kCtsBlockSize - 1) / kCtsBlockSize);
    grid[1] = grid[2] = 1;
  }

  std::vector<float> read(const Buffer &buffer, uint64_t offset, size_t n) {
    std::vector<float> values(n, -12345.0f);
    Status status =
        device_->copyFromDevice(buffer, offset, values.data(), n * 4);
    EXPECT_TRUE(status.ok()) << status.toString();
    return values;
  }

  std::unique_ptr<Buffer> allocate(uint64_t size) {
    auto buffer = device_->allocate(size, 0);
    EXPECT_TRUE(buffer.ok()) << buffer.status().toString();
    return buffer.ok() ? std::move(buffer).value() : nullptr;
  }

  std::unique_ptr<Device> device_;
};

#define LOAD_AXPB_OR_SKIP(var)                                                 \
  std::string skip_reason;                                                     \
  std::unique_ptr<Executable> var = loadAxpb(skip_reason);                     \
  if (!var)                                                                    \
    GTEST_SKIP() << skip_reason;

// Tests that the device names its backend and hardware and reports memory.
TEST_P(DeviceCts, DescribesItself) {
  EXPECT_EQ(std::string(device_->name()), GetParam().name);
  EXPECT_FALSE(device_->description().empty());
  auto memory = device_->memoryInfo();
  ASSERT_TRUE(memory.ok()) << memory.status().toString();
  EXPECT_GT(memory->total_bytes, 0u);
  EXPECT_LE(memory->free_bytes, memory->total_bytes);
  std::printf("[ device   ] %s: %s\n", device_->name(),
              device_->description().c_str());
}

// Tests what libraries sharing the device's streams need (NCCL/RCCL,
// runtime/collectives): makeCurrent succeeds, GPU streams expose their own
// vendor stream, the CPU backend none.
TEST_P(DeviceCts, ExposesNativeStreamHandles) {
  EXPECT_TRUE(device_->makeCurrent().ok());
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  void *default_handle = device_->defaultStream().nativeHandle();
  void *handle = (*stream)->nativeHandle();
  if (std::string(device_->name()) == "cpu") {
    EXPECT_EQ(default_handle, nullptr);
    EXPECT_EQ(handle, nullptr);
  } else {
    EXPECT_NE(default_handle, nullptr);
    EXPECT_NE(handle, nullptr);
    EXPECT_NE(handle, default_handle);
  }
}

// Tests that fresh device memory is zero and host data round-trips through
// it at an offset.
TEST_P(DeviceCts, AllocatesZeroedMemoryAndRoundTrips) {
  auto buffer = allocate(1000);
  ASSERT_TRUE(buffer);
  EXPECT_EQ(buffer->size(), 1000u);
  EXPECT_EQ(buffer->memoryKind(), MemoryKind::kDevice);
  std::vector<uint8_t> bytes(1000, 0xff);
  ASSERT_TRUE(device_->copyFromDevice(*buffer, 0, bytes.data(), 1000).ok());
  for (uint8_t b : bytes)
    ASSERT_EQ(b, 0);
  std::vector<uint8_t> pattern(300);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(device_->copyToDevice(*buffer, 24, pattern.data(), 300).ok());
  std::vector<uint8_t> back(1000);
  ASSERT_TRUE(device_->copyFromDevice(*buffer, 0, back.data(), 1000).ok());
  for (size_t i = 0; i < 1000; ++i)
    ASSERT_EQ(back[i], i >= 24 && i < 324 ? pattern[i - 24] : 0) << i;
  auto empty = device_->allocate(0, 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
}

// Tests host memory: zeroed, host-visible, copied to and from device memory
// on a stream with copyBuffer.
TEST_P(DeviceCts, HostMemoryCopiesThroughStreams) {
  auto host = device_->allocateHost(256);
  ASSERT_TRUE(host.ok()) << host.status().toString();
  EXPECT_EQ((*host)->memoryKind(), MemoryKind::kHost);
  auto *bytes = static_cast<uint8_t *>((*host)->hostPointer());
  ASSERT_NE(bytes, nullptr);
  for (int i = 0; i < 256; ++i) {
    ASSERT_EQ(bytes[i], 0);
    bytes[i] = static_cast<uint8_t>(255 - i);
  }
  auto device_buffer = allocate(512);
  auto back = device_->allocateHost(256);
  ASSERT_TRUE(device_buffer && back.ok());
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok()) << stream.status().toString();
  ASSERT_TRUE((*stream)->copyBuffer(**host, 0, *device_buffer, 256, 256).ok());
  ASSERT_TRUE(
      (*stream)->copyBuffer(*device_buffer, 256 + 16, **back, 0, 240).ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  auto *out = static_cast<uint8_t *>((*back)->hostPointer());
  for (int i = 0; i < 240; ++i)
    ASSERT_EQ(out[i], 255 - (i + 16)) << i;
  EXPECT_EQ(out[250], 0);
}

// Tests that a stream runs host copies and device-to-device copies in
// submission order.
TEST_P(DeviceCts, StreamCopiesRunInOrder) {
  auto a = allocate(4096);
  auto b = allocate(4096);
  ASSERT_TRUE(a && b);
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  std::vector<uint32_t> first(1024), second(512), result(1024, 0);
  for (uint32_t i = 0; i < 1024; ++i)
    first[i] = i * 3 + 1;
  for (uint32_t i = 0; i < 512; ++i)
    second[i] = 0xabcd0000 + i;
  Stream &s = **stream;
  ASSERT_TRUE(s.copyToDevice(*a, 0, first.data(), 4096).ok());
  ASSERT_TRUE(s.copyBuffer(*a, 0, *b, 0, 4096).ok());
  ASSERT_TRUE(s.copyToDevice(*a, 1024, second.data(), 2048).ok());
  ASSERT_TRUE(s.copyBuffer(*a, 1024, *b, 2048, 2048).ok());
  ASSERT_TRUE(s.copyFromDevice(*b, 0, result.data(), 4096).ok());
  ASSERT_TRUE(s.synchronize().ok());
  for (uint32_t i = 0; i < 1024; ++i)
    ASSERT_EQ(result[i], i < 512 ? first[i] : second[i - 512]) << i;
}

// Tests strided copies (copyBuffer2D): the parts of a rank-major gather
// moved into their columns of a row-major tensor (3 rows; part p's 12-byte
// rows land at column bytes [12 p, + 12) of 36-byte rows), leaving the
// bytes between rows alone; from host memory; captured into a graph as one
// operation and replayed on new input; one row and empty copies.
TEST_P(DeviceCts, CopiesStridedBlocks) {
  constexpr uint64_t rows = 3, part = 12, parts = 3, row = part * parts;
  std::vector<uint8_t> gathered(parts * rows * part);
  for (size_t i = 0; i < gathered.size(); ++i)
    gathered[i] = static_cast<uint8_t>(i + 1);
  auto src = allocate(gathered.size() + 8);
  auto dst = allocate(8 + rows * row + 8);
  ASSERT_TRUE(src && dst);
  ASSERT_TRUE(
      device_->copyToDevice(*src, 8, gathered.data(), gathered.size()).ok());
  auto expected = [&] {
    std::vector<uint8_t> out(dst->size(), 0);
    for (uint64_t p = 0; p < parts; ++p)
      for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t b = 0; b < part; ++b)
          out[8 + r * row + p * part + b] = gathered[(p * rows + r) * part + b];
    return out;
  };
  auto readBytes = [&](const Buffer &buffer) {
    std::vector<uint8_t> bytes(buffer.size());
    EXPECT_TRUE(
        device_->copyFromDevice(buffer, 0, bytes.data(), bytes.size()).ok());
    return bytes;
  };
  auto partCopy = [&](uint64_t p) {
    Copy2D copy;
    copy.src_offset = 8 + p * rows * part;
    copy.src_pitch = part;
    copy.dst_offset = 8 + p * part;
    copy.dst_pitch = row;
    copy.row_bytes = part;
    copy.rows = rows;
    return copy;
  };
  Stream &s = device_->defaultStream();
  for (uint64_t p = 0; p < parts; ++p)
    ASSERT_TRUE(s.copyBuffer2D(*src, *dst, partCopy(p)).ok());
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(readBytes(*dst), expected());

  // From host memory into device memory, one part.
  auto host = device_->allocateHost(src->size());
  ASSERT_TRUE(host.ok()) << host.status().toString();
  std::memcpy(static_cast<uint8_t *>((*host)->hostPointer()) + 8,
              gathered.data(), gathered.size());
  std::vector<uint8_t> zeros(dst->size(), 0);
  ASSERT_TRUE(device_->copyToDevice(*dst, 0, zeros.data(), zeros.size()).ok());
  ASSERT_TRUE(s.copyBuffer2D(**host, *dst, partCopy(1)).ok());
  ASSERT_TRUE(s.synchronize().ok());
  std::vector<uint8_t> one = expected();
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t p : {0, 2})
      std::fill_n(one.begin() + 8 + r * row + p * part, part, 0);
  EXPECT_EQ(readBytes(*dst), one);

  // Captured: one operation per part, the replay reading new input.
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  Stream &c = **stream;
  ASSERT_TRUE(c.beginCapture().ok());
  for (uint64_t p = 0; p < parts; ++p)
    ASSERT_TRUE(c.copyBuffer2D(*src, *dst, partCopy(p)).ok());
  auto graph = c.endCapture();
  ASSERT_TRUE(graph.ok()) << graph.status().toString();
  EXPECT_EQ((*graph)->operationCount(), parts);
  for (uint8_t &v : gathered)
    v = static_cast<uint8_t>(255 - v);
  ASSERT_TRUE(
      device_->copyToDevice(*src, 8, gathered.data(), gathered.size()).ok());
  ASSERT_TRUE(device_->copyToDevice(*dst, 0, zeros.data(), zeros.size()).ok());
  ASSERT_TRUE(c.launchGraph(**graph).ok());
  ASSERT_TRUE(c.synchronize().ok());
  EXPECT_EQ(readBytes(*dst), expected());

  // One row ignores the pitches; an empty copy does nothing.
  Copy2D single;
  single.src_offset = 8;
  single.dst_offset = 0;
  single.row_bytes = 4;
  single.rows = 1;
  ASSERT_TRUE(s.copyBuffer2D(*src, *dst, single).ok());
  ASSERT_TRUE(s.copyBuffer2D(*src, *dst, Copy2D{}).ok());
  ASSERT_TRUE(s.synchronize().ok());
  std::vector<uint8_t> after = readBytes(*dst);
  EXPECT_TRUE(std::equal(after.begin(), after.begin() + 4, gathered.begin()));
}

// Tests the range and alignment checks every backend shares.
TEST_P(DeviceCts, RejectsBadRangesAndAlignments) {
  auto buffer = allocate(100);
  ASSERT_TRUE(buffer);
  uint8_t host[16] = {};
  Status status = device_->copyToDevice(*buffer, 96, host, 8);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(),
            "copy of 8 bytes at offset 96 exceeds buffer of 100 bytes");
  EXPECT_EQ(device_->copyFromDevice(*buffer, UINT64_MAX, host, 2).code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(
      device_->defaultStream().copyBuffer(*buffer, 0, *buffer, 99, 2).code(),
      StatusCode::kOutOfRange);
  auto other = allocate(100);
  ASSERT_TRUE(other);
  Copy2D copy;
  copy.src_pitch = 8;
  copy.dst_pitch = 4;
  copy.row_bytes = 8;
  copy.rows = 3;
  EXPECT_EQ(device_->defaultStream().copyBuffer2D(*buffer, *other, copy),
            invalidArgument("2D copy: destination pitch 4 is below the row's "
                            "8 bytes"));
  copy.dst_pitch = 48;
  EXPECT_EQ(device_->defaultStream().copyBuffer2D(*buffer, *other, copy),
            outOfRange("2D copy of 3 rows of 8 bytes at destination pitch 48 "
                       "from offset 0 exceeds buffer of 100 bytes"));
  copy.dst_pitch = 8;
  copy.src_offset = 80;
  EXPECT_EQ(device_->defaultStream().copyBuffer2D(*buffer, *other, copy),
            outOfRange("2D copy of 3 rows of 8 bytes at source pitch 8 from "
                       "offset 80 exceeds buffer of 100 bytes"));
  auto misaligned = device_->allocate(8, 48);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_EQ(misaligned.status().message(),
            "alignment 48 is not a power of two");
}

// Tests a kernel launch with byte offsets into both buffers and scalar
// arguments, on the default stream and on a created stream.
TEST_P(DeviceCts, LaunchesKernelWithMemrefAbi) {
  LOAD_AXPB_OR_SKIP(executable);
  constexpr int64_t n = 1000; // Not a multiple of the block size.
  std::vector<float> input(n + 3);
  for (int64_t i = 0; i < n + 3; ++i)
    input[i] = 0.25f * static_cast<float>(i % 97) - 8.0f;
  auto in = allocate((n + 3) * 4);
  auto out = allocate((n + 8) * 4);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(device_->copyToDevice(*in, 0, input.data(), (n + 3) * 4).ok());
  uint64_t grid[3];
  gridFor(n, grid);
  auto args = axpbArgs(*in, 12, *out, 16, n, 1.5f, -2.0f);
  Status status = device_->dispatch(*executable, 0, args, grid);
  ASSERT_TRUE(status.ok()) << status.toString();
  ASSERT_TRUE(device_->synchronize().ok());
  std::vector<float> result = read(*out, 0, n + 8);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(result[i], 0.0f) << "before the region: " << i;
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i + 4], 1.5f * input[i + 3] - 2.0f) << i;
  for (int64_t i = n + 4; i < n + 8; ++i)
    EXPECT_EQ(result[i], 0.0f) << "after the region: " << i;

  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  auto again = axpbArgs(*in, 0, *out, 0, n, 0.5f, 1.0f);
  ASSERT_TRUE((*stream)->dispatch(*executable, 0, again, grid).ok());
  std::vector<float> streamed(n);
  ASSERT_TRUE((*stream)->copyFromDevice(*out, 0, streamed.data(), n * 4).ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(streamed[i], 0.5f * input[i] + 1.0f) << i;
}

// Tests dispatchWithSharedMemory: the kernel's own bytes (none for axpb)
// give the same result as dispatch; on a GPU, more than the kernel's bytes
// is refused by name before anything runs (the CPU has no shared memory and
// ignores the bytes).
TEST_P(DeviceCts, DispatchesWithStepSharedMemory) {
  LOAD_AXPB_OR_SKIP(executable);
  constexpr int64_t n = 300;
  std::vector<float> input(n);
  for (int64_t i = 0; i < n; ++i)
    input[i] = static_cast<float>(i) - 100.0f;
  auto in = allocate(n * 4);
  auto out = allocate(n * 4);
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(device_->copyToDevice(*in, 0, input.data(), n * 4).ok());
  uint64_t grid[3];
  gridFor(n, grid);
  auto args = axpbArgs(*in, 0, *out, 0, n, 2.0f, 3.0f);
  Stream &stream = device_->defaultStream();
  Status status =
      stream.dispatchWithSharedMemory(*executable, 0, args, grid, 0);
  ASSERT_TRUE(status.ok()) << status.toString();
  ASSERT_TRUE(device_->synchronize().ok());
  std::vector<float> result = read(*out, 0, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 2.0f * input[i] + 3.0f) << i;
  if (std::string(device_->name()) == "cpu")
    return;
  status = stream.dispatchWithSharedMemory(*executable, 0, args, grid, 1024);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("1024 bytes of dynamic shared memory, "
                                  "more than its 0"),
            std::string::npos)
      << status.message();
}

// Tests 64-bit sizes and offsets: a buffer over 4 GiB, copies and a kernel
// region past the 4 GiB mark. Runs only when the device has the memory.
TEST_P(DeviceCts, HandlesBuffersOver4GiB) {
  constexpr uint64_t kGiB = 1ull << 30;
  constexpr uint64_t size = 4 * kGiB + (1 << 20);
  auto memory = device_->memoryInfo();
  ASSERT_TRUE(memory.ok());
  if (memory->free_bytes < size + kGiB)
    GTEST_SKIP() << "needs " << (size + kGiB) << " free bytes, the device has "
                 << memory->free_bytes;
  auto big = device_->allocate(size, 0);
  ASSERT_TRUE(big.ok()) << big.status().toString();
  EXPECT_EQ((*big)->size(), size);
  constexpr uint64_t in_offset = 4 * kGiB + 256;
  constexpr uint64_t out_offset = 4 * kGiB + 8192;
  constexpr int64_t n = 300;
  std::vector<float> input(n);
  for (int64_t i = 0; i < n; ++i)
    input[i] = static_cast<float>(i) - 100.0f;
  ASSERT_TRUE(
      device_->copyToDevice(**big, in_offset, input.data(), n * 4).ok());
  std::vector<float> low = read(**big, in_offset - 4 * kGiB, n);
  for (float v : low)
    ASSERT_EQ(v, 0.0f) << "a copy past 4 GiB must not wrap around";
  EXPECT_EQ(read(**big, in_offset, n), input);
  EXPECT_EQ(device_->copyToDevice(**big, size - 4, input.data(), 8).code(),
            StatusCode::kOutOfRange);

  std::string skip_reason;
  std::unique_ptr<Executable> executable = loadAxpb(skip_reason);
  if (!executable)
    GTEST_SKIP() << skip_reason;
  uint64_t grid[3];
  gridFor(n, grid);
  auto args = axpbArgs(**big, in_offset, **big, out_offset, n, 2.0f, 0.5f);
  ASSERT_TRUE(device_->dispatch(*executable, 0, args, grid).ok());
  ASSERT_TRUE(device_->synchronize().ok());
  std::vector<float> result = read(**big, out_offset, n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 2.0f * input[i] + 0.5f) << i;
  EXPECT_EQ(read(**big, out_offset - 4 * kGiB, n), std::vector<float>(n, 0.0f));
}

// Tests the dispatch checks: argument count, rank, region bounds, kernel
// index.
TEST_P(DeviceCts, DispatchChecksArguments) {
  LOAD_AXPB_OR_SKIP(executable);
  auto buffer = allocate(16);
  ASSERT_TRUE(buffer);
  uint64_t grid[3] = {1, 1, 1};
  auto args = axpbArgs(*buffer, 0, *buffer, 0, 4, 1.0f, 0.0f);
  args.pop_back();
  EXPECT_EQ(device_->dispatch(*executable, 0, args, grid).message(),
            "kernel 'axpb' takes 4 arguments, got 3");
  args = axpbArgs(*buffer, 0, *buffer, 0, 4, 1.0f, 0.0f);
  args[1].shape = {2, 2};
  EXPECT_EQ(device_->dispatch(*executable, 0, args, grid).message(),
            "kernel 'axpb' argument 1: expected rank 1, got 2 extents");
  args = axpbArgs(*buffer, 0, *buffer, 4, 4, 1.0f, 0.0f);
  Status status = device_->dispatch(*executable, 0, args, grid);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "kernel 'axpb' argument 1: region [4, 20) "
                              "exceeds buffer of 16 bytes");
  EXPECT_EQ(device_->dispatch(*executable, 1, args, grid).code(),
            StatusCode::kOutOfRange);
  // Nothing was launched: the buffer is still zero.
  EXPECT_EQ(read(*buffer, 0, 4), std::vector<float>(4, 0.0f));
}

// Tests that bytes that are no module at all are INVALID_ARGUMENT, a format
// the device does not load is INVALID_ARGUMENT, and a damaged module fails
// with a status instead of crashing.
TEST_P(DeviceCts, RejectsBadModuleBytes) {
  std::vector<CtsBinary> binaries = ctsBinaries(GetParam().name);
  BinaryFormat format =
      binaries.empty() ? BinaryFormat::kElfSharedObject : binaries[0].format;
  std::vector<uint8_t> garbage = {'n', 'o', 't', ' ', 'a', ' ', 'm', 'o',
                                  'd', 'u', 'l', 'e', 0,   1,   2,   3};
  ExecutableSpec spec;
  spec.format = format;
  spec.data = garbage.data();
  spec.size = garbage.size();
  spec.kernels.push_back(ctsAxpbSpec());
  auto executable = device_->loadExecutable(spec);
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kInvalidArgument)
      << executable.status().toString();

  spec.format = format == BinaryFormat::kElfSharedObject
                    ? BinaryFormat::kCubin
                    : BinaryFormat::kElfSharedObject;
  EXPECT_EQ(device_->loadExecutable(spec).status().code(),
            StatusCode::kInvalidArgument);

  if (binaries.empty())
    GTEST_SKIP() << "no cts kernel binary built for " << GetParam().name;
  std::vector<uint8_t> damaged = binaries[0].bytes;
  damaged.resize(std::min<size_t>(damaged.size(), 200));
  spec.format = format;
  spec.data = damaged.data();
  spec.size = damaged.size();
  EXPECT_FALSE(device_->loadExecutable(spec).ok());
}

// Tests that an entry symbol missing from the module names kernel and symbol.
TEST_P(DeviceCts, UnknownFunctionIsNotFound) {
  std::vector<CtsBinary> binaries = ctsBinaries(GetParam().name);
  std::string skip_reason;
  if (!loadAxpb(skip_reason))
    GTEST_SKIP() << skip_reason;
  for (const CtsBinary &binary : binaries) {
    ExecutableSpec spec;
    spec.format = binary.format;
    spec.data = binary.bytes.data();
    spec.size = binary.bytes.size();
    KernelSpec kernel = ctsAxpbSpec();
    kernel.entry_symbol = "cts_no_such_kernel";
    spec.kernels = {ctsAxpbSpec(), kernel};
    auto executable = device_->loadExecutable(spec);
    if (!executable.ok() && executable.status().code() != StatusCode::kNotFound)
      continue; // A binary for another chip.
    ASSERT_FALSE(executable.ok());
    EXPECT_EQ(executable.status().message(),
              "kernel 'axpb': entry symbol 'cts_no_such_kernel' not found in "
              "binary");
    return;
  }
  FAIL() << "no binary reached symbol resolution";
}

// Tests Stream::hold: work enqueued after a hold waits for its release
// (a copy into page-locked host memory has not landed 20 ms later, it has
// after the release); the CPU stream, which runs each operation as it is
// enqueued, cannot be held.
TEST_P(DeviceCts, HeldStreamWaitsForRelease) {
  auto src = allocate(64);
  auto dst = device_->allocateHost(64);
  ASSERT_TRUE(src && dst.ok());
  std::vector<uint8_t> ones(64, 1);
  ASSERT_TRUE(device_->copyToDevice(*src, 0, ones.data(), 64).ok());
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  auto hold = (*stream)->hold();
  if (std::string(device_->name()) == "cpu") {
    EXPECT_EQ(hold.status().code(), StatusCode::kUnimplemented);
    return;
  }
  if (hold.status().code() == StatusCode::kUnimplemented)
    GTEST_SKIP() << hold.status().toString();
  ASSERT_TRUE(hold.ok()) << hold.status().toString();
  ASSERT_TRUE((*stream)->copyBuffer(*src, 0, **dst, 0, 64).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto *landed = static_cast<volatile uint8_t *>((*dst)->hostPointer());
  EXPECT_EQ(landed[0], 0) << "the held copy ran before the release";
  (*hold)->release();
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(landed[0], 1);
  EXPECT_EQ(landed[63], 1);
  // A second hold waits on the same word for a larger value.
  auto again = (*stream)->hold();
  ASSERT_TRUE(again.ok()) << again.status().toString();
  again->reset();
  EXPECT_TRUE((*stream)->synchronize().ok());
}

// Tests events: elapsed time between records around real work, waiting on
// an event, and the never-recorded errors.
TEST_P(DeviceCts, EventsMeasureElapsedTime) {
  LOAD_AXPB_OR_SKIP(executable);
  auto start = device_->createEvent();
  auto end = device_->createEvent();
  ASSERT_TRUE(start.ok() && end.ok());
  EXPECT_FALSE((*start)->recorded());
  EXPECT_EQ((*start)->synchronize().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(device_->elapsedMillis(**start, **end).status().message(),
            "event has not been recorded");
  EXPECT_EQ(device_->defaultStream().waitEvent(**start).code(),
            StatusCode::kFailedPrecondition);

  constexpr int64_t n = 1 << 16;
  auto in = allocate(n * 4);
  auto out = allocate(n * 4);
  ASSERT_TRUE(in && out);
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  uint64_t grid[3];
  gridFor(n, grid);
  auto args = axpbArgs(*in, 0, *out, 0, n, 1.0f, 1.0f);
  ASSERT_TRUE((*stream)->recordEvent(**start).ok());
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE((*stream)->dispatch(*executable, 0, args, grid).ok());
  ASSERT_TRUE((*stream)->recordEvent(**end).ok());
  EXPECT_TRUE((*end)->recorded());
  ASSERT_TRUE((*end)->synchronize().ok());
  auto millis = device_->elapsedMillis(**start, **end);
  ASSERT_TRUE(millis.ok()) << millis.status().toString();
  EXPECT_GE(*millis, 0.0f);
  EXPECT_LT(*millis, 60000.0f);

  // A second stream waits for the first one's event before reading `out`.
  auto other = device_->createStream();
  ASSERT_TRUE(other.ok());
  auto copy = allocate(n * 4);
  ASSERT_TRUE(copy);
  ASSERT_TRUE((*other)->waitEvent(**end).ok());
  ASSERT_TRUE((*other)->copyBuffer(*out, 0, *copy, 0, n * 4).ok());
  ASSERT_TRUE((*other)->synchronize().ok());
  EXPECT_EQ(read(*copy, 0, 8), std::vector<float>(8, 1.0f));
}

// Tests that a captured graph does nothing until launched and then gives the
// same results as direct launches, also after the inputs change.
TEST_P(DeviceCts, GraphReplayMatchesDirectLaunches) {
  LOAD_AXPB_OR_SKIP(executable);
  constexpr int64_t n = 777;
  auto in = allocate(n * 4);
  auto mid = allocate(n * 4);
  auto out = allocate(n * 4);
  auto copy = allocate(n * 4);
  ASSERT_TRUE(in && mid && out && copy);
  uint64_t grid[3];
  gridFor(n, grid);
  auto step1 = axpbArgs(*in, 0, *mid, 0, n, 3.0f, 1.0f);
  auto step2 = axpbArgs(*mid, 0, *out, 0, n, 0.5f, -4.0f);
  auto runDirect = [&](std::vector<float> &result) {
    ASSERT_TRUE(device_->dispatch(*executable, 0, step1, grid).ok());
    ASSERT_TRUE(device_->dispatch(*executable, 0, step2, grid).ok());
    ASSERT_TRUE(
        device_->defaultStream().copyBuffer(*out, 0, *copy, 0, n * 4).ok());
    ASSERT_TRUE(device_->synchronize().ok());
    result = read(*copy, 0, n);
  };

  std::vector<float> input(n);
  for (int64_t i = 0; i < n; ++i)
    input[i] = static_cast<float>(i % 50) * 0.5f;
  ASSERT_TRUE(device_->copyToDevice(*in, 0, input.data(), n * 4).ok());
  std::vector<float> direct;
  runDirect(direct);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(direct[i], 0.5f * (3.0f * input[i] + 1.0f) - 4.0f) << i;

  // Clear the results, then capture the same three operations.
  std::vector<float> zeros(n, 0.0f);
  for (Buffer *b : {mid.get(), out.get(), copy.get()})
    ASSERT_TRUE(device_->copyToDevice(*b, 0, zeros.data(), n * 4).ok());
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  Stream &s = **stream;
  ASSERT_TRUE(s.beginCapture().ok());
  EXPECT_TRUE(s.capturing());
  ASSERT_TRUE(s.dispatch(*executable, 0, step1, grid).ok());
  ASSERT_TRUE(s.dispatch(*executable, 0, step2, grid).ok());
  ASSERT_TRUE(s.copyBuffer(*out, 0, *copy, 0, n * 4).ok());
  auto graph = s.endCapture();
  ASSERT_TRUE(graph.ok()) << graph.status().toString();
  EXPECT_FALSE(s.capturing());
  EXPECT_EQ((*graph)->operationCount(), 3u);
  EXPECT_EQ(read(*copy, 0, n), zeros) << "capture must not execute";

  ASSERT_TRUE(s.launchGraph(**graph).ok());
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(read(*copy, 0, n), direct);

  // New inputs: the replay reads the buffers' current contents.
  for (int64_t i = 0; i < n; ++i)
    input[i] = 10.0f - static_cast<float>(i % 31);
  ASSERT_TRUE(device_->copyToDevice(*in, 0, input.data(), n * 4).ok());
  runDirect(direct);
  ASSERT_TRUE(device_->copyToDevice(*copy, 0, zeros.data(), n * 4).ok());
  for (int replay = 0; replay < 3; ++replay)
    ASSERT_TRUE(s.launchGraph(**graph).ok());
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(read(*copy, 0, n), direct);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(direct[i], 0.5f * (3.0f * input[i] + 1.0f) - 4.0f) << i;
}

// Tests the capture rules: what a capturing stream and its device refuse,
// and that a refused or failed call leaves the capture intact.
TEST_P(DeviceCts, CaptureRejectsUncapturableCalls) {
  LOAD_AXPB_OR_SKIP(executable);
  auto buffer = allocate(64);
  ASSERT_TRUE(buffer);
  auto event = device_->createEvent();
  ASSERT_TRUE(event.ok());
  auto stream = device_->createStream();
  ASSERT_TRUE(stream.ok());
  Stream &s = **stream;
  EXPECT_EQ(s.endCapture().status().message(), "stream is not capturing");
  ASSERT_TRUE(s.beginCapture().ok());
  EXPECT_EQ(s.beginCapture().message(), "stream is already capturing");
  float host[4] = {};
  Status status = s.copyToDevice(*buffer, 0, host, 16);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "cannot copy from a host pointer while the stream is capturing");
  EXPECT_EQ(s.copyFromDevice(*buffer, 0, host, 16).message(),
            "cannot copy to a host pointer while the stream is capturing");
  EXPECT_EQ(s.recordEvent(**event).message(),
            "cannot record an event while the stream is capturing");
  EXPECT_EQ(s.synchronize().message(),
            "cannot synchronize while the stream is capturing");
  EXPECT_EQ(device_->allocate(64, 0).status().message(),
            "cannot allocate while a stream is capturing");
  EXPECT_EQ(device_->allocateHost(64).status().message(),
            "cannot allocate while a stream is capturing");
  EXPECT_EQ(device_->synchronize().message(),
            "cannot synchronize while a stream is capturing");
  EXPECT_EQ(device_->copyToDevice(*buffer, 0, host, 16).message(),
            "cannot copy to the device while a stream is capturing");
  uint64_t grid[3] = {1, 1, 1};
  auto bad = axpbArgs(*buffer, 0, *buffer, 0, 4, 2.0f, 1.0f);
  bad.pop_back();
  EXPECT_FALSE(s.dispatch(*executable, 0, bad, grid).ok());
  auto good = axpbArgs(*buffer, 0, *buffer, 32, 4, 2.0f, 1.0f);
  ASSERT_TRUE(s.dispatch(*executable, 0, good, grid).ok());
  auto graph = s.endCapture();
  ASSERT_TRUE(graph.ok()) << graph.status().toString();
  EXPECT_EQ((*graph)->operationCount(), 1u);
  ASSERT_TRUE(s.launchGraph(**graph).ok());
  ASSERT_TRUE(s.synchronize().ok());
  EXPECT_EQ(read(*buffer, 32, 4), std::vector<float>(4, 1.0f));
  ASSERT_TRUE(device_->synchronize().ok());
}

Backend cpuBackend() {
  return {"cpu", []() -> StatusOr<std::unique_ptr<Device>> {
            return createCpuDevice();
          }};
}
Backend cudaBackend() {
  return {"cuda", [] { return createCudaDevice(); }};
}
Backend hipBackend() {
  return {"hip", [] { return createHipDevice(); }};
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceCts,
                         ::testing::Values(cpuBackend(), cudaBackend(),
                                           hipBackend()),
                         [](const ::testing::TestParamInfo<Backend> &info) {
                           std::string name = info.param.name;
                           name[0] = static_cast<char>(std::toupper(name[0]));
                           return name;
                         });

} // namespace
} // namespace strata::runtime::cts
