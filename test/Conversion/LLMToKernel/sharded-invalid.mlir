// RUN: strata-opt --split-input-file --convert-llm-to-kernel --verify-diagnostics %s

// Tests that tensor- and expert-parallel IR (llm-shard-model) is refused by
// name rather than lowered as if it ran on one rank: a collective, a sharded
// weight, and the vocabulary-parallel embedding.

func.func @all_reduce(%p: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{convert-llm-to-kernel: tensor- and expert-parallel programs (llm-shard-model) have no kernel lowering yet}}
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

func.func @sharded_weight(%x: tensor<?x8xbf16>) -> tensor<?x4xbf16> {
  // expected-error@+1 {{convert-llm-to-kernel: tensor- and expert-parallel programs (llm-shard-model) have no kernel lowering yet}}
  %w = llm.weight "w" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x8xbf16>
  %y = llm.linear %x, %w : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  return %y : tensor<?x4xbf16>
}

// -----

func.func @vocab_shard(%ids: tensor<?xi32>, %table: tensor<256x8xbf16>) -> tensor<?x8xbf16> {
  // expected-error@+1 {{convert-llm-to-kernel: tensor- and expert-parallel programs (llm-shard-model) have no kernel lowering yet}}
  %e = llm.embedding %ids, %table {vocab_shard = #llm.shard<tp, dim = 0, parts = 2>} : (tensor<?xi32>, tensor<256x8xbf16>) -> tensor<?x8xbf16>
  return %e : tensor<?x8xbf16>
}

// -----

func.func @all_gather(%l: tensor<?x256xf32>) -> tensor<?x512xf32> {
  // expected-error@+1 {{convert-llm-to-kernel: tensor- and expert-parallel programs (llm-shard-model) have no kernel lowering yet}}
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 2 : i64, dim = 1 : i64} : (tensor<?x256xf32>) -> tensor<?x512xf32>
  return %g : tensor<?x512xf32>
}

// -----

func.func @expert_shard(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %g: tensor<2x32x64xbf16>, %d: tensor<2x64x32xbf16>, %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) -> tensor<?x64xbf16> {
  // expected-error@+1 {{convert-llm-to-kernel: tensor- and expert-parallel programs (llm-shard-model) have no kernel lowering yet}}
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 0, parts = 2>}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>,
         tensor<2x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
