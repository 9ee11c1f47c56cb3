// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the dense_matmul strategy: the dense projections' matmuls with their
// epilogues (SwiGLU, store with mHC's residual write, the routed slots' sum)
// and MLA's head-batched absorb / project.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @swiglu_up_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 64, -1, 0, 0, 1, 4095, 64, 1, -1, 128, 1>, array<i64: -1, 0, 8, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @swiglu_up_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @swiglu_up_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @swiglu_up_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @swiglu_up_0(%a0: memref<?x256xbf16>, %a1: memref<512x256xbf16>, %a2: memref<512x256xbf16>, %a3: memref<?x512xbf16>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = swiglu, min_rows = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"swiglu_up_0", roles = [x, weight, up_weight, out]>} {
  return
}

// -----

// SM90-LABEL: gpu.func @swiglu_down_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 64, -1, 0, 0, 1, 16383, 64, 1, -1, 128, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1, 16383, 1, 4, -1, 1, 2>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @swiglu_down_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @swiglu_down_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @swiglu_down_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @swiglu_down_0(%a0: memref<?x512xbf16>, %a1: memref<256x512xbf16>, %a2: memref<?x4x256xbf16>, %a3: memref<?x4xf32>, %a4: memref<?x4x4xf32>, %a5: memref<?x4x256xbf16>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, min_rows = 64, hc_mult = 4>, llm.kernel = #llm.kernel<"swiglu_down_0", roles = [x, weight, streams, stream_post, stream_comb, out]>} {
  return
}

// -----

// SM90-LABEL: gpu.func @moe_shared_down_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 64, -1, 0, 0, 1, 16383, 64, 1, -1, 128, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1, 16383, 1, 4, -1, 1, 2>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @moe_shared_down_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @moe_shared_down_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @moe_shared_down_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @moe_shared_down_0(%a0: memref<?x128xbf16>, %a1: memref<?x4x256xbf16>, %a2: memref<256x128xbf16>, %a3: memref<?x4x256xbf16>, %a4: memref<?x4xf32>, %a5: memref<?x4x4xf32>, %a6: memref<?x4x256xbf16>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = add_slot_sum, min_rows = 64, top_k = 4, hc_mult = 4>, llm.kernel = #llm.kernel<"moe_shared_down_0", roles = [x, slot_sum, weight, streams, stream_post, stream_comb, out]>} {
  return
}

// -----

// W_UK read transposed: staged tiles from 4096 rows (2 heads x 4 column
// tiles: kStagedMinTiles 256 tiles), W^T's K rows stored as columns of the
// stage rows (scalar bf16 stores): on NVIDIA copied as stored into the ring
// and transposed into the decoded buffers, on AMD through registers into
// the two stage buffers (run on the CPU by staged-head-matmul.mlir).
// SM90-LABEL: gpu.func @mla_absorb_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 4095, 64, 1, -1, 128, 1>, array<i64: -1, 0, 4, 1, 1, 0, 0, 0, -1, 0, 0, 1, 4095, 1, 8, -1, 1, 4>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90-SAME: strata.staged_min_rows = 4096 : i64
// SM90-SAME: strata.staged_stages = 4 : i64
// SM90: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], 8
// SM90: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// SM90: nvgpu.ldmatrix
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @mla_absorb_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A-SAME: strata.staged_wgmma
// SM90A: nvvm.mma.sync
// SM90A: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @mla_absorb_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942-SAME: strata.staged_min_rows = 4096 : i64
// GFX942: amdgpu.mfma
// GFX942: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @mla_absorb_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @mla_absorb_0(%a0: memref<?x2x256xbf16>, %a1: memref<1024x512xbf16>, %a2: memref<?x2x512xf32>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<heads = 2, weight_row_offset = 0, weight_row_stride = 512, weight_transposed = true>>, llm.kernel = #llm.kernel<"mla_absorb_0", roles = [x, weight, out]>} {
  return
}

// -----

// The heads count as column tiles for the staged tiles' rows: 2 heads x 2
// column tiles of 128 take them from 8192 rows.
// SM90-LABEL: gpu.func @mla_project_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 8191, 64, 1, -1, 128, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1, 8191, 1, 4, -1, 1, 2>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @mla_project_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90A: nvvm.mma.sync
// GFX942-LABEL: gpu.func @mla_project_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @mla_project_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @mla_project_0(%a0: memref<?x2x512xf32>, %a1: memref<1024x512xbf16>, %a2: memref<?x2x256xbf16>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<heads = 2, weight_row_offset = 256, weight_row_stride = 512, weight_transposed = false>>, llm.kernel = #llm.kernel<"mla_project_0", roles = [x, weight, out]>} {
  return
}
