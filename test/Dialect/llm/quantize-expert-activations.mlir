// RUN: strata-opt --split-input-file --verify-diagnostics --llm-quantize-expert-activations %s | FileCheck %s

// Tests that llm-quantize-expert-activations marks an llm.moe_ffn with fp8
// experts and leaves the rest of the op as it was.
// CHECK-LABEL: func.func @fp8_experts
// CHECK: llm.moe_ffn {{.*}}fp8_expert_activations{{.*}}num_experts = 4 : i64
func.func @fp8_experts(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, %eu: !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, %ed: !llm.fp8_weight<tensor<4x8x16xf8E4M3FN>, tensor<4x1x1xf32>, block = [8, 16]>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) -> tensor<?x8xbf16> {
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, !llm.fp8_weight<tensor<4x8x16xf8E4M3FN>, tensor<4x1x1xf32>, block = [8, 16]>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

// Tests that bf16 experts are an error naming the op, not a silent no-op.
func.func @bf16_experts(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{fp8 expert activations need fp8 block-scaled expert weights; this model's experts are not fp8}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}
