// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx942 %s | FileCheck %s --check-prefixes=CHECK,AMD,GFX942
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx950 %s | FileCheck %s --check-prefixes=CHECK,AMD,GFX950

// Tests the staged row tiles (chooseStagedTiling) with two stage buffers,
// the AMD form (sm_90 takes the ring of asynchronous copies:
// staged-matmul-ring.mlir): steps of at least
// staged_min_rows rows (enough 128-row tiles for 256 tiles: 32768 rows when
// N = 128; fewer take the unstaged 64 x 64 tiles) take 128 x 128 tiles
// whose operands go through two workgroup stage buffers of 32 K elements,
// viewed from the kernel's one i8 arena (shared with the decode forms'
// partial sums). Each thread copies chunks of 8 elements; the K loop
// loads the next block, multiplies the current buffer (K = 256: 8 blocks; the last re-reads itself as its next,
// minui 224), stores the next block into the other buffer (1 - buf) and
// meets the block at one barrier.
// CHECK-LABEL: gpu.func @linear_bf16_128x256_bf16
// CHECK-SAME: strata.staged_min_rows = 32768 : i64, strata.staged_raster_rows = 8 : i64, strata.staged_stages = 2 : i64, strata.staged_tile = array<i64: 128, 128>
// CHECK: %[[BIG:.*]] = arith.cmpi ule, %{{.*}}, %c32767
// CHECK: scf.if %[[BIG]] {
// CHECK: arith.ceildivui %{{.*}}, %c64
// CHECK: } else {
// CHECK: arith.ceildivui %{{.*}}, %c128
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%c0][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<2x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.view %{{.*}}[%c16384][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// Rows of x past M re-read the last row. AMD loads each chunk into
// registers and stores it.
// CHECK: arith.minui
// AMD: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<8xbf16>
// AMD: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<128x256xbf16>, vector<8xbf16>
// AMD: vector.store %{{.*}}, %[[A]][%c0, {{.*}}] {alignment = 16 : i64}
// AMD: vector.store %{{.*}}, %[[B]][%c0, %c0, {{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.for %[[KB:.*]] = %c0 to %c256 step %c32 iter_args
// CHECK: %[[BLK:.*]] = arith.divui %[[KB]], %c32
// CHECK: %[[BUF:.*]] = arith.remui %[[BLK]], %c2
// CHECK: %[[NEXT:.*]] = arith.addi %[[KB]], %c32
// CHECK: arith.minui %[[NEXT]], %c224
// CHECK: %[[OTHER:.*]] = arith.subi %c1, %[[BUF]]
// AMD: vector.load %arg0[
// AMD: vector.load %arg1[
// K runs from the stage buffer: a lane's 8 elements of a row in one
// 16-byte load, A and B alike.
// AMD: vector.load %[[A]][%[[BUF]], {{.*}}] {alignment = 16 : i64} : memref<2x128x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// AMD: vector.load %[[B]][%[[BUF]], %c0, {{.*}}] {alignment = 16 : i64} : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// GFX942: amdgpu.mfma 16x16x16
// GFX950: amdgpu.mfma 16x16x32
// AMD: vector.store %{{.*}}, %[[A]][%[[OTHER]],
// AMD: vector.store %{{.*}}, %[[B]][%[[OTHER]], %c0,
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// The results through the free arena (storeThroughArena): the unpadded
// [1, 128, 128] bf16 tile fills the two stage buffers' 32 KiB exactly (a
// larger arena would halve the blocks per gfx942 compute unit); each
// lane's values rounded into it, a barrier, then runs of 8 columns: one
// 16-byte load from the tile, one 16-byte store into y.
// CHECK: %[[TILE:.*]] = memref.view %{{.*}}[%c0][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<1x128x128xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: vector.store %{{.*}}, %[[TILE]][%c0, %{{.*}}, %{{.*}}] {alignment = 2 : i64} : memref<1x128x128xbf16, #gpu.address_space<workgroup>>, vector<1xbf16>
// CHECK: gpu.barrier
// CHECK: vector.load %[[TILE]][%c0, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x128x128xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x128xbf16>, vector<8xbf16>
// CHECK: gpu.barrier
module {
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests that gfx942 / gfx950 run fp8 MFMA on quantised rows and keep their
// row tiles (no staged tile; sm_90's fp8 ring: staged-matmul-ring.mlir).
// CHECK-LABEL: gpu.func @linear_fp8_128x256_bf16
// GFX942-NOT: strata.staged_tile
// GFX942: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FNUZ>
// GFX950-NOT: strata.staged_tile
// GFX950: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FN>
module {
func.func @linear_fp8(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "q.weight" : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests that an output dimension no staged tile divides (N = 32) keeps the
// unstaged row tiles.
// CHECK-LABEL: gpu.func @linear_bf16_32x64_f32
// CHECK-NOT: strata.staged_tile
// CHECK: gpu.return
module {
func.func @router(%x: tensor<?x64xbf16>) -> tensor<?x32xf32> {
  %w = llm.weight "router.weight" : tensor<32x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
}

// -----

// Tests that a problem whose columns alone fill the GPU (at least
// kStagedWideColumnTiles = 1024 staged column tiles, an lm_head) takes the
// staged tiles from one 128-row tile on.
// CHECK-LABEL: gpu.func @linear_bf16_131072x64_bf16
// CHECK-SAME: strata.staged_min_rows = 128 : i64, strata.staged_raster_rows = 8 : i64, strata.staged_stages = 2 : i64, strata.staged_tile = array<i64: 128, 128>
func.func @wide(%x: tensor<?x64xbf16>) -> tensor<?x131072xbf16> {
  %w = llm.weight "wide.weight" : tensor<131072x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<131072x64xbf16>) -> tensor<?x131072xbf16>
  return %y : tensor<?x131072xbf16>
}
