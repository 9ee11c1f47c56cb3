// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the kpool_scores strategy: the indexer's pool scores: a token's heads'
// dot products on the matrix units, heads summed by shuffles.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @kpool_scores_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 1024, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @kpool_scores_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.mma.sync
// GFX942-LABEL: gpu.func @kpool_scores_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @kpool_scores_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @kpool_scores_0(%a0: memref<?x2x128xbf16>, %a1: memref<?x2xf32>, %a2: memref<?x16x128xbf16>, %a3: memref<?xi32>, %a4: memref<?xi32>, %a5: memref<?x?xi32>, %a6: memref<?x?x16xf32>)
    attributes {llm.kernel = #llm.kernel<"kpool_scores_0", roles = [x, head_weights, index_pool, positions, seq_starts, block_table, scores]>, llm.kpool_scores = #llm.kpool_scores<kpool = 4, scale = 6.250000e-02 : f32>} {
  return
}
