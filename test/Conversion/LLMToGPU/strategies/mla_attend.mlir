// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950

// Tests the mla_attend strategy: sparse MLA attention: the heads of a token
// sharing each gathered latent row on the matrix units, split over position
// ranges.
// Each function (signature and attributes from the tiny model's kernel phase)
// becomes a gpu.func of the same arguments with the grid its builder chose
// (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]) and its instruction.

// SM90-LABEL: gpu.func @mla_attend_0(
// SM90-SAME: strata.matrix_grid = [array<i64: 0, 0, 1, 1, 1, 128, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90: nvvm.mma.sync
// sm_90a takes the warpgroup form: 64 head rows (2 heads here, the rest
// clamped), qa's rows, the latent tile and P in 128-byte swizzled rows of
// the dynamic arena; the scores as 16 wgmma m64n32k16 steps (both operands
// K-major), P x V as 2 m64n256k16 steps with B read MN-major (layout row);
// the generic-proxy writes fenced for the async proxy.
// SM90A-LABEL: gpu.func @mla_attend_0(
// SM90A-SAME: strata.mma = "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"
// SM90A-NOT: nvvm.mma.sync
// SM90A: nvgpu.device_async_copy
// SM90A: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// SM90A-COUNT-16: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// SM90A-NEXT: nvvm.wgmma.commit.group.sync.aligned
// SM90A-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// The softmax in base 2 (scores times 0.0625 log2(e)), maxima with maxnum;
// a row's running maximum moves only past a slack of 11, its factor 1
// otherwise; the accumulators rescaled only where some lane's row moved.
// SM90A: arith.constant 0.090168{{[0-9]*}} : f32
// SM90A: llvm.intr.maxnum
// SM90A: arith.constant 1.100000e+01 : f32
// SM90A: %[[GROW:.*]] = arith.cmpf ogt
// SM90A: %[[FACTOR:.*]] = math.exp2
// SM90A: arith.select %[[GROW]], %[[FACTOR]], %{{.*}} : f32
// SM90A: math.exp2 %{{.*}} : vector<4xf32>
// SM90A: gpu.shuffle xor %{{.*}}, %c16_i32{{.*}} : i32
// SM90A: scf.if %{{.*}} -> (vector<4xf32>,
// SM90A-COUNT-32: arith.mulf %{{.*}} : vector<4xf32>
// SM90A-NEXT: scf.yield
// SM90A-NEXT: } else {
// SM90A: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// SM90A-COUNT-2: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// SM90A-NEXT: nvvm.wgmma.commit.group.sync.aligned
// SM90A-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// GFX942-LABEL: gpu.func @mla_attend_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x16_bf16"
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @mla_attend_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_bf16"
// GFX950: amdgpu.mfma
func.func @mla_attend_0(%a0: memref<?x2x512xf32>, %a1: memref<?x64x512xbf16>, %a2: memref<?x128xi32>, %a3: memref<?xi32>, %a4: memref<?xi32>, %a5: memref<?x?xi32>, %a6: memref<?x2x512xf32>, %a7: memref<128x2x514xf32>)
    attributes {llm.kernel = #llm.kernel<"mla_attend_0", roles = [x, latent_pool, selection, selection_counts, seq_starts, block_table, out, split_parts]>, llm.mla_attend = #llm.mla_attend<softmax_scale = 6.250000e-02 : f32>} {
  return
}

// -----

// An fp8 latent pool (--kv-cache-dtype=fp8): bytes [pages, 33792] (64 rows of
// 512 e4m3 values and 4 f32 scales), its layout an #llm.fp8_page. The same
// strategy; the rows are loaded as bytes (8 values, 4 scale bytes) and
// decoded into the bf16 tile, without asynchronous copies on NVIDIA.
// SM90-LABEL: gpu.func @mla_attend_fp8(
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90-NOT: nvgpu.device_async_copy
// SM90: vector.load %{{.*}} : memref<?x33792xi8>, vector<8xi8>
// SM90: vector.load %{{.*}} : memref<?x33792xi8>, vector<4xi8>
// SM90: nvvm.mma.sync
// sm_90a's warpgroup form copies the raw records asynchronously (16-byte
// pieces of 528-byte records into two raw stages, one chunk ahead) and
// decodes each chunk's from workgroup memory into the single bf16 tile
// after the previous chunk's products.
// SM90A-LABEL: gpu.func @mla_attend_fp8(
// SM90A: nvgpu.device_async_copy %{{.*}} : memref<?x33792xi8> to memref<2x32x528xi8, #gpu.address_space<workgroup>>
// SM90A: vector.load %{{.*}} : memref<2x32x528xi8, #gpu.address_space<workgroup>>, vector<8xi8>
// SM90A: vector.load %{{.*}} : memref<2x32x528xi8, #gpu.address_space<workgroup>>, vector<4xi8>
// SM90A: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// SM90A: nvvm.wgmma.mma_async
// GFX942-LABEL: gpu.func @mla_attend_fp8(
// GFX942: vector.load %{{.*}} : memref<?x33792xi8>, vector<8xi8>
// GFX942: amdgpu.mfma
// GFX950-LABEL: gpu.func @mla_attend_fp8(
// GFX950: amdgpu.mfma
func.func @mla_attend_fp8(%a0: memref<?x2x512xf32>, %a1: memref<?x33792xi8>, %a2: memref<?x128xi32>, %a3: memref<?xi32>, %a4: memref<?xi32>, %a5: memref<?x?xi32>, %a6: memref<?x2x512xf32>, %a7: memref<128x2x514xf32>)
    attributes {llm.kernel = #llm.kernel<"mla_attend_fp8", roles = [x, latent_pool, selection, selection_counts, seq_starts, block_table, out, split_parts]>, llm.mla_attend = #llm.mla_attend<softmax_scale = 6.250000e-02 : f32, fp8_page = #llm.fp8_page<rows_per_page = 64, row_lanes = 512, row_bytes = 528, scale_offset = 512, group_lanes = 128>>} {
  return
}

// -----

// An fp8 pool without its layout keeps the generic kernel.
// SM90-LABEL: func.func @mla_attend_fp8_no_layout(
// SM90-NOT: gpu.func
func.func @mla_attend_fp8_no_layout(%a0: memref<?x2x512xf32>, %a1: memref<?x33792xi8>, %a2: memref<?x128xi32>, %a3: memref<?xi32>, %a4: memref<?xi32>, %a5: memref<?x?xi32>, %a6: memref<?x2x512xf32>, %a7: memref<128x2x514xf32>)
    attributes {llm.kernel = #llm.kernel<"mla_attend_fp8_no_layout", roles = [x, latent_pool, selection, selection_counts, seq_starts, block_table, out, split_parts]>, llm.mla_attend = #llm.mla_attend<softmax_scale = 6.250000e-02 : f32>} {
  return
}
