// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 %s | FileCheck %s --check-prefix=SM90
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a %s | FileCheck %s --check-prefix=SM90A
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 %s | FileCheck %s --check-prefix=GFX942
// RUN: strata-opt --split-input-file --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 %s | FileCheck %s --check-prefix=GFX950
// RUN: strata-opt --split-input-file --select-kernel-strategy="chip=sm_90 remarks=true" %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Tests the moe_group strategy: the routed slots grouped by expert in one
// block (MoeGroupKernel.cpp): each subgroup's share of the slots counted by
// expert (workgroup atomics), the counts scanned (shuffle-up scans on
// subgroup 0), each share's slots placed a row of lanes at a time by their
// rank among the row's lanes of the same expert (index shuffles), block
// barriers around the count updates.
// Each function (signature and attributes from the tiny and real models'
// kernel phase) becomes a gpu.func of the same arguments on a grid of one
// block (strata.matrix_grid: per dimension [argument, dim, blocks, divisor,
// multiplier, addend, cap, floor, floorArgument, floorDim,
// addendAtMostExtent, stepMultiplier, forms...]), 512 threads: 16 subgroups
// of 32 lanes on NVIDIA, 8 of 64 on AMD, a row of counts per subgroup.

// SM90-LABEL: gpu.func @moe_group_0(
// SM90-SAME: workgroup(%{{.*}} : memref<16x16xi32, #gpu.address_space<workgroup>> {{.*}}, %{{.*}} : memref<16xi32, #gpu.address_space<workgroup>>
// SM90-SAME: known_block_size = array<i32: 512, 1, 1>
// SM90-SAME: strata.matrix_grid = [array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>, array<i64: -1, 0, 1, 1, 1, 0, 0, 0, -1, 0, 0, 1>]
// SM90: memref.atomic_rmw addi
// SM90: gpu.shuffle  up
// SM90: gpu.shuffle  idx
// SM90: gpu.shuffle  idx
// SM90: gpu.barrier
// SM90: gpu.barrier
// SM90: gpu.return
// SM90A-LABEL: gpu.func @moe_group_0(
// SM90A-SAME: memref<16x16xi32, #gpu.address_space<workgroup>>
// SM90A-SAME: known_block_size = array<i32: 512, 1, 1>
// GFX942-LABEL: gpu.func @moe_group_0(
// GFX942-SAME: memref<8x16xi32, #gpu.address_space<workgroup>>
// GFX942-SAME: known_block_size = array<i32: 512, 1, 1>
// GFX942: gpu.shuffle  up
// GFX950-LABEL: gpu.func @moe_group_0(
// GFX950-SAME: memref<8x16xi32, #gpu.address_space<workgroup>>
func.func @moe_group_0(%a0: memref<?x4xi32>, %a1: memref<?x4xi32>, %a2: memref<17xi32>)
    attributes {llm.kernel = #llm.kernel<"moe_group_0", roles = [chosen, slot_order, expert_starts]>, llm.moe_group = #llm.moe_group<experts = 16, top_k = 4>} {
  return
}

// -----

// GLM-5.3-Flash's 288 experts, 8 a token: rows of counts of 288 experts,
// the scan over 9 rows of 32 experts (NVIDIA) or 5 of 64 (AMD).
// SM90-LABEL: gpu.func @moe_group_0(
// SM90-SAME: memref<16x288xi32, #gpu.address_space<workgroup>>
// SM90-SAME: memref<288xi32, #gpu.address_space<workgroup>>
// GFX942-LABEL: gpu.func @moe_group_0(
// GFX942-SAME: memref<8x288xi32, #gpu.address_space<workgroup>>
func.func @moe_group_0(%a0: memref<?x8xi32>, %a1: memref<?x8xi32>, %a2: memref<289xi32>)
    attributes {llm.kernel = #llm.kernel<"moe_group_0", roles = [chosen, slot_order, expert_starts]>, llm.moe_group = #llm.moe_group<experts = 288, top_k = 8>} {
  return
}

// -----

// 1024 experts: 16 rows of counts (17 x 4 KiB with the starts) exceed
// sm_90's 48 KiB of static workgroup memory, so the kernel keeps the generic
// form with a remark; AMD's 8 rows (36 KiB) fit its 64 KiB.
// SM90: func.func @moe_group_0({{.*}}llm.gpu_strategy = #llm.gpu_strategy<generic>
// REMARK: remark: sm_90: kernel 'moe_group_0' keeps the generic kernel: the subgroups' counts of 1024 experts exceed the static workgroup memory
// REMARK-NOT: remark
// GFX942-LABEL: gpu.func @moe_group_0(
// GFX942-SAME: memref<8x1024xi32, #gpu.address_space<workgroup>>
func.func @moe_group_0(%a0: memref<?x8xi32>, %a1: memref<?x8xi32>, %a2: memref<1025xi32>)
    attributes {llm.kernel = #llm.kernel<"moe_group_0", roles = [chosen, slot_order, expert_starts]>, llm.moe_group = #llm.moe_group<experts = 1024, top_k = 8>} {
  return
}
