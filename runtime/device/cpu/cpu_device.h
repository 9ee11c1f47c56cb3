//===- cpu_device.h - the CPU device backend --------------------*- C++ -*-===//
//
// Part of strata. Host-memory buffers and ahead-of-time compiled kernels: an
// Executable is an x86-64 ELF shared object stored in the artifact, loaded
// from memory with memfd_create + dlopen("/proc/self/fd/N") (or, where memfd
// is unavailable or not executable, a private temporary file that is unlinked
// right after dlopen). Entry points use the packed memref-descriptor ABI
// (`void entry(void **args)`, docs/Artifact.md "Kernel ABI"). Dispatch runs
// the kernel synchronously on the calling thread; synchronize() is a no-op.
//
// Symbols a kernel imports (expf, memcpy, malloc, ...) were bound at compile
// time to libm.so.6 / libc.so.6 as DT_NEEDED entries (lib/Target/CPU links
// with --no-undefined), so dlopen resolves them through the dynamic linker.
//
// Ownership and thread-safety: see runtime/device/device.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_CPU_CPU_DEVICE_H
#define STRATA_RUNTIME_DEVICE_CPU_CPU_DEVICE_H

#include <memory>

#include "runtime/device/device.h"

namespace strata::runtime {

/// How the CPU backend loads shared objects.
struct CpuDeviceOptions {
  /// Skip memfd_create and load through a temporary file. Default false.
  bool force_temp_file = false;
};

/// Creates a CPU device.
std::unique_ptr<Device> createCpuDevice(const CpuDeviceOptions &options = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_CPU_CPU_DEVICE_H
