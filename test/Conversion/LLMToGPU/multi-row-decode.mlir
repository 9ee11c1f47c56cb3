// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=sm_90 %s | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx942 %s | FileCheck %s --check-prefixes=CHECK,GFX942

// Tests the multi-row decode form of a linear (MatmulKernel.cpp buildSplitK
// with chooseMultiRowDecodeSplitK): steps of more than one instruction's rows
// and at most 128 take blocks of 64 rows (block x: rows [x * 64, + 64), the
// row tiles' grid x) across 16 columns (block y); the 4 subgroups each walk
// a quarter of K over all 64 rows, reading each K block of the weight once
// (K runs, 16-byte loads) and the rows' A fragments step by step (sm_90:
// 8-byte loads of 4 elements of rows g and g + 8); row fragments 1..3 run
// only when the step has rows there (a block-uniform scf.if carrying their
// accumulators); the partial sums meet in the workgroup buffer the
// one-fragment form shares ([4 subgroups, 1 weight, 64 rows, 16 columns];
// on sm_90 the arena is dynamic workgroup memory, for the staged ring)
// and are added in subgroup order, rows past M not stored.
// CHECK-LABEL: gpu.func @linear_bf16_128x256_bf16
// GFX942-SAME: workgroup(%[[ARENA:.*]] : memref<32768xi8, #gpu.address_space<workgroup>>
// SM90: %[[ARENA:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[PART:.*]] = memref.view %[[ARENA]][%c0][] : {{.*}} to memref<4x1x64x16xf32, #gpu.address_space<workgroup>>
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: } else {
// CHECK: %[[M:.*]] = memref.dim %arg0, %c0
// CHECK: %[[MULTI:.*]] = arith.cmpi ule, %[[M]], %c128
// CHECK: scf.if %[[MULTI]] {
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[ROW0:.*]] = arith.muli %[[BX]], %c64
// CHECK: %[[HAS:.*]] = arith.cmpi ult, %[[ROW0]], %{{.*}}
// CHECK: scf.if %[[HAS]] {
// Accumulators: 4 row fragments x 2 column fragments of m16n8 on sm_90,
// 4 x 1 of 16x16 on gfx942.
// SM90: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// GFX942: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
// SM90: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<128x256xbf16>, vector<16xbf16>
// SM90: vector.load %arg0[{{.*}}] {alignment = 8 : i64} : memref<?x256xbf16>, vector<4xbf16>
// SM90: nvvm.mma.sync
// GFX942: amdgpu.mfma 16x16x16
// CHECK: %[[ROW1:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}}
// SM90: scf.if %[[ROW1]] -> (vector<4xf32>, vector<4xf32>) {
// SM90-COUNT-8: nvvm.mma.sync
// SM90: } else {
// SM90: scf.yield %{{.*}}, %{{.*}} : vector<4xf32>, vector<4xf32>
// GFX942: scf.if %[[ROW1]] -> (vector<4xf32>) {
// GFX942-COUNT-4: amdgpu.mfma
// GFX942: } else {
// CHECK: memref.store %{{.*}}, %[[PART]][
// CHECK: gpu.barrier
// CHECK: memref.load %[[PART]][%c0
// CHECK: memref.load %[[PART]][%c1
// CHECK: memref.load %[[PART]][%c2
// CHECK: memref.load %[[PART]][%c3
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } else {
// CHECK: arith.ceildivui %{{.*}}, %c64
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// N = 4096 (above 2048) with K = 256: the multi-row form takes steps of up
// to 64 rows (one row block); 65..128 rows take the row tiles (MatmulTiling.h,
// measured on the H200).
// CHECK-LABEL: gpu.func @linear_bf16_4096x256_bf16
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: } else {
// CHECK: %[[MULTI:.*]] = arith.cmpi ule, %{{.*}}, %c64
// CHECK: scf.if %[[MULTI]] {
func.func @linear_n4096(%x: tensor<?x256xbf16>) -> tensor<?x4096xbf16> {
  %w = llm.weight "proj.weight" : tensor<4096x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<4096x256xbf16>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// -----

// N = 8192, whose 128 column tiles fill the GPU in one row block: the
// multi-row form only up to 32 rows, the row tiles above
// (kMultiRowDecodeWideMaxRows, measured on an H100).
// CHECK-LABEL: gpu.func @linear_bf16_8192x256_bf16
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: } else {
// CHECK: %[[MULTI:.*]] = arith.cmpi ule, %{{.*}}, %c32
// CHECK: scf.if %[[MULTI]] {
func.func @linear_n8192(%x: tensor<?x256xbf16>) -> tensor<?x8192xbf16> {
  %w = llm.weight "proj.weight" : tensor<8192x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<8192x256xbf16>) -> tensor<?x8192xbf16>
  return %y : tensor<?x8192xbf16>
}

// -----

// N = 4096 with K = 4096, long enough for the row tiles to split over the
// grid: likewise up to 32 rows.
// CHECK-LABEL: gpu.func @linear_bf16_4096x4096_bf16
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: } else {
// CHECK: %[[MULTI:.*]] = arith.cmpi ule, %{{.*}}, %c32
// CHECK: scf.if %[[MULTI]] {
func.func @linear_long_k(%x: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %w = llm.weight "proj.weight" : tensor<4096x4096xbf16>
  %y = llm.linear %x, %w : (tensor<?x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// -----

// N = 16448 (lm_head-like, above 16384): no multi-row form; steps of more
// than 16 rows take the row tiles, whose grid fills the GPU.
// CHECK-LABEL: gpu.func @linear_bf16_16448x256_bf16
// CHECK: arith.cmpi ule, %{{.*}}, %c16
// CHECK: } else {
// CHECK-NOT: arith.cmpi ule, %{{.*}}, %c128
// CHECK: arith.ceildivui %{{.*}}, %c64
func.func @linear_wide(%x: tensor<?x256xbf16>) -> tensor<?x16448xbf16> {
  %w = llm.weight "proj.weight" : tensor<16448x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<16448x256xbf16>) -> tensor<?x16448xbf16>
  return %y : tensor<?x16448xbf16>
}
