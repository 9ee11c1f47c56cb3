// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that llm.rms_norm with a weight becomes a call of an outlined kernel
// in destination-passing style: result allocated with the dynamic token count.
// CHECK-LABEL: func.func @rms_norm_weighted
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xbf16>)
// CHECK: %[[XM:.*]] = bufferization.to_buffer %[[X]] read_only
// CHECK: %[[W:.*]] = memref.get_global @model.norm.weight : memref<64xbf16>
// CHECK: %[[T:.*]] = memref.dim %[[XM]], %{{.*}} : memref<?x64xbf16>
// CHECK: %[[Y:.*]] = memref.alloc(%[[T]]) : memref<?x64xbf16>
// CHECK: call @rms_norm_0(%[[XM]], %[[W]], %[[Y]])
// CHECK-NOT: llm.rms_norm
// CHECK: func.func @rms_norm_0(%{{.*}}: memref<?x64xbf16>, %{{.*}}: memref<64xbf16>, %{{.*}}: memref<?x64xbf16>)
// CHECK-SAME: llm.kernel
// CHECK: scf.for
// CHECK: math.sqrt
func.func @rms_norm_weighted(%x: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %w = llm.weight "model.norm.weight" : tensor<64xbf16>
  %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Tests that two identical ops share one kernel and a different one gets its own.
// CHECK-LABEL: func.func @kernel_reuse
// CHECK: call @rms_norm_0
// CHECK: call @rms_norm_0
// CHECK: call @rms_norm_1
// CHECK: func.func @rms_norm_0
// CHECK: func.func @rms_norm_1
func.func @kernel_reuse(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = llm.rms_norm %x {eps = 1.0e-05 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %b = llm.rms_norm %a {eps = 1.0e-05 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %c = llm.rms_norm %b {eps = 1.0e-06 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %c : tensor<?x64xf32>
}

// -----

// Tests that llm.embedding gathers table rows by id.
// CHECK-LABEL: func.func @embedding
// CHECK: call @embedding_0(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xi32>, memref<16x8xbf16>, memref<?x8xbf16>) -> ()
// CHECK: func.func @embedding_0
// CHECK: %[[ID:.*]] = memref.load %{{.*}} : memref<?xi32>
// CHECK: arith.index_cast %[[ID]] : i32 to index
func.func @embedding(%ids: tensor<?xi32>) -> tensor<?x8xbf16> {
  %t = llm.weight "model.embed_tokens.weight" : tensor<16x8xbf16>
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<16x8xbf16>) -> tensor<?x8xbf16>
  return %e : tensor<?x8xbf16>
}

// -----

// Tests that the gated norm (KDA o_norm) takes weight and gate operands.
// CHECK-LABEL: func.func @rms_norm_gated
// CHECK: call @rms_norm_0({{.*}}) : (memref<?x4x32xf32>, memref<32xbf16>, memref<?x4x32xf32>, memref<?x4x32xbf16>) -> ()
func.func @rms_norm_gated(%o: tensor<?x4x32xf32>, %g: tensor<?x4x32xf32>) -> tensor<?x4x32xbf16> {
  %w = llm.weight "o_norm.weight" : tensor<32xbf16>
  %y = llm.rms_norm %o weight(%w) gate(%g) {eps = 1.0e-05 : f32}
      : (tensor<?x4x32xf32>, tensor<32xbf16>, tensor<?x4x32xf32>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}
