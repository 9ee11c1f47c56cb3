// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the tiled_matmul strategy: a linear (llm.linear, lm_head's logits,
// mhc_post_linear with mHC's residual write as epilogue) as a tiled matmul with
// decode split forms: mma.sync on sm_90, staged wgmma tiles on sm_90a, MFMA on
// gfx942 / gfx950.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @linear_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 16383, 64, 1, -1, 128, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1, 128, 1, 16, 16383, 1, 4, -1, 1, 2>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @linear_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @linear_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @linear_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @linear_0(%a0: memref<?x256xbf16>, %a1: memref<256x256xbf16>, %a2: memref<?x256xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear_0", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}

// -----

// SM90-LABEL: gpu.func @lm_head_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 8191, 64, 1, -1, 128, 1>, array<i64: -1, 0, 4, 1, 1, 0, 0, 0, -1, 0, 0, 1, 128, 1, 32, 8191, 1, 8, -1, 1, 4>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @lm_head_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @lm_head_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @lm_head_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @lm_head_0(%a0: memref<?x256xbf16>, %a1: memref<512x256xbf16>, %a2: memref<?x512xf32>)
    attributes {llm.kernel = #llm.kernel<"lm_head_0", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}

// -----

// SM90-LABEL: gpu.func @mhc_post_linear_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 16383, 64, 1, -1, 128, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1, 128, 1, 16, 16383, 1, 4, -1, 1, 2>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @mhc_post_linear_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @mhc_post_linear_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @mhc_post_linear_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @mhc_post_linear_0(%a0: memref<?x256xbf16>, %a1: memref<256x256xbf16>, %a2: memref<?x4x256xbf16>, %a3: memref<?x4xf32>, %a4: memref<?x4x4xf32>, %a5: memref<?x4x256xbf16>)
    attributes {llm.kernel = #llm.kernel<"mhc_post_linear_0", roles = [x, weight, streams, stream_post, stream_comb, out]>, llm.linear_epilogue = #llm.linear_epilogue<mhc_post, hc_mult = 4>} {
  return
}
