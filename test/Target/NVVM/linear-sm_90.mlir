// Tests that llm.linear compiles to sm_90 PTX on the tensor cores: bf16
// weights and fp8 weights (decoded to bf16 in registers) both issue
// mma.sync m16n8k16 bf16 with f32 accumulation.

// RUN: rm -rf %t && mkdir -p %t
// RUN: strata-opt %S/../GPU/Inputs/linear.mlir --strata-lower='target=sm_90 toolkit=%cuda_toolkit gpu-format=isa' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: FileCheck %s < %t/strata_kernels.sm_90.ptx

// CHECK: .version 8.0
// CHECK: .target sm_90
// CHECK-LABEL: .entry linear_fp8_128x256_bf16(
// CHECK: .maxntid 128, 1, 1
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-LABEL: .entry linear_bf16_128x256_bf16(
// CHECK: .maxntid 128, 1, 1
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: cvt.rn.bf16.f32
