//===- cuda_device.h - the CUDA device backend ------------------*- C++ -*-===//
//
// Part of strata. A Device on an NVIDIA GPU through the CUDA driver API,
// loaded at run time with dlopen("libcuda.so.1"): the build needs no CUDA
// header or library, and the binaries run on machines without a GPU, where
// createCudaDevice fails with UNAVAILABLE "no CUDA driver: libcuda.so.1 not
// found (...)" or "no GPU: ...". Kernels are modules in BinaryFormat::kCubin
// containers: a cubin (ELF), a fatbin, or PTX text that the driver compiles
// for the GPU at load time (cuModuleLoadData). The device uses the GPU's
// primary context. Launches use the gpu_memref_descriptor ABI
// (docs/Artifact.md "Kernel ABI"). docs/DeviceRuntime.md lists the driver
// entry points used.
//
// Ownership and thread-safety: see runtime/device/device.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H
#define STRATA_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H

#include <memory>
#include <string>

#include "runtime/device/device.h"

namespace strata::runtime {

/// Which GPU and which driver library.
struct CudaDeviceOptions {
  /// Device ordinal. Default 0.
  int ordinal = 0;
  /// Driver library to dlopen. Default (empty): "libcuda.so.1".
  std::string library;
  /// Take `ordinal` modulo the number of devices (the ranks of a parallel
  /// run on a machine with fewer GPUs than ranks share them). Default off:
  /// an ordinal past the last device is an error.
  bool ordinal_modulo_count = false;
  /// Launch the kernels that wait for their predecessor themselves
  /// (LaunchDims::grid_dependency_control) as programmatic dependent
  /// launches when a stream captures a graph (cuLaunchKernelEx; drivers
  /// without it launch plainly). Default on.
  bool dependent_launches = true;
};

/// Opens the CUDA driver and creates a device on GPU `options.ordinal`.
StatusOr<std::unique_ptr<Device>>
createCudaDevice(const CudaDeviceOptions &options = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H
