// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that upstream tensor compute in a step (the MTP draft's concat and
// residual add) is outlined into kernels whose bodies keep the op on tensors
// for one-shot-bufferize, while views stay in the step.
// CHECK-LABEL: func.func @mtp_glue
// CHECK: %[[CAT:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// CHECK: call @tensor_concat_0(%{{.*}}, %{{.*}}, %[[CAT]])
// CHECK: call @arith_addf_0
// CHECK: tensor.expand_shape
// CHECK: func.func @tensor_concat_0(%[[A:.*]]: memref<?x32xbf16>, %[[B:.*]]: memref<?x32xbf16>, %[[OUT:.*]]: memref<?x64xbf16>)
// CHECK: %[[TA:.*]] = bufferization.to_tensor %[[A]] restrict
// CHECK: %[[TB:.*]] = bufferization.to_tensor %[[B]] restrict
// CHECK: %[[R:.*]] = tensor.concat dim(1) %[[TA]], %[[TB]]
// CHECK: bufferization.materialize_in_destination %[[R]] in restrict writable %[[OUT]]
func.func @mtp_glue(%a: tensor<?x32xbf16>, %b: tensor<?x32xbf16>, %c: tensor<?x64xbf16>) -> tensor<?x4x16xbf16> {
  %cat = tensor.concat dim(1) %a, %b : (tensor<?x32xbf16>, tensor<?x32xbf16>) -> tensor<?x64xbf16>
  %sum = arith.addf %cat, %c : tensor<?x64xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %sum, %c0 : tensor<?x64xbf16>
  %v = tensor.expand_shape %sum [[0], [1, 2]] output_shape [%t, 4, 16] : tensor<?x64xbf16> into tensor<?x4x16xbf16>
  return %v : tensor<?x4x16xbf16>
}
