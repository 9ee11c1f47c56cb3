// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the mla_combine strategy: the combine step of split MLA attention: a
// block per (token, head) merging the ranges' partial results.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @mla_combine_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 64, 0, -1, 0, 0, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 2, 1, 4, -1, 1, 1>]
// SM90-SAME: strata.mma = ""
// Grid z by step size: in steps of at most 2 tokens the 512 columns in 4
// blocks of 128, a column per thread; else one block, 4 columns per thread.
// The weights by subgroup 0's shuffles; then full batches of 32 ranges'
// loads in a loop and the rest in pieces of 16, 8, 4, 2 and 1 where S has
// that bit, each piece's loads before its sums.
// SM90: gpu.grid_dim z
// SM90: gpu.shuffle
// SM90: gpu.block_id z
// SM90: scf.for
// SM90-COUNT-32: vector.load %{{.*}} : memref<128x2x514xf32>, vector<1xf32>
// SM90-COUNT-5: scf.if %{{.*}} -> (vector<1xf32>)
// SM90: } else {
// SM90: scf.for
// SM90-COUNT-32: vector.load %{{.*}} : memref<128x2x514xf32>, vector<4xf32>
// SM90-COUNT-5: scf.if %{{.*}} -> (vector<4xf32>)
// SM90A-LABEL: gpu.func @mla_combine_0(
// SM90A-SAME: strata.mma = ""
// SM90A: gpu.shuffle
// GFX942-LABEL: gpu.func @mla_combine_0(
// GFX942-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 0, 64, 0, -1, 0, 0, 1>, array<i64: -1, 0, 2, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 2, 1, 2, -1, 1, 1>]
// GFX942-SAME: strata.mma = ""
// GFX942: gpu.shuffle
// GFX950-LABEL: gpu.func @mla_combine_0(
// GFX950-SAME: strata.mma = ""
// GFX950: gpu.shuffle
func.func @mla_combine_0(%a0: memref<?x2x512xf32>, %a1: memref<128x2x514xf32>)
    attributes {llm.kernel = #llm.kernel<"mla_combine_0", roles = [out, split_parts]>, llm.mla_combine} {
  return
}
