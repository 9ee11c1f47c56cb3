//===- RocdlTargetInfo.cpp - AMD chip table and HSACO pipeline ------------===//
//
// Part of strata, under the Apache License v2.0.
//
// The chip table of gfx942 and gfx950 and the ROCDL pipeline that turns
// `gpu.module`s into HSA code objects v5 (toolchain.md 3a).
//
// MFMA lane layouts (64 lanes, l = lane), from the CDNA3/CDNA4 ISA guides
// and the AMD matrix instruction calculator:
//   16x16xK, K/4 = kpl elements per lane:
//     A[i][k]: lane i + 16 * (k / kpl), element k % kpl (B the same with n)
//     D[i][j]: lane j + 16 * (i / 4),   element i % 4
//   32x32xK, K/2 = kpl elements per lane:
//     A[i][k]: lane i + 32 * (k / kpl), element k % kpl
//     D[i][j]: lane j + 32 * (i / 4 % 2), element 4 * (i / 8) + i % 4
// gfx942's fp8 MFMAs take FNUZ operands (bias 8), gfx950's OCP e4m3fn; the
// checkpoint stores OCP e4m3fn (docs/GPULowering.md "fp8 formats").
//
//===----------------------------------------------------------------------===//

#include "lib/Target/ROCDL/RocdlTargetInfo.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::strata;

/// An MFMA with m = n = 16 (`wide` = false) or 32 and k elements per lane
/// spread over the 4 (2) lane groups.
static MatrixInstruction mfma(StringRef mnemonic, int64_t mn, int64_t k,
                              MatrixElement operands) {
  MatrixInstruction mi;
  mi.family = MatrixFamily::Mfma;
  mi.m = mi.n = mn;
  mi.k = k;
  mi.operands = operands;
  mi.mnemonic = mnemonic.str();
  int64_t groups = 64 / mn;
  int64_t perLane = k / groups;
  FragmentLayout ab;
  ab.outer = {1, mn, 1};
  ab.inner = {mn, groups, perLane};
  ab.pieces = {{0, 0}};
  ab.count = perLane;
  mi.a = mi.b = ab;
  // D: 4 consecutive rows per lane group, groups interleaved every 8 rows
  // for 32x32 (4 * 64 / mn rows in all).
  mi.c.outer = {mn, groups, 4};
  mi.c.inner = {1, mn, 1};
  mi.c.count = 1;
  for (int64_t block = 0; block < mn / (4 * groups); ++block)
    for (int64_t i = 0; i < 4; ++i)
      mi.c.pieces.push_back({block * 4 * groups + i, 0});
  return mi;
}

/// An MX-scaled MFMA (block scales of 32 e8m0 values): listed for
/// completeness, not usable with 128x128 f32 block scales (no layout).
static MatrixInstruction scaledMfma(StringRef mnemonic, int64_t mn,
                                    int64_t k) {
  MatrixInstruction mi;
  mi.family = MatrixFamily::Mfma;
  mi.m = mi.n = mn;
  mi.k = k;
  mi.operands = MatrixElement::F8E4M3FN;
  mi.mnemonic = mnemonic.str();
  return mi;
}

static RocdlChip getGfx942() {
  return {"gfx942",
          64 * 1024,
          {mfma("v_mfma_f32_16x16x16_bf16", 16, 16, MatrixElement::BF16),
           mfma("v_mfma_f32_16x16x4_f32", 16, 4, MatrixElement::F32),
           mfma("v_mfma_f32_32x32x8_bf16", 32, 8, MatrixElement::BF16),
           mfma("v_mfma_f32_16x16x32_fp8_fp8", 16, 32,
                MatrixElement::F8E4M3FNUZ),
           mfma("v_mfma_f32_32x32x16_fp8_fp8", 32, 16,
                MatrixElement::F8E4M3FNUZ)}};
}

static RocdlChip getGfx950() {
  return {"gfx950",
          160 * 1024,
          {mfma("v_mfma_f32_16x16x16_bf16", 16, 16, MatrixElement::BF16),
           mfma("v_mfma_f32_16x16x4_f32", 16, 4, MatrixElement::F32),
           mfma("v_mfma_f32_32x32x8_bf16", 32, 8, MatrixElement::BF16),
           mfma("v_mfma_f32_16x16x32_bf16", 16, 32, MatrixElement::BF16),
           mfma("v_mfma_f32_32x32x16_bf16", 32, 16, MatrixElement::BF16),
           mfma("v_mfma_f32_16x16x32_fp8_fp8", 16, 32,
                MatrixElement::F8E4M3FN),
           mfma("v_mfma_f32_32x32x16_fp8_fp8", 32, 16,
                MatrixElement::F8E4M3FN),
           scaledMfma("v_mfma_scale_f32_16x16x128_f8f6f4", 16, 128),
           scaledMfma("v_mfma_scale_f32_32x32x64_f8f6f4", 32, 64)}};
}

std::unique_ptr<TargetInfo>
mlir::strata::createRocdlTargetInfo(StringRef chip) {
  if (chip == "gfx942")
    return std::make_unique<RocdlTargetInfo>(getGfx942());
  if (chip == "gfx950")
    return std::make_unique<RocdlTargetInfo>(getGfx950());
  return nullptr;
}

LogicalResult
RocdlTargetInfo::buildBinaryPipeline(OpPassManager &pm,
                                     const BinaryOptions &options) const {
  // rocdl-attach-target: the chip, COV5 (abi=500) and -O3 for the backend.
  // Inside each gpu.module: fp8 truncations to amdgpu.packed_trunc_2xfp8
  // (convert-arith-to-amdgpu), the remaining arith expansions, structured
  // control flow to branches, the GPU conversion (it also lowers amdgpu.mfma
  // to rocdl intrinsics and maps the workgroup address space, so vector
  // accesses to workgroup memory lower here), then the remaining vector ops
  // (strided inserts of fp8 fragments) to LLVM (same AMD assembly as in the
  // opposite order, which reported errors for workgroup vector accesses).
  // gpu-module-to-binary then runs the AMDGPU backend and
  // links with <toolkit>/llvm/bin/ld.lld (format=bin).
  std::string pipeline = llvm::formatv(
      "rocdl-attach-target{{chip={0} abi=500 O=3},"
      "gpu.module(convert-arith-to-amdgpu{{chipset={0}},arith-expand,"
      "convert-scf-to-cf,convert-gpu-to-rocdl{{chipset={0}},"
      "convert-vector-to-llvm,reconcile-unrealized-casts),"
      "gpu-module-to-binary{{format={1} toolkit={2}}",
      chip.chip, options.format, options.toolkit);
  return parsePassPipeline(pipeline, pm);
}
