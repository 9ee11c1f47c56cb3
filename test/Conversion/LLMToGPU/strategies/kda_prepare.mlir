// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// The strategy switched off (generic-strategies): the generic kernel, with a
// remark.
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=gfx942 remarks=true generic-strategies=kda_prepare" %s 2>&1 | FileCheck %s --check-prefix=OFF

// Tests the kda_prepare strategy: KDA's key side of the chunk path (conv +
// SiLU, L2 norms, log-decay, beta), a subgroup per (token, head), 4 a block.
// The function (signature and attributes from the tiny model's kernel phase:
// 2 heads of 128 channels) becomes a gpu.func of the same arguments, 4
// subgroups, with the grid its builder chose (strata.matrix_grid: per
// dimension [argument, dim, blocks, divisor, multiplier, addend, cap, floor,
// floorArgument, floorDim, addendAtMostExtent, stepMultiplier, forms...]: the
// tokens, floored to one block in steps of at most 4 tokens; one block of
// heads) and no matrix instruction: each lane's run of channels loaded as
// one vector per tap and input (4 bf16 on sm_90's 32 lanes, 2 on AMD's 64),
// the conv state's candidate only for offsets before the request (scf.if),
// a channel's 4 taps of conv weights as one vector,
// the sums of squares on subgroup butterflies (no barrier), the prepared rows
// stored as one vector each.

// SM90-LABEL: gpu.func @kda_prepare_0(
// SM90-SAME: known_block_size = array<i32: 128, 1, 1>
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 0, 5, 0, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = ""
// SM90-NOT: gpu.barrier
// SM90: vector.load %arg0{{.*}} vector<4xbf16>
// SM90: scf.if
// SM90: vector.load %arg10{{.*}} vector<4xbf16>
// SM90: vector.load %arg5{{.*}} vector<4xbf16>
// SM90: gpu.shuffle xor
// SM90: vector.store {{.*}}, %arg14{{.*}} vector<4xf32>
// SM90: vector.store {{.*}}, %arg17{{.*}} vector<4xf32>
// SM90-NOT: gpu.barrier
// SM90: gpu.return
// SM90A-LABEL: gpu.func @kda_prepare_0(
// SM90A-SAME: known_block_size = array<i32: 128, 1, 1>
// GFX942-LABEL: gpu.func @kda_prepare_0(
// GFX942-SAME: known_block_size = array<i32: 256, 1, 1>
// GFX942: vector.load %arg0{{.*}} vector<2xbf16>
// GFX942: vector.store {{.*}}, %arg14{{.*}} vector<2xf32>
// GFX950-LABEL: gpu.func @kda_prepare_0(
// GFX950-SAME: known_block_size = array<i32: 256, 1, 1>
// OFF: remark: gfx942: kernel 'kda_prepare_0' keeps the generic kernel: strategy 'kda_prepare' is in generic-strategies
// OFF: {{^  }}func.func @kda_prepare_0(
// OFF-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
func.func @kda_prepare_0(%a0: memref<?x256xbf16>, %a1: memref<?x256xbf16>, %a2: memref<?x256xbf16>, %a3: memref<?x256xbf16>, %a4: memref<?x2xbf16>, %a5: memref<256x1x4xbf16>, %a6: memref<256x1x4xbf16>, %a7: memref<256x1x4xbf16>, %a8: memref<2xf32>, %a9: memref<256xf32>, %a10: memref<?x3x768xbf16>, %a11: memref<?xi32>, %a12: memref<?xi32>, %a13: memref<?xi32>, %a14: memref<?x256xf32>, %a15: memref<?x256xf32>, %a16: memref<?x256xf32>, %a17: memref<?x256xf32>, %a18: memref<?x2xf32>)
    attributes {llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 0.0883883461 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_prepare_0", roles = [x, key, value, decay, beta, query_conv, key_conv, value_conv, decay_rate, decay_bias, conv_state, positions, seq_starts, source_slots, prepared_query, prepared_key, prepared_value, prepared_decay, prepared_beta]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// A head of 96 channels is not 1, 2, 4 or 8 a lane (3 on sm_90): the generic
// kernel, with a remark.
// REMARK: remark: sm_90: kernel 'kda_prepare_odd' keeps the generic kernel: a head is not 1, 2, 4 or 8 channels per lane
func.func @kda_prepare_odd(%a0: memref<?x192xbf16>, %a1: memref<?x192xbf16>, %a2: memref<?x192xbf16>, %a3: memref<?x192xbf16>, %a4: memref<?x2xbf16>, %a5: memref<192x1x4xbf16>, %a6: memref<192x1x4xbf16>, %a7: memref<192x1x4xbf16>, %a8: memref<2xf32>, %a9: memref<192xf32>, %a10: memref<?x3x576xbf16>, %a11: memref<?xi32>, %a12: memref<?xi32>, %a13: memref<?xi32>, %a14: memref<?x192xf32>, %a15: memref<?x192xf32>, %a16: memref<?x192xf32>, %a17: memref<?x192xf32>, %a18: memref<?x2xf32>)
    attributes {llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 0.0883883461 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_prepare_odd", roles = [x, key, value, decay, beta, query_conv, key_conv, value_conv, decay_rate, decay_bias, conv_state, positions, seq_starts, source_slots, prepared_query, prepared_key, prepared_value, prepared_decay, prepared_beta]>, llm.min_request_tokens = 5 : i64} {
  return
}
