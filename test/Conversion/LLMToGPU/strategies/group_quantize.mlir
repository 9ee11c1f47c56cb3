// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// Tests the group_quantize strategy: fp8 expert activations per row and
// 128-wide group (moe_quantize_x / moe_quantize_act), a subgroup per group
// (4 groups a subgroup, 4 subgroups a block), the group's amax a butterfly of
// maxima (no barrier), the codes by encodeFp8's integer steps on the lanes.
// Each function (signature and attributes from the tiny fp8 model's kernel
// phase, --expert-activations=fp8) becomes a gpu.func of the same arguments
// with the grid its builder chose (strata.matrix_grid: per dimension
// [argument, dim, blocks, divisor, multiplier, addend, cap, floor,
// floorArgument, floorDim, addendAtMostExtent, stepMultiplier, forms...]: x's
// rows, the blocks of a row's groups).

// SM90-LABEL: gpu.func @moe_quantize_x_0(
// SM90-SAME: known_block_size = array<i32: 128, 1, 1>
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90: vector.load %arg0{{.*}} vector<4xbf16>
// SM90: gpu.shuffle xor
// SM90: arith.trunci {{.*}} : vector<4xi32> to vector<4xi8>
// SM90-NOT: gpu.barrier
// SM90: gpu.return
// SM90A-LABEL: gpu.func @moe_quantize_x_0(
// SM90A: gpu.shuffle xor
// GFX942-LABEL: gpu.func @moe_quantize_x_0(
// GFX942-SAME: known_block_size = array<i32: 256, 1, 1>
// GFX942: vector.load %arg0{{.*}} vector<2xbf16>
// GFX942: arith.trunci {{.*}} : vector<2xi32> to vector<2xi8>
// GFX950-LABEL: gpu.func @moe_quantize_x_0(
// GFX950: gpu.shuffle xor
func.func @moe_quantize_x_0(%a0: memref<?x256xbf16>, %a1: memref<?x256xf8E4M3FN>, %a2: memref<?x2xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 128>, llm.kernel = #llm.kernel<"moe_quantize_x_0", roles = [x, out, x_scales]>} {
  return
}

// -----

// The activations of a token's slots: rank 3, the slot index from the
// block's flat group.
// SM90-LABEL: gpu.func @moe_quantize_act_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90: vector.load %arg0[{{.*}}, {{.*}}, {{.*}}] {{.*}}: memref<?x4x128xbf16>, vector<4xbf16>
// GFX942-LABEL: gpu.func @moe_quantize_act_0(
func.func @moe_quantize_act_0(%a0: memref<?x4x128xbf16>, %a1: memref<?x4x128xf8E4M3FN>, %a2: memref<?x4x1xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 128>, llm.kernel = #llm.kernel<"moe_quantize_act_0", roles = [x, out, x_scales]>} {
  return
}

// -----

// A 100-wide group is not whole values per lane: the generic kernel.
// REMARK: remark: sm_90: kernel 'moe_quantize_odd' keeps the generic kernel: a group is not 1, 2, 4 or 8 values per lane
// SM90-LABEL: func.func @moe_quantize_odd(
// SM90-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
func.func @moe_quantize_odd(%a0: memref<?x200xbf16>, %a1: memref<?x200xf8E4M3FN>, %a2: memref<?x2xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 100>, llm.kernel = #llm.kernel<"moe_quantize_odd", roles = [x, out, x_scales]>} {
  return
}
