//===- device.h - the strata device abstraction -----------------*- C++ -*-===//
//
// Part of strata. A Device owns memory (Buffers), loads compiled kernel
// binaries (Executables) and runs kernels (dispatch) in submission order. The
// CPU backend (runtime/device/cpu) implements it with host memory and dlopen;
// the HIP and CUDA backends implement the same interface over dlopen'ed vendor
// runtimes (hipModuleLoadData / cuModuleLoadData + ModuleLaunchKernel).
//
// This header knows nothing of the artifact format: runtime/loader turns the
// flatbuffer's kernels and plans into the plain structs below.
//
// Ownership: a Device is owned by its creator and must outlive every Buffer
// and Executable it made. Buffers and Executables are owned by the caller
// (std::unique_ptr) and release their memory/module on destruction.
// Thread-safety: a Device and its objects are used from one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_DEVICE_H
#define STRATA_RUNTIME_DEVICE_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime {

/// Container format of a kernel binary (mirrors strata.artifact.BinaryFormat).
enum class BinaryFormat : uint8_t {
  kElfSharedObject = 0, ///< x86-64 ELF .so, CPU backend.
  kHsaco = 1,           ///< AMDGPU code object, HIP backend.
  kCubin = 2,           ///< NVIDIA cubin/fatbin, CUDA backend.
};

/// Whether a kernel argument is a buffer region or a scalar value.
enum class KernelArgKind : uint8_t { kBuffer = 0, kScalar = 1 };

/// One argument of a kernel entry point, as the device needs it.
struct KernelArgInfo {
  /// Buffer or scalar. Default: buffer.
  KernelArgKind kind = KernelArgKind::kBuffer;
  /// Rank of a buffer argument (0 for scalars). Default 0.
  uint32_t rank = 0;
  /// Bytes per element of a buffer, or bytes of a scalar (4 or 8). Default 0
  /// (invalid; the loader always fills it).
  uint32_t element_bytes = 0;
};

/// Launch geometry for GPU backends; ignored by the CPU backend.
struct LaunchDims {
  /// Threads per block (x, y, z). Default 1, 1, 1.
  uint32_t block[3] = {1, 1, 1};
  /// Dynamic shared memory per block in bytes. Default 0.
  uint64_t shared_memory_bytes = 0;
};

/// One kernel inside an executable.
struct KernelSpec {
  /// Kernel name, for messages.
  std::string name;
  /// Symbol to resolve in the binary.
  std::string entry_symbol;
  /// Arguments in signature order.
  std::vector<KernelArgInfo> args;
  /// GPU launch geometry (block size); unused on CPU.
  LaunchDims launch;
};

/// A binary plus the kernels to resolve in it. `data` is borrowed for the
/// duration of Device::loadExecutable only.
struct ExecutableSpec {
  /// Container format; the device rejects formats it cannot load.
  BinaryFormat format = BinaryFormat::kElfSharedObject;
  /// The binary's bytes.
  const uint8_t *data = nullptr;
  /// Number of bytes at `data`.
  size_t size = 0;
  /// Kernels to resolve; Executable kernel indices follow this order.
  std::vector<KernelSpec> kernels;
};

/// Device memory. Created by Device::allocate; freed on destruction.
class Buffer {
public:
  virtual ~Buffer() = default;
  /// Size in bytes as allocated.
  virtual uint64_t size() const = 0;
  /// Host-visible pointer to the memory, or nullptr when the memory is not
  /// host-mapped (GPU backends); use Device::copy* then.
  virtual void *hostPointer() = 0;
  /// Device address of the first byte (what kernels receive).
  virtual void *devicePointer() = 0;
};

/// A loaded binary with resolved kernel entry points.
class Executable {
public:
  virtual ~Executable() = default;
  /// Number of kernels (== ExecutableSpec.kernels.size()).
  virtual size_t kernelCount() const = 0;
  /// The spec of kernel `index` (< kernelCount()).
  virtual const KernelSpec &kernel(size_t index) const = 0;
};

/// One argument of a dispatch. For a buffer argument: `buffer` (not null),
/// `offset_bytes` into it and `shape` (length == the argument's rank, extents
/// in elements, row-major contiguous). For a scalar argument: `scalar_bits`
/// holds the value's bytes in its low `element_bytes` bytes (an f32 is its
/// IEEE bit pattern).
struct DispatchArg {
  /// Bound buffer (buffer arguments). Not owned.
  Buffer *buffer = nullptr;
  /// Byte offset of the region in `buffer`. Default 0.
  uint64_t offset_bytes = 0;
  /// Extents of the region, in elements.
  std::vector<int64_t> shape;
  /// Raw scalar value (scalar arguments). Default 0.
  uint64_t scalar_bits = 0;
};

/// The device interface every backend implements.
class Device {
public:
  virtual ~Device() = default;

  /// Short backend name ("cpu", "hip", "cuda").
  virtual const char *name() const = 0;

  /// Allocates `size` bytes aligned to at least `alignment` (a power of two;
  /// 0 means the backend default of 64). Contents are zero.
  virtual StatusOr<std::unique_ptr<Buffer>> allocate(uint64_t size,
                                                     uint64_t alignment) = 0;

  /// Copies `size` bytes from host memory into `dst` at `offset`.
  virtual Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                              uint64_t size) = 0;

  /// Copies `size` bytes of `src` at `offset` into host memory.
  virtual Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                                uint64_t size) = 0;

  /// Loads a binary and resolves every kernel's entry symbol. Errors name the
  /// kernel or symbol that failed.
  virtual StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableSpec &spec) = 0;

  /// Enqueues kernel `kernel_index` of `executable` with `args` (one per
  /// kernel argument) and `grid` blocks (GPU; ignored on CPU). Checks the
  /// argument count, kinds and ranks and that every buffer region lies inside
  /// its buffer before launching.
  virtual Status dispatch(Executable &executable, size_t kernel_index,
                          const std::vector<DispatchArg> &args,
                          const uint64_t grid[3]) = 0;

  /// Waits until every dispatch and copy issued so far has finished.
  virtual Status synchronize() = 0;
};

/// Checks `args` against `kernel` (count, kinds, ranks, non-negative extents,
/// regions inside their buffers). Shared by every backend's dispatch.
Status validateDispatchArgs(const KernelSpec &kernel,
                            const std::vector<DispatchArg> &args);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_DEVICE_H
