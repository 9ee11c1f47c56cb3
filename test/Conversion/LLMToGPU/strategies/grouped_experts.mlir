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

// -----

// An fp8 moe_up with K = 1024 on sm_90a: two warpgroups (256 threads) on
// tiles of 128 slots x 128 columns of gate and up, 64-wide K blocks in a ring
// of 4 (kWideStageStagesDeep: one block per multiprocessor by its
// registers): x 4 x 128 x 64 bf16 (65536 bytes), the raw e4m3 rows 4 x 2 x
// 128 x 64 (65536), two decoded bf16 blocks 2 x 2 x 128 x 64 (65536): 196608.
// SM90A-LABEL: gpu.func @moe_up_fp8_0(
// SM90A-SAME: known_block_size = array<i32: 256, 1, 1>
// SM90A-SAME: strata.dynamic_shared_memory_bytes = 196608 : i64
// SM90A-SAME: strata.staged_stages = 4 : i64, strata.staged_tile = array<i64: 128, 128>, strata.staged_wgmma
// SM90A: memref<4x128x64xbf16, #gpu.address_space<workgroup>>
// SM90A: memref<4x2x128x64xf8E4M3FN, #gpu.address_space<workgroup>>
// SM90A: memref<2x2x128x64xbf16, #gpu.address_space<workgroup>>
// SM90A: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>
// GFX942-LABEL: gpu.func @moe_up_fp8_0(
// GFX942: amdgpu.mfma
func.func @moe_up_fp8_0(%a0: memref<?x1024xbf16>, %a1: memref<?x8xi32>, %a2: memref<?x8xi32>, %a3: memref<17xi32>, %a4: memref<16x256x1024xf8E4M3FN>, %a5: memref<16x2x8xf32>, %a6: memref<16x256x1024xf8E4M3FN>, %a7: memref<16x2x8xf32>, %a8: memref<?x8x256xbf16>)
    attributes {llm.grouped_experts = #llm.grouped_experts<up, top_k = 8, experts = 16, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"moe_up_fp8_0", roles = [x, chosen, slot_order, expert_starts, weight, weight_scales, up_weight, up_scales, out]>} {
  return
}
