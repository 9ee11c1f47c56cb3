// RUN: strata-opt %S/../../Target/GPU/Inputs/grid-split-linears.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: strata-opt %S/../../Target/GPU/Inputs/grid-split-linears.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 | FileCheck %s --check-prefixes=CHECK,GFX942
// RUN: strata-opt %S/../../Target/GPU/Inputs/grid-split-linears.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: %python %S/Inputs/run_grid_split.py %t.sm_90.mlir --kernel tiles_split --lanes 32 --k 4096 --n 2560 --rows 40 --tiles 0:39 | FileCheck %s --check-prefix=TILES
// RUN: %python %S/Inputs/run_grid_split.py %t.sm_90.mlir --kernel linear_split --lanes 32 --k 4096 --n 128 --rows 1,5 --form one-row --tiles 0:3 | FileCheck %s --check-prefix=ONEROW
// RUN: strata-opt %S/../../Target/GPU/Inputs/grid-split-linears.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_grid_split.py %t.gfx942.mlir --kernel tiles_split --lanes 64 --k 4096 --n 2560 --rows 128 --tiles 0:0 | FileCheck %s --check-prefix=TILES
// RUN: %python %S/Inputs/run_grid_split.py %t.gfx942.mlir --kernel short_k --lanes 64 --k 2048 --n 128 --rows 40 --form multi-row --tiles 0:5 | FileCheck %s --check-prefix=MULTIROW
// RUN: strata-opt %S/../../Target/GPU/Inputs/grid-split-linears.mlir --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a | FileCheck %s --check-prefix=SM90A

// Tests the K split over the grid of a linear's forms (tiled_matmul strategy;
// MatmulTiling.h GridSplitK / chooseDecodeGridSplits, MatmulKernel.cpp
// buildGridSplit and buildSplitK with a GridSplitArgs): a form's step takes
// grid z = splits blocks per tile, block z walking K range z (the decode
// forms' subgroups split that range again); each block stores its fp32
// partial tile into its slice of the dispatch's global scratch (the appended
// i8 argument, strata.scratch: the splitting form's tile of fp32 per block for
// its steps, none for the others), releases it (fence), and its thread 0 adds
// one to the tile's arrival counter (the appended i32 argument, strata.counters
// of them); the block that finds splits - 1 arrivals before its own sets the
// counter back to zero, acquires (fence), adds every split's slice in split
// order and runs the epilogue. Row tiles (steps above the decode forms' rows,
// up to 128, where the largest step has at most 128 tiles): splits double
// while tiles x splits stay within 512 blocks and K / splits >= 2048; decode
// forms (16 columns a block, at most 32 column blocks): within 256 blocks and
// K / splits >= 512, at most 8.

// A bf16 linear of N = 2560 (40 column tiles), K = 4096: the row tiles split
// 2 ways for 33..128 rows (80 tiles at 128 rows), grid z = 1 elsewhere; its
// decode forms (160 column blocks) do not split.
// CHECK-LABEL: gpu.func @tiles_split(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<?x4096xbf16>, %{{.*}}: memref<2560x4096xbf16>, %{{.*}}: memref<?x2560xbf16>, %[[COUNTERS:[a-z0-9]+]]: memref<?xi32>, %[[SCRATCH:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME: workgroup({{.*}}%[[FLAG:[a-z0-9]+]] : memref<1xi32, #gpu.address_space<workgroup>>
// CHECK-SAME: strata.counters = 80
// CHECK-SAME: strata.decode_grid_splits = array<i64: 1, 1>
// CHECK-SAME: strata.grid_split_k = array<i64: 2, 33, 128, 64, 64>
// CHECK-SAME: array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 32, 1, 1, 128, 1, 2, -1, 1, 1>]
// CHECK-SAME: strata.scratch = [array<i64: 0, 16384>, array<i64: 0, 32>, array<i64: 1, 0, 0>, array<i64: 6>, array<i64: 3>, array<i64: 1, 0, 0>, array<i64: 0, 129>, array<i64: 6>, array<i64: 3>]
// The row tiles: block z walks K range [2048 z, 2048 (z + 1)).
// CHECK: arith.cmpi ule, %{{.*}}, %c128
// CHECK: %[[BZ:.*]] = gpu.block_id  z
// CHECK: %[[KB:.*]] = arith.muli %[[BZ]], %c2048
// CHECK: %[[KE:.*]] = arith.addi %[[KB]], %c2048
// CHECK: scf.for %{{.*}} = %[[KB]] to %[[KE]]
// CHECK: %[[PARTIALS:.*]] = memref.view %[[SCRATCH]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK: vector.store %{{.*}}, %[[PARTIALS]][%{{.*}}] : memref<?xf32>, vector<4xf32>
// SM90: llvm.fence syncscope("device") release
// GFX942: llvm.fence syncscope("agent") release
// CHECK-NEXT: gpu.barrier
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNTERS]][%{{.*}}] : (i32, memref<?xi32>) -> i32
// CHECK: memref.store %{{.*}}, %[[FLAG]]
// CHECK: memref.store %c0_i32, %[[COUNTERS]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[FLAG]]
// SM90: llvm.fence syncscope("device") acquire
// GFX942: llvm.fence syncscope("agent") acquire
// CHECK-COUNT-2: vector.load %[[PARTIALS]]
// CHECK: memref.store %{{.*}} : memref<?x2560xbf16>

// A narrow bf16 linear, N = 128 (8 column blocks of 16), K = 4096: the decode
// forms split 8 ways (1..128 rows; block z's 4 subgroups each walk 128 of its
// 512); its row tiles start at 129 rows and do not split.
// CHECK-LABEL: gpu.func @linear_split(
// CHECK-SAME: memref<?xi32>, %[[SCRATCH1:[a-z0-9]+]]: memref<?xi8>)
// CHECK-SAME: strata.counters = 16
// CHECK-SAME: strata.decode_grid_splits = array<i64: 8, 8>
// CHECK-NOT: strata.grid_split_k
// CHECK-SAME: array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 128, 1, 8, -1, 1, 1>]
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: %[[BZ1:.*]] = gpu.block_id  z
// CHECK: arith.muli %[[BZ1]], %c512
// CHECK: memref.view %[[SCRATCH1]]
// CHECK: memref.atomic_rmw addi

// The slice's MLA o_proj: fp8, N = 4096, K = 16384, mHC's residual write:
// the row tiles split 4 ways for 33..128 rows (2 x 64 tiles); the decode
// forms (256 column blocks) do not.
// CHECK-LABEL: gpu.func @o_proj_fp8(
// CHECK-SAME: memref<?xi32>, %{{.*}}: memref<?xi8>)
// CHECK-SAME: strata.counters = 128
// CHECK-SAME: strata.grid_split_k = array<i64: 4, 33, 128, 64, 64>
// CHECK-SAME: array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 32, 1, 1, 128, 1, 4, -1, 1, 1>]

// K = 2048 splits its decode forms 4 ways (its row tiles start at 129 rows);
// N = 16384 has 1024 column blocks and 2 x 256 tiles at 128 rows: nothing
// splits, and the kernel takes neither argument.
// CHECK-LABEL: gpu.func @short_k(
// CHECK-SAME: strata.decode_grid_splits = array<i64: 4, 4>
// CHECK-NOT: strata.grid_split_k
// CHECK-LABEL: gpu.func @wide_n(
// CHECK-SAME: %{{[a-z0-9]+}}: memref<?x16384xbf16>)
// CHECK-NOT: strata.decode_grid_splits
// CHECK-NOT: strata.grid_split_k

// The interpreter (test/Tools/Inputs/gpu_ir_interpreter.py) runs one tile's
// blocks of a split form against x W^T in float64; the counters are back at
// zero; without the last split's block no block finishes the tile.
// TILES: tiles: blocks of 64x64, 2 splits for 33..128 rows
// TILES: largest difference within the bound, counters zero
// TILES: y untouched, the tiles' counters at [1]
// TILES: tiles_split: PASS
// ONEROW: one-row: blocks of 64x16, 8 splits for 1..16 rows
// ONEROW-COUNT-2: largest difference within the bound, counters zero
// ONEROW: linear_split: PASS
// MULTIROW: multi-row: blocks of 64x16, 4 splits for 17..128 rows
// MULTIROW: M = 40, grid 1x8x4: largest difference within the bound, counters zero
// MULTIROW: y untouched, the tiles' counters at [3]
// MULTIROW: short_k: PASS

// On sm_90a a bf16 linear keeps its plain split for all of 33..128 rows
// (as on sm_90: the ring's 128 blocks were slower than the plain split's
// 512 on the bf16 o_proj): the split branch runs mma.sync tiles, no wgmma.
// SM90A-LABEL: gpu.func @tiles_split(
// SM90A-SAME: strata.grid_split_k = array<i64: 2, 33, 128, 64, 64>
// SM90A: arith.cmpi ule, %{{.*}}, %c128
// SM90A-NEXT: scf.if
// SM90A: gpu.block_id  z
// SM90A-NOT: nvvm.wgmma
// SM90A: memref.atomic_rmw addi

// An fp8 linear's steps of 65..128 rows split the staged wgmma ring's
// 128 x 128 tiles instead (GridSplitK::staged, kGridSplitKStagedMinRows),
// those of 33..64 the plain 64 x 64 tiles as on sm_90: the o_proj's 32 ring tiles
// split 4 ways (128 blocks; 64 counters for the plain split's 64 tiles at 64
// rows; scratch a 64 x 64 or 128 x 128 fp32 slice per block by step), block
// z's ring walking K range [4096 z, 4096 (z + 1)) in blocks of 64 from
// 4096 z; from 65 rows the steps take the ring's workgroup bytes (up to 64
// rows the decode forms' 16384).
// SM90A-LABEL: gpu.func @o_proj_fp8(
// SM90A-SAME: strata.counters = 64
// SM90A-SAME: strata.grid_split_k = array<i64: 4, 33, 64, 64, 64, 4, 65, 128, 128, 128>
// SM90A-SAME: array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1, 32, 1, 1, 128, 1, 4, -1, 1, 1>]
// SM90A-SAME: strata.scratch = [array<i64: 0, 16384>, array<i64: 0, 32>, {{.*}}, array<i64: 0, 65536>, array<i64: 0, 64>,
// SM90A-SAME: strata.small_step_shared_memory = array<i64: 1, 64, 16384>
// SM90A: arith.cmpi ule, %{{.*}}, %c64
// SM90A: gpu.block_id  z
// SM90A: nvvm.mma.sync
// SM90A: arith.cmpi ule, %{{.*}}, %c128
// SM90A: %[[BZ:.*]] = gpu.block_id  z
// SM90A: %[[KB:.*]] = arith.muli %[[BZ]], %c4096
// SM90A: memref<3x1x128x64xf8E4M3FN, #gpu.address_space<workgroup>>
// SM90A: arith.minui %c0{{.*}}, %c63
// SM90A: arith.muli
// SM90A-NEXT: arith.addi %[[KB]],
// SM90A: nvgpu.device_async_copy %arg1
// SM90A: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1
// SM90A: nvvm.wgmma.mma_async
// SM90A: memref.atomic_rmw addi

// A linear whose plain tiles do not split (kda.qkv_proj: 128 tiles at 64
// rows) splits only the ring's 64 tiles, 2 ways, from 65 rows; the steps
// between the decode forms' 32 rows and 65 take the unsplit plain tiles
// (grid z = 1, no dynamic workgroup memory beyond the decode forms' 16384),
// not the ring's split (whose workgroup bytes those steps are not launched
// with).
// SM90A-LABEL: gpu.func @qkv_ring_split(
// SM90A-SAME: strata.counters = 64
// SM90A-SAME: strata.grid_split_k = array<i64: 2, 65, 128, 128, 128>
// SM90A-SAME: strata.small_step_shared_memory = array<i64: 1, 64, 16384>
// SM90A: arith.cmpi ule, %{{.*}}, %c32
// SM90A: arith.cmpi ule, %{{.*}}, %c64
// SM90A-NOT: gpu.block_id  z
// SM90A-NOT: nvvm.wgmma
// SM90A: nvvm.mma.sync
// SM90A-NOT: gpu.block_id  z
// SM90A-NOT: nvvm.wgmma
// SM90A: arith.cmpi ule, %{{.*}}, %c128
// SM90A-NEXT: scf.if
// SM90A: gpu.block_id  z
// SM90A: nvvm.wgmma.mma_async
// SM90A: memref.atomic_rmw addi
