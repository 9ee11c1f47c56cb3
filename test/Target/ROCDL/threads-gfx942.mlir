// Tests that the threads of convert-kernels-to-gpu reach gfx942 code: the
// 256-thread workgroup (metadata), the work-item id in v0, s_barrier between
// the phases, the shared scratch in LDS (ds_read/ds_write, 324 bytes of group
// segment: 8x8 + 8 + 8 floats and the 4-byte broadcast slot) and no private
// memory (the per-thread accumulators are registers).

// RUN: rm -rf %t && mkdir -p %t
// RUN: strata-opt %S/../../Conversion/KernelToGPU/threads.mlir --convert-kernels-to-gpu='chip=gfx942' | strata-opt --strata-target='target=gfx942 toolkit=%rocm_toolkit' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: llvm-objdump -d --mcpu=gfx942 %t/strata_kernels.gfx942.hsaco | FileCheck %s --check-prefix=ISA
// RUN: llvm-readobj --notes %t/strata_kernels.gfx942.hsaco | FileCheck %s --check-prefix=NOTES

// ISA-LABEL: <recurrence>:
// ISA: v_cmp_eq_u32_e64 {{.*}}, 0, v0
// ISA: s_barrier
// ISA: ds_write_b32
// ISA: s_barrier
// ISA: ds_read
// ISA-LABEL: <columns>:
// ISA-NOT: s_barrier
// ISA-NOT: ds_
// ISA-LABEL: <accumulate>:
// ISA-NOT: s_barrier
// ISA-LABEL: <shared_accumulator>:
// ISA: s_barrier
// The block reductions of softmax: cross-lane moves, LDS, barriers.
// ISA-LABEL: <softmax>:
// ISA: {{ds_swizzle|ds_bpermute|v_mov_b32_dpp|ds_permute|v_permlane}}
// ISA: s_barrier

// NOTES: .group_segment_fixed_size: 324
// NOTES: .max_flat_workgroup_size: 256
// NOTES: .name: recurrence
// NOTES: .private_segment_fixed_size: 0
// NOTES: .group_segment_fixed_size: 0
// NOTES: .name: columns
// NOTES: .private_segment_fixed_size: 0
