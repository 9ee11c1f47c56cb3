// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the grouped_experts strategy: moe_up / moe_down as grouped matmuls over
// the slots sorted by expert (one expert per tile, the decode form's tiles of
// 16 slots).
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @moe_up_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 64, 4, 16, 0, 64, -1, 0, 1, 4, 2048, 16, 1, -1, 64, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 4, 2048, 1, 2, -1, 1, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @moe_up_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @moe_up_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @moe_up_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @moe_up_0(%a0: memref<?x256xbf16>, %a1: memref<?x4xi32>, %a2: memref<?x4xi32>, %a3: memref<17xi32>, %a4: memref<16x128x256xbf16>, %a5: memref<16x128x256xbf16>, %a6: memref<?x4x128xbf16>)
    attributes {llm.grouped_experts = #llm.grouped_experts<up, top_k = 4, experts = 16, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"moe_up_0", roles = [x, chosen, slot_order, expert_starts, weight, up_weight, out]>} {
  return
}

// -----

// SM90-LABEL: gpu.func @moe_down_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 64, 4, 16, 0, 64, -1, 0, 1, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @moe_down_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @moe_down_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @moe_down_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @moe_down_0(%a0: memref<?x4x128xbf16>, %a1: memref<?x4xi32>, %a2: memref<?x4xf32>, %a3: memref<?x4xi32>, %a4: memref<17xi32>, %a5: memref<16x256x128xbf16>, %a6: memref<?x4x256xbf16>)
    attributes {llm.grouped_experts = #llm.grouped_experts<down, top_k = 4, experts = 16, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"moe_down_0", roles = [x, chosen, route_weights, slot_order, expert_starts, weight, out]>} {
  return
}
