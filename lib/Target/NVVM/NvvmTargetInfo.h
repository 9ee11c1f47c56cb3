//===- NvvmTargetInfo.h - TargetInfo of NVIDIA Hopper GPUs ------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// sm_90 (H100/H200): 32-lane warps, up to 227 KiB of shared memory per block
// (opt-in; 48 KiB without cudaFuncAttributeMaxDynamicSharedMemorySize),
// warp-level mma.sync tensor-core instructions; sm_90a adds the warpgroup
// wgmma instructions. Kernels are lowered through NVVM to PTX (ISA 8.0) and
// assembled with the toolkit's ptxas into a cubin.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_NVVM_NVVMTARGETINFO_H
#define STRATA_LIB_TARGET_NVVM_NVVMTARGETINFO_H

#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

class NvvmTargetInfo final : public TargetInfo {
public:
  /// `chip` is "sm_90" or "sm_90a" (wgmma).
  explicit NvvmTargetInfo(llvm::StringRef chip);

  llvm::StringRef getName() const override { return chip; }
  llvm::StringRef getChip() const override { return chip; }
  bool needsBF16Expansion() const override { return false; }
  bool isHost() const override { return false; }
  int64_t getVectorWidthBits() const override { return 128; }
  int64_t getSubgroupSize() const override { return 32; }
  int64_t getSharedMemoryBytes() const override { return 227 * 1024; }
  /// Static `.shared` arrays: 48 KiB; more needs dynamic shared memory and
  /// cuFuncSetAttribute.
  int64_t getStaticSharedMemoryBytes() const override { return 48 * 1024; }
  int64_t getMaxWorkgroupSize() const override { return 1024; }
  llvm::ArrayRef<MatrixInstruction> getMatrixInstructions() const override {
    return matrixInstructions;
  }
  /// GridDependencyControl.cpp: every kernel waits for its predecessor.
  bool controlsGridDependencies() const override { return true; }
  LogicalResult buildBinaryPipeline(OpPassManager &pm,
                                    const BinaryOptions &options) const override;

private:
  std::string chip;
  std::vector<MatrixInstruction> matrixInstructions;
};

/// The NvvmTargetInfo of `chip` ("sm_90", "sm_90a"); null otherwise.
std::unique_ptr<TargetInfo> createNvvmTargetInfo(llvm::StringRef chip);

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_NVVM_NVVMTARGETINFO_H
