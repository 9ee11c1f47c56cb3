// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that a bf16 linear becomes an fp32 linalg.generic matmul with a
// rounding copy into the bf16 result.
// CHECK-LABEL: func.func @linear_bf16
// CHECK: %[[W:.*]] = memref.get_global @proj.weight : memref<32x64xbf16>
// CHECK: call @linear_0(%{{.*}}, %[[W]], %{{.*}}) : (memref<?x64xbf16>, memref<32x64xbf16>, memref<?x32xbf16>) -> ()
// CHECK: func.func @linear_0
// CHECK: %[[ACC:.*]] = memref.alloc(%{{.*}}) : memref<?x32xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: outs(%[[ACC]] : memref<?x32xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @linear_bf16(%x: tensor<?x64xbf16>) -> tensor<?x32xbf16> {
  %w = llm.weight "proj.weight" : tensor<32x64xbf16>
  %y = llm.linear %x, %w : (tensor<?x64xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// Tests that an fp8 weight binds two globals (data and weight_scale_inv) and
// is dequantised block by block inside the kernel.
// CHECK-LABEL: func.func @linear_fp8
// CHECK-DAG: %[[Q:.*]] = memref.get_global @q_a_proj.weight : memref<256x384xf8E4M3FN>
// CHECK-DAG: %[[S:.*]] = memref.get_global @q_a_proj.weight_scale_inv : memref<2x3xf32>
// CHECK: call @linear_0(%{{.*}}, %[[Q]], %[[S]], %{{.*}})
// CHECK-NOT: llm.weight
// CHECK: func.func @linear_0
// CHECK: arith.bitcast %{{.*}} : f8E4M3FN to i8
// CHECK: arith.divui %{{.*}}, %c128
// CHECK: linalg.generic
func.func @linear_fp8(%x: tensor<?x384xbf16>) -> tensor<?x256xbf16> {
  %w = llm.weight "q_a_proj.weight" : !llm.fp8_weight<tensor<256x384xf8E4M3FN>, tensor<2x3xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x384xbf16>, !llm.fp8_weight<tensor<256x384xf8E4M3FN>, tensor<2x3xf32>, block = [128, 128]>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// Tests that llm.lm_head is two kernels: lm_head_rows gathers the selected
// rows of h, lm_head is the linear's matmul with an f32 result (marked
// llm.linear_kernel, so GPU targets build the linear's matmul kernel).
// CHECK-LABEL: func.func @lm_head
// CHECK: %[[N:.*]] = memref.dim %[[ROWS:.*]], %{{.*}} : memref<?xi32>
// CHECK: %[[X:.*]] = memref.alloc(%[[N]]) : memref<?x16xbf16>
// CHECK: call @lm_head_rows_0(%{{.*}}, %[[ROWS]], %[[X]])
// CHECK: %[[L:.*]] = memref.alloc(%{{.*}}) : memref<?x100xf32>
// CHECK: call @lm_head_0(%[[X]], %{{.*}}, %[[L]]) : (memref<?x16xbf16>, memref<100x16xbf16>, memref<?x100xf32>) -> ()
// CHECK: func.func @lm_head_rows_0(%{{.*}}: memref<?x16xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x16xbf16>)
// CHECK-NOT: llm.linear_kernel
// CHECK: func.func @lm_head_0({{.*}}) attributes {{{.*}}llm.linear_kernel}
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: arith.truncf
func.func @lm_head(%h: tensor<?x16xbf16>, %rows: tensor<?xi32>) -> tensor<?x100xf32> {
  %w = llm.weight "lm_head.weight" : tensor<100x16xbf16>
  %l = llm.lm_head %h, %w rows(%rows) : (tensor<?x16xbf16>, tensor<100x16xbf16>, tensor<?xi32>) -> tensor<?x100xf32>
  return %l : tensor<?x100xf32>
}
