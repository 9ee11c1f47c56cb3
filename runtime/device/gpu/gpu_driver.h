//===- gpu_driver.h - the vendor runtime calls GPU devices need -*- C++ -*-===//
//
// Part of strata. GpuDriver is the small set of vendor runtime calls the
// shared GPU device (gpu_device.h) is built on: memory, asynchronous copies,
// streams, events, stream capture into graphs, modules and kernel launches.
// runtime/device/cuda implements it over the CUDA driver API (libcuda.so.1)
// and runtime/device/hip over the HIP runtime (libamdhip64.so), both loaded
// with dlopen, so nothing here needs a vendor header.
//
// Handles (streams, events, graphs, modules, functions) are opaque pointers;
// device addresses are 64-bit integers. Every call returns a Status whose
// message names the vendor function and its error ("cuMemAlloc:
// CUDA_ERROR_OUT_OF_MEMORY (out of memory)"); out-of-memory errors are
// RESOURCE_EXHAUSTED. Calls are made with the driver's context current on
// the calling thread (makeCurrent).
//
// Ownership: a GpuDriver owns its context/device selection and is owned by
// the GpuDevice made from it. Thread-safety: as the Device.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_GPU_GPU_DRIVER_H
#define STRATA_RUNTIME_DEVICE_GPU_GPU_DRIVER_H

#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/device/device.h"

namespace strata::runtime {

class GpuDriver {
public:
  virtual ~GpuDriver() = default;

  /// Backend name ("cuda", "hip").
  virtual const char *backendName() const = 0;
  /// One line naming the GPU.
  virtual std::string description() const = 0;
  /// The binary format loadModule accepts.
  virtual BinaryFormat binaryFormat() const = 0;

  /// Makes the device's context current on the calling thread.
  virtual Status makeCurrent() = 0;
  /// Free and total device memory.
  virtual Status memoryInfo(uint64_t &out_free, uint64_t &out_total) = 0;

  /// Device memory (256-byte aligned).
  virtual Status deviceAlloc(uint64_t size, uint64_t &out_address) = 0;
  virtual Status deviceFree(uint64_t address) = 0;
  /// Page-locked, device-mapped host memory; the host pointer is also the
  /// device address (unified addressing).
  virtual Status hostAlloc(uint64_t size, void *&out_pointer) = 0;
  virtual Status hostFree(void *pointer) = 0;

  /// Asynchronous zero fill and copy (any memory, unified addressing).
  virtual Status memsetZeroAsync(uint64_t address, uint64_t size,
                                 void *stream) = 0;
  virtual Status memcpyAsync(uint64_t dst, uint64_t src, uint64_t size,
                             void *stream) = 0;
  /// Asynchronous strided copy (any memory, unified addressing): `rows`
  /// rows of `row_bytes` bytes from `src` + r * src_pitch to `dst` + r *
  /// dst_pitch.
  virtual Status memcpy2DAsync(uint64_t dst, uint64_t dst_pitch, uint64_t src,
                               uint64_t src_pitch, uint64_t row_bytes,
                               uint64_t rows, void *stream) = 0;

  /// Non-blocking streams (no implicit sync with the legacy stream).
  virtual Status streamCreate(void *&out_stream) = 0;
  virtual Status streamDestroy(void *stream) = 0;
  virtual Status streamSynchronize(void *stream) = 0;
  virtual Status streamWaitEvent(void *stream, void *event) = 0;
  /// Makes the stream's later work wait until the 32-bit word at `word`
  /// (hostAlloc memory) is at least `value`; UNIMPLEMENTED when the driver
  /// has no stream memory operations.
  virtual Status streamWaitValue(void *stream, const void *word,
                                 uint32_t value) = 0;

  /// Timing events.
  virtual Status eventCreate(void *&out_event) = 0;
  virtual Status eventDestroy(void *event) = 0;
  virtual Status eventRecord(void *event, void *stream) = 0;
  virtual Status eventSynchronize(void *event) = 0;
  virtual Status eventElapsedMillis(void *start, void *end,
                                    float &out_millis) = 0;

  /// Thread-local stream capture and executable graphs.
  virtual Status beginCapture(void *stream) = 0;
  virtual Status endCapture(void *stream, void *&out_graph) = 0;
  virtual Status graphInstantiate(void *graph, void *&out_exec) = 0;
  virtual Status graphLaunch(void *exec, void *stream) = 0;
  virtual Status graphExecDestroy(void *exec) = 0;
  virtual Status graphDestroy(void *graph) = 0;

  /// Loads a module image. The bytes were already checked by the device to
  /// have binaryFormat(); the driver checks their container (INVALID_ARGUMENT
  /// when they are not a module image at all).
  virtual Status moduleLoad(const uint8_t *data, size_t size,
                            void *&out_module) = 0;
  virtual Status moduleUnload(void *module) = 0;
  /// Resolves `name`; NOT_FOUND when the module has no such function.
  virtual Status moduleGetFunction(void *module, const std::string &name,
                                   void *&out_function) = 0;
  /// Prepares `function` for launches with `launch` (large dynamic shared
  /// memory opt-in).
  virtual Status prepareFunction(void *function, const LaunchDims &launch) = 0;
  /// Launches `function` with `params` (one pointer per kernel parameter);
  /// `dependent`: as a programmatic dependent launch where the vendor has
  /// one and allows it (the kernel waits for its predecessor itself), else
  /// a plain launch.
  virtual Status launch(void *function, const uint32_t grid[3],
                        const LaunchDims &launch, void *stream, void **params,
                        bool dependent) = 0;

  /// Waits for all work of the context.
  virtual Status contextSynchronize() = 0;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_GPU_GPU_DRIVER_H
