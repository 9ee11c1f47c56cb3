// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that the MoE FFN binds stacked fp8 experts as data + scale globals
// (named by the expert pattern) and becomes its kernels: router logits per
// (token, expert), the top-k selection per token (i32 expert ids and fp32
// weights), the slots grouped by expert (moe_group: order and starts), the
// routed experts' SwiGLU and down projection each as a `_rows` kernel that
// allocates the result and a grouped kernel (llm.grouped_experts, for
// matrix-unit targets) that writes the same buffer, each working only in its
// range of slots (T * k below / from 64), then the shared expert's SwiGLU
// and its down projection summed with the routed slots, each a `_rows`
// kernel (below 64 rows) and one marked llm.dense_matmul (from 64 rows)
// writing the same buffer.
// CHECK-LABEL: func.func @moe
// CHECK: %[[LOGITS:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// CHECK: call @moe_router_0(%{{.*}}, %{{.*}}, %[[LOGITS]])
// CHECK: %[[CHOSEN:.*]] = memref.alloc(%{{.*}}) : memref<?x2xi32>
// CHECK: %[[WEIGHTS:.*]] = memref.alloc(%{{.*}}) : memref<?x2xf32>
// CHECK: call @moe_select_0(%[[LOGITS]], %{{.*}}, %[[CHOSEN]], %[[WEIGHTS]])
// CHECK: %[[ORDER:.*]] = memref.alloc(%{{.*}}) : memref<?x2xi32>
// CHECK: %[[STARTS:.*]] = memref.alloc() : memref<9xi32>
// CHECK: call @moe_group_0(%[[CHOSEN]], %[[ORDER]], %[[STARTS]])
// CHECK-DAG: memref.get_global @"experts.{e}.gate_proj.weight" : memref<8x256x128xf8E4M3FN>
// CHECK-DAG: memref.get_global @"experts.{e}.gate_proj.weight_scale_inv" : memref<8x2x1xf32>
// CHECK: %[[ACT:.*]] = memref.alloc(%{{.*}}) : memref<?x2x256xbf16>
// CHECK: call @moe_up_rows_0(%{{.*}}, %[[CHOSEN]], {{.*}}, %[[ACT]])
// CHECK: call @moe_up_0(%{{.*}}, %[[CHOSEN]], %[[ORDER]], %[[STARTS]], {{.*}}, %[[ACT]])
// CHECK: %[[ROUTED:.*]] = memref.alloc(%{{.*}}) : memref<?x2x128xbf16>
// CHECK: call @moe_down_rows_0(%[[ACT]], %[[CHOSEN]], %[[WEIGHTS]], {{.*}}, %[[ROUTED]])
// CHECK: call @moe_down_0(%[[ACT]], %[[CHOSEN]], %[[WEIGHTS]], %[[ORDER]], %[[STARTS]], {{.*}}, %[[ROUTED]])
// CHECK: %[[SHARED:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// CHECK: call @moe_shared_up_rows_0({{.*}}, %[[SHARED]])
// CHECK: call @moe_shared_up_0({{.*}}, %[[SHARED]])
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x128xbf16>
// CHECK: call @moe_shared_down_rows_0(%[[SHARED]], %[[ROUTED]], {{.*}}, %[[OUT]])
// CHECK: call @moe_shared_down_0(%[[SHARED]], %[[ROUTED]], {{.*}}, %[[OUT]])
// CHECK: func.func @moe_router_0
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0{{.*}}) to (%{{.*}}, %c8)
// CHECK: func.func @moe_select_0
// CHECK: arith.cmpf ogt
// CHECK: arith.index_cast %{{.*}} : index to i32
// CHECK: func.func @moe_group_0
// CHECK: func.func @moe_up_rows_0
// CHECK: arith.cmpi sge, %{{.*}}, %c64
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%{{.*}}, %c2{{.*}}, %c256)
// CHECK: func.func @moe_up_0({{.*}}) attributes {llm.grouped_experts = #llm.grouped_experts<up, top_k = 2, experts = 8, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>
// CHECK: func.func @moe_down_rows_0
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%{{.*}}, %c2{{.*}}, %c128)
// CHECK: func.func @moe_down_0({{.*}}) attributes {llm.grouped_experts = #llm.grouped_experts<down, top_k = 2, experts = 8
// CHECK: func.func @moe_shared_up_rows_0
// CHECK: arith.cmpi sge, %{{.*}}, %c64
// CHECK: arith.select %{{.*}}, %c0{{.*}}, %{{.*}} : index
// CHECK: func.func @moe_shared_up_0({{.*}}) attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = swiglu, min_rows = 64, swiglu_limit = 1.000000e+01 : f64>
// CHECK: arith.select %{{.*}}, %{{.*}}, %c0{{.*}} : index
// CHECK: func.func @moe_shared_down_rows_0
// CHECK: func.func @moe_shared_down_0({{.*}}) attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = add_slot_sum, min_rows = 64, top_k = 2>
func.func @moe(%x: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %r = llm.weight "gate.weight" : tensor<8x128xf32>
  %b = llm.weight "gate.e_score_correction_bias" : tensor<8xf32>
  %g = llm.expert_weights "experts.{e}.gate_proj.weight" {num_experts = 8 : i64}
      : !llm.fp8_weight<tensor<8x256x128xf8E4M3FN>, tensor<8x2x1xf32>, block = [128, 128]>
  %u = llm.expert_weights "experts.{e}.up_proj.weight" {num_experts = 8 : i64}
      : !llm.fp8_weight<tensor<8x256x128xf8E4M3FN>, tensor<8x2x1xf32>, block = [128, 128]>
  %d = llm.expert_weights "experts.{e}.down_proj.weight" {num_experts = 8 : i64}
      : !llm.fp8_weight<tensor<8x128x256xf8E4M3FN>, tensor<8x1x2xf32>, block = [128, 128]>
  %sg = llm.weight "shared.gate_proj.weight" : tensor<64x128xbf16>
  %su = llm.weight "shared.up_proj.weight" : tensor<64x128xbf16>
  %sd = llm.weight "shared.down_proj.weight" : tensor<128x64xbf16>
  %y = llm.moe_ffn %x, %r, %b, %g, %u, %d, %sg, %su, %sd
      {num_experts = 8 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32}
      : (tensor<?x128xbf16>, tensor<8x128xf32>, tensor<8xf32>,
         !llm.fp8_weight<tensor<8x256x128xf8E4M3FN>, tensor<8x2x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<8x256x128xf8E4M3FN>, tensor<8x2x1xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<8x128x256xf8E4M3FN>, tensor<8x1x2xf32>, block = [128, 128]>,
         tensor<64x128xbf16>, tensor<64x128xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Tests that the dense SwiGLU MLP is two pairs of kernels, parallel over
// (token, i) and (token, o), and clamps the gate from above only; in each
// pair the `_rows` kernel allocates the result, and the llm.dense_matmul one
// writes it too.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// CHECK: call @swiglu_up_rows_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[A]])
// CHECK: call @swiglu_up_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[A]])
// CHECK: %[[Y:.*]] = memref.alloc(%{{.*}}) : memref<?x32xbf16>
// CHECK: call @swiglu_down_rows_0(%[[A]], %{{.*}}, %[[Y]])
// CHECK: call @swiglu_down_0(%[[A]], %{{.*}}, %[[Y]])
// CHECK: func.func @swiglu_up_rows_0
// CHECK: scf.parallel
// CHECK: arith.minimumf %{{.*}}, %cst
// CHECK: func.func @swiglu_up_0({{.*}}) attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = swiglu, min_rows = 64, swiglu_limit = 1.000000e+01 : f64>
// CHECK: scf.parallel
// CHECK: arith.minimumf %{{.*}}, %cst
// CHECK: func.func @swiglu_down_rows_0
// CHECK: scf.parallel
// CHECK: func.func @swiglu_down_0({{.*}}) attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, min_rows = 64>
// CHECK: scf.parallel
func.func @mlp(%x: tensor<?x32xbf16>) -> tensor<?x32xbf16> {
  %g = llm.weight "mlp.gate_proj.weight" : tensor<64x32xbf16>
  %u = llm.weight "mlp.up_proj.weight" : tensor<64x32xbf16>
  %d = llm.weight "mlp.down_proj.weight" : tensor<32x64xbf16>
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32}
      : (tensor<?x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// -----

// Tests the streams form (an FFN sub-layer's mhc_post folded in by
// llm-fuse-hyper-connections): the down projection's kernels take R, post and
// comb after the weight and write the [T, 4, D] streams; the matmul half's
// info carries hc_mult.
// CHECK-LABEL: func.func @mlp_streams
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x4x32xbf16>
// CHECK: call @swiglu_down_rows_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]])
// CHECK: call @swiglu_down_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]])
// CHECK: func.func @swiglu_down_rows_0({{.*}}: memref<?x64xbf16>, {{.*}}: memref<32x64xbf16>, {{.*}}: memref<?x4x32xbf16>, {{.*}}: memref<?x4xf32>, {{.*}}: memref<?x4x4xf32>, {{.*}}: memref<?x4x32xbf16>)
// CHECK: func.func @swiglu_down_0({{.*}}) attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, min_rows = 64, hc_mult = 4>
func.func @mlp_streams(%x: tensor<?x32xbf16>, %r: tensor<?x4x32xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> tensor<?x4x32xbf16> {
  %g = llm.weight "mlp.gate_proj.weight" : tensor<64x32xbf16>
  %u = llm.weight "mlp.up_proj.weight" : tensor<64x32xbf16>
  %d = llm.weight "mlp.down_proj.weight" : tensor<32x64xbf16>
  %y = llm.swiglu_mlp %x, %g, %u, %d streams(%r, %post, %comb) {swiglu_limit = 10.0 : f32}
      : (tensor<?x32xbf16>, tensor<64x32xbf16>, tensor<64x32xbf16>, tensor<32x64xbf16>,
         tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x32xbf16>
  return %y : tensor<?x4x32xbf16>
}
