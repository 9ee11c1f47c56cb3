// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// The strategy switched off (generic-strategies, strata-compile
// --gpu-generic-strategies): the generic kernel, with a remark.
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=gfx942 remarks=true generic-strategies=kda_decode,mhc_pre" %s 2>&1 | FileCheck %s --check-prefix=OFF

// Tests the kda_decode strategy: KDA's recurrent form, a block per (request,
// head), a thread per channel and per 16-byte run of columns over 32 state
// rows, the state loads issued first and the thread's part held in registers
// across the request's tokens.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments, d threads, with the grid its
// builder chose (strata.matrix_grid: per dimension [argument, dim, blocks,
// divisor, multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]: seq_starts' extent, the
// heads) and no matrix instruction: the state's 16-byte loads before the
// conv's, the token loop carrying the state, block sums on subgroup
// butterflies between barriers, the state stored in 16-byte runs.

// SM90-LABEL: gpu.func @kda_decode_0(
// SM90-SAME: known_block_size = array<i32: 128, 1, 1>
// SM90-SAME: strata.matrix_grid = [array<i64: 15, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = ""
// SM90-COUNT-32: vector.load %arg12
// SM90: memref.load %arg6
// SM90: scf.for {{.*}} iter_args
// SM90: gpu.shuffle xor
// SM90: gpu.barrier
// SM90-COUNT-32: vector.store {{.*}}, %arg12
// OFF: remark: gfx942: kernel 'kda_decode_0' keeps the generic kernel: strategy 'kda_decode' is in generic-strategies
// OFF: {{^  }}func.func @kda_decode_0(
// OFF-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// SM90A-LABEL: gpu.func @kda_decode_0(
// SM90A-SAME: known_block_size = array<i32: 128, 1, 1>
// SM90A-SAME: strata.mma = ""
// GFX942-LABEL: gpu.func @kda_decode_0(
// GFX942-SAME: known_block_size = array<i32: 128, 1, 1>
// GFX942: gpu.shuffle xor
// GFX950-LABEL: gpu.func @kda_decode_0(
// GFX950-SAME: known_block_size = array<i32: 128, 1, 1>
// GFX950: gpu.shuffle xor
func.func @kda_decode_0(%a0: memref<?x256xbf16>, %a1: memref<?x256xbf16>, %a2: memref<?x256xbf16>, %a3: memref<?x256xbf16>, %a4: memref<?x2xbf16>, %a5: memref<?x256xbf16>, %a6: memref<256x1x4xbf16>, %a7: memref<256x1x4xbf16>, %a8: memref<256x1x4xbf16>, %a9: memref<2xf32>, %a10: memref<256xf32>, %a11: memref<128xbf16>, %a12: memref<?x2x128x128xf32>, %a13: memref<?x3x768xbf16>, %a14: memref<?xi32>, %a15: memref<?xi32>, %a16: memref<?xi32>, %a17: memref<?xi32>, %a18: memref<?xi32>, %a19: memref<?x256xbf16>)
    attributes {llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 0.0883883461 : f32, norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_decode_0", roles = [x, key, value, decay, beta, output_gate, query_conv, key_conv, value_conv, decay_rate, decay_bias, out_norm_weight, recurrent_state, conv_state, positions, seq_starts, source_slots, dest_slots, token_slots, out]>} {
  return
}

// -----

// A state column of 256 rows does not fit a thread's registers: the generic
// kernel, with a remark.
// REMARK: remark: sm_90: kernel 'kda_decode_wide' keeps the generic kernel: a state column of more than 128 rows does not fit a thread's registers
// SM90-LABEL: func.func @kda_decode_wide(
// SM90-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
func.func @kda_decode_wide(%a0: memref<?x256xbf16>, %a1: memref<?x256xbf16>, %a2: memref<?x256xbf16>, %a3: memref<?x256xbf16>, %a4: memref<?x1xbf16>, %a5: memref<?x256xbf16>, %a6: memref<256x1x4xbf16>, %a7: memref<256x1x4xbf16>, %a8: memref<256x1x4xbf16>, %a9: memref<1xf32>, %a10: memref<256xf32>, %a11: memref<256xbf16>, %a12: memref<?x1x256x256xf32>, %a13: memref<?x3x768xbf16>, %a14: memref<?xi32>, %a15: memref<?xi32>, %a16: memref<?xi32>, %a17: memref<?xi32>, %a18: memref<?x256xbf16>)
    attributes {llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 0.0883883461 : f32, norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 0>, llm.kernel = #llm.kernel<"kda_decode_wide", roles = [x, key, value, decay, beta, output_gate, query_conv, key_conv, value_conv, decay_rate, decay_bias, out_norm_weight, recurrent_state, conv_state, positions, seq_starts, source_slots, dest_slots, out]>} {
  return
}
