// RUN: strata-opt %S/../../../Target/GPU/Inputs/grouped-experts-fp8-activations.mlir --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt %S/../../../Target/GPU/Inputs/grouped-experts-fp8-activations.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt %S/../../../Target/GPU/Inputs/grouped-experts-fp8-activations.mlir --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt %S/../../../Target/GPU/Inputs/grouped-experts-fp8-activations.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 | FileCheck %s --check-prefix=SM90

// Tests the grouped_experts strategy with fp8 expert activations
// (Fp8Mode::ScaledActivations; MatmulKernel.cpp accumulateScaledRing): on
// sm_90a the staged tiles' ring holds x's and the weights' e4m3 codes as
// stored (16-byte asynchronous copies, no decode), 128-wide K blocks (one
// scale group, 128-byte rows); each block's fp8 wgmma (m64nNk32 e4m3 x
// e4m3, K-major A and B) starts from fresh accumulators (scale-d zero on
// its first step), then the block is added into the running sums times x's
// row scale and the weight's block scale (math.fma). moe_up: two warpgroups
// on 128 x 64 tiles of gate and up (n = 128), 4 blocks of 128 x 128 + 2 x
// 64 x 128 bytes = 131072 of dynamic workgroup memory; moe_down: one
// warpgroup on 64 x 128 tiles, 4 x (64 + 128) x 128 = 98304. The decode
// split form of the same kernel decodes both operands' codes to bf16 for
// mma.sync. gfx942 / gfx950: the row tiles run the fp8 MFMA on the codes as
// they come (FNUZ on gfx942), the decode split form the bf16 MFMA on the
// decoded codes; sm_90: mma.sync on decoded codes in every form.

// SM90A-LABEL: gpu.func @moe_up_0(%{{.*}}: memref<?x4096xf8E4M3FN>, %{{.*}}: memref<?x32xf32>
// SM90A-SAME: strata.dynamic_shared_memory_bytes = 131072
// SM90A-SAME: strata.staged_stages = 4
// SM90A-SAME: strata.staged_tile = array<i64: 128, 64>
// SM90A-SAME: strata.staged_wgmma
// SM90A: nvvm.mma.sync
// SM90A: nvgpu.device_async_copy %arg0[{{.*}}], %{{.*}}[{{.*}}], 16, %{{.*}} {bypassL1} : memref<?x4096xf8E4M3FN> to memref<4x128x128xf8E4M3FN, #gpu.address_space<workgroup>>
// SM90A: nvgpu.device_async_copy %arg5[{{.*}}], %{{.*}}[{{.*}}], 16, %{{.*}} {bypassL1} : memref<288x2048x4096xf8E4M3FN> to memref<4x2x64x128xf8E4M3FN, #gpu.address_space<workgroup>>
// SM90A: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// SM90A-COUNT-3: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// SM90A: nvvm.wgmma.wait.group.sync.aligned 0
// SM90A: math.fma
// SM90A-LABEL: gpu.func @moe_down_0(%{{.*}}: memref<?x8x2048xf8E4M3FN>, %{{.*}}: memref<?x8x16xf32>
// SM90A-SAME: strata.dynamic_shared_memory_bytes = 98304
// SM90A-SAME: strata.staged_tile = array<i64: 64, 128>
// SM90A: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 128, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]

// GFX942-LABEL: gpu.func @moe_up_0(
// GFX942-SAME: strata.mma = "v_mfma_f32_16x16x32_fp8_fp8"
// GFX942: amdgpu.mfma 16x16x16 {{.*}} : vector<4xbf16>
// GFX942: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FNUZ>
// GFX942-LABEL: gpu.func @moe_down_0(
// GFX942: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FNUZ>
// GFX950-LABEL: gpu.func @moe_up_0(
// GFX950-SAME: strata.mma = "v_mfma_f32_16x16x32_fp8_fp8"
// GFX950: amdgpu.mfma 16x16x32 {{.*}} : vector<8xf8E4M3FN>
// SM90-LABEL: gpu.func @moe_up_0(
// SM90-SAME: strata.mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
// SM90-NOT: nvvm.wgmma
// SM90: nvvm.mma.sync
