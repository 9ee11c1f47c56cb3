// RUN: strata-opt --split-input-file --verify-diagnostics --llm-shard-model="tensor-parallel-size=4 expert-parallel-size=3" %s
// RUN: not strata-opt --llm-shard-model="tensor-parallel-size=0" %s 2>&1 | FileCheck %s --check-prefix=SIZE

// SIZE: error: llm-shard-model: expected tensor-parallel-size and expert-parallel-size >= 1, got 0 and 1

// One case per error of llm-shard-model at T = 4, E = 3.

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

// -----

// Tests that a weight is sharded once.
func.func @already_sharded(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{llm-shard-model: 'gate.weight' is already sharded}}
  %g = llm.weight "gate.weight" {shards = [#llm.shard<ep, dim = 1, parts = 2>]} : tensor<8x8xbf16>
  %u = llm.weight "up.weight" : tensor<8x8xbf16>
  %d = llm.weight "down.weight" : tensor<8x8xbf16>
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

// Tests that the pass runs before the residual write is fused into an FFN.
func.func @fused_streams(%x: tensor<?x8xbf16>, %r: tensor<?x4x8xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> tensor<?x4x8xbf16> {
  %g = llm.weight "gate.weight" : tensor<8x8xbf16>
  %d = llm.weight "down.weight" : tensor<8x8xbf16>
  // expected-error@+1 {{llm-shard-model: runs before llm-fuse-hyper-connections (found streams)}}
  %y = llm.swiglu_mlp %x, %g, %g, %d streams(%r, %post, %comb) {swiglu_limit = 10.0 : f32}
      : (tensor<?x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return %y : tensor<?x4x8xbf16>
}

// -----

// Tests that the routed experts must divide over the expert-parallel ranks.
func.func @experts(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) -> tensor<?x64xbf16> {
  %g = llm.expert_weights "e.{e}.gate.weight" {num_experts = 4 : i64} : tensor<4x32x64xbf16>
  %d = llm.expert_weights "e.{e}.down.weight" {num_experts = 4 : i64} : tensor<4x64x32xbf16>
  // expected-error@+1 {{llm-shard-model: 4 routed experts do not split over expert-parallel size 3}}
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<4x32x64xbf16>, tensor<4x32x64xbf16>,
         tensor<4x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Tests that MLA's q must come from its own projection, reshaped to heads.
func.func @mla_q(%q: tensor<?x4x2xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<?x4x2xbf16> {
  %kvb = llm.weight "kv_b.weight" : tensor<16x128xbf16>
  // expected-error@+1 {{llm-shard-model: expected q to be the reshaped output of its own llm.linear}}
  %a = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
      {heads = 4 : i64, qk_head_dim = 2 : i64, v_head_dim = 2 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 0.707106769 : f32}
      : (tensor<?x4x2xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x2xbf16>
  return %a : tensor<?x4x2xbf16>
}

// -----

// Tests that KDA's inputs must come from their own projections.
func.func @kda_input(%q: tensor<?x8xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %s0: !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>, %c0: !llm.conv_state<channels = 24, width = 3, bf16>)
    -> tensor<?x8xbf16> {
  %qc = llm.weight "qc.weight" : tensor<8x1x4xbf16>
  %alog = llm.weight "A_log" : tensor<4xf32>
  %dtb = llm.weight "dt_bias" : tensor<8xf32>
  %on = llm.weight "o_norm.weight" : tensor<2xbf16>
  %b = arith.constant dense<0.0> : tensor<1x4xbf16>
  %bd = tensor.cast %b : tensor<1x4xbf16> to tensor<?x4xbf16>
  // expected-error@+1 {{llm-shard-model: expected operand 0 to be an llm.linear}}
  %o, %s1, %c1 = llm.kda_attention %q, %q, %q, %q, %bd, %q, %qc, %qc, %qc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 4 : i64, head_dim = 2 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.707106769 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<4xf32>, tensor<8xf32>, tensor<2xbf16>,
         !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  return %o : tensor<?x8xbf16>
}

// -----

// Tests that MLA's output must go to o_proj through its reshape only.
func.func @mla_output_uses(%ql: tensor<?x8xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> (tensor<?x4x2xbf16>, tensor<?x4x2xbf16>) {
  %wqb = llm.weight "q_b.weight" : tensor<8x8xbf16>
  %qf = llm.linear %ql, %wqb : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qf, %c0 : tensor<?x8xbf16>
  %q = tensor.expand_shape %qf [[0], [1, 2]] output_shape [%t, 4, 2] : tensor<?x8xbf16> into tensor<?x4x2xbf16>
  %kvb = llm.weight "kv_b.weight" : tensor<16x128xbf16>
  // expected-error@+1 {{llm-shard-model: expected the MLA output to have one user, its reshape}}
  %a = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
      {heads = 4 : i64, qk_head_dim = 2 : i64, v_head_dim = 2 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 0.707106769 : f32}
      : (tensor<?x4x2xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x2xbf16>
  return %a, %a : tensor<?x4x2xbf16>, tensor<?x4x2xbf16>
}

// -----

// Tests that the reshaped MLA output must feed o_proj.
func.func @mla_no_o_proj(%ql: tensor<?x8xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<?x8xbf16> {
  %wqb = llm.weight "q_b.weight" : tensor<8x8xbf16>
  %qf = llm.linear %ql, %wqb : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qf, %c0 : tensor<?x8xbf16>
  %q = tensor.expand_shape %qf [[0], [1, 2]] output_shape [%t, 4, 2] : tensor<?x8xbf16> into tensor<?x4x2xbf16>
  %kvb = llm.weight "kv_b.weight" : tensor<16x128xbf16>
  // expected-error@+1 {{llm-shard-model: expected the MLA output to feed an llm.linear}}
  %a = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
      {heads = 4 : i64, qk_head_dim = 2 : i64, v_head_dim = 2 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 0.707106769 : f32}
      : (tensor<?x4x2xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x2xbf16>
  %o = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x4x2xbf16> into tensor<?x8xbf16>
  %n = arith.negf %o : tensor<?x8xbf16>
  return %n : tensor<?x8xbf16>
}

// -----

// Tests that a projection another op also reads is not split (its other
// user would see the rank's part).
func.func @kda_shared_projection(%x: tensor<?x8xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %s0: !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>, %c0: !llm.conv_state<channels = 24, width = 3, bf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %wq = llm.weight "q.weight" : tensor<8x8xbf16>
  %q = llm.linear %x, %wq : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wk = llm.weight "k.weight" : tensor<8x8xbf16>
  %k = llm.linear %x, %wk : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wb = llm.weight "b.weight" : tensor<4x8xbf16>
  %b = llm.linear %x, %wb : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %qc = llm.weight "qc.weight" : tensor<8x1x4xbf16>
  %alog = llm.weight "A_log" : tensor<4xf32>
  %dtb = llm.weight "dt_bias" : tensor<8xf32>
  %on = llm.weight "o_norm.weight" : tensor<2xbf16>
  // expected-error@+1 {{llm-shard-model: the projection of operand 1 has other users}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %k, %k, %b, %k, %qc, %qc, %qc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 4 : i64, head_dim = 2 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.707106769 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x4xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<4xf32>, tensor<8xf32>, tensor<2xbf16>,
         !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 4, key_dim = 2, value_dim = 2, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  return %o, %k : tensor<?x8xbf16>, tensor<?x8xbf16>
}
