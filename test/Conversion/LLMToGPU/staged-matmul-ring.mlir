// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=sm_90 %s | FileCheck %s

// Tests the staged row tiles' ring on sm_90 (MatmulTiling::ring,
// accumulateRing): kAsyncStages = 4 K blocks of 32 of x and W in dynamic
// workgroup memory (the arena, shared with the decode forms' partial sums,
// is gpu.dynamic_shared_memory; its bytes are on the kernel for the
// launch: 2 x 4 x 128 x 32 x 2 = 65536). The prologue copies blocks 0..2
// (one group each) and waits until at most 2 groups are pending; each
// K block starts at the barrier, copies block k + 3 into slot (k + 3) mod 4
// with no bytes read past the last block (src elements 8 or 0), multiplies
// slot k mod 4 (ldmatrix) and waits for block k + 1. After the loop every
// copy is waited for and a barrier frees the ring for the next tile.
// CHECK-LABEL: gpu.func @linear_bf16_128x256_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 65536 : i64
// CHECK-SAME: strata.staged_stages = 4 : i64, strata.staged_tile = array<i64: 128, 128>
// CHECK: %[[ARENA:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[ARENA]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x1x64x16xf32, #gpu.address_space<workgroup>>
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x1x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c0, {{.*}}], 8, %c8 {bypassL1}
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%c0, %c0, {{.*}}], 8, %c8 {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c1,
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c2,
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SLOT:.*]] = arith.remui %[[K]], %c4
// CHECK: %[[AHEAD:.*]] = arith.addi %[[K]], %c3
// CHECK: %[[AHEADSLOT:.*]] = arith.remui %[[AHEAD]], %c4
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[AHEAD]], %c8
// CHECK: arith.minui %[[AHEAD]], %c7
// CHECK: %[[COUNT:.*]] = arith.select %[[INSIDE]], %c8, %c0
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%[[AHEADSLOT]], {{.*}}], 8, %[[COUNT]] {bypassL1}
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%[[AHEADSLOT]], %c0,
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.ldmatrix %[[A]][%[[SLOT]], {{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[B]][%[[SLOT]], %c0, {{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK-NEXT: scf.yield
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
module {
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}

// -----

// Tests an fp8 weight in the ring: the raw e4m3 rows are copied as stored
// (16 bytes = 16 values per chunk) into a [4, 1, 128, 32] fp8 ring, and the
// thread that copied a chunk decodes it once its group has landed, one
// block ahead: 16 values decoded in pairs (cvt e4m3x2 -> f16x2, exact in
// f32), multiplied by the row's block scale in f32 and rounded once to
// bf16 (round(q * scale), the reference's dequantised weight), stored as two
// swizzled 16-byte chunks into decoded buffer (k + 1) mod 2, which the
// next block's ldmatrix reads. 65536 bytes: the x ring 32768, the fp8 ring
// 16384, two decoded blocks 16384.
// CHECK-LABEL: gpu.func @linear_fp8_128x256_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 65536 : i64
// CHECK-SAME: strata.staged_stages = 4 : i64
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[RAW:.*]] = memref.view %{{.*}}[%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x1x128x32xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: %[[DEC:.*]] = memref.view %{{.*}}[%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[RAW]][%c0, %c0, {{.*}}], 16, %c16 {bypassL1} : memref<128x256xf8E4M3FN> to memref<4x1x128x32xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[RAW]][%c2, %c0,
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK: %[[S0:.*]] = memref.load %arg2[{{.*}}] : memref<1x2xf32>
// CHECK: vector.load %[[RAW]][%c0, %c0, {{.*}}] {alignment = 16 : i64} : memref<4x1x128x32xf8E4M3FN, #gpu.address_space<workgroup>>, vector<16xf8E4M3FN>
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: %[[F:.*]] = arith.extf %{{.*}} : vector<16xf16> to vector<16xf32>
// CHECK: %[[SV:.*]] = vector.broadcast %[[S0]] : f32 to vector<16xf32>
// CHECK: %[[P:.*]] = arith.mulf %[[F]], %[[SV]] : vector<16xf32>
// CHECK: arith.truncf %[[P]] : vector<16xf32> to vector<16xbf16>
// CHECK: vector.store %{{.*}}, %[[DEC]][%c0, %c0, {{.*}}] {alignment = 16 : i64} : memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store %{{.*}}, %[[DEC]][%c0, %c0, {{.*}}] {alignment = 16 : i64}
// CHECK: scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[RAW]][{{.*}}], 16, %{{.*}} {bypassL1}
// CHECK: %[[NEXT:.*]] = arith.addi %[[K]], %c1
// CHECK: memref.load %arg2[{{.*}}] : memref<1x2xf32>
// CHECK: %[[HALF:.*]] = arith.remui %[[K]], %c2
// CHECK: nvgpu.ldmatrix %[[DEC]][%[[HALF]], %c0, {{.*}}]
// CHECK: nvvm.mma.sync
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK: %[[NEXTSLOT:.*]] = arith.remui %[[NEXT]], %c4
// CHECK: %[[NEXTHALF:.*]] = arith.remui %[[NEXT]], %c2
// CHECK: vector.load %[[RAW]][%[[NEXTSLOT]], %c0,
// CHECK: vector.store %{{.*}}, %[[DEC]][%[[NEXTHALF]], %c0,
// CHECK: scf.yield
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
module {
func.func @linear_fp8(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "q.weight" : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
}
