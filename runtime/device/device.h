//===- device.h - the strata device abstraction -----------------*- C++ -*-===//
//
// Part of strata. A Device owns memory (Buffers), loads compiled kernel
// binaries (Executables) and runs kernels and copies on Streams, in order per
// stream. Events mark points in a stream (ordering across streams, elapsed
// time); a stream can capture its work into a Graph that is replayed later
// with one call (a decode step's dispatch list, CUDA/HIP graphs).
//
// Backends: CPU (runtime/device/cpu: host memory, dlopen'ed shared objects,
// streams execute immediately, graphs record the dispatch list), CUDA and HIP
// (runtime/device/cuda, runtime/device/hip over runtime/device/gpu: the vendor
// runtime is dlopen'ed at run time, no vendor header or library is needed to
// build). Every backend passes runtime/device/cts. docs/DeviceRuntime.md
// describes the semantics in full.
//
// This header knows nothing of the artifact format: runtime/loader turns the
// flatbuffer's kernels and plans into the plain structs below.
//
// Ownership: a Device is owned by its creator and must outlive every Buffer,
// Executable, Stream, Event and Graph it made; those are owned by the caller
// (std::unique_ptr) and release their resource on destruction.
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
  /// The kernel waits for its predecessor on the stream itself
  /// (griddepcontrol.wait first, LaunchInfo.grid_dependency_control): a
  /// captured launch of it may overlap the predecessor's last blocks
  /// (CUDA's programmatic dependent launch). Default false.
  bool grid_dependency_control = false;
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

/// Where a Buffer's memory lives.
enum class MemoryKind : uint8_t {
  /// Device memory (Device::allocate): not host-visible on GPU backends.
  kDevice = 0,
  /// Page-locked host memory (Device::allocateHost): host-visible, readable
  /// and writable by kernels, the fast path for asynchronous copies.
  kHost = 1,
};

/// Memory owned by a device. Created by Device::allocate or allocateHost;
/// freed on destruction.
class Buffer {
public:
  virtual ~Buffer() = default;
  /// Size in bytes as allocated.
  virtual uint64_t size() const = 0;
  /// Device or host memory.
  virtual MemoryKind memoryKind() const = 0;
  /// Host-visible pointer to the memory, or nullptr when the memory is not
  /// host-mapped (device memory of GPU backends); use the copies then.
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

/// A strided (2D) copy between two buffers (Stream::copyBuffer2D): `rows`
/// rows of `row_bytes` bytes, row r read at `src_offset + r * src_pitch` and
/// written at `dst_offset + r * dst_pitch`. Pitches are at least row_bytes
/// (rows do not overlap within a buffer); source and destination regions
/// must not overlap. Zero-initialized: an empty copy.
struct Copy2D {
  /// Byte offset of row 0 in the source; default 0.
  uint64_t src_offset = 0;
  /// Bytes from one source row to the next; default 0.
  uint64_t src_pitch = 0;
  /// Byte offset of row 0 in the destination; default 0.
  uint64_t dst_offset = 0;
  /// Bytes from one destination row to the next; default 0.
  uint64_t dst_pitch = 0;
  /// Bytes per row; default 0.
  uint64_t row_bytes = 0;
  /// Rows; default 0.
  uint64_t rows = 0;
};

/// A point in a stream's work, recorded by Stream::recordEvent. Events order
/// work across streams (Stream::waitEvent) and time it
/// (Device::elapsedMillis).
class Event {
public:
  virtual ~Event() = default;
  /// Whether recordEvent was called on this event at least once.
  virtual bool recorded() const = 0;
  /// Waits until the work before the latest record has finished.
  /// FAILED_PRECONDITION if the event was never recorded.
  virtual Status synchronize() = 0;
};

/// A hold on a stream (Stream::hold): the work enqueued after it waits until
/// release() or the destructor, which every path reaches. Timing one
/// dispatch between two events on a held stream measures the device's time
/// for it alone: the launch is already queued when the first event runs.
class StreamHold {
public:
  virtual ~StreamHold() = default;
  /// Lets the held work start (again: nothing).
  virtual void release() = 0;
};

/// A captured sequence of stream work (Stream::beginCapture/endCapture),
/// ready to replay with Stream::launchGraph. Buffers, offsets, shapes,
/// scalars and grids are fixed at capture time; buffer contents are read
/// when the graph runs, so a decode step is replayed by writing its inputs
/// and launching the graph.
class Graph {
public:
  virtual ~Graph() = default;
  /// Number of operations captured (dispatches and copies).
  virtual size_t operationCount() const = 0;
};

/// An in-order queue of work on a device. Operations run in submission
/// order; on GPU backends they are asynchronous with respect to the host
/// until synchronize. On the CPU backend every operation runs immediately.
///
/// Capture: between beginCapture and endCapture, dispatch and copyBuffer are
/// recorded instead of executed (on every backend). Host-pointer copies,
/// events, graph launches and synchronize are rejected on a capturing stream
/// with FAILED_PRECONDITION, and so are Device::allocate, allocateHost,
/// copyToDevice, copyFromDevice and synchronize while any stream of the
/// device captures. A rejected call leaves the capture intact.
class Stream {
public:
  virtual ~Stream() = default;

  /// Enqueues kernel `kernel_index` of `executable` with `args` and `grid`
  /// blocks (see Device::dispatch).
  virtual Status dispatch(Executable &executable, size_t kernel_index,
                          const std::vector<DispatchArg> &args,
                          const uint64_t grid[3]) = 0;

  /// dispatch with `shared_memory_bytes` of dynamic shared memory per block
  /// instead of the kernel's LaunchDims bytes, which it must not pass
  /// (INVALID_ARGUMENT): a kernel whose small steps use less than its large
  /// ones. Backends without shared memory (the CPU) ignore it.
  virtual Status dispatchWithSharedMemory(Executable &executable,
                                          size_t kernel_index,
                                          const std::vector<DispatchArg> &args,
                                          const uint64_t grid[3],
                                          uint64_t shared_memory_bytes) {
    (void)shared_memory_bytes;
    return dispatch(executable, kernel_index, args, grid);
  }

  /// Enqueues a copy of `size` bytes from host memory `src` into `dst` at
  /// `offset`. `src` must stay valid until the copy has run (synchronize).
  virtual Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                              uint64_t size) = 0;

  /// Enqueues a copy of `size` bytes of `src` at `offset` into host memory
  /// `dst`, which is written by the time synchronize returns.
  virtual Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                                uint64_t size) = 0;

  /// Enqueues a copy of `size` bytes between two buffers of this device
  /// (device or host memory, in any combination). Capturable.
  virtual Status copyBuffer(const Buffer &src, uint64_t src_offset,
                            Buffer &dst, uint64_t dst_offset,
                            uint64_t size) = 0;

  /// Enqueues the strided copy `copy` from `src` to `dst` (buffers of this
  /// device, device or host memory) as one operation (cuMemcpy2DAsync,
  /// hipMemcpy2DAsync): a block of rows moved into place between rows of
  /// another layout, e.g. a rank's part of a gathered tensor into its
  /// columns. Capturable.
  virtual Status copyBuffer2D(const Buffer &src, Buffer &dst,
                              const Copy2D &copy) = 0;

  /// Records `event` at the current end of the stream (re-recording moves
  /// it).
  virtual Status recordEvent(Event &event) = 0;

  /// Makes later work on this stream wait for `event`'s latest record.
  /// FAILED_PRECONDITION if the event was never recorded.
  virtual Status waitEvent(const Event &event) = 0;

  /// Waits until everything enqueued on this stream has finished.
  virtual Status synchronize() = 0;

  /// Starts recording this stream's work into a graph.
  virtual Status beginCapture() = 0;

  /// Whether the stream is between beginCapture and endCapture.
  virtual bool capturing() const = 0;

  /// Stops recording and returns the replayable graph.
  virtual StatusOr<std::unique_ptr<Graph>> endCapture() = 0;

  /// Enqueues one replay of `graph` (made by a stream of this device).
  virtual Status launchGraph(Graph &graph) = 0;

  /// Holds the work enqueued from now on until the returned hold is
  /// released. UNIMPLEMENTED where the backend cannot (the CPU stream runs
  /// each operation as it is enqueued; a driver without stream memory
  /// operations); FAILED_PRECONDITION while capturing. Release a hold
  /// before synchronizing on the work it holds.
  virtual StatusOr<std::unique_ptr<StreamHold>> hold() {
    return unimplemented("this stream cannot be held");
  }

  /// The vendor stream (CUstream, hipStream_t) of the GPU backends, for
  /// libraries that enqueue their own work on it (NCCL/RCCL,
  /// runtime/collectives); nullptr on the CPU backend.
  virtual void *nativeHandle() const { return nullptr; }
};

/// Bytes of memory of a device.
struct MemoryInfo {
  /// Bytes that can still be allocated (an estimate on the CPU). Default 0.
  uint64_t free_bytes = 0;
  /// Total bytes. Default 0.
  uint64_t total_bytes = 0;
};

/// The device interface every backend implements.
class Device {
public:
  virtual ~Device() = default;

  /// Short backend name ("cpu", "hip", "cuda").
  virtual const char *name() const = 0;

  /// One line naming the hardware, e.g. "NVIDIA H200 (sm_90, 139.8 GiB)".
  virtual std::string description() const = 0;

  /// Free and total memory of the device.
  virtual StatusOr<MemoryInfo> memoryInfo() = 0;

  /// Allocates `size` bytes of device memory aligned to at least `alignment`
  /// (a power of two; 0 means the backend default of 64; GPU allocations are
  /// aligned to 256 and larger requests are rejected). Contents are zero.
  virtual StatusOr<std::unique_ptr<Buffer>> allocate(uint64_t size,
                                                     uint64_t alignment) = 0;

  /// Allocates `size` bytes of page-locked host memory (MemoryKind::kHost),
  /// zeroed, with a host pointer and a device address kernels can use.
  virtual StatusOr<std::unique_ptr<Buffer>> allocateHost(uint64_t size) = 0;

  /// Copies `size` bytes from host memory into `dst` at `offset`, in order
  /// with the default stream; returns when the copy is done.
  virtual Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                              uint64_t size) = 0;

  /// Copies `size` bytes of `src` at `offset` into host memory, in order
  /// with the default stream; returns when the copy is done.
  virtual Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                                uint64_t size) = 0;

  /// Loads a binary and resolves every kernel's entry symbol. Errors name the
  /// kernel or symbol that failed.
  virtual StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableSpec &spec) = 0;

  /// Enqueues kernel `kernel_index` of `executable` with `args` (one per
  /// kernel argument) and `grid` blocks (GPU; ignored on CPU) on the default
  /// stream. Checks the argument count, kinds and ranks and that every buffer
  /// region lies inside its buffer before launching.
  virtual Status dispatch(Executable &executable, size_t kernel_index,
                          const std::vector<DispatchArg> &args,
                          const uint64_t grid[3]) = 0;

  /// Waits until every dispatch and copy issued so far, on every stream, has
  /// finished.
  virtual Status synchronize() = 0;

  /// The stream Device::dispatch and the Device copies use. Owned by the
  /// device.
  virtual Stream &defaultStream() = 0;

  /// Creates a new stream, independent of the default stream.
  virtual StatusOr<std::unique_ptr<Stream>> createStream() = 0;

  /// Creates an event (not yet recorded).
  virtual StatusOr<std::unique_ptr<Event>> createEvent() = 0;

  /// Milliseconds between two recorded events of this device; waits for
  /// `end` to complete. FAILED_PRECONDITION if either was never recorded.
  virtual StatusOr<float> elapsedMillis(const Event &start,
                                        const Event &end) = 0;

  /// Makes this device current on the calling thread (the GPU backends'
  /// context), for libraries that work on the current device (NCCL/RCCL,
  /// runtime/collectives). Nothing to do on the CPU backend.
  virtual Status makeCurrent() { return okStatus(); }
};

/// Checks `args` against `kernel` (count, kinds, ranks, non-negative extents,
/// regions inside their buffers). Shared by every backend's dispatch.
Status validateDispatchArgs(const KernelSpec &kernel,
                            const std::vector<DispatchArg> &args);

/// Kernel `kernel_index` of `executable` after the checks every backend's
/// dispatch makes first: the index in range, `args` valid for the kernel
/// (validateDispatchArgs).
StatusOr<const KernelSpec *>
dispatchedKernel(const Executable &executable, size_t kernel_index,
                 const std::vector<DispatchArg> &args);

/// Flattens validated `args` of `kernel` into the memref-descriptor ABI's
/// 8-byte values (docs/Artifact.md "Kernel ABI"): a buffer of rank r as
/// allocated pointer, aligned pointer (base + offset_bytes), offset 0, r
/// sizes, r row-major strides; a scalar as its bits. Pointers are the
/// buffers' device pointers.
std::vector<uint64_t> flattenDispatchArgs(const KernelSpec &kernel,
                                          const std::vector<DispatchArg> &args);

/// Checks that [offset, offset + size) lies inside `buffer`; OUT_OF_RANGE
/// otherwise.
Status checkBufferRange(const Buffer &buffer, uint64_t offset, uint64_t size);

/// Checks a strided copy (Copy2D): pitches of at least row_bytes
/// (INVALID_ARGUMENT) and both regions inside their buffers (OUT_OF_RANGE).
Status checkCopy2D(const Buffer &src, const Buffer &dst, const Copy2D &copy);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_DEVICE_H
