// RUN: strata-opt --split-input-file --llm-shard-model="tensor-parallel-size=2 expert-parallel-size=2" %s | FileCheck %s
// RUN: strata-opt --split-input-file --llm-shard-model %s | FileCheck %s --check-prefix=ONE

// One case per op the pass splits, at T = 2 tensor-parallel and E = 2
// expert-parallel ranks; the ONE run checks that T = E = 1 changes nothing.
// ONE-NOT: shards
// ONE-NOT: llm.all_reduce
// ONE-NOT: llm.all_gather

// Tests that KDA's heads split: the six input projections, conv taps, A_log
// and dt_bias take the rank's half, f_a / g_a and o_norm stay whole, the
// state arguments and results hold one head, o_proj reads half its inputs
// and is summed over the tensor group.
// CHECK-LABEL: @kda
// CHECK-SAME: %{{.*}}: !llm.kda_state<heads = 1, key_dim = 4, value_dim = 4, f32>, %{{.*}}: !llm.conv_state<channels = 12, width = 3, bf16>)
// CHECK-SAME: -> (tensor<?x8xbf16>, !llm.kda_state<heads = 1, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 12, width = 3, bf16>)
// CHECK: llm.weight "q.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x8xbf16>
// CHECK: llm.linear {{.*}} -> tensor<?x4xbf16>
// CHECK: llm.weight "fa.weight" : tensor<4x8xbf16>
// CHECK: llm.weight "fb.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x4xbf16>
// CHECK: llm.weight "b.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<1x8xbf16>
// CHECK: llm.weight "qc.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x1x4xbf16>
// CHECK: llm.weight "A_log" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<1xf32>
// CHECK: llm.weight "dt_bias" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4xf32>
// CHECK: llm.weight "o_norm.weight" : tensor<4xbf16>
// CHECK: %[[O:.+]], %[[S:.+]], %[[C:.+]] = llm.kda_attention
// CHECK-SAME: heads = 1 : i64
// CHECK: llm.weight "o.weight" {shards = [#llm.shard<tp, dim = 1, parts = 2>]} : tensor<8x4xbf16>
// CHECK: %[[P:.+]] = llm.linear %[[O]], %{{.*}} : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
// CHECK: %[[Y:.+]] = llm.all_reduce %[[P]] {group = #llm.rank_group<tp>, group_size = 2 : i64}
// CHECK: return %[[Y]], %[[S]], %[[C]]
func.func @kda(%x: tensor<?x8xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %s0: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %c0: !llm.conv_state<channels = 24, width = 3, bf16>)
    -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>) {
  %wq = llm.weight "q.weight" : tensor<8x8xbf16>
  %q = llm.linear %x, %wq : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wk = llm.weight "k.weight" : tensor<8x8xbf16>
  %k = llm.linear %x, %wk : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wv = llm.weight "v.weight" : tensor<8x8xbf16>
  %v = llm.linear %x, %wv : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wfa = llm.weight "fa.weight" : tensor<4x8xbf16>
  %fa = llm.linear %x, %wfa : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wfb = llm.weight "fb.weight" : tensor<8x4xbf16>
  %f = llm.linear %fa, %wfb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %wb = llm.weight "b.weight" : tensor<2x8xbf16>
  %b = llm.linear %x, %wb : (tensor<?x8xbf16>, tensor<2x8xbf16>) -> tensor<?x2xbf16>
  %wga = llm.weight "ga.weight" : tensor<4x8xbf16>
  %ga = llm.linear %x, %wga : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wgb = llm.weight "gb.weight" : tensor<8x4xbf16>
  %g = llm.linear %ga, %wgb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %qc = llm.weight "qc.weight" : tensor<8x1x4xbf16>
  %kc = llm.weight "kc.weight" : tensor<8x1x4xbf16>
  %vc = llm.weight "vc.weight" : tensor<8x1x4xbf16>
  %alog = llm.weight "A_log" : tensor<2xf32>
  %dtb = llm.weight "dt_bias" : tensor<8xf32>
  %on = llm.weight "o_norm.weight" : tensor<4xbf16>
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>,
         !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  %wo = llm.weight "o.weight" : tensor<8x8xbf16>
  %y = llm.linear %o, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  return %y, %s1, %c1 : tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
      !llm.conv_state<channels = 24, width = 3, bf16>
}

// -----

// Tests that MLA's heads split: q_b_proj and kv_b_proj take the rank's
// heads (q reshaped to one head), the latent stays whole, o_proj is
// row-parallel and summed; the residual add reads the sum.
// CHECK-LABEL: @mla
// CHECK: llm.weight "q_b.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x8xbf16>
// CHECK: %[[QF:.+]] = llm.linear {{.*}} -> tensor<?x4xbf16>
// CHECK: tensor.expand_shape %[[QF]] {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 1, 4] : tensor<?x4xbf16> into tensor<?x1x4xbf16>
// CHECK: llm.weight "kv_b.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<8x128xbf16>
// CHECK: llm.mla_attention
// CHECK-SAME: heads = 1 : i64
// CHECK-SAME: -> tensor<?x1x4xbf16>
// CHECK: %[[O:.+]] = tensor.collapse_shape {{.*}} : tensor<?x1x4xbf16> into tensor<?x4xbf16>
// CHECK: llm.weight "o.weight" {shards = [#llm.shard<tp, dim = 1, parts = 2>]} : tensor<8x4xbf16>
// CHECK: %[[P:.+]] = llm.linear %[[O]]
// CHECK: %[[Y:.+]] = llm.all_reduce %[[P]] {group = #llm.rank_group<tp>, group_size = 2 : i64}
// CHECK: arith.addf %{{.*}}, %[[Y]]
func.func @mla(%x: tensor<?x8xbf16>, %ql: tensor<?x8xbf16>, %cache: !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
    %sel: tensor<?x128xi32>, %cnt: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>) -> tensor<?x8xbf16> {
  %wqb = llm.weight "q_b.weight" : tensor<8x8xbf16>
  %qf = llm.linear %ql, %wqb : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %qf, %c0 : tensor<?x8xbf16>
  %q = tensor.expand_shape %qf [[0], [1, 2]] output_shape [%t, 2, 4] : tensor<?x8xbf16> into tensor<?x2x4xbf16>
  %kvb = llm.weight "kv_b.weight" : tensor<16x128xbf16>
  %a = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
      {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64,
       kv_lora_rank = 128 : i64, softmax_scale = 5.000000e-01 : f32}
      : (tensor<?x2x4xbf16>, tensor<16x128xbf16>,
         !llm.latent_pool<page_size = 64, width = 128, pad = 0, bf16>,
         tensor<?x128xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  %o = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x2x4xbf16> into tensor<?x8xbf16>
  %wo = llm.weight "o.weight" : tensor<8x8xbf16>
  %y = llm.linear %o, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %r = arith.addf %x, %y : tensor<?x8xbf16>
  return %r : tensor<?x8xbf16>
}

// -----

// Tests that the dense MLP splits its intermediate dimension (fp8 weights:
// 512 rows in 128-blocks, 256 per rank, two scale rows each) and is summed
// over the tensor group.
// CHECK-LABEL: @dense_mlp
// CHECK: llm.weight "gate.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : !llm.fp8_weight<tensor<256x128xf8E4M3FN>, tensor<2x1xf32>, block = [128, 128]>
// CHECK: llm.weight "up.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]}
// CHECK: llm.weight "down.weight" {shards = [#llm.shard<tp, dim = 1, parts = 2>]} : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
// CHECK: %[[P:.+]] = llm.swiglu_mlp
// CHECK: %[[Y:.+]] = llm.all_reduce %[[P]] {group = #llm.rank_group<tp>, group_size = 2 : i64}
// CHECK: return %[[Y]]
func.func @dense_mlp(%x: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %g = llm.weight "gate.weight" : !llm.fp8_weight<tensor<512x128xf8E4M3FN>, tensor<4x1xf32>, block = [128, 128]>
  %u = llm.weight "up.weight" : !llm.fp8_weight<tensor<512x128xf8E4M3FN>, tensor<4x1xf32>, block = [128, 128]>
  %d = llm.weight "down.weight" : !llm.fp8_weight<tensor<128x512xf8E4M3FN>, tensor<1x4xf32>, block = [128, 128]>
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x128xbf16>, !llm.fp8_weight<tensor<512x128xf8E4M3FN>, tensor<4x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<512x128xf8E4M3FN>, tensor<4x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<128x512xf8E4M3FN>, tensor<1x4xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Tests that the MoE splits: experts over the expert group (2 of 4 stacked,
// expert_shard set), each expert's intermediate over the tensor group (fp8:
// 64 of a 128-row block, one scale row), the shared expert over all four
// ranks, the router whole; one all-reduce over the world combines.
// CHECK-LABEL: @moe
// CHECK: llm.expert_weights "e.{e}.gate.weight" {num_experts = 2 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 1, parts = 2>]} : !llm.fp8_weight<tensor<2x64x128xf8E4M3FN>, tensor<2x1x1xf32>, block = [128, 128]>
// CHECK: llm.expert_weights "e.{e}.down.weight" {num_experts = 2 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 2, parts = 2>]} : !llm.fp8_weight<tensor<2x128x64xf8E4M3FN>, tensor<2x1x1xf32>, block = [128, 128]>
// CHECK: llm.weight "s.gate.weight" {shards = [#llm.shard<world, dim = 0, parts = 4>]} : tensor<32x128xbf16>
// CHECK: llm.weight "s.down.weight" {shards = [#llm.shard<world, dim = 1, parts = 4>]} : tensor<128x32xbf16>
// CHECK: %[[P:.+]] = llm.moe_ffn
// CHECK-SAME: expert_shard = #llm.shard<ep, dim = 0, parts = 2>
// CHECK-SAME: tensor<4x128xf32>
// CHECK: %[[Y:.+]] = llm.all_reduce %[[P]] {group = #llm.rank_group<world>, group_size = 4 : i64}
// CHECK: return %[[Y]]
func.func @moe(%x: tensor<?x128xbf16>, %router: tensor<4x128xf32>, %bias: tensor<4xf32>) -> tensor<?x128xbf16> {
  %g = llm.expert_weights "e.{e}.gate.weight" {num_experts = 4 : i64} : !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>
  %u = llm.expert_weights "e.{e}.up.weight" {num_experts = 4 : i64} : !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>
  %d = llm.expert_weights "e.{e}.down.weight" {num_experts = 4 : i64} : !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>
  %sg = llm.weight "s.gate.weight" : tensor<128x128xbf16>
  %su = llm.weight "s.up.weight" : tensor<128x128xbf16>
  %sd = llm.weight "s.down.weight" : tensor<128x128xbf16>
  %y = llm.moe_ffn %x, %router, %bias, %g, %u, %d, %sg, %su, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32}
      : (tensor<?x128xbf16>, tensor<4x128xf32>, tensor<4xf32>,
         !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<4x128x128xf8E4M3FN>, tensor<4x1x1xf32>, block = [128, 128]>,
         tensor<128x128xbf16>, tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Tests that the vocabulary splits: the embedding looks up in its half of
// the table and is summed, the lm_head computes its half of the logits and
// gathers them in rank order.
// CHECK-LABEL: @vocab
// CHECK: llm.weight "embed.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<256x8xbf16>
// CHECK: %[[E:.+]] = llm.embedding {{.*}} {vocab_shard = #llm.shard<tp, dim = 0, parts = 2>}
// CHECK: %[[H:.+]] = llm.all_reduce %[[E]] {group = #llm.rank_group<tp>, group_size = 2 : i64}
// CHECK: llm.weight "lm_head.weight" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<256x8xbf16>
// CHECK: %[[L:.+]] = llm.lm_head %[[H]], {{.*}} -> tensor<?x256xf32>
// CHECK: %[[G:.+]] = llm.all_gather %[[L]] {dim = 1 : i64, group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x256xf32>) -> tensor<?x512xf32>
// CHECK: return %[[G]]
func.func @vocab(%ids: tensor<?xi32>, %rows: tensor<?xi32>) -> tensor<?x512xf32> {
  %t = llm.weight "embed.weight" : tensor<512x8xbf16>
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<512x8xbf16>) -> tensor<?x8xbf16>
  %w = llm.weight "lm_head.weight" : tensor<512x8xbf16>
  %l = llm.lm_head %e, %w rows(%rows) : (tensor<?x8xbf16>, tensor<512x8xbf16>, tensor<?xi32>) -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
