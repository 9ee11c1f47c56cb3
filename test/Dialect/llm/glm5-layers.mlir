// RUN: strata-opt --split-input-file %s | strata-opt --split-input-file | FileCheck %s

// Whole GLM-5.3-Flash blocks at real sizes, written with llm and upstream ops
// only: an MLA (DSA) layer with its kpool indexer, mHC and MoE; a KDA layer
// attention block; the MTP draft step. They show that the dialect expresses
// the full graph and that the verifiers accept real shapes.

!fp8_qa = !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
!fp8_qb = !llm.fp8_weight<tensor<16384x1536xf8E4M3FN>, tensor<128x12xf32>, block = [128, 128]>
!fp8_kva = !llm.fp8_weight<tensor<512x4096xf8E4M3FN>, tensor<4x32xf32>, block = [128, 128]>
!fp8_o = !llm.fp8_weight<tensor<4096x16384xf8E4M3FN>, tensor<32x128xf32>, block = [128, 128]>
!lat = !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>
!idx = !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>
!ring = !llm.tail_ring<depth = 16, width = 128, bf16>

// Tests that the attention half of MLA layer 3 (mHC pre, input norm, MLA with
// the kpool indexer and cache writes, o_proj, mHC post) verifies and round-trips.
// CHECK-LABEL: @mla_layer3_attention
func.func @mla_layer3_attention(%r: tensor<?x4x4096xbf16>, %lat0: !lat, %idx0: !idx, %ring0: !ring,
    %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> (tensor<?x4x4096xbf16>, !lat, !idx, !ring) {
  %fn = llm.weight "model.language_model.layers.3.hc_attn_fn" : tensor<24x16384xf32>
  %base = llm.weight "model.language_model.layers.3.hc_attn_base" : tensor<24xf32>
  %scale = llm.weight "model.language_model.layers.3.hc_attn_scale" : tensor<3xf32>
  // CHECK: llm.mhc_pre
  %x0, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale
      {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
       sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32}
      : (tensor<?x4x4096xbf16>, tensor<24x16384xf32>, tensor<24xf32>, tensor<3xf32>)
      -> (tensor<?x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  %win = llm.weight "model.language_model.layers.3.input_layernorm.weight" : tensor<4096xbf16>
  %x = llm.rms_norm %x0 weight(%win) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>

  // Query latent and per-head queries {T, 1536} -> {T, 16384} -> {T, 64, 256}.
  %wqa = llm.weight "model.language_model.layers.3.self_attn.q_a_proj.weight" : !fp8_qa
  %cq0 = llm.linear %x, %wqa : (tensor<?x4096xbf16>, !fp8_qa) -> tensor<?x1536xbf16>
  %wqan = llm.weight "model.language_model.layers.3.self_attn.q_a_layernorm.weight" : tensor<1536xbf16>
  %cq = llm.rms_norm %cq0 weight(%wqan) {eps = 1.0e-05 : f32} : (tensor<?x1536xbf16>, tensor<1536xbf16>) -> tensor<?x1536xbf16>
  %wqb = llm.weight "model.language_model.layers.3.self_attn.q_b_proj.weight" : !fp8_qb
  %qf = llm.linear %cq, %wqb : (tensor<?x1536xbf16>, !fp8_qb) -> tensor<?x16384xbf16>
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x4096xbf16>
  %q = tensor.expand_shape %qf [[0], [1, 2]] output_shape [%t, 64, 256] : tensor<?x16384xbf16> into tensor<?x64x256xbf16>

  // Latent KV {T, 512}, written before attention reads it.
  %wkva = llm.weight "model.language_model.layers.3.self_attn.kv_a_proj_with_mqa.weight" : !fp8_kva
  %ckv0 = llm.linear %x, %wkva : (tensor<?x4096xbf16>, !fp8_kva) -> tensor<?x512xbf16>
  %wkvn = llm.weight "model.language_model.layers.3.self_attn.kv_a_layernorm.weight" : tensor<512xbf16>
  %ckv = llm.rms_norm %ckv0 weight(%wkvn) {eps = 1.0e-05 : f32} : (tensor<?x512xbf16>, tensor<512xbf16>) -> tensor<?x512xbf16>
  // CHECK: %[[LAT1:.+]] = llm.latent_cache_write
  %lat1 = llm.latent_cache_write %lat0, %ckv, %pos, %starts, %bt
      : (!lat, tensor<?x512xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !lat

  // Indexer: q {T, 32, 128}, k {T, 128} (LayerNorm), gate {T, 128}, head weights {T, 32} f32.
  %wiq = llm.weight "model.language_model.layers.3.self_attn.indexer.wq_b.weight" : tensor<4096x1536xbf16>
  %iqf = llm.linear %cq, %wiq : (tensor<?x1536xbf16>, tensor<4096x1536xbf16>) -> tensor<?x4096xbf16>
  %iq = tensor.expand_shape %iqf [[0], [1, 2]] output_shape [%t, 32, 128] : tensor<?x4096xbf16> into tensor<?x32x128xbf16>
  %wik = llm.weight "model.language_model.layers.3.self_attn.indexer.wk.weight" : tensor<128x4096xbf16>
  %ik0 = llm.linear %x, %wik : (tensor<?x4096xbf16>, tensor<128x4096xbf16>) -> tensor<?x128xbf16>
  %wkn = llm.weight "model.language_model.layers.3.self_attn.indexer.k_norm.weight" : tensor<128xbf16>
  %bkn = llm.weight "model.language_model.layers.3.self_attn.indexer.k_norm.bias" : tensor<128xbf16>
  %ik = llm.layer_norm %ik0, %wkn, %bkn {eps = 1.0e-06 : f32} : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  %wg = llm.weight "model.language_model.layers.3.self_attn.indexer.index_kpool_compress_gate" : tensor<128x4096xbf16>
  %ig = llm.linear %x, %wg : (tensor<?x4096xbf16>, tensor<128x4096xbf16>) -> tensor<?x128xbf16>
  %wwp = llm.weight "model.language_model.layers.3.self_attn.indexer.weights_proj.weight" : tensor<32x4096xbf16>
  %iw = llm.linear %x, %wwp : (tensor<?x4096xbf16>, tensor<32x4096xbf16>) -> tensor<?x32xf32>
  %ape = llm.weight "model.language_model.layers.3.self_attn.indexer.index_kpool_compress_ape" : tensor<4x128xbf16>
  // CHECK: llm.kpool_compress
  %pk = llm.kpool_compress %ik, %ig, %ape, %ring0, %pos, %starts, %slots {kpool = 4 : i64}
      : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<4x128xbf16>, !ring, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> tensor<?x128xf32>
  %ring1 = llm.tail_ring_write %ring0, %ik, %ig, %pos, %starts, %slots
      : (!ring, tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !ring
  %idx1 = llm.index_cache_write %idx0, %pk, %pos, %starts, %bt
      : (!idx, tensor<?x128xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !idx
  // CHECK: %[[SEL:.+]], %[[CNT:.+]] = llm.kpool_indexer
  %sel, %cnt = llm.kpool_indexer %iq, %iw, %idx1, %pos, %starts, %bt
      {topk = 2048 : i64, kpool = 4 : i64, heads = 32 : i64, head_dim = 128 : i64, scale = 0.015625 : f32}
      : (tensor<?x32x128xbf16>, tensor<?x32xf32>, !idx, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x2176xi32>, tensor<?xi32>)

  // Sparse absorbed MLA {T, 64, 256} -> {T, 16384} -> o_proj {T, 4096}.
  %wkvb = llm.weight "model.language_model.layers.3.self_attn.kv_b_proj.weight" : tensor<32768x512xbf16>
  // CHECK: llm.mla_attention %{{.*}}, %{{.*}}, %[[LAT1]], %[[SEL]], %[[CNT]]
  %o = llm.mla_attention %q, %wkvb, %lat1, %sel, %cnt, %starts, %bt
      {heads = 64 : i64, qk_head_dim = 256 : i64, v_head_dim = 256 : i64,
       kv_lora_rank = 512 : i64, softmax_scale = 6.250000e-02 : f32}
      : (tensor<?x64x256xbf16>, tensor<32768x512xbf16>, !lat, tensor<?x2176xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x64x256xbf16>
  %of = tensor.collapse_shape %o [[0], [1, 2]] : tensor<?x64x256xbf16> into tensor<?x16384xbf16>
  %wo = llm.weight "model.language_model.layers.3.self_attn.o_proj.weight" : !fp8_o
  %y = llm.linear %of, %wo : (tensor<?x16384xbf16>, !fp8_o) -> tensor<?x4096xbf16>
  // CHECK: llm.mhc_post
  %r1 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64}
      : (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4096xbf16>
  return %r1, %lat1, %idx1, %ring1 : tensor<?x4x4096xbf16>, !lat, !idx, !ring
}

// -----

!kstate = !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>
!cstate = !llm.conv_state<channels = 24576, width = 3, bf16>

// Tests that the KDA attention block of layer 0 (projections, low-rank gates,
// kda_attention, o_proj) verifies and round-trips.
// CHECK-LABEL: @kda_layer0_attention
func.func @kda_layer0_attention(%x: tensor<?x4096xbf16>, %s0: !kstate, %c0: !cstate, %pos: tensor<?xi32>,
    %starts: tensor<?xi32>, %slots: tensor<?xi32>) -> (tensor<?x4096xbf16>, !kstate, !cstate) {
  %wq = llm.weight "model.language_model.layers.0.self_attn.q_proj.weight" : tensor<8192x4096xbf16>
  %wk = llm.weight "model.language_model.layers.0.self_attn.k_proj.weight" : tensor<8192x4096xbf16>
  %wv = llm.weight "model.language_model.layers.0.self_attn.v_proj.weight" : tensor<8192x4096xbf16>
  %q = llm.linear %x, %wq : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
  %k = llm.linear %x, %wk : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
  %v = llm.linear %x, %wv : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
  %wfa = llm.weight "model.language_model.layers.0.self_attn.f_a_proj.weight" : tensor<128x4096xbf16>
  %wfb = llm.weight "model.language_model.layers.0.self_attn.f_b_proj.weight" : tensor<8192x128xbf16>
  %fa = llm.linear %x, %wfa : (tensor<?x4096xbf16>, tensor<128x4096xbf16>) -> tensor<?x128xbf16>
  %f = llm.linear %fa, %wfb : (tensor<?x128xbf16>, tensor<8192x128xbf16>) -> tensor<?x8192xbf16>
  %wga = llm.weight "model.language_model.layers.0.self_attn.g_a_proj.weight" : tensor<128x4096xbf16>
  %wgb = llm.weight "model.language_model.layers.0.self_attn.g_b_proj.weight" : tensor<8192x128xbf16>
  %ga = llm.linear %x, %wga : (tensor<?x4096xbf16>, tensor<128x4096xbf16>) -> tensor<?x128xbf16>
  %g = llm.linear %ga, %wgb : (tensor<?x128xbf16>, tensor<8192x128xbf16>) -> tensor<?x8192xbf16>
  %wb = llm.weight "model.language_model.layers.0.self_attn.b_proj.weight" : tensor<64x4096xbf16>
  %b = llm.linear %x, %wb : (tensor<?x4096xbf16>, tensor<64x4096xbf16>) -> tensor<?x64xbf16>
  %qc = llm.weight "model.language_model.layers.0.self_attn.q_conv1d.weight" : tensor<8192x1x4xbf16>
  %kc = llm.weight "model.language_model.layers.0.self_attn.k_conv1d.weight" : tensor<8192x1x4xbf16>
  %vc = llm.weight "model.language_model.layers.0.self_attn.v_conv1d.weight" : tensor<8192x1x4xbf16>
  %alog = llm.weight "model.language_model.layers.0.self_attn.A_log" : tensor<64xf32>
  %dtb = llm.weight "model.language_model.layers.0.self_attn.dt_bias" : tensor<8192xf32>
  %on = llm.weight "model.language_model.layers.0.self_attn.o_norm.weight" : tensor<128xbf16>
  // CHECK: llm.kda_attention
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 64 : i64, head_dim = 128 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.0883883461 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>,
         tensor<?x64xbf16>, tensor<?x8192xbf16>, tensor<8192x1x4xbf16>, tensor<8192x1x4xbf16>,
         tensor<8192x1x4xbf16>, tensor<64xf32>, tensor<8192xf32>, tensor<128xbf16>, !kstate, !cstate,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8192xbf16>, !kstate, !cstate)
  %wo = llm.weight "model.language_model.layers.0.self_attn.o_proj.weight" : tensor<4096x8192xbf16>
  %y = llm.linear %o, %wo : (tensor<?x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<?x4096xbf16>
  return %y, %s1, %c1 : tensor<?x4096xbf16>, !kstate, !cstate
}

// -----

// Tests that the MTP draft input stage (masked target embedding, enorm/hnorm,
// concat, eh_proj), its plain residual adds, final norm and the shared LM head
// verify and round-trip. The MLA block in between is the one of @mla_layer3.
// CHECK-LABEL: @mtp_draft_step
func.func @mtp_draft_step(%ids: tensor<?xi32>, %h: tensor<?x4096xbf16>, %pos: tensor<?xi32>,
    %attn: tensor<?x4096xbf16>, %rows: tensor<?xi32>) -> tensor<?x154880xf32> {
  %emb = llm.weight "model.language_model.embed_tokens.weight" : tensor<154880x4096xbf16>
  %e0 = llm.embedding %ids, %emb : (tensor<?xi32>, tensor<154880x4096xbf16>) -> tensor<?x4096xbf16>
  // CHECK: llm.position_mask
  %e = llm.position_mask %e0, %pos {position = 0 : i64} : (tensor<?x4096xbf16>, tensor<?xi32>) -> tensor<?x4096xbf16>
  %we = llm.weight "model.language_model.layers.45.enorm.weight" : tensor<4096xbf16>
  %wh = llm.weight "model.language_model.layers.45.hnorm.weight" : tensor<4096xbf16>
  %en = llm.rms_norm %e weight(%we) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
  %hn = llm.rms_norm %h weight(%wh) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
  // CHECK: tensor.concat dim(1)
  %eh = tensor.concat dim(1) %en, %hn : (tensor<?x4096xbf16>, tensor<?x4096xbf16>) -> tensor<?x8192xbf16>
  %weh = llm.weight "model.language_model.layers.45.eh_proj.weight" : tensor<4096x8192xbf16>
  %z = llm.linear %eh, %weh : (tensor<?x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<?x4096xbf16>
  // CHECK: arith.addf
  %y = arith.addf %z, %attn : tensor<?x4096xbf16>
  %wsn = llm.weight "model.language_model.layers.45.shared_head.norm.weight" : tensor<4096xbf16>
  %hout = llm.rms_norm %y weight(%wsn) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
  %wlm = llm.weight "lm_head.weight" : tensor<154880x4096xbf16>
  // CHECK: llm.lm_head
  %logits = llm.lm_head %hout, %wlm rows(%rows) : (tensor<?x4096xbf16>, tensor<154880x4096xbf16>, tensor<?xi32>) -> tensor<?x154880xf32>
  return %logits : tensor<?x154880xf32>
}
