// RUN: strata-opt --strata-fused --strata-kernel --strata-print-kernel-plan %s -o /dev/null | FileCheck %s

// Tests the plan of a small decode step after the kernel phase: inputs are
// the step arguments, the latent pool is a cache binding, the embedding
// table is one weight bound twice (CSE merged the two llm.weight reads),
// activations are allocated with the token count of the ids, the logits are
// the output (the selected rows gathered, then their matmul), and repeated
// identical norms share one kernel.
// CHECK-LABEL: plan @decode
// CHECK-NEXT: buffer 0 arg0 input i32 [arg0.0]
// CHECK-NEXT: buffer 1 arg1 input i32 [arg1.0]
// CHECK-NEXT: buffer 2 arg2 input i32 [arg2.0]
// CHECK-NEXT: buffer 3 arg3 input i32 [arg3.0, arg3.1]
// CHECK-NEXT: buffer 4 arg4 input i32 [arg4.0]
// CHECK-NEXT: buffer 5 buf5 activation bf16 [arg0.0, 16]
// CHECK-NEXT: buffer 6 buf6 activation bf16 [arg0.0, 16]
// CHECK-NEXT: buffer 7 buf7 activation bf16 [arg0.0, 16]
// CHECK-NEXT: buffer 8 buf8 activation bf16 [arg4.0, 16]
// CHECK-NEXT: buffer 9 buf9 output f32 [arg4.0, 32]
// CHECK-NEXT: weight 0 model.embed_tokens.weight
// CHECK-NEXT: weight 1 model.norm.weight
// CHECK-NEXT: cache 0 arg5 !llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16> as memref<?x4x16xbf16>
// CHECK-NEXT: dispatch embedding_0(buffer 0[arg0.0], weight 0[32, 16], buffer 5[arg0.0, 16])
// CHECK-NEXT: dispatch rms_norm_0(buffer 5[arg0.0, 16], weight 1[16], buffer 6[arg0.0, 16])
// CHECK-NEXT: dispatch latent_cache_write_0(cache 0[arg5.0, 4, 16], buffer 6[arg0.0, 16], buffer 1[arg1.0], buffer 2[arg2.0], buffer 3[arg3.0, arg3.1])
// CHECK-NEXT: dispatch rms_norm_0(buffer 6[arg0.0, 16], weight 1[16], buffer 7[arg0.0, 16])
// CHECK-NEXT: dispatch lm_head_rows_0(buffer 7[arg0.0, 16], buffer 4[arg4.0], buffer 8[arg4.0, 16])
// CHECK-NEXT: dispatch lm_head_0(buffer 8[arg4.0, 16], weight 0[32, 16], buffer 9[arg4.0, 32])
func.func @decode(%ids: tensor<?xi32>, %pos: tensor<?xi32>, %starts: tensor<?xi32>,
                  %bt: tensor<?x?xi32>, %rows: tensor<?xi32>,
                  %cache: !llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16>)
    -> (tensor<?x32xf32>, !llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16>) {
  %t = llm.weight "model.embed_tokens.weight" : tensor<32x16xbf16>
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<32x16xbf16>) -> tensor<?x16xbf16>
  %n = llm.weight "model.norm.weight" : tensor<16xbf16>
  %h = llm.rms_norm %e weight(%n) {eps = 1.0e-05 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  %c1 = llm.latent_cache_write %cache, %h, %pos, %starts, %bt
      : (!llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16>, tensor<?x16xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16>
  %n2 = llm.weight "model.norm.weight" : tensor<16xbf16>
  %h2 = llm.rms_norm %h weight(%n2) {eps = 1.0e-05 : f32} : (tensor<?x16xbf16>, tensor<16xbf16>) -> tensor<?x16xbf16>
  %t2 = llm.weight "model.embed_tokens.weight" : tensor<32x16xbf16>
  %l = llm.lm_head %h2, %t2 rows(%rows) : (tensor<?x16xbf16>, tensor<32x16xbf16>, tensor<?xi32>) -> tensor<?x32xf32>
  return %l, %c1 : tensor<?x32xf32>, !llm.latent_pool<page_size = 4, width = 16, pad = 0, bf16>
}
