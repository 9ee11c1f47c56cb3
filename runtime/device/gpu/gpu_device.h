//===- gpu_device.h - a Device over a GpuDriver -----------------*- C++ -*-===//
//
// Part of strata. The Device implementation shared by the CUDA and HIP
// backends: buffers are device allocations (or page-locked host memory),
// executables are loaded modules with resolved functions, streams are
// non-blocking vendor streams, events are timing events, and graphs are
// stream captures instantiated into executable graphs. All vendor calls go
// through a GpuDriver (gpu_driver.h). Argument checks, capture rules and
// error messages are the ones every backend shares (device.h); the vendor's
// error arrives only when the vendor call itself fails.
//
// Ownership and thread-safety: see runtime/device/device.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_GPU_GPU_DEVICE_H
#define STRATA_RUNTIME_DEVICE_GPU_GPU_DEVICE_H

#include <memory>

#include "runtime/device/device.h"
#include "runtime/device/gpu/gpu_driver.h"

namespace strata::runtime {

/// Creates a device over `driver` (whose context is already selected).
StatusOr<std::unique_ptr<Device>>
createGpuDevice(std::unique_ptr<GpuDriver> driver);

/// The GPU a backend opens of `count`: `ordinal`, or with `modulo` (ranks of
/// a parallel run sharing fewer GPUs) `ordinal` modulo `count`.
/// INVALID_ARGUMENT "<backend> device N requested, M present" outside
/// [0, count).
StatusOr<int> resolveDeviceOrdinal(const char *backend, int ordinal,
                                   bool modulo, int count);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_GPU_GPU_DEVICE_H
