//===- hip_device.h - the HIP device backend --------------------*- C++ -*-===//
//
// Part of strata. A Device on an AMD GPU through the HIP runtime, loaded at
// run time with dlopen (libamdhip64.so, then its .so.7/.so.6/.so.5
// sonames): the build needs no ROCm header or library, and the binaries run
// on machines without a GPU, where createHipDevice fails with UNAVAILABLE
// "no HIP runtime: libamdhip64.so not found (...)" or "no GPU: ...".
// Kernels are AMDGPU code objects (BinaryFormat::kHsaco: an ELF hsaco or a
// clang offload bundle) loaded with hipModuleLoadData and launched with
// hipModuleLaunchKernel in the gpu_memref_descriptor ABI (docs/Artifact.md
// "Kernel ABI"). docs/DeviceRuntime.md lists the runtime entry points used.
//
// Ownership and thread-safety: see runtime/device/device.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_HIP_HIP_DEVICE_H
#define STRATA_RUNTIME_DEVICE_HIP_HIP_DEVICE_H

#include <memory>
#include <string>

#include "runtime/device/device.h"

namespace strata::runtime {

/// Which GPU and which runtime library.
struct HipDeviceOptions {
  /// Device ordinal. Default 0.
  int ordinal = 0;
  /// Runtime library to dlopen. Default (empty): libamdhip64.so, then
  /// libamdhip64.so.7, .so.6, .so.5.
  std::string library;
  /// Take `ordinal` modulo the number of devices (the ranks of a parallel
  /// run on a machine with fewer GPUs than ranks share them). Default off:
  /// an ordinal past the last device is an error.
  bool ordinal_modulo_count = false;
};

/// Opens the HIP runtime and creates a device on GPU `options.ordinal`.
StatusOr<std::unique_ptr<Device>>
createHipDevice(const HipDeviceOptions &options = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_HIP_HIP_DEVICE_H
