// RUN: strata-opt --strata-fused %s | FileCheck %s --check-prefix=FUSED
// RUN: strata-opt --strata-fused --strata-kernel %s | FileCheck %s --check-prefix=KERNEL
// RUN: strata-opt --strata-lower %s | FileCheck %s --check-prefix=TARGET

// Tests that each phase stops where it should: `fused` keeps llm ops with
// repeated weights merged, `kernel` leaves only memref kernels and calls (no
// tensors, no llm ops), `target` leaves only the LLVM dialect.
// FUSED-LABEL: func.func @step
// FUSED-COUNT-1: llm.weight "w"
// FUSED: llm.linear
// FUSED: llm.linear

// KERNEL-LABEL: func.func @step
// KERNEL-SAME: (%{{.*}}: memref<?x16xf32>) -> memref<?x16xf32>
// KERNEL-NOT: tensor<
// KERNEL-NOT: = llm.
// KERNEL: call @linear_0
// KERNEL: call @linear_0
// KERNEL: func.func @linear_0({{.*}}) attributes {llm.kernel

// TARGET-NOT: func.func
// TARGET-NOT: memref.
// TARGET: llvm.func @step
// TARGET: llvm.func @linear_0
func.func @step(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %w = llm.weight "w" : tensor<16x16xf32>
  %y = llm.linear %x, %w : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  %w2 = llm.weight "w" : tensor<16x16xf32>
  %z = llm.linear %y, %w2 : (tensor<?x16xf32>, tensor<16x16xf32>) -> tensor<?x16xf32>
  return %z : tensor<?x16xf32>
}
