//===- cpu_device.h - the CPU device backend --------------------*- C++ -*-===//
//
// Part of strata. Host-memory buffers and ahead-of-time compiled kernels: an
// Executable is an x86-64 ELF shared object stored in the artifact, loaded
// from memory with memfd_create + dlopen("/proc/self/fd/N") (or, where memfd
// is unavailable or not executable, a private temporary file that is unlinked
// right after dlopen). Entry points use the packed memref-descriptor ABI
// (`void entry(void **args)`, docs/Artifact.md "Kernel ABI"). Streams run
// every operation at once on the calling thread (synchronize only checks
// capture state); events record a steady_clock time; a captured graph is the
// recorded list of dispatches (flattened arguments) and buffer copies,
// replayed in order. allocateHost is ordinary memory of kind kHost.
// Allocations of 1 MiB and more are anonymous mappings whose zero pages are
// committed only when touched.
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
