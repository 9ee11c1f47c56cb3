// RUN: strata-opt --split-input-file --verify-diagnostics --llm-shard-model="tensor-parallel-size=4" %s

// One case per error of llm-shard-model at T = 4.

// Tests that heads that do not divide over the ranks are an error.
func.func @mla_heads(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x128xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<?x2x4xbf16> {
  // expected-error@+1 {{llm-shard-model: 2 MLA heads do not split over tensor-parallel size 4}}
  %a = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
      {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 5.000000e-01 : f32}
      : (tensor<?x2x4xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return %a : tensor<?x2x4xbf16>
}

// -----

// Tests that a split weight dimension must divide.
func.func @indivisible(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{llm-shard-model: cannot split dimension 0 of 'gate.weight' (extent 6) into 4 parts}}
  %g = llm.weight "gate.weight" : tensor<6x8xbf16>
  %u = llm.weight "up.weight" : tensor<6x8xbf16>
  %d = llm.weight "down.weight" : tensor<8x6xbf16>
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x8xbf16>, tensor<6x8xbf16>, tensor<6x8xbf16>, tensor<8x6xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

// Tests that a weight operand must be a checkpoint tensor.
func.func @computed_weight(%x: tensor<?x8xbf16>, %g: tensor<8x8xbf16>) -> tensor<?x8xbf16> {
  %u = llm.weight "up.weight" : tensor<8x8xbf16>
  %d = llm.weight "down.weight" : tensor<8x8xbf16>
  // expected-error@+1 {{llm-shard-model: operand 1 is not an llm.weight or llm.expert_weights}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

// Tests that an fp8 part that straddles scale blocks is an error (384 rows
// of 128-row blocks: 96 per rank).
func.func @fp8_straddle(%x: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  // expected-error@+1 {{expected sharded fp8 extent 96 of dimension 0 to be a multiple or a divisor of the block size 128}}
  %g = llm.weight "gate.weight" : !llm.fp8_weight<tensor<384x128xf8E4M3FN>, tensor<3x1xf32>, block = [128, 128]>
  %u = llm.weight "up.weight" : !llm.fp8_weight<tensor<384x128xf8E4M3FN>, tensor<3x1xf32>, block = [128, 128]>
  %d = llm.weight "down.weight" : !llm.fp8_weight<tensor<128x384xf8E4M3FN>, tensor<1x3xf32>, block = [128, 128]>
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x128xbf16>, !llm.fp8_weight<tensor<384x128xf8E4M3FN>, tensor<3x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<384x128xf8E4M3FN>, tensor<3x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<128x384xf8E4M3FN>, tensor<1x3xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Tests that an MLA output that is not reshaped for o_proj is an error.
func.func @mla_no_reshape(%qf: tensor<?x16xbf16>, %kvb: tensor<16x128xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<?x4x2xbf16> {
  %w = llm.weight "q_b.weight" : tensor<8x8xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qf, %c0 : tensor<?x16xbf16>
  %x = tensor.extract_slice %qf[0, 0] [%t, 8] [1, 1] : tensor<?x16xbf16> to tensor<?x8xbf16>
  %l = llm.linear %x, %w : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %q = tensor.expand_shape %l [[0], [1, 2]] output_shape [%t, 4, 2] : tensor<?x8xbf16> into tensor<?x4x2xbf16>
  %kvb4 = llm.weight "kv_b.weight" : tensor<16x128xbf16>
  // expected-error@+1 {{llm-shard-model: expected the MLA output to be reshaped to [T, heads * v_head_dim]}}
  %a = llm.mla_attention %q, %kvb4, %cache, %sel, %cnt, %starts, %bt
      {heads = 4 : i64, qk_head_dim = 2 : i64, v_head_dim = 2 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 0.707106769 : f32}
      : (tensor<?x4x2xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x2xbf16>
  %b = arith.negf %a : tensor<?x4x2xbf16>
  return %b : tensor<?x4x2xbf16>
}
