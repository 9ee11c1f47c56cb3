//===- cts_kernels.h - the conformance kernels per backend ------*- C++ -*-===//
//
// Part of strata. The device conformance suite runs one kernel on every
// backend, `cts_axpb(in: memref<?xf32>, out: memref<?xf32>, alpha: f32,
// beta: f32)`: out[i] = alpha * in[i] + beta, one GPU thread per element of
// `out` (block 64, grid ceil(n / 64)). Its binaries: a shared object built
// beside the test binary (CPU, testdata/cts_kernels.c), PTX text compiled by
// the driver at load time (CUDA, cts_kernels.cpp), AMDGPU code objects built
// from testdata/cts_axpb.ll beside the test binary, one per listed chip (HIP).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_CTS_CTS_KERNELS_H
#define STRATA_RUNTIME_DEVICE_CTS_CTS_KERNELS_H

#include <string>
#include <vector>

#include "runtime/device/device.h"

namespace strata::runtime::cts {

/// One candidate binary holding cts_axpb.
struct CtsBinary {
  /// What it is, for messages ("ptx", "cts_axpb_gfx942.hsaco", ...).
  std::string label;
  BinaryFormat format = BinaryFormat::kElfSharedObject;
  std::vector<uint8_t> bytes;
};

/// The candidate binaries for backend `backend` ("cpu", "cuda", "hip"); a
/// device loads the first one it accepts. Empty if none was built. HIP: every
/// testdata/cts_axpb_<chip>.hsaco beside the test binary, by name.
std::vector<CtsBinary> ctsBinaries(const std::string &backend);

/// The KernelSpec of cts_axpb.
KernelSpec ctsAxpbSpec();

/// Threads per block of cts_axpb launches.
constexpr uint32_t kCtsBlockSize = 64;

} // namespace strata::runtime::cts

#endif // STRATA_RUNTIME_DEVICE_CTS_CTS_KERNELS_H
