//===- CpuTargetInfo.h - TargetInfo of the x86-64 host CPU ------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The CPU answers of TargetInfo: x86-64-v2 baseline (no AVX-512 BF16, so
// bf16 conversions are expanded to integer code, which also keeps the
// kernels free of __truncsfbf2 libcalls), 128-bit SSE vectors, host ABI.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_CPU_CPUTARGETINFO_H
#define STRATA_LIB_TARGET_CPU_CPUTARGETINFO_H

#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

class CpuTargetInfo final : public TargetInfo {
public:
  llvm::StringRef getName() const override { return "cpu"; }
  llvm::StringRef getChip() const override { return "x86-64-v2"; }
  bool needsBF16Expansion() const override { return true; }
  bool isHost() const override { return true; }
  int64_t getVectorWidthBits() const override { return 128; }
};

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_CPU_CPUTARGETINFO_H
