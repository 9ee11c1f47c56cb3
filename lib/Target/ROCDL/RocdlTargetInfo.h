//===- RocdlTargetInfo.h - TargetInfo of AMD Instinct GPUs ------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// gfx942 (MI300, CDNA3) and gfx950 (MI350/MI355, CDNA4): 64-lane waves,
// 64 KiB (gfx942) / 160 KiB (gfx950) of LDS per workgroup, MFMA matrix
// instructions. Kernels are lowered through ROCDL and the LLVM AMDGPU
// backend and serialized as HSA code objects v5 (COV5, abi=500), which every
// ROCm >= 5.x runtime loads (the COV6 default needs ROCm >= 6.3).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_ROCDL_ROCDLTARGETINFO_H
#define STRATA_LIB_TARGET_ROCDL_ROCDLTARGETINFO_H

#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

/// The facts of one AMD chip (one row of the chip table).
struct RocdlChip {
  llvm::StringRef chip;
  int64_t ldsBytes;
  std::vector<MatrixInstruction> matrixInstructions;
};

class RocdlTargetInfo final : public TargetInfo {
public:
  explicit RocdlTargetInfo(RocdlChip chip) : chip(std::move(chip)) {}

  llvm::StringRef getName() const override { return chip.chip; }
  llvm::StringRef getChip() const override { return chip.chip; }
  bool needsBF16Expansion() const override { return false; }
  bool isHost() const override { return false; }
  int64_t getVectorWidthBits() const override { return 128; }
  int64_t getSubgroupSize() const override { return 64; }
  int64_t getSharedMemoryBytes() const override { return chip.ldsBytes; }
  int64_t getMaxWorkgroupSize() const override { return 1024; }
  llvm::ArrayRef<MatrixInstruction> getMatrixInstructions() const override {
    return chip.matrixInstructions;
  }
  LogicalResult buildBinaryPipeline(OpPassManager &pm,
                                    const BinaryOptions &options) const override;

private:
  RocdlChip chip;
};

/// The RocdlTargetInfo of `chip` ("gfx942", "gfx950"); null otherwise.
std::unique_ptr<TargetInfo> createRocdlTargetInfo(llvm::StringRef chip);

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_ROCDL_ROCDLTARGETINFO_H
