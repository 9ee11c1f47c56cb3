//===- NvvmTargetInfo.cpp - Hopper matrix instructions and cubin pipeline -===//
//
// Part of strata, under the Apache License v2.0.
//
// The sm_90 matrix instruction table and the NVVM pipeline that turns
// `gpu.module`s into PTX (ISA 8.0) and cubins (toolchain.md 3b).
//
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 lane layout (32
// lanes, g = lane / 4, t = lane % 4; PTX ISA "Matrix Fragments for
// mma.m16n8k16"):
//   A (8 bf16): (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)
//   B (4 bf16): k = 2t..2t+1 and 2t+8..2t+9 of column g
//   D (4 f32):  (g, 2t..2t+1), (g+8, 2t..2t+1)
// Dense fp8 mma.sync (m16n8k32 e4m3) exists in PTX for sm_89+, but MLIR
// 22's nvvm.mma.sync has no fp8 form, so it is not listed: the GPU lowering
// decodes fp8 weights to bf16 in registers instead. wgmma (sm_90a) is
// listed without a register layout: it reads shared-memory descriptors.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/NVVM/NvvmTargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

#include "lib/Target/Passes.h"

using namespace mlir;
using namespace mlir::strata;

/// mma.sync m16n8k<k> with bf16 operands (k = 16 or 8).
static MatrixInstruction mmaSyncBf16(int64_t k) {
  MatrixInstruction mi;
  mi.family = MatrixFamily::MmaSync;
  mi.m = 16;
  mi.n = 8;
  mi.k = k;
  mi.operands = MatrixElement::BF16;
  mi.mnemonic =
      llvm::formatv("mma.sync.aligned.m16n8k{0}.row.col.f32.bf16.bf16.f32", k)
          .str();
  mi.a.outer = {4, 8, 1};
  mi.a.inner = {1, 4, 2};
  mi.a.count = 2;
  mi.a.pieces = {{0, 0}, {8, 0}};
  if (k == 16)
    mi.a.pieces.append({{0, 8}, {8, 8}});
  mi.b.outer = {4, 8, 1};
  mi.b.inner = {1, 4, 2};
  mi.b.count = 2;
  mi.b.pieces = {{0, 0}};
  if (k == 16)
    mi.b.pieces.push_back({0, 8});
  mi.c.outer = {4, 8, 1};
  mi.c.inner = {1, 4, 2};
  mi.c.count = 2;
  mi.c.pieces = {{0, 0}, {8, 0}};
  return mi;
}

/// mma.sync m16n8k8 with tf32 operands: the f32 instruction of sm_90 (the
/// kernels that need fp32 accuracy issue it three times on a hi / lo split
/// of each operand, emitMatrixInstruction).
static MatrixInstruction mmaSyncTf32() {
  MatrixInstruction mi;
  mi.family = MatrixFamily::MmaSync;
  mi.m = 16;
  mi.n = 8;
  mi.k = 8;
  mi.operands = MatrixElement::F32;
  mi.mnemonic = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  mi.a.outer = {4, 8, 1};
  mi.a.inner = {1, 4, 1};
  mi.a.pieces = {{0, 0}, {8, 0}, {0, 4}, {8, 4}};
  mi.b.outer = {4, 8, 1};
  mi.b.inner = {1, 4, 1};
  mi.b.pieces = {{0, 0}, {0, 4}};
  mi.c.outer = {4, 8, 1};
  mi.c.inner = {1, 4, 2};
  mi.c.count = 2;
  mi.c.pieces = {{0, 0}, {8, 0}};
  return mi;
}

/// A warpgroup wgmma (4 warps, operands from shared memory).
static MatrixInstruction wgmma(StringRef mnemonic, int64_t k,
                               MatrixElement operands) {
  MatrixInstruction mi;
  mi.family = MatrixFamily::Wgmma;
  mi.m = 64;
  mi.n = 256;
  mi.k = k;
  mi.operands = operands;
  mi.mnemonic = mnemonic.str();
  mi.subgroups = 4;
  return mi;
}

NvvmTargetInfo::NvvmTargetInfo(StringRef chip) : chip(chip.str()) {
  matrixInstructions = {mmaSyncBf16(16), mmaSyncBf16(8), mmaSyncTf32()};
  if (chip == "sm_90a") {
    matrixInstructions.push_back(
        wgmma("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", 16,
              MatrixElement::BF16));
    matrixInstructions.push_back(
        wgmma("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", 32,
              MatrixElement::F8E4M3FN));
  }
}

std::unique_ptr<TargetInfo> mlir::strata::createNvvmTargetInfo(StringRef chip) {
  if (chip == "sm_90" || chip == "sm_90a")
    return std::make_unique<NvvmTargetInfo>(chip);
  return nullptr;
}

LogicalResult
NvvmTargetInfo::buildBinaryPipeline(OpPassManager &pm,
                                    const BinaryOptions &options) const {
  // nvvm-attach-target: the chip with PTX ISA 8.0 (the +ptx60 default
  // aborts for sm_90, toolchain.md F7). Inside each gpu.module: arith
  // expansions, branches, GPU ops to NVVM (the kernels already hold
  // nvvm.mma.sync; the staged matmuls' nvgpu.ldmatrix becomes nvvm.ldmatrix
  // first; it maps the workgroup address space, so vector accesses
  // to workgroup memory lower here), then the remaining vector ops to LLVM
  // (test/Target/GPU/workgroup-vector.test). gpu-module-to-binary runs ptxas
  // from <toolkit>/bin and links libdevice from <toolkit>/nvvm (F6).
  // NVVM ops written as inline PTX (wgmma on sm_90a) become inline
  // assembly (convert-nvvm-to-llvm). The dynamic workgroup arena
  // (gpu.dynamic_shared_memory) becomes an extern declaration, aligned for
  // the wgmma swizzle, before the binary (ExternDynamicSharedMemoryPass).
  std::string lowering = llvm::formatv(
      "nvvm-attach-target{{chip={0} features=+ptx80 O=3},"
      "gpu.module(arith-expand,convert-scf-to-cf,convert-nvgpu-to-nvvm,"
      "convert-gpu-to-nvvm,convert-nvvm-to-llvm,"
      "convert-vector-to-llvm,convert-ub-to-llvm,reconcile-unrealized-casts)",
      chip);
  if (failed(parsePassPipeline(lowering, pm)))
    return failure();
  ExternDynamicSharedMemoryPassOptions arena;
  // wgmma's swizzled operands repeat every 512 bytes of shared address.
  bool wgmma =
      llvm::any_of(matrixInstructions, [](const MatrixInstruction &mi) {
        return mi.family == MatrixFamily::Wgmma;
      });
  arena.alignment = wgmma ? 1024 : 16;
  pm.addNestedPass<gpu::GPUModuleOp>(
      createExternDynamicSharedMemoryPass(arena));
  // Every kernel waits for its predecessor first, so that the runtime may
  // launch it as a programmatic dependent launch (GridDependencyControl.cpp).
  pm.addNestedPass<gpu::GPUModuleOp>(createGridDependencyControlPass());
  std::string binary =
      llvm::formatv("gpu-module-to-binary{{format={0} toolkit={1}}",
                    options.format, options.toolkit);
  return parsePassPipeline(binary, pm);
}
