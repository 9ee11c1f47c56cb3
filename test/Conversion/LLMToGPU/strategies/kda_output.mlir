// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// The strategy switched off (generic-strategies): the generic kernel, with a
// remark.
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=gfx942 remarks=true generic-strategies=kda_output" %s 2>&1 | FileCheck %s --check-prefix=OFF

// Tests the kda_output strategy: KDA's gated output norm and conv state of
// the chunk path, a subgroup per (token, head), 4 a block. The function
// (signature and attributes from the tiny model's kernel phase: 2 heads of
// 128 channels) becomes a gpu.func of the same arguments, 4 subgroups, with
// the grid its builder chose (strata.matrix_grid: the read-out's rows,
// floored to one block in steps of at most 4 tokens; one block of heads) and
// no matrix instruction: each lane's run of the read-out and the gate loaded
// as one vector each, the sum of squares on subgroup butterflies (no
// barrier), o stored as one vector (4 bf16 on sm_90's 32 lanes, 2 on AMD's
// 64), the conv state in the row of a request's last token.

// SM90-LABEL: gpu.func @kda_output_0(
// SM90-SAME: known_block_size = array<i32: 128, 1, 1>
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 0, 5, 0, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = ""
// SM90-NOT: gpu.barrier
// SM90: vector.load %arg0{{.*}} vector<4xf32>
// SM90: vector.load %arg1{{.*}} vector<4xbf16>
// SM90: gpu.shuffle xor
// SM90: vector.store {{.*}}, %arg11{{.*}} vector<4xbf16>
// SM90: vector.store {{.*}}, %arg6{{.*}} vector<4xbf16>
// SM90-NOT: gpu.barrier
// SM90: gpu.return
// SM90A-LABEL: gpu.func @kda_output_0(
// SM90A-SAME: known_block_size = array<i32: 128, 1, 1>
// GFX942-LABEL: gpu.func @kda_output_0(
// GFX942-SAME: known_block_size = array<i32: 256, 1, 1>
// GFX942: vector.store {{.*}}, %arg11{{.*}} vector<2xbf16>
// GFX950-LABEL: gpu.func @kda_output_0(
// GFX950-SAME: known_block_size = array<i32: 256, 1, 1>
// OFF: remark: gfx942: kernel 'kda_output_0' keeps the generic kernel: strategy 'kda_output' is in generic-strategies
// OFF: {{^  }}func.func @kda_output_0(
// OFF-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
func.func @kda_output_0(%a0: memref<?x256xf32>, %a1: memref<?x256xbf16>, %a2: memref<128xbf16>, %a3: memref<?x256xbf16>, %a4: memref<?x256xbf16>, %a5: memref<?x256xbf16>, %a6: memref<?x3x768xbf16>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xbf16>)
    attributes {llm.kda_output = #llm.kda_output<norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_output_0", roles = [read_out, output_gate, out_norm_weight, x, key, value, conv_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}

// -----

// A head of 96 channels is not 1, 2, 4 or 8 a lane (3 on sm_90): the generic
// kernel, with a remark.
// REMARK: remark: sm_90: kernel 'kda_output_odd' keeps the generic kernel: a head is not 1, 2, 4 or 8 channels per lane
func.func @kda_output_odd(%a0: memref<?x192xf32>, %a1: memref<?x192xbf16>, %a2: memref<96xbf16>, %a3: memref<?x192xbf16>, %a4: memref<?x192xbf16>, %a5: memref<?x192xbf16>, %a6: memref<?x3x576xbf16>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x192xbf16>)
    attributes {llm.kda_output = #llm.kda_output<norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_output_odd", roles = [read_out, output_gate, out_norm_weight, x, key, value, conv_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}
