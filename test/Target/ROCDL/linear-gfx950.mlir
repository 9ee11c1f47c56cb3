// Tests that llm.linear compiles to a gfx950 HSA code object v5 whose
// kernels run on MFMA (v_mfma_f32_16x16x32_bf16 for bf16 weights; fp8 weights with in-kernel
// activation quantisation, v_cvt_pk_fp8_f32, and v_mfma_f32_16x16x32_fp8_fp8)
// and do not spill (no scratch, spill counts 0).

// RUN: rm -rf %t && mkdir -p %t
// RUN: strata-opt %S/../GPU/Inputs/linear.mlir --strata-lower='target=gfx950 toolkit=%rocm_toolkit' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: llvm-readelf -h %t/strata_kernels.gfx950.hsaco | FileCheck %s --check-prefix=ELF
// RUN: llvm-objdump -d --mcpu=gfx950 %t/strata_kernels.gfx950.hsaco | FileCheck %s --check-prefix=ISA
// RUN: llvm-readobj --notes %t/strata_kernels.gfx950.hsaco | FileCheck %s --check-prefix=NOTES

// ELF: OS/ABI: AMDGPU - HSA
// ELF: ABI Version: 3
// ELF: Flags: {{.*}}gfx950

// ISA-LABEL: <linear_fp8_128x256_bf16>:
// ISA-NOT: scratch_
// ISA: v_cvt_pk_fp8_f32
// ISA-NOT: scratch_
// ISA: v_mfma_f32_16x16x32_fp8_fp8
// ISA-NOT: scratch_
// ISA: s_endpgm
// ISA-LABEL: <linear_bf16_128x256_bf16>:
// ISA-NOT: scratch_
// ISA: v_mfma_f32_16x16x32_bf16
// ISA-NOT: scratch_
// ISA: s_endpgm

// NOTES: amdhsa.kernels:
// NOTES: .max_flat_workgroup_size: 256
// NOTES-NEXT: .name: linear_fp8_128x256_bf16
// NOTES-NEXT: .private_segment_fixed_size: 0
// NOTES: .sgpr_spill_count: 0
// NOTES: .vgpr_spill_count: 0
// NOTES: .max_flat_workgroup_size: 256
// NOTES-NEXT: .name: linear_bf16_128x256_bf16
// NOTES-NEXT: .private_segment_fixed_size: 0
// NOTES: .sgpr_spill_count: 0
// NOTES: .vgpr_spill_count: 0
// NOTES: amdhsa.version:
// NOTES-NEXT: - 1
// NOTES-NEXT: - 2
