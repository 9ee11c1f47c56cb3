// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// Tests the kda_chunk strategy: chunked KDA's state pass: the chunk products
// on the f32 matrix instructions (tf32 on NVIDIA), a block per (request,
// head, value part), reading the chunks' A_q and T (kda_coefficients' rows,
// 32 columns a head) into workgroup memory.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @kda_attention_0(
// SM90-SAME: nvvm.minctasm = 2 : i32
// SM90-SAME: strata.matrix_grid = [array<i64: 8, 0, 1, 1, 1, 0, 0, 5, 0, 0, 0, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 4, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// SM90: arith.andi {{.*}} : i32
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @kda_attention_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// SM90A: nvvm.mma.sync
// GFX942-LABEL: gpu.func @kda_attention_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x4_f32"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @kda_attention_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x4_f32"
// GFX950: amdgpu.mfma
func.func @kda_attention_0(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x256xf32>, %a4: memref<?x64xf32>, %a5: memref<?x64xf32>, %a6: memref<?x2x128x128xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xf32>)
    attributes {llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_attention_0", roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// A bf16-activation model's kernel (tf32_products): on NVIDIA each product
// is one tf32 mma.sync of operands rounded to tf32 (cvt.rna), no hi / lo
// split; AMD's f32 MFMA is unchanged.
// SM90-LABEL: gpu.func @kda_attention_tf32(
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// SM90-NOT: arith.andi {{.*}} -8192
// SM90: nvvm.convert.float.to.tf32 {{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// SM90: nvvm.mma.sync
// SM90-NOT: arith.andi {{.*}} -8192
// SM90: gpu.return
// SM90A-LABEL: gpu.func @kda_attention_tf32(
// SM90A: nvvm.convert.float.to.tf32
// GFX942-LABEL: gpu.func @kda_attention_tf32(
// GFX942-NOT: nvvm.convert
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @kda_attention_tf32(
// GFX950-NOT: nvvm.convert
// GFX950: amdgpu.mfma
func.func @kda_attention_tf32(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x256xf32>, %a4: memref<?x64xf32>, %a5: memref<?x64xf32>, %a6: memref<?x2x128x128xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xf32>)
    attributes {llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>, llm.kernel = #llm.kernel<"kda_attention_tf32", roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// Coefficient rows of chunks of 64 (a model whose chunk_size is not the
// kernel's 32): the generic kernel, with a remark.
// REMARK: remark: sm_90: kernel 'kda_attention_chunk64' keeps the generic kernel: the chunk length is not the kernel's
func.func @kda_attention_chunk64(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x256xf32>, %a4: memref<?x128xf32>, %a5: memref<?x128xf32>, %a6: memref<?x2x128x128xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xf32>)
    attributes {llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_attention_chunk64", roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}
