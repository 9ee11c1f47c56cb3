// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// The strategy switched off (generic-strategies): the generic kernel, with a
// remark.
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=gfx942 remarks=true generic-strategies=kda_coefficients" %s 2>&1 | FileCheck %s --check-prefix=OFF

// Tests the kda_coefficients strategy: chunked KDA's in-chunk coefficients
// (A_q, and T = (I + diag(beta) A_k)^-1 diag(beta) by forward substitution),
// every chunk of the step at once: a block per (32-token window, head), the
// coefficient products on the f32 matrix instructions (tf32 on NVIDIA), the
// chunks that start in the window walked (scf.for over the requests from
// the window's first token's). The function (signature and attributes from
// the tiny model's kernel phase: 2 heads of 128 channels, rows of 2 x 32
// coefficients) becomes a gpu.func of the same arguments with the grid its
// builder chose (strata.matrix_grid: per dimension [argument, dim, blocks,
// divisor, multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]: the tokens over 32, one
// block in steps of at most 4 tokens; the heads), three blocks a
// multiprocessor asked for on NVIDIA (nvvm.minctasm).

// SM90-LABEL: gpu.func @kda_coefficients_0(
// SM90-SAME: nvvm.minctasm = 3 : i32
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 32, 1, 0, 0, 5, 0, 0, 0, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// SM90: scf.for
// SM90: nvvm.mma.sync
// SM90: gpu.barrier
// SM90: vector.store {{.*}} : memref<?x64xf32>, vector<4xf32>
// SM90A-LABEL: gpu.func @kda_coefficients_0(
// SM90A-SAME: strata.mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// GFX942-LABEL: gpu.func @kda_coefficients_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x4_f32"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @kda_coefficients_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x4_f32"
// GFX950: amdgpu.mfma
// OFF: remark: gfx942: kernel 'kda_coefficients_0' keeps the generic kernel: strategy 'kda_coefficients' is in generic-strategies
func.func @kda_coefficients_0(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x2xf32>, %a4: memref<?xi32>, %a5: memref<?x64xf32>, %a6: memref<?x64xf32>)
    attributes {llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_coefficients_0", roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// A bf16-activation model's kernel (tf32_products): one tf32 mma.sync per
// product on NVIDIA.
// SM90-LABEL: gpu.func @kda_coefficients_tf32(
// SM90: nvvm.convert.float.to.tf32 {{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// SM90: nvvm.mma.sync
// SM90A-LABEL: gpu.func @kda_coefficients_tf32(
// GFX942-LABEL: gpu.func @kda_coefficients_tf32(
// GFX942-NOT: nvvm.convert
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @kda_coefficients_tf32(
func.func @kda_coefficients_tf32(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x2xf32>, %a4: memref<?xi32>, %a5: memref<?x64xf32>, %a6: memref<?x64xf32>)
    attributes {llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>, llm.kernel = #llm.kernel<"kda_coefficients_tf32", roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// A gate bound that lets a 16-row block's decay factor overflow fp32: the
// generic kernel, with a remark.
// REMARK: remark: sm_90: kernel 'kda_coefficients_steep' keeps the generic kernel: the gate's lower bound lets a 16-row block's decay overflow fp32
func.func @kda_coefficients_steep(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x2xf32>, %a4: memref<?xi32>, %a5: memref<?x64xf32>, %a6: memref<?x64xf32>)
    attributes {llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -8.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_coefficients_steep", roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]>, llm.min_request_tokens = 5 : i64} {
  return
}
