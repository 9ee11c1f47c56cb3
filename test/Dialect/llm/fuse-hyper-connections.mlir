// RUN: strata-opt --split-input-file --llm-fuse-hyper-connections %s | FileCheck %s

// Tests that a sub-layer's input norm folds into its mhc_pre (the norm weight,
// read after mhc_pre, moves up) and its output projection into its mhc_post.
// CHECK-LABEL: @sub_layer
// CHECK: %[[W:.+]] = llm.weight "n.weight"
// CHECK: %[[X:.+]], %[[POST:.+]], %[[COMB:.+]] = llm.mhc_pre %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} x_norm(%[[W]])
// CHECK-SAME: x_norm_eps = 9.99999974E-6 : f32
// CHECK-NOT: llm.rms_norm
// CHECK: %[[O:.+]] = llm.linear %[[X]], %{{.*}}
// CHECK: %[[WO:.+]] = llm.weight "o.weight"
// CHECK-NOT: llm.linear
// CHECK: llm.mhc_post %[[O]], %{{.*}}, %[[POST]], %[[COMB]] projection(%[[WO]]) {hc_mult = 4 : i64}
// CHECK-SAME: (tensor<?x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<8x16xbf16>) -> tensor<?x4x8xbf16>
func.func @sub_layer(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) -> tensor<?x4x8xbf16> {
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  %w = llm.weight "n.weight" : tensor<8xbf16>
  %xn = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
  %wi = llm.weight "i.weight" : tensor<16x8xbf16>
  %o = llm.linear %xn, %wi : (tensor<?x8xbf16>, tensor<16x8xbf16>) -> tensor<?x16xbf16>
  %wo = llm.weight "o.weight" : tensor<8x16xbf16>
  %y = llm.linear %o, %wo : (tensor<?x16xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return %r2 : tensor<?x4x8xbf16>
}

// -----

// Tests that nothing folds where the intermediate value has another use (the
// work would be done twice) or the norm is gated.
// CHECK-LABEL: @other_uses
// CHECK: llm.mhc_pre %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK: llm.rms_norm
// CHECK: llm.linear
// CHECK: llm.mhc_post %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {hc_mult = 4 : i64}
// CHECK: llm.mhc_pre %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK: llm.rms_norm {{.*}} gate(
func.func @other_uses(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>, %g: tensor<?x8xbf16>) -> (tensor<?x4x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>) {
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  %w = llm.weight "n.weight" : tensor<8xbf16>
  %xn = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>, tensor<8xbf16>) -> tensor<?x8xbf16>
  %wo = llm.weight "o.weight" : tensor<8x8xbf16>
  %y = llm.linear %xn, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  %x2, %post2, %comb2 = llm.mhc_pre %r2, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  %gated = llm.rms_norm %x2 weight(%w) gate(%g) {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return %r2, %x, %y, %gated : tensor<?x4x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>
}

// -----

// Tests that an fp8 block-scaled projection folds too.
// CHECK-LABEL: @fp8_projection
// CHECK: llm.mhc_post %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} projection(%{{[a-z0-9_]+}}) {hc_mult = 4 : i64}
// CHECK-SAME: !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
func.func @fp8_projection(%o: tensor<?x256xbf16>, %r: tensor<?x4x128xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> tensor<?x4x128xbf16> {
  %wo = llm.weight "o.weight" : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %o, %wo : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64} : (tensor<?x128xbf16>, tensor<?x4x128xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x128xbf16>
  return %r2 : tensor<?x4x128xbf16>
}

// -----

// Tests that an FFN sub-layer's mhc_post folds into the FFN op (streams form,
// result the new streams), for the dense MLP and the MoE.
// CHECK-LABEL: @ffn_sub_layers
// CHECK: %[[R1:.+]] = llm.swiglu_mlp %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} streams(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) {swiglu_limit = 1.000000e+01 : f32}
// CHECK-SAME: -> tensor<?x4x8xbf16>
// CHECK: llm.moe_ffn {{.*}} streams(%[[R1]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
// CHECK-SAME: -> tensor<?x4x8xbf16>
// CHECK-NOT: llm.mhc_post
func.func @ffn_sub_layers(%r: tensor<?x4x8xbf16>, %x: tensor<?x8xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>,
                          %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>,
                          %router: tensor<4x8xf32>, %bias: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>,
                          %ed: tensor<4x8x16xbf16>) -> tensor<?x4x8xbf16> {
  %y = llm.swiglu_mlp %x, %wg, %wu, %wd {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  %r1 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  %m = llm.moe_ffn %x, %router, %bias, %eg, %eu, %ed, %wg, %wu, %wd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  %r2 = llm.mhc_post %m, %r1, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return %r2 : tensor<?x4x8xbf16>
}

// -----

// Tests that the residual write of a tensor-parallel sub-layer folds into
// the all-reduce of its partial output (llm-shard-model's form), and that
// an all-reduce whose sum has another use keeps its mhc_post.
// CHECK-LABEL: @all_reduce_residual_write
// CHECK: %[[P:.+]] = llm.linear
// CHECK-NOT: llm.mhc_post
// CHECK: %[[R2:.+]] = llm.all_reduce %[[P]] streams(%{{.*}}, %{{.*}}, %{{.*}}) {group = #llm.rank_group<tp>, group_size = 2 : i64}
// CHECK-SAME: -> tensor<?x4x8xbf16>
// CHECK: %[[SUM:.+]] = llm.all_reduce %{{.*}} {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
// CHECK: llm.mhc_post %[[SUM]], %[[R2]]
func.func @all_reduce_residual_write(%o: tensor<?x8xbf16>, %r: tensor<?x4x8xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> (tensor<?x4x8xbf16>, tensor<?x8xbf16>) {
  %wo = llm.weight "o.weight" {shards = [#llm.shard<tp, dim = 1, parts = 2>]} : tensor<8x8xbf16>
  %p = llm.linear %o, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  %y2 = llm.all_reduce %o {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  %r3 = llm.mhc_post %y2, %r2, %post, %comb {hc_mult = 4 : i64} : (tensor<?x8xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return %r3, %y2 : tensor<?x4x8xbf16>, tensor<?x8xbf16>
}
