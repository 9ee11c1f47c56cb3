// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the mhc_pre strategy: mHC's Sinkhorn on subgroup shuffles, a block per
// token.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @mhc_pre_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = ""
// SM90: gpu.shuffle
// SM90A-LABEL: gpu.func @mhc_pre_0(
// SM90A-SAME: strata.mma = ""
// SM90A: gpu.shuffle
// GFX942-LABEL: gpu.func @mhc_pre_0(
// GFX942-SAME: strata.mma = ""
// GFX942: gpu.shuffle
// GFX950-LABEL: gpu.func @mhc_pre_0(
// GFX950-SAME: strata.mma = ""
// GFX950: gpu.shuffle
func.func @mhc_pre_0(%a0: memref<?x4x256xbf16>, %a1: memref<?x16x25xf32>, %a2: memref<24xf32>, %a3: memref<3xf32>, %a4: memref<256xbf16>, %a5: memref<?x256xbf16>, %a6: memref<?x4xf32>, %a7: memref<?x4x4xf32>)
    attributes {llm.kernel = #llm.kernel<"mhc_pre_0", roles = [streams, mix_parts, mix_base, mix_scale, x_norm_weight, out, stream_post, stream_comb]>, llm.mhc_pre = #llm.mhc_pre<hc_mult = 4, sinkhorn_iters = 20, hc_eps = 9.99999997E-7 : f32, norm_eps = 9.99999974E-6 : f32, post_mult = 2.000000e+00 : f32, x_norm_eps = 9.99999974E-6 : f32>} {
  return
}
