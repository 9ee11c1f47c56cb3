// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942

// Tests build-strategy-kernels: each function marked with a matrix-unit or
// SIMT strategy becomes a gpu.func of the same name and arguments, built by
// its strategy's builder, which reads the arguments by role and records its
// grid (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and matrix instruction;
// generic functions stay.

// A linear whose result comes before its weight: the kernel loads the
// weight from argument 2 and stores into argument 1, and its grid follows
// argument 0's rows (x: 64-row tiles, 32767 rows and up the staged 128-row
// ones).
// CHECK-LABEL: gpu.module @strata_kernels
// CHECK: gpu.func @linear_out_first(%[[X:.*]]: memref<?x256xbf16>, %[[Y:.*]]: memref<?x128xbf16>, %[[W:.*]]: memref<128x256xbf16>) kernel
// CHECK-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 128, 1, 0, 0, 0, -1, 0, 0, 1, 32767, 64, 1, -1, 128, 1>,
// CHECK-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// CHECK: vector.load %[[W]]{{.*}} : memref<128x256xbf16>, vector<16xbf16>
// CHECK: memref.store %{{.*}}, %[[Y]]{{.*}} : memref<?x128xbf16>
// GFX942: gpu.func @linear_out_first({{.*}}) kernel
// GFX942-SAME: strata.mma = "v_mfma
func.func @linear_out_first(%x: memref<?x256xbf16>, %y: memref<?x128xbf16>, %w: memref<128x256xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear out first", roles = [x, out, weight]>, llm.linear_kernel} {
  return
}

// -----

// mla_combine with its partial results first: the grid follows the tokens
// of argument 1 (the output), at most 32 blocks; the kernel reads the parts
// from argument 0 and writes argument 1.
// CHECK: gpu.func @combine_swapped(%[[PARTS:.*]]: memref<128x4x514xf32>, %[[OH:.*]]: memref<?x4x512xf32>)
// CHECK-SAME: strata.matrix_grid = [array<i64: 1, 0, 1, 1, 1, 0, 64, 0, -1, 0, 0, 1>, array<i64: -1, 0, 4,
// CHECK: memref.dim %[[OH]], %c0
// CHECK: memref.load %[[PARTS]]
// CHECK: vector.store %{{.*}}, %[[OH]]
func.func @combine_swapped(%parts: memref<128x4x514xf32>, %oh: memref<?x4x512xf32>)
    attributes {llm.kernel = #llm.kernel<"combine swapped", roles = [split_parts, out]>, llm.mla_combine} {
  return
}

// -----

// A function no builder takes stays for convert-kernels-to-gpu.
// CHECK-LABEL: func.func @copy
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<generic>
// CHECK-NOT: gpu.module
func.func @copy(%x: memref<?xf32>, %y: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"copy">} {
  return
}
