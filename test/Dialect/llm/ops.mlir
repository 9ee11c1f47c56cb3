// RUN: strata-opt --split-input-file %s | strata-opt --split-input-file | FileCheck %s

// Tests that llm.weight round-trips for bf16, f32 and fp8 block-scaled weights.
// CHECK-LABEL: @weight
func.func @weight() -> (tensor<4096xbf16>, tensor<24x16384xf32>,
    !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>) {
  // CHECK: llm.weight "model.language_model.norm.weight" : tensor<4096xbf16>
  %n = llm.weight "model.language_model.norm.weight" : tensor<4096xbf16>
  // CHECK: llm.weight "model.language_model.layers.0.hc_attn_fn" : tensor<24x16384xf32>
  %fn = llm.weight "model.language_model.layers.0.hc_attn_fn" : tensor<24x16384xf32>
  // CHECK: llm.weight "model.language_model.layers.3.self_attn.q_a_proj.weight" : !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
  %w = llm.weight "model.language_model.layers.3.self_attn.q_a_proj.weight"
      : !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
  return %n, %fn, %w : tensor<4096xbf16>, tensor<24x16384xf32>,
      !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
}

// -----

// Tests that llm.expert_weights round-trips with stacked fp8 experts.
// CHECK-LABEL: @expert_weights
func.func @expert_weights() -> !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]> {
  // CHECK: llm.expert_weights "model.language_model.layers.3.mlp.experts.{e}.gate_proj.weight" {num_experts = 288 : i64}
  %g = llm.expert_weights "model.language_model.layers.3.mlp.experts.{e}.gate_proj.weight" {num_experts = 288 : i64}
      : !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>
  return %g : !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>
}

// -----

// Tests that llm.embedding round-trips.
// CHECK-LABEL: @embedding
func.func @embedding(%ids: tensor<?xi32>, %table: tensor<154880x4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: llm.embedding %{{.*}}, %{{.*}} : (tensor<?xi32>, tensor<154880x4096xbf16>) -> tensor<?x4096xbf16>
  %e = llm.embedding %ids, %table : (tensor<?xi32>, tensor<154880x4096xbf16>) -> tensor<?x4096xbf16>
  return %e : tensor<?x4096xbf16>
}

// -----

// Tests that llm.position_mask round-trips.
// CHECK-LABEL: @position_mask
func.func @position_mask(%e: tensor<?x4096xbf16>, %pos: tensor<?xi32>) -> tensor<?x4096xbf16> {
  // CHECK: llm.position_mask %{{.*}}, %{{.*}} {position = 0 : i64}
  %m = llm.position_mask %e, %pos {position = 0 : i64} : (tensor<?x4096xbf16>, tensor<?xi32>) -> tensor<?x4096xbf16>
  return %m : tensor<?x4096xbf16>
}

// -----

// Tests that llm.rms_norm round-trips weighted, unweighted and gated.
// CHECK-LABEL: @rms_norm
func.func @rms_norm(%x: tensor<?x4096xbf16>, %w: tensor<4096xbf16>, %o: tensor<?x64x128xf32>,
                    %wn: tensor<128xbf16>, %gate: tensor<?x64x128xf32>)
    -> (tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x64x128xbf16>) {
  // CHECK: llm.rms_norm %{{.*}} weight(%{{.*}}) {eps = 9.99999974E-6 : f32}
  %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
  // CHECK: llm.rms_norm %{{.*}} {eps = 9.99999974E-6 : f32} : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %u = llm.rms_norm %x {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  // CHECK: llm.rms_norm %{{.*}} weight(%{{.*}}) gate(%{{.*}})
  %g = llm.rms_norm %o weight(%wn) gate(%gate) {eps = 1.0e-05 : f32}
      : (tensor<?x64x128xf32>, tensor<128xbf16>, tensor<?x64x128xf32>) -> tensor<?x64x128xbf16>
  return %y, %u, %g : tensor<?x4096xbf16>, tensor<?x4096xbf16>, tensor<?x64x128xbf16>
}

// -----

// Tests that llm.layer_norm round-trips.
// CHECK-LABEL: @layer_norm
func.func @layer_norm(%k: tensor<?x128xbf16>, %w: tensor<128xbf16>, %b: tensor<128xbf16>) -> tensor<?x128xbf16> {
  // CHECK: llm.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {eps = 9.99999997E-7 : f32}
  %y = llm.layer_norm %k, %w, %b {eps = 1.0e-06 : f32}
      : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// Tests that llm.linear round-trips with bf16 and fp8 block-scaled weights and an f32 result.
// CHECK-LABEL: @linear
func.func @linear(%x: tensor<?x4096xbf16>, %wk: tensor<8192x4096xbf16>,
                  %wqa: !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>,
                  %wr: tensor<288x4096xf32>)
    -> (tensor<?x8192xbf16>, tensor<?x1536xbf16>, tensor<?x288xf32>) {
  // CHECK: llm.linear %{{.*}}, %{{.*}} : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
  %k = llm.linear %x, %wk : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
  // CHECK: llm.linear %{{.*}}, %{{.*}} : (tensor<?x4096xbf16>, !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>) -> tensor<?x1536xbf16>
  %q = llm.linear %x, %wqa : (tensor<?x4096xbf16>,
      !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>) -> tensor<?x1536xbf16>
  // CHECK: llm.linear %{{.*}}, %{{.*}} : (tensor<?x4096xbf16>, tensor<288x4096xf32>) -> tensor<?x288xf32>
  %l = llm.linear %x, %wr : (tensor<?x4096xbf16>, tensor<288x4096xf32>) -> tensor<?x288xf32>
  return %k, %q, %l : tensor<?x8192xbf16>, tensor<?x1536xbf16>, tensor<?x288xf32>
}

// -----

// Tests that llm.argmax round-trips.
// CHECK-LABEL: @argmax
func.func @argmax(%l: tensor<?x154880xf32>) -> tensor<?xi32> {
  // CHECK: llm.argmax %{{.*}} : (tensor<?x154880xf32>) -> tensor<?xi32>
  %g = llm.argmax %l : (tensor<?x154880xf32>) -> tensor<?xi32>
  return %g : tensor<?xi32>
}

// -----

// Tests that llm.lm_head round-trips.
// CHECK-LABEL: @lm_head
func.func @lm_head(%z: tensor<?x4096xbf16>, %w: tensor<154880x4096xbf16>, %rows: tensor<?xi32>) -> tensor<?x154880xf32> {
  // CHECK: llm.lm_head %{{.*}}, %{{.*}} rows(%{{.*}}) : (tensor<?x4096xbf16>, tensor<154880x4096xbf16>, tensor<?xi32>) -> tensor<?x154880xf32>
  %l = llm.lm_head %z, %w rows(%rows) : (tensor<?x4096xbf16>, tensor<154880x4096xbf16>, tensor<?xi32>) -> tensor<?x154880xf32>
  return %l : tensor<?x154880xf32>
}

// -----

// Tests that llm.hc_expand and llm.hc_collapse round-trip.
// CHECK-LABEL: @hc_expand_collapse
func.func @hc_expand_collapse(%e: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: %[[R:.+]] = llm.hc_expand %{{.*}} {hc_mult = 4 : i64} : (tensor<?x4096xbf16>) -> tensor<?x4x4096xbf16>
  %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x4096xbf16>) -> tensor<?x4x4096xbf16>
  // CHECK: llm.hc_collapse %[[R]] {hc_mult = 4 : i64} : (tensor<?x4x4096xbf16>) -> tensor<?x4096xbf16>
  %h = llm.hc_collapse %r {hc_mult = 4 : i64} : (tensor<?x4x4096xbf16>) -> tensor<?x4096xbf16>
  return %h : tensor<?x4096xbf16>
}

// -----

// Tests that llm.mhc_pre and llm.mhc_post round-trip around a sub-layer.
// CHECK-LABEL: @mhc
func.func @mhc(%r: tensor<?x4x4096xbf16>, %fn: tensor<24x16384xf32>, %base: tensor<24xf32>,
               %scale: tensor<3xf32>, %y: tensor<?x4096xbf16>) -> (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>) {
  // CHECK: %[[X:.+]], %[[POST:.+]], %[[COMB:.+]] = llm.mhc_pre
  // CHECK-SAME: hc_mult = 4 : i64
  // CHECK-SAME: sinkhorn_iters = 20 : i64
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale
      {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
       sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32}
      : (tensor<?x4x4096xbf16>, tensor<24x16384xf32>, tensor<24xf32>, tensor<3xf32>)
      -> (tensor<?x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  // CHECK: llm.mhc_post %{{.*}}, %{{.*}}, %[[POST]], %[[COMB]] {hc_mult = 4 : i64}
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64}
      : (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4096xbf16>
  return %x, %r2 : tensor<?x4096xbf16>, tensor<?x4x4096xbf16>
}

// -----

// Tests that the fused forms round-trip: mhc_pre with the sub-layer's input
// norm (x_norm) and mhc_post with its output projection (bf16 and fp8).
// CHECK-LABEL: @mhc_fused
func.func @mhc_fused(%r: tensor<?x4x4096xbf16>, %fn: tensor<24x16384xf32>, %base: tensor<24xf32>,
                     %scale: tensor<3xf32>, %w: tensor<4096xbf16>, %o: tensor<?x8192xbf16>,
                     %wo: tensor<4096x8192xbf16>,
                     %wq: !llm.fp8_weight<tensor<4096x8192xf8E4M3FN>, tensor<32x64xf32>, block = [128, 128]>)
    -> (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4x4096xbf16>) {
  // CHECK: llm.mhc_pre %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} x_norm(%{{[a-z0-9_]+}})
  // CHECK-SAME: x_norm_eps = 9.99999974E-6 : f32
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale x_norm(%w)
      {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
       sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32, x_norm_eps = 1.0e-05 : f32}
      : (tensor<?x4x4096xbf16>, tensor<24x16384xf32>, tensor<24xf32>, tensor<3xf32>, tensor<4096xbf16>)
      -> (tensor<?x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  // CHECK: llm.mhc_post %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} projection(%{{[a-z0-9_]+}}) {hc_mult = 4 : i64}
  %r2 = llm.mhc_post %o, %r, %post, %comb projection(%wo) {hc_mult = 4 : i64}
      : (tensor<?x8192xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<4096x8192xbf16>) -> tensor<?x4x4096xbf16>
  // CHECK: llm.mhc_post {{.*}} projection(%{{[a-z0-9_]+}}) {hc_mult = 4 : i64}
  // CHECK-SAME: !llm.fp8_weight
  %r3 = llm.mhc_post %o, %r2, %post, %comb projection(%wq) {hc_mult = 4 : i64}
      : (tensor<?x8192xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>,
         !llm.fp8_weight<tensor<4096x8192xf8E4M3FN>, tensor<32x64xf32>, block = [128, 128]>) -> tensor<?x4x4096xbf16>
  return %x, %r2, %r3 : tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4x4096xbf16>
}

// -----

// Tests that llm.kda_attention round-trips in both modes with its state types.
// CHECK-LABEL: @kda_attention
func.func @kda_attention(%q: tensor<?x8192xbf16>, %k: tensor<?x8192xbf16>, %v: tensor<?x8192xbf16>,
    %f: tensor<?x8192xbf16>, %b: tensor<?x64xbf16>, %g: tensor<?x8192xbf16>,
    %qc: tensor<8192x1x4xbf16>, %kc: tensor<8192x1x4xbf16>, %vc: tensor<8192x1x4xbf16>,
    %alog: tensor<64xf32>, %dtb: tensor<8192xf32>, %on: tensor<128xbf16>,
    %s0: !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
    %c0: !llm.conv_state<channels = 24576, width = 3, bf16>,
    %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %tokslots: tensor<?xi32>) -> tensor<?x8192xbf16> {
  // CHECK: %{{.+}}, %[[S1:.+]], %[[C1:.+]] = llm.kda_attention
  // CHECK-SAME: mode = #llm.kda_mode<chunked>
  // CHECK-SAME: !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>
  // CHECK-SAME: !llm.conv_state<channels = 24576, width = 3, bf16>
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 64 : i64, head_dim = 128 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.0883883461 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>,
         tensor<?x64xbf16>, tensor<?x8192xbf16>, tensor<8192x1x4xbf16>, tensor<8192x1x4xbf16>,
         tensor<8192x1x4xbf16>, tensor<64xf32>, tensor<8192xf32>, tensor<128xbf16>,
         !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
         !llm.conv_state<channels = 24576, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8192xbf16>, !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
          !llm.conv_state<channels = 24576, width = 3, bf16>)
  // The second with per-token state slots (the optional last operand).
  // CHECK: llm.kda_attention
  // CHECK-SAME: %[[S1]], %[[C1]], %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %{{[^ ]+}} {
  // CHECK-SAME: mode = #llm.kda_mode<recurrent>
  // CHECK-SAME: tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
  %o2, %s2, %c2 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s1, %c1, %pos, %starts, %slots, %slots, %tokslots
      {heads = 64 : i64, head_dim = 128 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.0883883461 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<recurrent>, chunk_size = 64 : i64}
      : (tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>,
         tensor<?x64xbf16>, tensor<?x8192xbf16>, tensor<8192x1x4xbf16>, tensor<8192x1x4xbf16>,
         tensor<8192x1x4xbf16>, tensor<64xf32>, tensor<8192xf32>, tensor<128xbf16>,
         !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
         !llm.conv_state<channels = 24576, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
         tensor<?xi32>)
      -> (tensor<?x8192xbf16>, !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
          !llm.conv_state<channels = 24576, width = 3, bf16>)
  return %o2 : tensor<?x8192xbf16>
}

// -----

// Tests that the latent cache write, gather and llm.mla_attention round-trip, with a padded pool.
// CHECK-LABEL: @mla_attention
func.func @mla_attention(%q: tensor<?x64x256xbf16>, %kvb: tensor<32768x512xbf16>,
    %c0: !llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>, %ckv: tensor<?x512xbf16>,
    %sel: tensor<?x2176xi32>, %cnt: tensor<?xi32>, %pos: tensor<?xi32>, %starts: tensor<?xi32>,
    %bt: tensor<?x?xi32>) -> (tensor<?x64x256xbf16>, tensor<?x2176x512xbf16>) {
  // CHECK: %[[C1:.+]] = llm.latent_cache_write %{{.*}} : (!llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>, tensor<?x512xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>
  %c1 = llm.latent_cache_write %c0, %ckv, %pos, %starts, %bt
      : (!llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>, tensor<?x512xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>
  // CHECK: llm.mla_attention %{{.*}}, %{{.*}}, %[[C1]]
  // CHECK-SAME: softmax_scale = 6.250000e-02 : f32
  %o = llm.mla_attention %q, %kvb, %c1, %sel, %cnt, %starts, %bt
      {heads = 64 : i64, qk_head_dim = 256 : i64, v_head_dim = 256 : i64,
       kv_lora_rank = 512 : i64, softmax_scale = 6.250000e-02 : f32}
      : (tensor<?x64x256xbf16>, tensor<32768x512xbf16>,
         !llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>,
         tensor<?x2176xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x64x256xbf16>
  // CHECK: llm.latent_cache_gather %[[C1]]
  %rows = llm.latent_cache_gather %c1, %sel, %starts, %bt
      : (!llm.latent_pool<page_size = 64, width = 512, pad = 64, bf16>, tensor<?x2176xi32>,
         tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2176x512xbf16>
  return %o, %rows : tensor<?x64x256xbf16>, tensor<?x2176x512xbf16>
}

// -----

// Tests that the kpool chain round-trips in layer order: compress, ring write, index write, select.
// CHECK-LABEL: @kpool_indexer
func.func @kpool_indexer(%k: tensor<?x128xbf16>, %g: tensor<?x128xbf16>, %ape: tensor<4x128xbf16>,
    %r0: !llm.tail_ring<depth = 16, width = 128, bf16>,
    %p0: !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>,
    %iq: tensor<?x32x128xbf16>, %iw: tensor<?x32xf32>, %pos: tensor<?xi32>, %starts: tensor<?xi32>,
    %slots: tensor<?xi32>, %bt: tensor<?x?xi32>) -> (tensor<?x2176xi32>, tensor<?xi32>) {
  // CHECK: %[[PK:.+]] = llm.kpool_compress %{{.*}} {kpool = 4 : i64}
  %pk = llm.kpool_compress %k, %g, %ape, %r0, %pos, %starts, %slots {kpool = 4 : i64}
      : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<4x128xbf16>,
         !llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> tensor<?x128xf32>
  // CHECK: llm.tail_ring_write
  %r1 = llm.tail_ring_write %r0, %k, %g, %pos, %starts, %slots
      : (!llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?x128xbf16>, tensor<?x128xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !llm.tail_ring<depth = 16, width = 128, bf16>
  // CHECK: %[[P1:.+]] = llm.index_cache_write %{{.*}}, %[[PK]]
  %p1 = llm.index_cache_write %p0, %pk, %pos, %starts, %bt
      : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>, tensor<?x128xf32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>
  // CHECK: llm.kpool_indexer %{{.*}}, %{{.*}}, %[[P1]]
  // CHECK-SAME: topk = 2048 : i64
  %sel, %cnt = llm.kpool_indexer %iq, %iw, %p1, %pos, %starts, %bt
      {topk = 2048 : i64, kpool = 4 : i64, heads = 32 : i64, head_dim = 128 : i64,
       scale = 0.015625 : f32}
      : (tensor<?x32x128xbf16>, tensor<?x32xf32>,
         !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x2176xi32>, tensor<?xi32>)
  return %sel, %cnt : tensor<?x2176xi32>, tensor<?xi32>
}

// -----

// Tests that the dense indexer (kpool = 1: per-token bf16 keys, no compression, no ring) round-trips.
// CHECK-LABEL: @dense_indexer
func.func @dense_indexer(%k: tensor<?x128xbf16>,
    %p0: !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>,
    %iq: tensor<?x32x128xbf16>, %iw: tensor<?x32xf32>, %pos: tensor<?xi32>, %starts: tensor<?xi32>,
    %bt: tensor<?x?xi32>) -> (tensor<?x2048xi32>, tensor<?xi32>) {
  // CHECK: %[[P1:.+]] = llm.index_cache_write %{{.*}} : (!llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>, tensor<?x128xbf16>
  %p1 = llm.index_cache_write %p0, %k, %pos, %starts, %bt
      : (!llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>, tensor<?x128xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>
  // CHECK: llm.kpool_indexer %{{.*}}, %{{.*}}, %[[P1]]
  // CHECK-SAME: kpool = 1 : i64
  %sel, %cnt = llm.kpool_indexer %iq, %iw, %p1, %pos, %starts, %bt
      {topk = 2048 : i64, kpool = 1 : i64, heads = 32 : i64, head_dim = 128 : i64,
       scale = 0.015625 : f32}
      : (tensor<?x32x128xbf16>, tensor<?x32xf32>,
         !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x2048xi32>, tensor<?xi32>)
  return %sel, %cnt : tensor<?x2048xi32>, tensor<?xi32>
}

// -----

// Tests that the index cache and tail ring gathers round-trip (bf16 index pool).
// CHECK-LABEL: @cache_gathers
func.func @cache_gathers(%p: !llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>,
    %r: !llm.tail_ring<depth = 4, width = 128, bf16>, %ids: tensor<?x?xi32>, %starts: tensor<?xi32>,
    %slots: tensor<?xi32>, %bt: tensor<?x?xi32>) -> (tensor<?x?x128xf32>, tensor<?x2x4x128xbf16>) {
  // CHECK: llm.index_cache_gather %{{.*}} : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  %rows = llm.index_cache_gather %p, %ids, %starts, %bt
      : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>, tensor<?x?xi32>,
         tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
  // CHECK: llm.tail_ring_gather %{{.*}} : (!llm.tail_ring<depth = 4, width = 128, bf16>, tensor<?xi32>) -> tensor<?x2x4x128xbf16>
  %ring = llm.tail_ring_gather %r, %slots
      : (!llm.tail_ring<depth = 4, width = 128, bf16>, tensor<?xi32>) -> tensor<?x2x4x128xbf16>
  return %rows, %ring : tensor<?x?x128xf32>, tensor<?x2x4x128xbf16>
}

// -----

// Tests that llm.swiglu_mlp round-trips with fp8 weights.
// CHECK-LABEL: @swiglu_mlp
func.func @swiglu_mlp(%x: tensor<?x4096xbf16>,
    %wg: !llm.fp8_weight<tensor<12288x4096xf8E4M3FN>, tensor<96x32xf32>, block = [128, 128]>,
    %wu: !llm.fp8_weight<tensor<12288x4096xf8E4M3FN>, tensor<96x32xf32>, block = [128, 128]>,
    %wd: !llm.fp8_weight<tensor<4096x12288xf8E4M3FN>, tensor<32x96xf32>, block = [128, 128]>) -> tensor<?x4096xbf16> {
  // CHECK: llm.swiglu_mlp %{{.*}} {swiglu_limit = 1.000000e+01 : f32}
  %y = llm.swiglu_mlp %x, %wg, %wu, %wd {swiglu_limit = 10.0 : f32}
      : (tensor<?x4096xbf16>,
         !llm.fp8_weight<tensor<12288x4096xf8E4M3FN>, tensor<96x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<12288x4096xf8E4M3FN>, tensor<96x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<4096x12288xf8E4M3FN>, tensor<32x96xf32>, block = [128, 128]>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// -----

// Tests that llm.moe_ffn round-trips with stacked fp8 experts.
// CHECK-LABEL: @moe_ffn
func.func @moe_ffn(%x: tensor<?x4096xbf16>, %router: tensor<288x4096xf32>, %bias: tensor<288xf32>,
    %eg: !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>,
    %eu: !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>,
    %ed: !llm.fp8_weight<tensor<288x4096x2048xf8E4M3FN>, tensor<288x32x16xf32>, block = [128, 128]>,
    %sg: !llm.fp8_weight<tensor<2048x4096xf8E4M3FN>, tensor<16x32xf32>, block = [128, 128]>,
    %su: !llm.fp8_weight<tensor<2048x4096xf8E4M3FN>, tensor<16x32xf32>, block = [128, 128]>,
    %sd: !llm.fp8_weight<tensor<4096x2048xf8E4M3FN>, tensor<32x16xf32>, block = [128, 128]>) -> tensor<?x4096xbf16> {
  // CHECK: llm.moe_ffn
  // CHECK-SAME: num_experts = 288 : i64
  // CHECK-SAME: top_k = 8 : i64
  %y = llm.moe_ffn %x, %router, %bias, %eg, %eu, %ed, %sg, %su, %sd
      {num_experts = 288 : i64, top_k = 8 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32}
      : (tensor<?x4096xbf16>, tensor<288x4096xf32>, tensor<288xf32>,
         !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<288x4096x2048xf8E4M3FN>, tensor<288x32x16xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<2048x4096xf8E4M3FN>, tensor<16x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<2048x4096xf8E4M3FN>, tensor<16x32xf32>, block = [128, 128]>,
         !llm.fp8_weight<tensor<4096x2048xf8E4M3FN>, tensor<32x16xf32>, block = [128, 128]>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// -----

// Tests that the sharding attributes of checkpoint values round-trip: a
// tensor-parallel slice of a plain weight, and stacked fp8 experts split
// over the expert group and, inside each expert, over the tensor group.
// CHECK-LABEL: @sharded_weights
func.func @sharded_weights() -> (tensor<4096x4096xbf16>,
    !llm.fp8_weight<tensor<144x4096x512xf8E4M3FN>, tensor<144x32x4xf32>, block = [128, 128]>) {
  // CHECK: llm.weight "l.3.self_attn.o_proj.weight" {shards = [#llm.shard<tp, dim = 1, parts = 4>]} : tensor<4096x4096xbf16>
  %wo = llm.weight "l.3.self_attn.o_proj.weight" {shards = [#llm.shard<tp, dim = 1, parts = 4>]} : tensor<4096x4096xbf16>
  // CHECK: llm.expert_weights "l.3.mlp.experts.{e}.down_proj.weight" {num_experts = 144 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 2, parts = 4>]}
  %down = llm.expert_weights "l.3.mlp.experts.{e}.down_proj.weight"
      {num_experts = 144 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 2, parts = 4>]}
      : !llm.fp8_weight<tensor<144x4096x512xf8E4M3FN>, tensor<144x32x4xf32>, block = [128, 128]>
  return %wo, %down : tensor<4096x4096xbf16>,
      !llm.fp8_weight<tensor<144x4096x512xf8E4M3FN>, tensor<144x32x4xf32>, block = [128, 128]>
}

// -----

// Tests that the vocabulary-parallel embedding round-trips.
// CHECK-LABEL: @embedding_vocab_shard
func.func @embedding_vocab_shard(%ids: tensor<?xi32>, %table: tensor<38720x4096xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: llm.embedding %{{.*}}, %{{.*}} {vocab_shard = #llm.shard<tp, dim = 0, parts = 4>}
  %e = llm.embedding %ids, %table {vocab_shard = #llm.shard<tp, dim = 0, parts = 4>}
      : (tensor<?xi32>, tensor<38720x4096xbf16>) -> tensor<?x4096xbf16>
  return %e : tensor<?x4096xbf16>
}

// -----

// Tests that the expert-parallel llm.moe_ffn round-trips: 288 experts
// routed, the rank's 144 stacked, each expert's intermediate split in four.
// CHECK-LABEL: @moe_ffn_expert_shard
func.func @moe_ffn_expert_shard(%x: tensor<?x4096xbf16>, %router: tensor<288x4096xf32>, %bias: tensor<288xf32>,
    %eg: tensor<144x512x4096xbf16>, %eu: tensor<144x512x4096xbf16>, %ed: tensor<144x4096x512xbf16>,
    %sg: tensor<256x4096xbf16>, %su: tensor<256x4096xbf16>, %sd: tensor<4096x256xbf16>) -> tensor<?x4096xbf16> {
  // CHECK: llm.moe_ffn
  // CHECK-SAME: expert_shard = #llm.shard<ep, dim = 0, parts = 2>
  %y = llm.moe_ffn %x, %router, %bias, %eg, %eu, %ed, %sg, %su, %sd
      {num_experts = 288 : i64, top_k = 8 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 0, parts = 2>}
      : (tensor<?x4096xbf16>, tensor<288x4096xf32>, tensor<288xf32>,
         tensor<144x512x4096xbf16>, tensor<144x512x4096xbf16>, tensor<144x4096x512xbf16>,
         tensor<256x4096xbf16>, tensor<256x4096xbf16>, tensor<4096x256xbf16>) -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}

// -----

// Tests that llm.all_reduce round-trips, plain and with the mHC residual
// write.
// CHECK-LABEL: @all_reduce
func.func @all_reduce(%p: tensor<?x4096xbf16>, %r: tensor<?x4x4096xbf16>, %post: tensor<?x4xf32>,
    %comb: tensor<?x4x4xf32>) -> (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>) {
  // CHECK: %[[SUM:.+]] = llm.all_reduce %{{.*}} {group = #llm.rank_group<tp>, group_size = 4 : i64} : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 4 : i64}
      : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
  // CHECK: llm.all_reduce %[[SUM]] streams(%{{.*}}, %{{.*}}, %{{.*}}) {group = #llm.rank_group<world>, group_size = 8 : i64}
  %r2 = llm.all_reduce %y streams(%r, %post, %comb) {group = #llm.rank_group<world>, group_size = 8 : i64}
      : (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4096xbf16>
  return %y, %r2 : tensor<?x4096xbf16>, tensor<?x4x4096xbf16>
}

// -----

// Tests that llm.all_gather round-trips (the vocabulary-parallel logits).
// CHECK-LABEL: @all_gather
func.func @all_gather(%l: tensor<?x38720xf32>) -> tensor<?x154880xf32> {
  // CHECK: llm.all_gather %{{.*}} {dim = 1 : i64, group = #llm.rank_group<tp>, group_size = 4 : i64} : (tensor<?x38720xf32>) -> tensor<?x154880xf32>
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 4 : i64, dim = 1 : i64}
      : (tensor<?x38720xf32>) -> tensor<?x154880xf32>
  return %g : tensor<?x154880xf32>
}

// -----

// Tests that the MTP draft chain's shared selection ops round-trip.
// CHECK-LABEL: @shared_selection
func.func @shared_selection(%c0: !llm.shared_selection<rows = 4, width = 2176>,
                            %sel: tensor<?x2176xi32>, %counts: tensor<?xi32>,
                            %pos: tensor<?xi32>, %starts: tensor<?xi32>,
                            %slots: tensor<?xi32>, %rows: tensor<?xi32>)
    -> (tensor<?x2176xi32>, tensor<?xi32>) {
  // CHECK: llm.shared_selection_write
  %c1 = llm.shared_selection_write %c0, %sel, %counts, %starts, %slots
      : (!llm.shared_selection<rows = 4, width = 2176>, tensor<?x2176xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32>) -> !llm.shared_selection<rows = 4, width = 2176>
  // CHECK: llm.shared_selection_read
  %s, %n = llm.shared_selection_read %c1, %pos, %starts, %slots, %rows
      : (!llm.shared_selection<rows = 4, width = 2176>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
         tensor<?xi32>) -> (tensor<?x2176xi32>, tensor<?xi32>)
  return %s, %n : tensor<?x2176xi32>, tensor<?xi32>
}

// -----

// Tests that the kernel contract round-trips: a key alone (a generic kernel),
// a key with one role per argument, and a strategy.
// CHECK-LABEL: @generic_kernel
// CHECK-SAME: llm.kernel = #llm.kernel<"llm.add (...) add">
func.func @generic_kernel(%a: memref<?xf32>, %b: memref<?xf32>)
    attributes {llm.kernel = #llm.kernel<"llm.add (...) add">} {
  return
}
// CHECK-LABEL: @grouped_kernel
// CHECK-SAME: llm.gpu_strategy = #llm.gpu_strategy<grouped_experts>
// CHECK-SAME: llm.kernel = #llm.kernel<"moe", roles = [x, chosen, slot_order, expert_starts, expert_coordinate, weight, weight_scales, up_weight, up_scales, out]>
func.func @grouped_kernel(%x: memref<?x64xbf16>, %chosen: memref<?x2xi32>,
                          %order: memref<?x2xi32>, %starts: memref<5xi32>,
                          %coordinate: i64, %gate: memref<4x32x64xf8E4M3FN>,
                          %gs: memref<4x1x1xf32>, %up: memref<4x32x64xf8E4M3FN>,
                          %us: memref<4x1x1xf32>, %act: memref<?x2x32xbf16>)
    attributes {llm.gpu_strategy = #llm.gpu_strategy<grouped_experts>,
                llm.kernel = #llm.kernel<"moe", roles = [x, chosen, slot_order, expert_starts, expert_coordinate, weight, weight_scales, up_weight, up_scales, out]>} {
  return
}

// -----

// Tests that a function lowered to LLVM (memrefs expanded into descriptors)
// keeps its kernel contract unchecked.
// CHECK-LABEL: llvm.func @lowered_kernel
// CHECK-SAME: llm.kernel = #llm.kernel<"k", roles = [x, out]>
llvm.func @lowered_kernel(!llvm.ptr, !llvm.ptr, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, i64, i64)
    attributes {llm.kernel = #llm.kernel<"k", roles = [x, out]>}
