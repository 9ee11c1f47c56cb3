//===- GpuKernelCompiler.h - llm.kernel functions to a GPU binary -*- C++
//-*-===//
//
// Part of strata, under the Apache License v2.0.
//
// compileGpuKernels turns the kernel functions of a kernel-phase module (the
// same functions the CPU target compiles) into one device binary for a GPU
// chip: the linear kernel functions whose shapes and types go on the matrix
// units become LLMToGPU's tiled matmul kernels (same name and arguments,
// launch.matrixInstruction set), every other kernel goes through
// convert-kernels-to-gpu (one gpu.func per kernel, row loop over the
// grid, large or dynamic scratch in a global scratch argument), then the
// chip's binary pipeline (TargetInfo::buildBinaryPipeline:
// NVVM + ptxas → cubin, ROCDL + lld → hsaco). docs/GPULowering.md "Whole
// model on the GPU".
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_DRIVER_GPUKERNELCOMPILER_H
#define STRATA_LIB_DRIVER_GPUKERNELCOMPILER_H

#include <array>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include "lib/Artifact/ArtifactWriter.h"
#include "lib/Conversion/KernelToGPU/KernelToGPU.h"
#include "lib/Conversion/LLMToGPU/LaunchGrid.h"

namespace mlir::strata {

/// One instruction of a kernel's scratch program (KernelToGPU.h ScratchOp):
/// `op` with up to two operands.
struct GpuScratchOp {
  ScratchOp op = ScratchOp::Constant;
  int64_t a = 0;
  int64_t b = 0;
};

struct GpuKernelLibrary {
  fb::TargetKind kind = fb::TargetKind::sm_90;
  std::string chip;
  BinaryDesc binary;
  /// One per kernel function, in module order; launch.grid left to the
  /// caller (see grids).
  std::vector<KernelDesc> kernels;
  /// Per kernel: the grid in terms of its arguments.
  std::vector<std::array<GpuGridDim, 3>> grids;
  /// Per kernel: [perRow, smallSteps, bytes] when steps whose argument 0
  /// has at most smallSteps / perRow rows need only `bytes` of its dynamic
  /// shared memory (kSmallStepSharedMemoryAttrName); empty otherwise.
  std::vector<std::vector<int64_t>> smallStepSharedMemory;
  /// Per kernel: its bytes per block of global scratch as a postfix program
  /// over its arguments' extents; empty when it has no scratch argument
  /// (then kernels[k].args has no trailing `scratch` argument).
  std::vector<std::vector<GpuScratchOp>> scratch;
  /// Per kernel: the i32 arrival counters it takes (kGpuCountersAttrName:
  /// kernels[k].args has a `counters` argument before `scratch`), 0 for
  /// none.
  std::vector<int64_t> counters;
};

/// Code generation choices of the GPU targets. Both default to the fast
/// path; turning one off gives a simpler kernel set of the same plan (the
/// same kernel names and arguments), for bisecting a wrong result on a
/// device.
struct GpuCodegenOptions {
  /// Threads share a block's rows (convert-kernels-to-gpu with the chip);
  /// false: one thread per block (the pass without a chip).
  bool blockThreads = true;
  /// llm.linear kernels that tile run on the matrix units (mma.sync,
  /// MFMA); false: every linear stays a generic kernel.
  bool matrixUnits = true;
  /// A remark on each kernel function that a matrix-unit builder declines
  /// (it keeps the generic kernel), with the builder's reason.
  bool strategyRemarks = false;
  /// Strategies whose kernels keep the generic kernel (#llm.gpu_strategy
  /// names; select-kernel-strategy's `generic-strategies`).
  std::vector<std::string> genericStrategies;
};

/// Compiles every kernel function of `module` for `chip` (sm_90, gfx942,
/// gfx950). `toolkit` is the CUDA or ROCm-like toolkit folder (empty: CUDA
/// /usr/local/cuda, AMD MLIR's default lookup). When `isaDir` is not empty
/// the chip's assembly is also written to `<isaDir>/<chip>.ptx` (NVIDIA) or
/// `<isaDir>/<chip>.s` (AMD), and its kernels in the GPU dialect (generic
/// op form, before the binary pipeline) to `<isaDir>/<chip>.gpu.mlir`.
/// Emits errors on `module`.
FailureOr<GpuKernelLibrary> compileGpuKernels(ModuleOp module, StringRef chip,
                                              StringRef toolkit,
                                              StringRef isaDir = "",
                                              GpuCodegenOptions codegen = {});

} // namespace mlir::strata

#endif // STRATA_LIB_DRIVER_GPUKERNELCOMPILER_H
