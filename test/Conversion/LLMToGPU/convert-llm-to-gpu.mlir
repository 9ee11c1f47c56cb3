// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx942 %s | FileCheck %s --check-prefixes=CHECK,GFX942,SPLIT
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=gfx950 %s | FileCheck %s --check-prefixes=CHECK,GFX950
// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=sm_90 %s | FileCheck %s --check-prefixes=CHECK,SM90,SPLIT

// Tests that a bf16 linear becomes a launch over ceil(M / 64) x N / 16
// workgroups (N / 64 without a decode form: gfx950) of a kernel on the
// chip's bf16 matrix instruction.
// CHECK-LABEL: func.func @linear_bf16
// CHECK: %[[X:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x256xbf16> to memref<?x256xbf16>
// CHECK: %[[W:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<128x256xbf16> to memref<128x256xbf16>
// CHECK: %[[M:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x256xbf16>
// CHECK: %[[Y:.*]] = memref.alloc(%[[M]]) : memref<?x128xbf16>
// CHECK: %[[M63:.*]] = arith.addi %[[M]], %c63
// CHECK: %[[GX:.*]] = arith.divui %[[M63]], %c64
// GFX942: gpu.launch_func @strata_kernels::@linear_bf16_128x256_bf16 blocks in (%[[GX]], %c8, %c1) threads in (%c256, %c1, %c1) args(%[[X]] : memref<?x256xbf16>, %[[W]] : memref<128x256xbf16>, %[[Y]] : memref<?x128xbf16>)
// GFX950: gpu.launch_func @strata_kernels::@linear_bf16_128x256_bf16 blocks in (%[[GX]], %c2, %c1) threads in (%c256, %c1, %c1)
// SM90: gpu.launch_func @strata_kernels::@linear_bf16_128x256_bf16 blocks in (%[[GX]], %c8, %c1) threads in (%c128, %c1, %c1)
// CHECK: bufferization.to_tensor %[[Y]] restrict writable
// CHECK: gpu.module @strata_kernels
// CHECK: gpu.func @linear_bf16_128x256_bf16(%{{.*}}: memref<?x256xbf16>, %{{.*}}: memref<128x256xbf16>, %{{.*}}: memref<?x128xbf16>)
// The decode forms' partial sums and the staged row tiles (staged-matmul.mlir)
// share one workgroup arena (sm_90: dynamic workgroup memory for the ring of
// staged-matmul-ring.mlir, whose steps below the staged tiles' 32768 rows
// launch with the partial sums' 16384 bytes: small_step_shared_memory).
// GFX942-SAME: workgroup(%[[ARENA:.*]] : memref<32768xi8, #gpu.address_space<workgroup>>{{.*}}) kernel
// GFX950-SAME: kernel
// GFX942-SAME: known_block_size = array<i32: 256, 1, 1>, strata.mma = "v_mfma_f32_16x16x16_bf16", strata.staged_min_rows = 32768 : i64, strata.staged_raster_rows = 8 : i64, strata.staged_stages = 2 : i64, strata.staged_tile = array<i64: 128, 128>, strata.tile = array<i64: 64, 64>
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// SM90-SAME: known_block_size = array<i32: 128, 1, 1>, strata.dynamic_shared_memory_bytes = 65536 : i64, strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", strata.small_step_shared_memory = array<i64: 1, 32767, 16384>, strata.staged_min_rows = 32768 : i64, strata.staged_raster_rows = 8 : i64, strata.staged_stages = 4 : i64, strata.staged_tile = array<i64: 128, 128>, strata.tile = array<i64: 64, 64>
// SM90: %[[ARENA:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// SPLIT: %[[PART:.*]] = memref.view %[[ARENA]][%c0][] : memref<{{[0-9?]+}}xi8, #gpu.address_space<workgroup>> to memref<4x1x64x16xf32, #gpu.address_space<workgroup>>
// Steps of at most 16 rows (decode; K in whole K blocks per subgroup, so not
// gfx950, whose 2 blocks of 128 do not split 4 ways): the 4 subgroups each walk a quarter of
// K over the rows' 16 columns of the block, their partial sums meet in
// workgroup memory and are added in subgroup order, then rounded once.
// SPLIT: %[[M0:.*]] = memref.dim %arg0, %c0
// SPLIT: %[[SMALL:.*]] = arith.cmpi ule, %[[M0]], %c16
// SPLIT: scf.if %[[SMALL]] {
// SM90: %[[SG:.*]] = arith.divui %{{.*}}, %c32
// SM90: %[[KB0:.*]] = arith.muli %[[SG]], %c64
// SM90: %[[KB1:.*]] = arith.addi %[[KB0]], %c64
// SM90: scf.for %{{.*}} = %[[KB0]] to %[[KB1]] step %c64 iter_args
// SM90-COUNT-8: nvvm.mma.sync
// SPLIT: memref.store %{{.*}}, %[[PART]][
// SPLIT: gpu.barrier
// SPLIT: memref.load %[[PART]][%c0
// SPLIT: memref.load %[[PART]][%c1
// SPLIT: arith.addf
// SPLIT: memref.load %[[PART]][%c2
// SPLIT: memref.load %[[PART]][%c3
// SPLIT: arith.truncf %{{.*}} : f32 to bf16
// SPLIT: } else {
// Steps of 17 to 128 rows take the multi-row decode form
// (multi-row-decode.mlir), larger ones the row tiles.
// SPLIT: %[[MULTI:.*]] = arith.cmpi ule, %{{.*}}, %c128
// SPLIT: scf.if %[[MULTI]] {
// SPLIT: } else {
// Row tiles with a grid stride: any grid x covers every row; with a decode
// form only the first N / 64 column blocks take tiles. Steps of at least
// 32768 rows (enough 128 x 128 tiles for 256 of them when N = 128) take the
// staged tiles (staged-matmul.mlir) instead, over the first N / 128 blocks.
// CHECK: %[[BIG:.*]] = arith.cmpi ule, %{{.*}}, %c32767
// CHECK: scf.if %[[BIG]] {
// CHECK: %[[BX:.*]] = gpu.block_id x
// SPLIT: %[[BY:.*]] = gpu.block_id y
// SPLIT: %[[COLS:.*]] = arith.cmpi ult, %{{.*}}, %c2
// SPLIT: scf.if %[[COLS]] {
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[ROWS]], %c64
// CHECK: %[[GRIDX:.*]] = gpu.grid_dim x
// CHECK: scf.for %{{.*}} = %[[BX]] to %[[TILES]] step %[[GRIDX]]
// CHECK: scf.for
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: } else {
// CHECK: %[[COLS128:.*]] = arith.cmpi ult, %{{.*}}, %c1
// CHECK: scf.if %[[COLS128]] {
// CHECK: arith.ceildivui %{{.*}}, %c128
// CHECK: arith.truncf %{{.*}} : f32 to bf16
module {
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests the unstaged row tiles of an output dimension no staged tile
// divides (N = 32): each subgroup reads its fragments from global memory.
// CHECK-LABEL: gpu.func @linear_bf16_32x256_bf16
// CHECK-NOT: strata.staged_tile
// CHECK: %[[TILES:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[TILES]] step
// CHECK: scf.for
// K runs: a lane reads its part of the K block's row in one aligned vector
// load and feeds each instruction step a slice of it, A and B alike
// (sm_90: rows g and g + 8 of A, 4 elements per row and step, 4 steps).
// GFX942: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<16xbf16>
// GFX942: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3] : vector<16xbf16>, vector<16xbf16>
// GFX950: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<32xbf16>
// SM90: %[[A0:.*]] = vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<16xbf16>
// SM90: %[[A1:.*]] = vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<16xbf16>
// SM90: vector.shuffle %[[A0]], %[[A1]] [0, 1, 16, 17, 2, 3, 18, 19] : vector<16xbf16>, vector<16xbf16>
// SM90: %[[B:.*]] = vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<32x256xbf16>, vector<16xbf16>
// SM90: vector.shuffle %[[B]], %[[B]] [0, 1, 2, 3] : vector<16xbf16>, vector<16xbf16>
// GFX942: amdgpu.mfma 16x16x16 {{.*}} : vector<4xbf16>, vector<4xbf16>, vector<4xf32>
// GFX950: amdgpu.mfma 16x16x32 {{.*}} : vector<8xbf16>, vector<8xbf16>, vector<4xf32>
// SM90: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {{{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: scf.if
// CHECK: arith.truncf %{{.*}} : f32 to bf16
module {
func.func @linear_unstaged(%x: tensor<?x256xbf16>) -> tensor<?x32xbf16> {
  %w = llm.weight "narrow.weight" : tensor<32x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<32x256xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
}

// -----

// Tests that an fp8 linear binds the data and scale globals; AMD quantises
// x per row and 128-block in the kernel (FNUZ on gfx942, OCP on gfx950,
// amax reduced over the 4 lane groups) and runs the fp8 MFMA; sm_90 decodes
// the weight bytes to bf16 by pairs (cvt.rn.f16x2.e4m3x2, then f16 -> f32 ->
// bf16, all exact) and runs the bf16 mma.sync (in the decode forms, whose
// K blocks are the 128-wide scale blocks; its staged row tiles: staged-matmul.mlir).
// CHECK-LABEL: func.func @linear_fp8
// CHECK-DAG: %[[Q:.*]] = memref.get_global @q.weight : memref<128x1024xf8E4M3FN>
// CHECK-DAG: %[[S:.*]] = memref.get_global @q.weight_scale_inv : memref<1x8xf32>
// CHECK: gpu.launch_func @strata_kernels::@linear_fp8_128x1024_bf16 {{.*}} args(%{{.*}} : memref<?x1024xbf16>, %[[Q]] : memref<128x1024xf8E4M3FN>, %[[S]] : memref<1x8xf32>, %{{.*}} : memref<?x128xbf16>)
// CHECK-NOT: llm.
// CHECK: gpu.func @linear_fp8_128x1024_bf16
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c128
// GFX942: gpu.shuffle xor %{{.*}}, %c16_i32, %c64_i32 : f32
// GFX942: gpu.shuffle xor %{{.*}}, %c32_i32, %c64_i32 : f32
// GFX942: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf8E4M3FNUZ>
// GFX942: gpu.shuffle idx
// GFX942: arith.bitcast %{{.*}} : vector<8xi8> to vector<8xf8E4M3FNUZ>
// GFX942: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FNUZ>, vector<8xf8E4M3FNUZ>, vector<4xf32>
// GFX942: %[[WS:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<1x8xf32>
// GFX942: arith.mulf %[[WS]], %cst{{.*}} : f32
// GFX942: math.fma
// GFX950: gpu.shuffle xor %{{.*}}, %c16_i32, %c64_i32 : f32
// GFX950: arith.truncf %{{.*}} : vector<8xf32> to vector<8xf8E4M3FN>
// GFX950-NOT: f8E4M3FNUZ
// GFX950: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FN>, vector<8xf8E4M3FN>, vector<4xf32>
// GFX950: math.fma
// SM90-NOT: gpu.shuffle
// SM90: vector.load %{{.*}} {alignment = 16 : i64} : memref<128x1024xf8E4M3FN>, vector<32xf8E4M3FN>
// SM90-NOT: arith.uitofp
// SM90: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// SM90: arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// SM90: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// SM90: nvvm.mma.sync
// SM90: memref.load %{{.*}} : memref<1x8xf32>
// SM90: math.fma
module {
func.func @linear_fp8(%x: tensor<?x1024xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "q.weight" : !llm.fp8_weight<tensor<128x1024xf8E4M3FN>, tensor<1x8xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x1024xbf16>, !llm.fp8_weight<tensor<128x1024xf8E4M3FN>, tensor<1x8xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests that an f32-result linear (router logits) with 32 outputs narrows
// the workgroup tile along N and stores f32 without rounding.
// CHECK-LABEL: func.func @router
// GFX942: gpu.launch_func @strata_kernels::@linear_bf16_32x64_f32 blocks in (%{{.*}}, %c1, %c1) threads in (%c256, %c1, %c1)
// SM90: gpu.launch_func @strata_kernels::@linear_bf16_32x64_f32 blocks in (%{{.*}}, %c1, %c1) threads in (%c128, %c1, %c1)
// CHECK: gpu.func @linear_bf16_32x64_f32
// GFX942-SAME: strata.tile = array<i64: 64, 32>
// SM90-SAME: strata.tile = array<i64: 64, 32>
// CHECK-NOT: arith.truncf %{{.*}} : f32 to bf16
// CHECK: gpu.return
func.func @router(%x: tensor<?x64xbf16>) -> tensor<?x32xf32> {
  %w = llm.weight "gate.weight" : tensor<32x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Tests that a linear whose output dimension does not tile (36) and an f32
// input are left to convert-llm-to-kernel.
// CHECK-LABEL: func.func @untiled
// CHECK: llm.linear
// CHECK: llm.linear
// CHECK-NOT: gpu.launch_func
func.func @untiled(%x: tensor<?x64xbf16>, %xf: tensor<?x64xf32>) -> (tensor<?x36xbf16>, tensor<?x64xf32>) {
  %w = llm.weight "odd.weight" : tensor<36x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<36x64xbf16>) -> tensor<?x36xbf16>
  %w2 = llm.weight "sq.weight" : tensor<64x64xbf16>
  %z = llm.linear %xf, %w2 : (tensor<?x64xf32>, tensor<64x64xbf16>) -> tensor<?x64xf32>
  return %y, %z : tensor<?x36xbf16>, tensor<?x64xf32>
}
