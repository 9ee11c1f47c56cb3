// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that llm.all_reduce becomes a call of a private collective
// declaration over the converted input (send) and a new allocation (recv).
// CHECK-LABEL: func.func @all_reduce
// CHECK: %[[SEND:.*]] = bufferization.to_buffer
// CHECK: %[[RECV:.*]] = memref.alloc(%{{.*}}) : memref<?x8xbf16>
// CHECK: call @strata_all_reduce_0(%[[SEND]], %[[RECV]])
// CHECK: func.func private @strata_all_reduce_0(memref<?x8xbf16>, memref<?x8xbf16>)
// CHECK-SAME: llm.collective = {dim = 0 : i64, group = #llm.rank_group<tp>, kind = "all_reduce"}
func.func @all_reduce(%p: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return %y : tensor<?x8xbf16>
}

// -----

// Tests that the streams form is the bare reduction, then mHC's residual
// write (the mhc_post kernel reads the reduced sum).
// CHECK-LABEL: func.func @all_reduce_streams
// CHECK: %[[RECV:.*]] = memref.alloc(%{{.*}}) : memref<?x8xbf16>
// CHECK: call @strata_all_reduce_0(%{{.*}}, %[[RECV]])
// CHECK: call @mhc_post_0(%[[RECV]],
// CHECK: func.func private @strata_all_reduce_0(memref<?x8xbf16>, memref<?x8xbf16>) attributes {llm.collective = {dim = 0 : i64, group = #llm.rank_group<world>, kind = "all_reduce"}}
func.func @all_reduce_streams(%p: tensor<?x8xbf16>, %r: tensor<?x4x8xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> tensor<?x4x8xbf16> {
  %y = llm.all_reduce %p streams(%r, %post, %comb) {group = #llm.rank_group<world>, group_size = 4 : i64}
      : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return %y : tensor<?x4x8xbf16>
}

// -----

// Tests that llm.all_gather keeps its dimension on the declaration.
// CHECK-LABEL: func.func @all_gather
// CHECK: memref.alloc(%{{.*}}) : memref<?x512xf32>
// CHECK: call @strata_all_gather_0
// CHECK: func.func private @strata_all_gather_0(memref<?x256xf32>, memref<?x512xf32>)
// CHECK-SAME: llm.collective = {dim = 1 : i64, group = #llm.rank_group<tp>, kind = "all_gather"}
func.func @all_gather(%l: tensor<?x256xf32>) -> tensor<?x512xf32> {
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 2 : i64, dim = 1 : i64} : (tensor<?x256xf32>) -> tensor<?x512xf32>
  return %g : tensor<?x512xf32>
}

// -----

// Tests that a sharded weight's global carries its shards for the manifest.
// CHECK: memref.global constant @w : memref<4x8xbf16> {llm.shards = [#llm.shard<tp, dim = 0, parts = 2>]}
// CHECK-LABEL: func.func @sharded_weight
// CHECK: memref.get_global @w : memref<4x8xbf16>
func.func @sharded_weight(%x: tensor<?x8xbf16>) -> tensor<?x4xbf16> {
  %w = llm.weight "w" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x8xbf16>
  %y = llm.linear %x, %w : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  return %y : tensor<?x4xbf16>
}

// -----

// Tests that the vocabulary-parallel embedding takes the rank's tp
// coordinate and stores zeros for ids outside its rows.
// CHECK-LABEL: func.func @vocab_shard
// CHECK: %[[K:.*]] = call @strata_rank_coordinate_0() : () -> i64
// CHECK: call @embedding_vocab_shard_0(%{{[^,]*}}, %{{[^,]*}}, %[[K]], %{{[^,]*}})
// CHECK: func.func private @strata_rank_coordinate_0() -> i64 attributes {llm.rank_coordinate = #llm.rank_group<tp>}
// CHECK: func.func @embedding_vocab_shard_0(%{{.*}}: memref<?xi32>, %{{.*}}: memref<256x8xbf16>, %[[C:.*]]: i64, %{{.*}}: memref<?x8xbf16>)
// CHECK: arith.index_cast %[[C]]
// CHECK: arith.select
func.func @vocab_shard(%ids: tensor<?xi32>, %table: tensor<256x8xbf16>) -> tensor<?x8xbf16> {
  %e = llm.embedding %ids, %table {vocab_shard = #llm.shard<tp, dim = 0, parts = 2>} : (tensor<?xi32>, tensor<256x8xbf16>) -> tensor<?x8xbf16>
  return %e : tensor<?x8xbf16>
}

// -----

// Tests that the expert-parallel MoE passes the rank's ep coordinate to the
// routed kernels (both forms of up and down), which compute only the slots
// of the rank's experts; the grouped ones name the experts of the rank's
// weights (`rank_experts`) for the GPU targets' matrix kernels.
// CHECK-LABEL: func.func @expert_shard
// CHECK: %[[K:.*]] = call @strata_rank_coordinate_0() : () -> i64
// CHECK: call @moe_up_rows_0(%{{[^,]*}}, %{{[^,]*}}, %[[K]],
// CHECK: call @moe_up_0(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[K]],
// CHECK: call @moe_down_rows_0(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[K]],
// CHECK: call @moe_down_0(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[K]],
// CHECK: func.func private @strata_rank_coordinate_0() -> i64 attributes {llm.rank_coordinate = #llm.rank_group<ep>}
// CHECK: func.func @moe_up_rows_0(
// CHECK: scf.if
// CHECK: func.func @moe_up_0({{.*}}: memref<5xi32>, %{{.*}}: i64, {{.*}}) attributes {llm.grouped_experts = #llm.grouped_experts<up, top_k = {{[0-9]+}}, experts = 4, min_slots = 64, swiglu_limit = {{.*}}, rank_experts = 2>
// CHECK: func.func @moe_down_0({{.*}}) attributes {llm.grouped_experts = #llm.grouped_experts<down, top_k = {{[0-9]+}}, experts = 4, min_slots = 64, swiglu_limit = {{.*}}, rank_experts = 2>
func.func @expert_shard(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %g: tensor<2x32x64xbf16>, %d: tensor<2x64x32xbf16>, %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) -> tensor<?x64xbf16> {
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 0, parts = 2>}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>,
         tensor<2x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
