// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=sm_90 %s | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx942 %s | FileCheck %s --check-prefixes=CHECK,AMD,GFX942
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx950 %s | FileCheck %s --check-prefixes=CHECK,AMD,GFX950

// Tests the staged row tiles (chooseStagedTiling): steps of at least
// staged_min_rows rows (enough 128-row tiles for 256 tiles: 32768 rows when
// N = 128; fewer take the unstaged 64 x 64 tiles) take 128 x 128 tiles
// whose operands go through two workgroup stage buffers of 32 K elements,
// viewed from the kernel's one i8 arena (shared with the decode forms'
// partial sums). Each thread copies chunks of 8 elements (4 of x, 4 of W on
// sm_90's 128 threads); the K loop loads the next block, multiplies the
// current buffer (K = 256: 8 blocks; the last re-reads itself as its next,
// minui 224), stores the next block into the other buffer (1 - buf) and
// meets the block at one barrier.
// CHECK-LABEL: gpu.func @linear_bf16_128x256_bf16
// SM90-SAME: workgroup(%[[ARENA:.*]] : memref<32768xi8, #gpu.address_space<workgroup>>
// CHECK-SAME: strata.staged_min_rows = 32768 : i64, strata.staged_tile = array<i64: 128, 128>
// SM90: memref.view %[[ARENA]][%c0][] : memref<32768xi8, #gpu.address_space<workgroup>> to memref<4x1x64x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[BIG:.*]] = arith.cmpi ule, %{{.*}}, %c32767
// CHECK: scf.if %[[BIG]] {
// CHECK: arith.ceildivui %{{.*}}, %c64
// CHECK: } else {
// CHECK: arith.ceildivui %{{.*}}, %c128
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%c0][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<2x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.view %{{.*}}[%c16384][] : memref<{{[0-9]+}}xi8, #gpu.address_space<workgroup>> to memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// Rows of x past M re-read the last row. AMD loads each chunk into
// registers and stores it; sm_90 copies it asynchronously (cp.async, 16
// bytes, no registers in flight) into a swizzled place (16-byte chunk c of
// row r at c ^ ((r / 2) mod 4)), waits for the group, then the barrier.
// CHECK: arith.minui
// AMD: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<8xbf16>
// AMD: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<128x256xbf16>, vector<8xbf16>
// AMD: vector.store %{{.*}}, %[[A]][%c0, {{.*}}] {alignment = 16 : i64}
// AMD: vector.store %{{.*}}, %[[B]][%c0, %c0, {{.*}}] {alignment = 16 : i64}
// SM90: %[[HALF:.*]] = arith.shrui %{{.*}}, %c1
// SM90: %[[SW:.*]] = arith.andi %[[HALF]], %c3
// SM90: arith.xori %{{.*}}, %[[SW]]
// SM90: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c0, {{.*}}], 8 {bypassL1} : memref<?x256xbf16> to memref<2x128x32xbf16, #gpu.address_space<workgroup>>
// SM90: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%c0, %c0, {{.*}}], 8 {bypassL1} : memref<128x256xbf16> to memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// SM90: %[[G0:.*]] = nvgpu.device_async_create_group
// SM90: nvgpu.device_async_wait %[[G0]] {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK: scf.for %[[KB:.*]] = %c0 to %c256 step %c32 iter_args
// CHECK: %[[BLK:.*]] = arith.divui %[[KB]], %c32
// CHECK: %[[BUF:.*]] = arith.remui %[[BLK]], %c2
// CHECK: %[[NEXT:.*]] = arith.addi %[[KB]], %c32
// CHECK: arith.minui %[[NEXT]], %c224
// CHECK: %[[OTHER:.*]] = arith.subi %c1, %[[BUF]]
// AMD: vector.load %arg0[
// AMD: vector.load %arg1[
// SM90: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%[[OTHER]],
// SM90: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%[[OTHER]], %c0,
// SM90: %[[G:.*]] = nvgpu.device_async_create_group
// On AMD, K runs from the stage buffer: a lane's 8 elements of a row in one
// 16-byte load, A and B alike. sm_90: ldmatrix x4, four 8 x 8 tiles per
// load (A: the instruction's a0..a3; B: b0, b1 of two column fragments).
// AMD: vector.load %[[A]][%[[BUF]], {{.*}}] {alignment = 16 : i64} : memref<2x128x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// AMD: vector.load %[[B]][%[[BUF]], %c0, {{.*}}] {alignment = 16 : i64} : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// SM90: nvgpu.ldmatrix %[[A]][%[[BUF]], {{.*}}] {numTiles = 4 : i32, transpose = false} : memref<2x128x32xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// SM90: nvgpu.ldmatrix %[[B]][%[[BUF]], %c0, {{.*}}] {numTiles = 4 : i32, transpose = false} : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// SM90: nvvm.mma.sync
// GFX942: amdgpu.mfma 16x16x16
// GFX950: amdgpu.mfma 16x16x32
// AMD: vector.store %{{.*}}, %[[A]][%[[OTHER]],
// AMD: vector.store %{{.*}}, %[[B]][%[[OTHER]], %c0,
// SM90: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: arith.truncf %{{.*}} : f32 to bf16
module {
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests that sm_90 stages an fp8 weight as bf16 through registers (x still
// by asynchronous copies): 8 weight bytes per chunk decoded in pairs, multiplied by the chunk row's block scale and rounded
// once (round(q * scale), the reference's bf16 weights); gfx942 / gfx950
// run fp8 MFMA on quantised rows and keep their row tiles (no staged tile).
// CHECK-LABEL: gpu.func @linear_fp8_128x256_bf16
// SM90-SAME: strata.staged_tile = array<i64: 128, 128>
// GFX942-NOT: strata.staged_tile
// GFX942: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FNUZ>
// GFX950-NOT: strata.staged_tile
// GFX950: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FN>
// SM90: scf.for %[[KB:.*]] = %c0 to %c256 step %c32 iter_args
// SM90: nvgpu.device_async_copy %arg0
// SM90-NOT: nvgpu.device_async_copy %arg1
// SM90: %[[Q:.*]] = vector.load %arg1[{{.*}}] {alignment = 8 : i64} : memref<128x256xf8E4M3FN>, vector<8xf8E4M3FN>
// SM90: %[[S:.*]] = memref.load %arg2[{{.*}}] : memref<1x2xf32>
// SM90: nvvm.convert.f8x2.to.f16x2
// SM90: %[[W:.*]] = arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// SM90: %[[SV:.*]] = vector.broadcast %[[S]] : f32 to vector<8xf32>
// SM90: %[[P:.*]] = arith.mulf %[[W]], %[[SV]] : vector<8xf32>
// SM90: arith.truncf %[[P]] : vector<8xf32> to vector<8xbf16>
// SM90: nvvm.mma.sync
// SM90-NOT: math.fma
// SM90: scf.yield
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
// CHECK-SAME: strata.staged_min_rows = 128 : i64, strata.staged_tile = array<i64: 128, 128>
func.func @wide(%x: tensor<?x64xbf16>) -> tensor<?x131072xbf16> {
  %w = llm.weight "wide.weight" : tensor<131072x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<131072x64xbf16>) -> tensor<?x131072xbf16>
  return %y : tensor<?x131072xbf16>
}
