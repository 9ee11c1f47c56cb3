// RUN: strata-opt --split-input-file --convert-llm-to-gpu=chip=sm_90a %s | FileCheck %s

// Tests the staged row tiles' wgmma form on sm_90a (MatmulTiling::wgmma,
// issueWarpgroupStage): one warpgroup (128 lanes) per 128 x 128 tile, one
// instruction per 64 rows (wgmma m64n128k16), the ring of 4 K blocks of 32
// in dynamic workgroup memory (x: 4 x 128 x 64 bytes = 32768 at 0, W: 4 x
// 128 x 64 = 32768 after it; 65536 in all). Steps below the staged tiles'
// 16384 rows launch with the decode forms' 16384 bytes only
// (strata.small_step_shared_memory = [rows per step row, largest small
// step, bytes]). After the prologue's copies land, a proxy fence orders
// them before the wgmma reads, and the arena's shared address is taken
// once. Each K block: the barrier, the copy of block k + 3, then
// wgmma.fence and, per K step of 16, one instruction per 64-row half whose
// descriptors address slot k mod 4 (A at 8192 x slot, + 4096 for rows
// 64..127; B at 32768 + 8192 x slot; the second step 32 bytes further along
// the 64-byte rows) with the 64-byte swizzle, stride 512 between 8-row
// groups (0x8000002000010000 = -9223371899415756800 ORed onto address /
// 16); one committed group; then the wait for block k + 1's copies, a proxy
// fence for them, and the wait for the products before the next barrier
// frees their slot.
// CHECK-LABEL: gpu.func @linear_bf16_256x256_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 65536 : i64
// CHECK-SAME: strata.small_step_shared_memory = array<i64: 1, 16383, 16384>
// CHECK-SAME: strata.staged_raster_rows = 8 : i64, strata.staged_stages = 4 : i64, strata.staged_tile = array<i64: 128, 128>, strata.staged_wgmma
// CHECK: %[[ARENA:.*]] = gpu.dynamic_shared_memory
// The staged tiles' blocks in groups of 8 row tiles (rasterTile; N / 128 =
// 2 column tiles): l = blockIdx.y * gridDim.x + blockIdx.x, group l / 16,
// its first row tile 8 x group, min(gridDim.x - first, 8) rows in it; the
// block's row tile first + (l mod 16) mod rows, its column tile (l mod 16)
// / rows; the grid-stride row loop starts at that row tile.
// CHECK: %[[BYGX:.*]] = arith.muli %block_id_y{{.*}}, %[[GX:grid_dim_x[_0-9]*]] : index
// CHECK-NEXT: %[[L:.*]] = arith.addi %[[BYGX]], %block_id_x
// CHECK-NEXT: %[[GROUP:.*]] = arith.divui %[[L]], %c16
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[GROUP]], %c8
// CHECK-NEXT: %[[LEFT:.*]] = arith.subi %[[GX]], %[[FIRST]]
// CHECK-NEXT: %[[ROWS:.*]] = arith.minui %[[LEFT]], %c8
// CHECK-NEXT: %[[IN:.*]] = arith.remui %[[L]], %c16
// CHECK-NEXT: %[[R:.*]] = arith.remui %[[IN]], %[[ROWS]]
// CHECK-NEXT: %[[TILE0:.*]] = arith.addi %[[FIRST]], %[[R]]
// CHECK-NEXT: %[[COL:.*]] = arith.divui %[[IN]], %[[ROWS]]
// CHECK: arith.muli %[[COL]], %c128
// CHECK: scf.for %{{.*}} = %[[TILE0]] to %{{.*}} step %{{.*}} {
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x1x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c0,
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%c0, %c0,
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c2,
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[ARENA]]
// CHECK-NEXT: %[[BASE:.*]] = arith.index_castui %[[PTR]] : index to i64
// CHECK-NEXT: scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[SLOT:.*]] = arith.remui %[[K]], %c4
// CHECK-NEXT: arith.addi %[[K]], %c3
// CHECK-NEXT: %[[BSLOT:.*]] = arith.muli %[[SLOT]], %c8192
// CHECK-NEXT: %[[BOFF:.*]] = arith.addi %[[BSLOT]], %c32768
// CHECK-NEXT: %[[AOFF:.*]] = arith.muli %[[SLOT]], %c8192
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[BOFF64:.*]] = arith.index_castui %[[BOFF]] : index to i64
// CHECK-NEXT: %[[BADDR:.*]] = arith.addi %[[BASE]], %[[BOFF64]]
// CHECK-NEXT: %[[BMASK:.*]] = arith.andi %[[BADDR]], %c262143_i64
// CHECK-NEXT: %[[BSTART:.*]] = arith.shrui %[[BMASK]], %c4_i64
// CHECK-NEXT: %[[DESCB:.*]] = arith.ori %[[BSTART]], %c-9223371899415756800_i64
// CHECK-NEXT: arith.index_castui %[[AOFF]] : index to i64
// CHECK: %[[DESCA:.*]] = arith.ori %{{.*}}, %c-9223371899415756800_i64
// CHECK-NEXT: %[[D0:.*]] = nvvm.wgmma.mma_async %[[DESCA]], %[[DESCB]], %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NEXT: arith.addi %[[AOFF]], %c4096
// CHECK: %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %[[DESCB]], %{{.*}}, <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[BOFF]], %c32
// CHECK: arith.addi %[[AOFF]], %c32
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[AOFF]], %c4128
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D1]], <m = 64, n = 128, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// The next block's copies after the products' issue (they overlap them).
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][
// CHECK: nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 2 : i32}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.yield
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// The results through the free arena (storeThroughArena): each lane's
// pairs of columns, rounded, into a [1, 128, 128 + 8] bf16 tile (rows padded
// by 16 bytes), a barrier, then runs of 8 columns of a row: one 16-byte
// load from the tile, one 16-byte store into y; a barrier before the next
// tile's copies.
// CHECK: %[[TILE:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x128x136xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: gpu.barrier
// CHECK: vector.store %{{.*}}, %[[TILE]][%c0, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<1x128x136xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: gpu.barrier
// CHECK: vector.load %[[TILE]][%c0, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x128x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x256xbf16>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK-NEXT: }
module {
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  %w = llm.weight "proj.weight" : tensor<256x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<256x256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Tests an fp8 weight in the wgmma form: the raw e4m3 ring ([4, 1, 128, 32]
// fp8 at 32768) is decoded one block ahead into two bf16 blocks ([2, 1, 128,
// 32] at 32768 + 16384 = 49152), which the B descriptors address (49152 +
// 8192 x (k mod 2)) while the next block is decoded; 65536 bytes, none in
// steps below the staged tiles (no decode forms: their plain tiles).
// CHECK-LABEL: gpu.func @linear_fp8_256x256_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 65536 : i64
// CHECK-SAME: strata.small_step_shared_memory = array<i64: 1, 16383, 0>
// CHECK-SAME: strata.staged_tile = array<i64: 128, 128>, strata.staged_wgmma
// CHECK: %[[RAW:.*]] = memref.view %{{.*}}[%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4x1x128x32xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK: %[[DEC:.*]] = memref.view %{{.*}}[%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x1x128x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_wait
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: vector.store %{{.*}}, %[[DEC]][%c0,
// CHECK: nvvm.fence.proxy
// CHECK: scf.for %[[K:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK: %[[HALF:.*]] = arith.remui %[[K]], %c2
// CHECK: %[[HOFF:.*]] = arith.muli %[[HALF]], %c8192
// CHECK-NEXT: arith.addi %[[HOFF]], %c49152
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvgpu.device_async_wait
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: vector.store %{{.*}}, %[[DEC]][
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.yield
module {
func.func @linear_fp8(%x: tensor<?x256xbf16>) -> tensor<?x256xbf16> {
  %w = llm.weight "proj.weight" : !llm.fp8_weight<tensor<256x256xf8E4M3FN>, tensor<2x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<256x256xf8E4M3FN>, tensor<2x2xf32>, block = [128, 128]>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Tests 64-wide K blocks (MatmulTiling::stageK = kWideStageK): bf16 weights
// read as stored with K >= kWideStageMinK (1024) take 128-byte stage rows, a
// ring of 3 K blocks of 64 (x: 3 x 128 x 128 bytes = 49152 at 0, W: 3 x 128
// x 128 = 49152 after it; 98304 in all). Each thread's 16-byte chunk c of
// stage row r goes to chunk c ^ (r mod 8), the 128-byte swizzle; the copies
// run 2 blocks ahead (wait for all but 1 group). Per K block (16 of them):
// the barrier, the copy of block k + 2, four K steps of 16 with one
// instruction per 64-row half whose descriptors address slot k mod 3 (A at
// 16384 x slot, + 8192 for rows 64..127; B at 49152 + 16384 x slot; each
// step 32 bytes further along the 128-byte rows) with the 128-byte swizzle,
// stride 1024 between 8-row groups (0x4000004000010000 =
// 4611686293305360384 ORed onto address / 16).
// CHECK-LABEL: gpu.func @linear_bf16_256x1024_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 98304 : i64
// CHECK-SAME: strata.staged_stages = 3 : i64, strata.staged_tile = array<i64: 128, 128>, strata.staged_wgmma
// CHECK: %[[ARENA:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[SWZ:.*]] = arith.andi %[[ROW:.*]], %c7 : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.xori %{{.*}}, %[[SWZ]] : index
// CHECK-NEXT: %[[COLUMN:.*]] = arith.muli %[[CHUNK]], %c8 : index
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c0, %[[ROW]], %[[COLUMN]]]
// CHECK: nvgpu.device_async_copy %arg1[{{.*}}], %[[B]][%c0, %c0,
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %[[A]][%c1,
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 1 : i32}
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[SLOT:.*]] = arith.remui %[[K]], %c3
// CHECK-NEXT: arith.addi %[[K]], %c2
// CHECK-NEXT: %[[BSLOT:.*]] = arith.muli %[[SLOT]], %c16384
// CHECK-NEXT: %[[BOFF:.*]] = arith.addi %[[BSLOT]], %c49152
// CHECK-NEXT: %[[AOFF:.*]] = arith.muli %[[SLOT]], %c16384
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: %[[DESCB:.*]] = arith.ori %{{.*}}, %c4611686293305360384_i64
// CHECK: %[[DESCA:.*]] = arith.ori %{{.*}}, %c4611686293305360384_i64
// CHECK-NEXT: %[[D0:.*]] = nvvm.wgmma.mma_async %[[DESCA]], %[[DESCB]], %{{.*}}, <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[AOFF]], %c8192
// CHECK: %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %[[DESCB]], %{{.*}}, <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[BOFF]], %c32
// CHECK: arith.addi %[[AOFF]], %c32
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[AOFF]], %c8224
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D1]], <m = 64, n = 128, k = 16>
// CHECK-NEXT: arith.addi %[[BOFF]], %c64
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[G]] {numGroups = 1 : i32}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.yield
module {
func.func @linear_bf16_wide(%x: tensor<?x1024xbf16>) -> tensor<?x256xbf16> {
  %w = llm.weight "proj.weight" : tensor<256x1024xbf16>
  %y = llm.linear %x, %w : (tensor<?x1024xbf16>, tensor<256x1024xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Tests fp8 weights on 64-wide K blocks: an fp8 weight with K >= 1024 whose
// 128 x 128 scale blocks hold whole blocks of 64 takes the ring of 3 blocks
// of 64 (x: 3 x 128 x 64 bf16 = 49152 bytes at 0; the raw e4m3 rows: 3 x 128
// x 64 = 24576 at 49152) and two decoded bf16 blocks of 128 x 64 (32768 at
// 73728), 106496 bytes in all. The decoded rows are stored through the
// 128-byte swizzle (chunk c of row r at c ^ (r mod 8)), read by the B
// descriptors of decoded buffer k mod 2 (73728 + 16384 x (k mod 2)) with the
// 128-byte swizzle; per K block (16 of them) four K steps of 16, one
// instruction per 64-row half.
// CHECK-LABEL: gpu.func @linear_fp8_256x1024_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 106496 : i64
// CHECK-SAME: strata.staged_stages = 3 : i64, strata.staged_tile = array<i64: 128, 128>, strata.staged_wgmma
// CHECK: memref.view %{{.*}}[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT: memref.view %{{.*}}[%c49152][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x1x128x64xf8E4M3FN, #gpu.address_space<workgroup>>
// CHECK-NEXT: %[[DEC:.*]] = memref.view %{{.*}}[%c73728][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: %[[SWZ:.*]] = arith.andi %[[ROW:.*]], %c7 : index
// CHECK-NEXT: %[[CHUNK:.*]] = arith.xori %{{.*}}, %[[SWZ]] : index
// CHECK-NEXT: %[[COLUMN:.*]] = arith.muli %[[CHUNK]], %c8 : index
// CHECK-NEXT: vector.store %{{.*}}, %[[DEC]][%c0, %c0, %[[ROW]], %[[COLUMN]]]
// CHECK: nvvm.fence.proxy
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args
// CHECK-NEXT: gpu.barrier
// CHECK: %[[HALF:.*]] = arith.remui %[[K]], %c2
// CHECK-NEXT: %[[HOFF:.*]] = arith.muli %[[HALF]], %c16384
// CHECK-NEXT: arith.addi %[[HOFF]], %c73728
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: arith.ori %{{.*}}, %c4611686293305360384_i64
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
// CHECK-NEXT: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.convert.f8x2.to.f16x2
// CHECK: vector.store %{{.*}}, %[[DEC]][
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NEXT: scf.yield
module {
func.func @linear_fp8_wide(%x: tensor<?x1024xbf16>) -> tensor<?x256xbf16> {
  %w = llm.weight "proj.weight" : !llm.fp8_weight<tensor<256x1024xf8E4M3FN>, tensor<2x8xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x1024xbf16>, !llm.fp8_weight<tensor<256x1024xf8E4M3FN>, tensor<2x8xf32>, block = [128, 128]>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
}

// -----

// Tests a wide problem (isWideColumnProblem: 1024 column tiles of 128, as
// lm_head's 1210) on sm_90a: 64-row staged tiles (kStagedWideTileRows, one
// wgmma m64 per block) from 17 rows on, i.e. every step above the decode
// forms' 16 rows; its 64-wide K ring has 4 blocks (kWideStageStagesDeep), 4 x
// (64 + 128) x 128 = 98304 bytes.
// CHECK-LABEL: gpu.func @linear_bf16_131072x1024_bf16
// CHECK-SAME: strata.dynamic_shared_memory_bytes = 98304 : i64
// CHECK-SAME: strata.staged_min_rows = 17 : i64
// CHECK-SAME: strata.staged_stages = 4 : i64, strata.staged_tile = array<i64: 64, 128>, strata.staged_wgmma
module {
func.func @linear_bf16(%x: tensor<?x1024xbf16>) -> tensor<?x131072xbf16> {
  %w = llm.weight "head.weight" : tensor<131072x1024xbf16>
  %y = llm.linear %x, %w : (tensor<?x1024xbf16>, tensor<131072x1024xbf16>) -> tensor<?x131072xbf16>
  return %y : tensor<?x131072xbf16>
}
}
