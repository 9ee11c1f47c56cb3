// RUN: strata-opt --split-input-file --verify-diagnostics %s

// One case per verifier message of the llm dialect (ops and types); each
// function is named after its fault. test/Dialect/llm/verifier-coverage.test
// checks that every message in LLMOps.cpp and LLMTypes.cpp has a case here.

// Tests that the verifier rejects an fp8 weight whose data is not f8E4M3FN.
func.func @fp8_weight_element_type() {
  // expected-error@+1 {{fp8 weight element type must be f8E4M3FN, got 'bf16'}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<128x128xbf16>, tensor<1x1xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects an fp8 weight whose scales are not f32.
func.func @fp8_weight_scale_element_type() {
  // expected-error@+1 {{fp8 weight scale element type must be f32, got 'bf16'}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<128x128xf8E4M3FN>, tensor<1x1xbf16>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects an fp8 weight with a dynamic shape.
func.func @fp8_weight_dynamic() {
  // expected-error@+1 {{fp8 weight and scale shapes must be static, got 'tensor<?x128xf8E4M3FN>' and 'tensor<1x1xf32>'}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<?x128xf8E4M3FN>, tensor<1x1xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects an fp8 weight of rank 1.
func.func @fp8_weight_rank() {
  // expected-error@+1 {{expected fp8 weight rank 2 or 3, got 1}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<128xf8E4M3FN>, tensor<1xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects fp8 scales whose rank differs from the weight.
func.func @fp8_weight_scale_rank() {
  // expected-error@+1 {{expected scale rank 2 to match the weight, got 1}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<128x128xf8E4M3FN>, tensor<1xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects a non-positive block size.
func.func @fp8_weight_block() {
  // expected-error@+1 {{expected positive block sizes, got [0, 128]}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<128x128xf8E4M3FN>, tensor<1x1xf32>, block = [0, 128]>
  return
}

// -----

// Tests that the verifier rejects scales that are not ceil(out/128) x ceil(in/128).
func.func @fp8_weight_scale_shape() {
  // expected-error@+1 {{expected scale shape 12x32 (ceil(out/128) x ceil(in/128)), got 'tensor<12x33xf32>'}}
  %w = llm.weight "t" : !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x33xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the verifier rejects a latent pool with a zero page size.
func.func @latent_pool_page_size() {
  // expected-error@+1 {{expected page_size > 0, got 0}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 0, width = 512, pad = 0, bf16>
  return
}

// -----

// Tests that the verifier rejects a latent pool with a zero width.
func.func @latent_pool_width() {
  // expected-error@+1 {{expected width > 0, got 0}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 64, width = 0, pad = 0, bf16>
  return
}

// -----

// Tests that the verifier rejects a latent pool with a negative pad.
func.func @latent_pool_pad() {
  // expected-error@+1 {{expected pad >= 0, got -64}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 64, width = 512, pad = -64, bf16>
  return
}

// -----

// Tests that the verifier rejects an fp8 latent pool whose rows cannot hold
// 4-byte aligned per-128-lane scales.
func.func @latent_pool_fp8_width() {
  // expected-error@+1 {{expected a width that is a multiple of 128 and a pad that is a multiple of 4 for an fp8 latent pool, got width 500, pad 0}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 64, width = 500, pad = 0, f8E4M3FN>
  return
}

// -----

// Tests that the verifier rejects an fp8 latent pool with a pad that misaligns the scales.
func.func @latent_pool_fp8_pad() {
  // expected-error@+1 {{expected a width that is a multiple of 128 and a pad that is a multiple of 4 for an fp8 latent pool, got width 512, pad 2}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 64, width = 512, pad = 2, f8E4M3FN>
  return
}

// -----

// Tests that the verifier rejects a latent pool of f16.
func.func @latent_pool_element_type() {
  // expected-error@+1 {{latent pool element type must be bf16, f32 or f8E4M3FN, got 'f16'}}
  %w = llm.weight "t" : !llm.latent_pool<page_size = 64, width = 512, pad = 0, f16>
  return
}

// -----

// Tests that the verifier rejects an index pool with kpool 0.
func.func @index_pool_kpool() {
  // expected-error@+1 {{expected kpool > 0, got 0}}
  %w = llm.weight "t" : !llm.index_pool<page_size = 64, kpool = 0, width = 128, bf16>
  return
}

// -----

// Tests that the verifier rejects an index pool whose page size is not a multiple of kpool.
func.func @index_pool_page_multiple() {
  // expected-error@+1 {{expected page_size 66 to be a multiple of kpool 4}}
  %w = llm.weight "t" : !llm.index_pool<page_size = 66, kpool = 4, width = 128, bf16>
  return
}

// -----

// Tests that the verifier rejects an fp8 index pool whose width is not a power of two.
func.func @index_pool_hadamard_width() {
  // expected-error@+1 {{expected a power-of-two width for the hadamard rotation of an fp8 index pool, got 96}}
  %w = llm.weight "t" : !llm.index_pool<page_size = 64, kpool = 4, width = 96, f8E4M3FN>
  return
}

// -----

// Tests that the verifier rejects an index pool of f16.
func.func @index_pool_element_type() {
  // expected-error@+1 {{index pool element type must be bf16, f32 or f8E4M3FN, got 'f16'}}
  %w = llm.weight "t" : !llm.index_pool<page_size = 64, kpool = 4, width = 128, f16>
  return
}

// -----

// Tests that the verifier rejects a tail ring of depth 0.
func.func @tail_ring_depth() {
  // expected-error@+1 {{expected depth > 0, got 0}}
  %w = llm.weight "t" : !llm.tail_ring<depth = 0, width = 128, bf16>
  return
}

// -----

// Tests that the verifier rejects a tail ring of fp8.
func.func @tail_ring_element_type() {
  // expected-error@+1 {{tail ring element type must be bf16 or f32, got 'f8E4M3FN'}}
  %w = llm.weight "t" : !llm.tail_ring<depth = 16, width = 128, f8E4M3FN>
  return
}

// -----

// Tests that the verifier rejects a shared selection cache of no rows.
func.func @shared_selection_rows() {
  // expected-error@+1 {{expected rows > 0, got 0}}
  %w = llm.weight "s" : !llm.shared_selection<rows = 0, width = 128>
  return
}

// -----

// Tests that the verifier rejects kept selections narrower than the cache.
func.func @shared_selection_write_width(%c: !llm.shared_selection<rows = 4, width = 128>,
                                        %sel: tensor<?x64xi32>, %counts: tensor<?xi32>,
                                        %starts: tensor<?xi32>, %slots: tensor<?xi32>) {
  // expected-error@+1 {{'llm.shared_selection_write' op expected selection shape ?x128, got ?x64}}
  %c1 = llm.shared_selection_write %c, %sel, %counts, %starts, %slots
      : (!llm.shared_selection<rows = 4, width = 128>, tensor<?x64xi32>, tensor<?xi32>,
         tensor<?xi32>, tensor<?xi32>) -> !llm.shared_selection<rows = 4, width = 128>
  return
}

// -----

// Tests that the verifier rejects a kda state with zero heads.
func.func @kda_state_heads() {
  // expected-error@+1 {{expected heads > 0, got 0}}
  %w = llm.weight "t" : !llm.kda_state<heads = 0, key_dim = 128, value_dim = 128, f32>
  return
}

// -----

// Tests that the verifier rejects a kda state with zero key_dim.
func.func @kda_state_key_dim() {
  // expected-error@+1 {{expected key_dim > 0, got 0}}
  %w = llm.weight "t" : !llm.kda_state<heads = 64, key_dim = 0, value_dim = 128, f32>
  return
}

// -----

// Tests that the verifier rejects a kda state with zero value_dim.
func.func @kda_state_value_dim() {
  // expected-error@+1 {{expected value_dim > 0, got 0}}
  %w = llm.weight "t" : !llm.kda_state<heads = 64, key_dim = 128, value_dim = 0, f32>
  return
}

// -----

// Tests that the verifier rejects a bf16 kda state.
func.func @kda_state_element_type() {
  // expected-error@+1 {{kda state element type must be f32, got 'bf16'}}
  %w = llm.weight "t" : !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, bf16>
  return
}

// -----

// Tests that the verifier rejects a conv state with zero channels.
func.func @conv_state_channels() {
  // expected-error@+1 {{expected channels > 0, got 0}}
  %w = llm.weight "t" : !llm.conv_state<channels = 0, width = 3, bf16>
  return
}

// -----

// Tests that the verifier rejects an fp8 conv state.
func.func @conv_state_element_type() {
  // expected-error@+1 {{conv state element type must be bf16 or f32, got 'f8E4M3FN'}}
  %w = llm.weight "t" : !llm.conv_state<channels = 24576, width = 3, f8E4M3FN>
  return
}

// -----

// Tests that the verifier rejects a weight without a checkpoint name.
func.func @weight_empty_name() {
  // expected-error@+1 {{expected a non-empty checkpoint tensor name}}
  %w = llm.weight "" : tensor<8xbf16>
  return
}

// -----

// Tests that the verifier rejects a checkpoint tensor with a dynamic shape.
func.func @weight_dynamic() {
  // expected-error@+1 {{expected a static checkpoint tensor shape, got 'tensor<?xbf16>'}}
  %w = llm.weight "model.norm.weight" : tensor<?xbf16>
  return
}

// -----

// Tests that the verifier rejects an expert pattern without {e}.
func.func @expert_weights_pattern() {
  // expected-error@+1 {{expected exactly one '{e}' in the name pattern, got 0}}
  %w = llm.expert_weights "model.layers.3.mlp.experts.0.gate_proj.weight" {num_experts = 2 : i64} : tensor<2x8x8xbf16>
  return
}

// -----

// Tests that the verifier rejects stacked expert weights of rank 2.
func.func @expert_weights_rank() {
  // expected-error@+1 {{expected stacked expert weight rank 3, got 2}}
  %w = llm.expert_weights "experts.{e}.w" {num_experts = 2 : i64} : tensor<2x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a leading dimension that differs from num_experts.
func.func @expert_weights_count() {
  // expected-error@+1 {{expected leading dimension num_experts 3, got 2}}
  %w = llm.expert_weights "experts.{e}.w" {num_experts = 3 : i64} : tensor<2x8x8xbf16>
  return
}

// -----

// Tests that the verifier rejects rank-2 ids.
func.func @embedding_ids_rank(%ids: tensor<?x2xi32>, %t: tensor<16x8xbf16>) {
  // expected-error@+1 {{expected ids rank 1, got 2}}
  %e = llm.embedding %ids, %t : (tensor<?x2xi32>, tensor<16x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-1 table.
func.func @embedding_table_rank(%ids: tensor<?xi32>, %t: tensor<16xbf16>) {
  // expected-error@+1 {{expected table rank 2, got 1}}
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<16xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a result width that is not the table width.
func.func @embedding_result_shape(%ids: tensor<?xi32>, %t: tensor<16x8xbf16>) {
  // expected-error@+1 {{expected result shape ?x8, got ?x9}}
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<16x8xbf16>) -> tensor<?x9xbf16>
  return
}

// -----

// Tests that the verifier rejects a result element type that is neither the table's nor f32.
func.func @embedding_result_element(%ids: tensor<?xi32>, %t: tensor<16x8xf32>) {
  // expected-error@+1 {{expected result element type 'f32', got 'bf16'}}
  %e = llm.embedding %ids, %t : (tensor<?xi32>, tensor<16x8xf32>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects positions whose length differs from the token count.
func.func @position_mask_positions(%x: tensor<4x8xbf16>, %p: tensor<5xi32>) {
  // expected-error@+1 {{expected positions shape 4, got 5}}
  %m = llm.position_mask %x, %p {position = 0 : i64} : (tensor<4x8xbf16>, tensor<5xi32>) -> tensor<4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a result type that differs from the input.
func.func @position_mask_result(%x: tensor<4x8xbf16>, %p: tensor<4xi32>) {
  // expected-error@+1 {{expected result type 'tensor<4x8xbf16>', got 'tensor<4x8xf32>'}}
  %m = llm.position_mask %x, %p {position = 0 : i64} : (tensor<4x8xbf16>, tensor<4xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that the verifier rejects a zero eps.
func.func @rms_norm_eps(%x: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected eps > 0, got 0.000000e+00}}
  %y = llm.rms_norm %x {eps = 0.0 : f32} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-0 input.
func.func @rms_norm_rank0(%x: tensor<bf16>, %w: tensor<8xbf16>) {
  // expected-error@+1 {{expected a ranked input with rank >= 1}}
  %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<bf16>, tensor<8xbf16>) -> tensor<bf16>
  return
}

// -----

// Tests that the verifier rejects a weight that does not match the last dimension.
func.func @rms_norm_weight(%x: tensor<?x8xbf16>, %w: tensor<4xbf16>) {
  // expected-error@+1 {{expected weight shape 8, got 4}}
  %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>, tensor<4xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a gate without a weight.
func.func @rms_norm_gate_without_weight(%x: tensor<?x8xbf16>, %g: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected a weight with the gate (gated norm)}}
  %y = llm.rms_norm %x gate(%g) {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>, tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a gate whose shape differs from the input.
func.func @rms_norm_gate_shape(%x: tensor<?x4x8xf32>, %w: tensor<8xbf16>, %g: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected gate shape ?x4x8, got ?x4x4}}
  %y = llm.rms_norm %x weight(%w) gate(%g) {eps = 1.0e-05 : f32} : (tensor<?x4x8xf32>, tensor<8xbf16>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a result shape that differs from the input.
func.func @rms_norm_result(%x: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected result shape ?x8, got ?x4}}
  %y = llm.rms_norm %x {eps = 1.0e-05 : f32} : (tensor<?x8xbf16>) -> tensor<?x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a bias that does not match the last dimension.
func.func @layer_norm_bias(%x: tensor<?x8xbf16>, %w: tensor<8xbf16>, %b: tensor<7xbf16>) {
  // expected-error@+1 {{expected bias shape 8, got 7}}
  %y = llm.layer_norm %x, %w, %b {eps = 1.0e-06 : f32} : (tensor<?x8xbf16>, tensor<8xbf16>, tensor<7xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-3 weight.
func.func @linear_weight_rank(%x: tensor<?x8xbf16>, %w: tensor<2x4x8xbf16>) {
  // expected-error@+1 {{expected weight [out, in] rank 2, got 3}}
  %y = llm.linear %x, %w : (tensor<?x8xbf16>, tensor<2x4x8xbf16>) -> tensor<?x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-0 input.
func.func @linear_rank0(%x: tensor<bf16>, %w: tensor<4x8xbf16>) {
  // expected-error@+1 {{expected a ranked input with rank >= 1}}
  %y = llm.linear %x, %w : (tensor<bf16>, tensor<4x8xbf16>) -> tensor<4xbf16>
  return
}

// -----

// Tests that the verifier rejects input features that differ from the weight's in dimension.
func.func @linear_in_features(%x: tensor<?x4096xbf16>, %w: !llm.fp8_weight<tensor<1536x2048xf8E4M3FN>, tensor<12x16xf32>, block = [128, 128]>) {
  // expected-error@+1 {{expected input features 2048 (weight in), got 4096}}
  %y = llm.linear %x, %w : (tensor<?x4096xbf16>, !llm.fp8_weight<tensor<1536x2048xf8E4M3FN>, tensor<12x16xf32>, block = [128, 128]>) -> tensor<?x1536xbf16>
  return
}

// -----

// Tests that the verifier rejects a result width that is not the weight's out dimension.
func.func @linear_result(%x: tensor<?x8xbf16>, %w: tensor<4x8xbf16>) {
  // expected-error@+1 {{expected result shape ?x4, got ?x5}}
  %y = llm.linear %x, %w : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x5xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-3 input.
func.func @lm_head_input_rank(%x: tensor<?x2x8xbf16>, %w: tensor<16x8xbf16>, %r: tensor<?xi32>) {
  // expected-error@+1 {{expected input rank 2, got 3}}
  %l = llm.lm_head %x, %w rows(%r) : (tensor<?x2x8xbf16>, tensor<16x8xbf16>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// Tests that the verifier rejects rank-2 rows.
func.func @lm_head_rows_rank(%x: tensor<?x8xbf16>, %w: tensor<16x8xbf16>, %r: tensor<?x1xi32>) {
  // expected-error@+1 {{expected rows rank 1, got 2}}
  %l = llm.lm_head %x, %w rows(%r) : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<?x1xi32>) -> tensor<?x16xf32>
  return
}

// -----

// Tests that the verifier rejects a hidden size that differs from the weight.
func.func @lm_head_hidden(%x: tensor<?x4xbf16>, %w: tensor<16x8xbf16>, %r: tensor<?xi32>) {
  // expected-error@+1 {{expected input features 8 (weight in), got 4}}
  %l = llm.lm_head %x, %w rows(%r) : (tensor<?x4xbf16>, tensor<16x8xbf16>, tensor<?xi32>) -> tensor<?x16xf32>
  return
}

// -----

// Tests that the verifier rejects logits that are not [rows, vocab].
func.func @lm_head_result(%x: tensor<?x8xbf16>, %w: tensor<16x8xbf16>, %r: tensor<3xi32>) {
  // expected-error@+1 {{expected result shape 3x16, got 4x16}}
  %l = llm.lm_head %x, %w rows(%r) : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<3xi32>) -> tensor<4x16xf32>
  return
}

// -----

// Tests that llm.argmax rejects a vocabulary whose indices f32 cannot hold
// exactly.
func.func @argmax_vocab(%l: tensor<?x16777216xf32>) {
  // expected-error@+1 {{expected 1 <= vocab < 2^24 (indices exact in f32), got 16777216}}
  %g = llm.argmax %l : (tensor<?x16777216xf32>) -> tensor<?xi32>
  return
}

// -----

// Tests that llm.argmax rejects a result that is not one token per row.
func.func @argmax_result(%l: tensor<3x16xf32>) {
  // expected-error@+1 {{expected result shape 3, got 4}}
  %g = llm.argmax %l : (tensor<3x16xf32>) -> tensor<4xi32>
  return
}

// -----

// Tests that llm.argmax rejects a rank-1 input.
func.func @argmax_rank(%l: tensor<16xf32>) {
  // expected-error@+1 {{expected input rank 2, got 1}}
  %g = llm.argmax %l : (tensor<16xf32>) -> tensor<1xi32>
  return
}

// -----

// Tests that the verifier rejects hc_mult 0.
func.func @hc_expand_hc_mult(%e: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected hc_mult > 0, got 0}}
  %r = llm.hc_expand %e {hc_mult = 0 : i64} : (tensor<?x8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-3 input.
func.func @hc_expand_input_rank(%e: tensor<?x1x8xbf16>) {
  // expected-error@+1 {{expected input rank 2, got 3}}
  %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x1x8xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a stream count that differs from hc_mult.
func.func @hc_expand_streams(%e: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected stream count hc_mult 4, got 3}}
  %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x8xbf16>) -> tensor<?x3x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a result width that differs from the embedding.
func.func @hc_expand_result(%e: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected result shape ?x4x8, got ?x4x9}}
  %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x8xbf16>) -> tensor<?x4x9xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-2 input.
func.func @hc_collapse_streams_rank(%r: tensor<?x8xbf16>) {
  // expected-error@+1 {{expected residual streams rank 3, got 2}}
  %h = llm.hc_collapse %r {hc_mult = 4 : i64} : (tensor<?x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects zero sinkhorn iterations.
func.func @mhc_pre_sinkhorn_iters(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected sinkhorn_iters > 0, got 0}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 0 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a zero hc_eps.
func.func @mhc_pre_hc_eps(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected hc_eps > 0, got 0.000000e+00}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 0.0 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a zero norm_eps.
func.func @mhc_pre_norm_eps(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected norm_eps > 0, got 0.000000e+00}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 0.0 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a stream count that differs from hc_mult.
func.func @mhc_pre_stream_count(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected stream count hc_mult 2, got 4}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 2 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects an fn that is not [(2+H)*H, H*D].
func.func @mhc_pre_fn(%r: tensor<?x4x8xbf16>, %fn: tensor<24x16xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected fn shape 24x32, got 24x16}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x16xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a base that is not [(2+H)*H].
func.func @mhc_pre_base(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<20xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected base shape 24, got 20}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<20xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a scale that is not [3].
func.func @mhc_pre_scale(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<2xf32>) {
  // expected-error@+1 {{expected scale shape 3, got 2}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<2xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects post weights that are not [T, H].
func.func @mhc_pre_post(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected post shape ?x4, got ?x3}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x3xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a comb matrix that is not [T, H, H].
func.func @mhc_pre_comb(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>) {
  // expected-error@+1 {{expected comb shape ?x4x4, got ?x4x3}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x3xf32>)
  return
}

// -----

// Tests that the verifier rejects an x_norm weight without x_norm_eps.
func.func @mhc_pre_x_norm_without_eps(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>, %w: tensor<8xbf16>) {
  // expected-error@+1 {{expected x_norm weight and x_norm_eps together or neither}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s x_norm(%w) {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>, tensor<8xbf16>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects an x_norm weight that is not [D].
func.func @mhc_pre_x_norm_weight(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>, %w: tensor<9xbf16>) {
  // expected-error@+1 {{expected x_norm weight shape 8, got 9}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s x_norm(%w) {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32, x_norm_eps = 1.0e-05 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>, tensor<9xbf16>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a zero x_norm_eps.
func.func @mhc_pre_x_norm_eps(%r: tensor<?x4x8xbf16>, %fn: tensor<24x32xf32>, %base: tensor<24xf32>, %s: tensor<3xf32>, %w: tensor<8xbf16>) {
  // expected-error@+1 {{expected x_norm_eps > 0, got 0}}
  %x, %p, %cb = llm.mhc_pre %r, %fn, %base, %s x_norm(%w) {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32, sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32, x_norm_eps = 0.0 : f32} : (tensor<?x4x8xbf16>, tensor<24x32xf32>, tensor<24xf32>, tensor<3xf32>, tensor<8xbf16>) -> (tensor<?x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return
}

// -----

// Tests that the verifier rejects a sub-layer output whose width differs from the streams.
func.func @mhc_post_input(%y: tensor<?x9xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xf32>, %cb: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected input shape ?x8, got ?x9}}
  %r2 = llm.mhc_post %y, %r, %p, %cb {hc_mult = 4 : i64} : (tensor<?x9xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a projection weight that is not rank 2.
func.func @mhc_post_projection_rank(%o: tensor<?x16xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xf32>, %cb: tensor<?x4x4xf32>, %w: tensor<8x16x1xbf16>) {
  // expected-error@+1 {{expected projection weight [out, in] rank 2, got 3}}
  %r2 = llm.mhc_post %o, %r, %p, %cb projection(%w) {hc_mult = 4 : i64} : (tensor<?x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<8x16x1xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a projection whose output width is not the streams'.
func.func @mhc_post_projection_out(%o: tensor<?x16xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xf32>, %cb: tensor<?x4x4xf32>, %w: tensor<9x16xbf16>) {
  // expected-error@+1 {{expected projection weight out 8 (stream width), got 9}}
  %r2 = llm.mhc_post %o, %r, %p, %cb projection(%w) {hc_mult = 4 : i64} : (tensor<?x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<9x16xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a projected input whose width is not the weight's in.
func.func @mhc_post_projection_input(%o: tensor<?x12xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xf32>, %cb: tensor<?x4x4xf32>, %w: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected input shape ?x16, got ?x12}}
  %r2 = llm.mhc_post %o, %r, %p, %cb projection(%w) {hc_mult = 4 : i64} : (tensor<?x12xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<8x16xbf16>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a residual write without comb.
func.func @swiglu_streams_count(%x: tensor<?x8xbf16>, %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xf32>) {
  // expected-error@+1 {{expected streams (residual, post, comb), got 2 values}}
  %y = llm.swiglu_mlp %x, %wg, %wu, %wd streams(%r, %p) {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf32>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects bf16 post weights of a residual write.
func.func @swiglu_streams_f32(%x: tensor<?x8xbf16>, %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>, %r: tensor<?x4x8xbf16>, %p: tensor<?x4xbf16>, %cb: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected f32 post and comb}}
  %y = llm.swiglu_mlp %x, %wg, %wu, %wd streams(%r, %p, %cb) {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4x4xf32>) -> tensor<?x4x8xbf16>
  return
}

// -----

// Tests that the verifier rejects residual streams of another width.
func.func @swiglu_streams_width(%x: tensor<?x8xbf16>, %wg: tensor<16x8xbf16>, %wu: tensor<16x8xbf16>, %wd: tensor<8x16xbf16>, %r: tensor<?x4x9xbf16>, %p: tensor<?x4xf32>, %cb: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected residual streams shape ?x4x8, got ?x4x9}}
  %y = llm.swiglu_mlp %x, %wg, %wu, %wd streams(%r, %p, %cb) {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>, tensor<?x4x9xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x9xbf16>
  return
}

// -----

// Tests that the verifier rejects zero heads.
func.func @kda_heads(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected heads > 0, got 0}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 0 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects zero head_dim.
func.func @kda_head_dim(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected head_dim > 0, got 0}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 0 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects zero conv_kernel.
func.func @kda_conv_kernel(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected conv_kernel > 0, got 0}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 0 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a zero l2_eps.
func.func @kda_l2_eps(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected l2_eps > 0, got 0.000000e+00}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 0.0 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects per-token state slots of another rank.
func.func @kda_token_slots(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>, %tok: tensor<?x2xi32>) {
  // expected-error@+1 {{expected token_slots shape ?, got ?x2}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl, %tok {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x2xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a zero q_scale.
func.func @kda_q_scale(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected q_scale > 0, got 0.000000e+00}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.0 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a zero norm_eps.
func.func @kda_norm_eps(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected norm_eps > 0, got 0.000000e+00}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 0.0 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a non-negative gate lower bound.
func.func @kda_gate_lower_bound(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected gate_lower_bound < 0, got 5.000000e+00}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = 5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a chunked mode with chunk size 0.
func.func @kda_chunk_size(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected chunk_size > 0, got 0}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 0 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects q whose width is not heads * head_dim.
func.func @kda_q(%q: tensor<?x7xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected q shape ?x8, got ?x7}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x7xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects k whose width is not heads * head_dim.
func.func @kda_k(%q: tensor<?x8xbf16>, %k: tensor<?x7xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected k shape ?x8, got ?x7}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x7xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects v whose width is not heads * head_dim.
func.func @kda_v(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x7xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected v shape ?x8, got ?x7}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x7xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects forget logits whose width is not heads * head_dim.
func.func @kda_forget(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x7xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected forget shape ?x8, got ?x7}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x7xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects beta logits that are not [T, heads].
func.func @kda_beta(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x3xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected beta shape ?x2, got ?x3}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x3xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects gate logits whose width is not heads * head_dim.
func.func @kda_gate(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x7xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected gate shape ?x8, got ?x7}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x7xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a q conv weight that is not [P, 1, K].
func.func @kda_q_conv(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x3xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected q_conv shape 8x1x4, got 8x1x3}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x3xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a k conv weight that is not [P, 1, K].
func.func @kda_k_conv(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x3xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected k_conv shape 8x1x4, got 8x1x3}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x3xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a v conv weight that is not [P, 1, K].
func.func @kda_v_conv(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x3xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected v_conv shape 8x1x4, got 8x1x3}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x3xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects an A_log that is not [heads].
func.func @kda_a_log(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<3xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected a_log shape 2, got 3}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<3xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a dt_bias that is not [heads * head_dim].
func.func @kda_dt_bias(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<4xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected dt_bias shape 8, got 4}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<4xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects an o_norm weight that is not [head_dim].
func.func @kda_o_norm(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<8xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected o_norm shape 4, got 8}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects an output whose width is not heads * head_dim.
func.func @kda_result(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected result shape ?x8, got ?x9}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x9xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a recurrent state whose head_dim differs from the op.
func.func @kda_state_dims(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 8, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected kda state [heads, key_dim, value_dim] = [2, 4, 4], got [2, 8, 4]}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a conv state whose width is not conv_kernel - 1.
func.func @kda_conv_state(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 4, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected conv state channels 24 (3 * heads * head_dim) and width 3 (conv_kernel - 1), got channels 24 and width 4}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 4, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a returned state whose type differs from the input state.
func.func @kda_state_out(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected state_out type '!llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>', got '!llm.kda_state<heads = 2, key_dim = 4, value_dim = 8, f32>'}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 8, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a returned conv state whose type differs from the input.
func.func @kda_conv_state_out(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected conv_state_out type '!llm.conv_state<channels = 24, width = 3, bf16>', got '!llm.conv_state<channels = 24, width = 3, f32>'}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, f32>)
  return
}

// -----

// Tests that the verifier rejects positions of rank 2.
func.func @kda_positions(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?x1xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected positions shape ?, got ?x1}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?x1xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects seq_starts of rank 2.
func.func @kda_seq_starts(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?x1xi32>, %sl: tensor<?xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected seq_starts rank 1, got 2}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?x1xi32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects src_slots of rank 2.
func.func @kda_src_slots(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?x1xi32>, %dsl: tensor<?xi32>) {
  // expected-error@+1 {{expected slots rank 1, got 2}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x1xi32>, tensor<?xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects dst_slots of rank 2.
func.func @kda_dst_slots(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x8xbf16>, %f: tensor<?x8xbf16>, %b: tensor<?x2xbf16>, %g: tensor<?x8xbf16>, %qc: tensor<8x1x4xbf16>, %kc: tensor<8x1x4xbf16>, %vc: tensor<8x1x4xbf16>, %al: tensor<2xf32>, %dt: tensor<8xf32>, %on: tensor<4xbf16>, %s: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %cs: !llm.conv_state<channels = 24, width = 3, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>, %dsl: tensor<?x1xi32>) {
  // expected-error@+1 {{expected dst_slots rank 1, got 2}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %al, %dt, %on, %s, %cs, %pos, %st, %sl, %dsl {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64, gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32, norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x1xi32>) -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>)
  return
}

// -----

// Tests that the verifier rejects a softmax scale taken from the padded width.
func.func @mla_softmax_scale(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected softmax_scale 5.000000e-01 (qk_head_dim^-1/2), got 4.166667e-02}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.0416666679 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a kv_lora_rank that differs from the cache latent width.
func.func @mla_kv_lora_rank(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 9, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected kv_lora_rank 8 to match the cache latent width, got 9}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 9, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects zero heads.
func.func @mla_heads(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected heads > 0, got 0}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 0 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects zero qk_head_dim.
func.func @mla_qk_head_dim(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected qk_head_dim > 0, got 0}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 0 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects zero v_head_dim.
func.func @mla_v_head_dim(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected v_head_dim > 0, got 0}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 0 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects zero kv_lora_rank.
func.func @mla_kv_lora_rank_zero(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected kv_lora_rank > 0, got 0}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 0 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a query that is not [T, heads, qk_head_dim].
func.func @mla_q(%q: tensor<?x2x5xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected q shape ?x2x4, got ?x2x5}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x5xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a kv_b that is not [heads * (qk + v), kv_lora_rank].
func.func @mla_kv_b(%q: tensor<?x2x4xbf16>, %kvb: tensor<12x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected kv_b shape 16x8, got 12x8}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<12x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-1 selection.
func.func @mla_selection_rank(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected selection rank 2, got 1}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects counts of rank 2.
func.func @mla_counts(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?x1xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected counts shape ?, got ?x1}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?x1xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-1 block table.
func.func @mla_block_table(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?xi32>) {
  // expected-error@+1 {{expected block_table rank 2, got 1}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x4xbf16>
  return
}

// -----

// Tests that the verifier rejects an output that is not [T, heads, v_head_dim].
func.func @mla_result(%q: tensor<?x2x4xbf16>, %kvb: tensor<16x8xbf16>, %c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %sel: tensor<?x16xi32>, %n: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected result shape ?x2x4, got ?x2x5}}
  %o = llm.mla_attention %q, %kvb, %c, %sel, %n, %st, %bt {heads = 2 : i64, qk_head_dim = 4 : i64, v_head_dim = 4 : i64, kv_lora_rank = 8 : i64, softmax_scale = 0.5 : f32} : (tensor<?x2x4xbf16>, tensor<16x8xbf16>, !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x16xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2x5xbf16>
  return
}

// -----

// Tests that the verifier rejects kpool 0.
func.func @kpool_compress_kpool(%k: tensor<?x8xbf16>, %g: tensor<?x8xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected kpool > 0, got 0}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 0 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects a tail ring shallower than kpool.
func.func @kpool_compress_ring_depth(%k: tensor<?x8xbf16>, %g: tensor<?x8xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 2, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected tail ring depth >= kpool 4, got 2}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 2, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects keys whose width differs from the ring.
func.func @kpool_compress_k(%k: tensor<?x7xbf16>, %g: tensor<?x8xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected k shape ?x8, got ?x7}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<?x7xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects gates whose width differs from the ring.
func.func @kpool_compress_g(%k: tensor<?x8xbf16>, %g: tensor<?x7xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected g shape ?x8, got ?x7}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<?x8xbf16>, tensor<?x7xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects an ape that is not [kpool, width].
func.func @kpool_compress_ape(%k: tensor<?x8xbf16>, %g: tensor<?x8xbf16>, %ape: tensor<3x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected ape shape 4x8, got 3x8}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<3x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects slots of rank 2.
func.func @kpool_compress_slots(%k: tensor<?x8xbf16>, %g: tensor<?x8xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?x1xi32>) {
  // expected-error@+1 {{expected slots rank 1, got 2}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x1xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects positions whose length differs from the token count.
func.func @kpool_compress_positions(%k: tensor<4x8xbf16>, %g: tensor<4x8xbf16>, %ape: tensor<4x8xbf16>, %r: !llm.tail_ring<depth = 4, width = 8, bf16>, %pos: tensor<5xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected positions shape 4, got 5}}
  %p = llm.kpool_compress %k, %g, %ape, %r, %pos, %st, %sl {kpool = 4 : i64} : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, !llm.tail_ring<depth = 4, width = 8, bf16>, tensor<5xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Tests that the verifier rejects a topk that kpool does not divide.
func.func @kpool_indexer_topk_divisible(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected topk 18 to be divisible by kpool 4}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 18 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x21xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects topk 0.
func.func @kpool_indexer_topk(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected topk > 0, got 0}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 0 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects a zero score scale.
func.func @kpool_indexer_scale(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected scale > 0, got 0.000000e+00}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.0 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects an index pool whose kpool differs from the op.
func.func @kpool_indexer_pool_kpool(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 8, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected index pool kpool 4, got 8}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 8, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects an index pool whose width is not head_dim.
func.func @kpool_indexer_pool_width(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 16, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected index pool width head_dim 8, got 16}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 16, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects an index query that is not [T, heads, head_dim].
func.func @kpool_indexer_q(%q: tensor<?x3x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected q shape ?x2x8, got ?x3x8}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x3x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects head weights that are not [T, heads].
func.func @kpool_indexer_weights(%q: tensor<?x2x8xbf16>, %w: tensor<?x3xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected weights shape ?x2, got ?x3}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x3xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects a selection narrower than topk + kpool - 1.
func.func @kpool_indexer_selection_width(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected selection width >= topk + kpool - 1 = 19, got 16}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x16xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects a dense (kpool = 1) selection narrower than topk.
func.func @kpool_indexer_dense_selection_width(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 1, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected selection width >= topk + kpool - 1 = 16, got 15}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 1 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 1, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x15xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects a dense (kpool = 1) index pool read by an indexer of kpool 4.
func.func @kpool_indexer_dense_pool(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 1, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected index pool kpool 4, got 1}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 1, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x19xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects a rank-1 selection.
func.func @kpool_indexer_selection_rank(%q: tensor<?x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected selection rank 2, got 1}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<?x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?xi32>, tensor<?xi32>)
  return
}

// -----

// Tests that the verifier rejects counts whose length differs from the token count.
func.func @kpool_indexer_counts(%q: tensor<4x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected counts shape 4, got 5}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<4x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<4x19xi32>, tensor<5xi32>)
  return
}

// -----

// Tests that the verifier rejects a selection whose row count differs from the token count.
func.func @kpool_indexer_selection_tokens(%q: tensor<4x2x8xbf16>, %w: tensor<?x2xf32>, %p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected selection shape 4x19, got 5x19}}
  %s, %n = llm.kpool_indexer %q, %w, %p, %pos, %st, %bt {topk = 16 : i64, kpool = 4 : i64, heads = 2 : i64, head_dim = 8 : i64, scale = 0.25 : f32} : (tensor<4x2x8xbf16>, tensor<?x2xf32>, !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<5x19xi32>, tensor<4xi32>)
  return
}

// -----

// Tests that the verifier rejects a latent whose width differs from the pool width.
func.func @latent_cache_write_latent(%c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %l: tensor<?x9xbf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected latent shape ?x8, got ?x9}}
  %c1 = llm.latent_cache_write %c, %l, %pos, %st, %bt : (!llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x9xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>
  return
}

// -----

// Tests that the verifier rejects a returned pool whose type differs from the input.
func.func @latent_cache_write_result(%c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %l: tensor<?x8xbf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected result type '!llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>', got '!llm.latent_pool<page_size = 16, width = 8, pad = 64, bf16>'}}
  %c1 = llm.latent_cache_write %c, %l, %pos, %st, %bt : (!llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 16, width = 8, pad = 64, bf16>
  return
}

// -----

// Tests that the verifier rejects rank-1 ids.
func.func @latent_cache_gather_ids(%c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %ids: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected ids rank 2, got 1}}
  %y = llm.latent_cache_gather %c, %ids, %st, %bt : (!llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects gathered rows whose width differs from the pool width.
func.func @latent_cache_gather_result(%c: !llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, %ids: tensor<?x4xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected result shape ?x4x8, got ?x4x9}}
  %y = llm.latent_cache_gather %c, %ids, %st, %bt : (!llm.latent_pool<page_size = 16, width = 8, pad = 0, bf16>, tensor<?x4xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x9xbf16>
  return
}

// -----

// Tests that the verifier rejects keys whose width differs from the pool width.
func.func @index_cache_write_keys(%p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %k: tensor<?x9xf32>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected keys shape ?x8, got ?x9}}
  %p1 = llm.index_cache_write %p, %k, %pos, %st, %bt : (!llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?x9xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>
  return
}

// -----

// Tests that the verifier rejects a returned pool whose type differs from the input.
func.func @index_cache_write_result(%p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %k: tensor<?x8xf32>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected result type '!llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>', got '!llm.index_pool<page_size = 32, kpool = 4, width = 8, bf16>'}}
  %p1 = llm.index_cache_write %p, %k, %pos, %st, %bt : (!llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?x8xf32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 32, kpool = 4, width = 8, bf16>
  return
}

// -----

// Tests that the verifier rejects rank-1 pool ids.
func.func @index_cache_gather_pool_ids(%p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %ids: tensor<?xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected pool_ids rank 2, got 1}}
  %y = llm.index_cache_gather %p, %ids, %st, %bt : (!llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x8xf32>
  return
}

// -----

// Tests that the verifier rejects gathered rows whose width differs from the pool width.
func.func @index_cache_gather_result(%p: !llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, %ids: tensor<?x4xi32>, %st: tensor<?xi32>, %bt: tensor<?x?xi32>) {
  // expected-error@+1 {{expected result shape ?x4x8, got ?x4x9}}
  %y = llm.index_cache_gather %p, %ids, %st, %bt : (!llm.index_pool<page_size = 16, kpool = 4, width = 8, bf16>, tensor<?x4xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x9xf32>
  return
}

// -----

// Tests that the verifier rejects a returned ring whose type differs from the input.
func.func @tail_ring_write_result(%r: !llm.tail_ring<depth = 4, width = 8, bf16>, %k: tensor<?x8xbf16>, %g: tensor<?x8xbf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected result type '!llm.tail_ring<depth = 4, width = 8, bf16>', got '!llm.tail_ring<depth = 16, width = 8, bf16>'}}
  %r1 = llm.tail_ring_write %r, %k, %g, %pos, %st, %sl : (!llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !llm.tail_ring<depth = 16, width = 8, bf16>
  return
}

// -----

// Tests that the verifier rejects gates whose width differs from the ring width.
func.func @tail_ring_write_g(%r: !llm.tail_ring<depth = 4, width = 8, bf16>, %k: tensor<?x8xbf16>, %g: tensor<?x7xbf16>, %pos: tensor<?xi32>, %st: tensor<?xi32>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected g shape ?x8, got ?x7}}
  %r1 = llm.tail_ring_write %r, %k, %g, %pos, %st, %sl : (!llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?x8xbf16>, tensor<?x7xbf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !llm.tail_ring<depth = 4, width = 8, bf16>
  return
}

// -----

// Tests that the verifier rejects gathered rows that are not [N, 2, depth, width].
func.func @tail_ring_gather_result(%r: !llm.tail_ring<depth = 4, width = 8, bf16>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected result shape ?x2x4x8, got ?x2x8x8}}
  %y = llm.tail_ring_gather %r, %sl : (!llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>) -> tensor<?x2x8x8xbf16>
  return
}

// -----

// Tests that the verifier rejects gathered rows whose element type differs from the ring.
func.func @tail_ring_gather_element(%r: !llm.tail_ring<depth = 4, width = 8, bf16>, %sl: tensor<?xi32>) {
  // expected-error@+1 {{expected result element type 'bf16', got 'f32'}}
  %y = llm.tail_ring_gather %r, %sl : (!llm.tail_ring<depth = 4, width = 8, bf16>, tensor<?xi32>) -> tensor<?x2x4x8xf32>
  return
}

// -----

// Tests that the verifier rejects a zero swiglu limit.
func.func @swiglu_mlp_limit(%x: tensor<?x8xbf16>, %g: tensor<16x8xbf16>, %u: tensor<16x8xbf16>, %d: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected swiglu_limit > 0, got 0.000000e+00}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 0.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-3 gate weight.
func.func @swiglu_mlp_gate_rank(%x: tensor<?x8xbf16>, %g: tensor<1x16x8xbf16>, %u: tensor<16x8xbf16>, %d: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected gate rank 2, got 3}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<1x16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a gate weight whose in dimension differs from the hidden size.
func.func @swiglu_mlp_gate(%x: tensor<?x8xbf16>, %g: tensor<16x4xbf16>, %u: tensor<16x8xbf16>, %d: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected gate shape 16x8, got 16x4}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x4xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects an up weight whose shape differs from the gate.
func.func @swiglu_mlp_up(%x: tensor<?x8xbf16>, %g: tensor<16x8xbf16>, %u: tensor<12x8xbf16>, %d: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected up shape 16x8, got 12x8}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<12x8xbf16>, tensor<8x16xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a down weight that is not [hidden, intermediate].
func.func @swiglu_mlp_down(%x: tensor<?x8xbf16>, %g: tensor<16x8xbf16>, %u: tensor<16x8xbf16>, %d: tensor<16x8xbf16>) {
  // expected-error@+1 {{expected down shape 8x16, got 16x8}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a rank-3 input.
func.func @swiglu_mlp_input_rank(%x: tensor<?x1x8xbf16>, %g: tensor<16x8xbf16>, %u: tensor<16x8xbf16>, %d: tensor<8x16xbf16>) {
  // expected-error@+1 {{expected input rank 2, got 3}}
  %y = llm.swiglu_mlp %x, %g, %u, %d {swiglu_limit = 10.0 : f32} : (tensor<?x1x8xbf16>, tensor<16x8xbf16>, tensor<16x8xbf16>, tensor<8x16xbf16>) -> tensor<?x1x8xbf16>
  return
}

// -----

// Tests that the verifier rejects zero experts.
func.func @moe_num_experts(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected num_experts > 0, got 0}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 0 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a top_k above the expert count.
func.func @moe_top_k(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected top_k in [1, num_experts 4], got 5}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 5 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects an n_group that does not divide the experts.
func.func @moe_n_group(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected n_group to divide num_experts 4, got 3}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 3 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a topk_group above n_group.
func.func @moe_topk_group(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected topk_group in [1, n_group 1], got 2}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 2 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a negative renormalisation eps.
func.func @moe_renorm_eps(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected renorm_eps >= 0, got -1.000000e+00}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = -1.0 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a zero routed scaling factor.
func.func @moe_routed_scaling(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected routed_scaling_factor > 0, got 0.000000e+00}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 0.0 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a router that is not [num_experts, hidden].
func.func @moe_router(%x: tensor<?x8xbf16>, %r: tensor<5x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected router shape 4x8, got 5x8}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<5x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a correction bias that is not [num_experts].
func.func @moe_correction_bias(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<5xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected correction_bias shape 4, got 5}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<5xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects unstacked expert gate weights.
func.func @moe_expert_gate_rank(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected expert gate rank 3, got 2}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects expert gate weights stacked over a different expert count.
func.func @moe_expert_gate(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<3x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected expert gate shape 4x16x8, got 3x16x8}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<3x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects expert up weights whose shape differs from the gate.
func.func @moe_expert_up(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x12x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected expert up shape 4x16x8, got 4x12x8}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x12x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects expert down weights that are not [E, hidden, intermediate].
func.func @moe_expert_down(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x12xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected expert down shape 4x8x16, got 4x8x12}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x12xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a shared gate whose in dimension differs from the hidden size.
func.func @moe_shared_gate(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x4xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected shared_gate shape 12x8, got 12x4}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x4xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a shared up weight whose shape differs from the shared gate.
func.func @moe_shared_up(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<10x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected shared_up shape 12x8, got 10x8}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<10x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a shared down weight that is not [hidden, shared intermediate].
func.func @moe_shared_down(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x10xbf16>) {
  // expected-error@+1 {{expected shared_down shape 8x12, got 8x10}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x10xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a zero swiglu limit.
func.func @moe_swiglu_limit(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected swiglu_limit > 0, got 0.000000e+00}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 0.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects a stacked shared gate weight.
func.func @moe_shared_gate_rank(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<1x12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{expected shared_gate rank 2, got 3}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<1x12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that a shard of a negative dimension is rejected.
func.func @shard_negative_dim() {
  // expected-error@+1 {{shard dimension must be >= 0, got -1}}
  %w = llm.weight "t" {shards = [#llm.shard<tp, dim = -1, parts = 2>]} : tensor<64x64xbf16>
  return
}

// -----

// Tests that a shard of no parts is rejected.
func.func @shard_zero_parts() {
  // expected-error@+1 {{shard parts must be >= 1, got 0}}
  %w = llm.weight "t" {shards = [#llm.shard<tp, dim = 0, parts = 0>]} : tensor<64x64xbf16>
  return
}

// -----

// Tests that a weight shard must name a dimension of the weight.
func.func @shard_dim_out_of_rank() {
  // expected-error@+1 {{expected shard dimension < rank 2, got 2}}
  %w = llm.weight "t" {shards = [#llm.shard<tp, dim = 2, parts = 2>]} : tensor<64x64xbf16>
  return
}

// -----

// Tests that a dimension is split by one shard only.
func.func @shard_dim_twice() {
  // expected-error@+1 {{expected at most one shard per dimension, got two of dimension 0}}
  %w = llm.expert_weights "e.{e}.w" {num_experts = 4 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 0, parts = 2>]} : tensor<4x64x64xbf16>
  return
}

// -----

// Tests that an fp8 part that straddles scale blocks is rejected (96 rows
// of 128-row blocks: part 1 would need half of two blocks' scales).
func.func @shard_fp8_straddles_blocks() {
  // expected-error@+1 {{expected sharded fp8 extent 96 of dimension 0 to be a multiple or a divisor of the block size 128}}
  %w = llm.weight "t" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : !llm.fp8_weight<tensor<96x128xf8E4M3FN>, tensor<1x1xf32>, block = [128, 128]>
  return
}

// -----

// Tests that the vocabulary-parallel embedding splits the table's rows.
func.func @embedding_vocab_shard_dim(%ids: tensor<?xi32>, %table: tensor<512x64xbf16>) {
  // expected-error@+1 {{expected vocab_shard on dimension 0, got 1}}
  %e = llm.embedding %ids, %table {vocab_shard = #llm.shard<tp, dim = 1, parts = 2>} : (tensor<?xi32>, tensor<512x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that the expert-parallel MoE splits the stacked experts.
func.func @moe_expert_shard_dim(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %g: tensor<2x32x64xbf16>, %d: tensor<2x64x32xbf16>, %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) {
  // expected-error@+1 {{expected expert_shard on dimension 0, got 1}}
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 1, parts = 2>}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<2x32x64xbf16>, tensor<2x32x64xbf16>,
         tensor<2x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that the expert groups must divide the routed experts.
func.func @moe_expert_shard_parts(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %g: tensor<1x32x64xbf16>, %d: tensor<1x64x32xbf16>, %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) {
  // expected-error@+1 {{expected expert_shard parts to divide num_experts 4, got 3}}
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 0, parts = 3>}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<1x32x64xbf16>, tensor<1x32x64xbf16>,
         tensor<1x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that the stacked experts of an expert-parallel MoE are the rank's
// part (4 experts over 2 ranks: 2 stacked, not 4).
func.func @moe_expert_shard_stack(%x: tensor<?x64xbf16>, %router: tensor<4x64xf32>, %bias: tensor<4xf32>,
    %g: tensor<4x32x64xbf16>, %d: tensor<4x64x32xbf16>, %sg: tensor<32x64xbf16>, %sd: tensor<64x32xbf16>) {
  // expected-error@+1 {{expected expert gate shape 2x32x64, got 4x32x64}}
  %y = llm.moe_ffn %x, %router, %bias, %g, %g, %d, %sg, %sg, %sd
      {num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64,
       norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
       swiglu_limit = 10.0 : f32, expert_shard = #llm.shard<ep, dim = 0, parts = 2>}
      : (tensor<?x64xbf16>, tensor<4x64xf32>, tensor<4xf32>, tensor<4x32x64xbf16>, tensor<4x32x64xbf16>,
         tensor<4x64x32xbf16>, tensor<32x64xbf16>, tensor<32x64xbf16>, tensor<64x32xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that a collective's group has at least one rank.
func.func @all_reduce_group_size(%p: tensor<?x64xbf16>) {
  // expected-error@+1 {{expected group_size > 0, got 0}}
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 0 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that the plain all-reduce keeps the input's type.
func.func @all_reduce_type(%p: tensor<?x64xbf16>) {
  // expected-error@+1 {{expected result type 'tensor<?x64xbf16>', got 'tensor<?x64xf32>'}}
  %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 2 : i64} : (tensor<?x64xbf16>) -> tensor<?x64xf32>
  return
}

// -----

// Tests that the residual-write form reduces a [T, D] value.
func.func @all_reduce_streams_rank(%p: tensor<?x4x64xbf16>, %r: tensor<?x4x64xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected reduced input rank 2, got 3}}
  %y = llm.all_reduce %p streams(%r, %post, %comb) {group = #llm.rank_group<tp>, group_size = 2 : i64}
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x64xbf16>
  return
}

// -----

// Tests that the residual-write form's result has the streams' shape.
func.func @all_reduce_streams_result(%p: tensor<?x64xbf16>, %r: tensor<?x4x64xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) {
  // expected-error@+1 {{expected result shape ?x4x64, got ?x64}}
  %y = llm.all_reduce %p streams(%r, %post, %comb) {group = #llm.rank_group<tp>, group_size = 2 : i64}
      : (tensor<?x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x64xbf16>
  return
}

// -----

// Tests that an all-gather concatenates along a dimension of its input.
func.func @all_gather_dim(%l: tensor<?x64xf32>) {
  // expected-error@+1 {{expected gather dim in [0, 2), got 2}}
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 2 : i64, dim = 2 : i64} : (tensor<?x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

// Tests that an all-gather's result is group_size times larger along dim.
func.func @all_gather_shape(%l: tensor<?x64xf32>) {
  // expected-error@+1 {{expected gathered result shape ?x256, got ?x128}}
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 4 : i64, dim = 1 : i64} : (tensor<?x64xf32>) -> tensor<?x128xf32>
  return
}

// -----

// Tests that an all-gather keeps the element type.
func.func @all_gather_element(%l: tensor<?x64xf32>) {
  // expected-error@+1 {{expected gathered element type 'f32', got 'bf16'}}
  %g = llm.all_gather %l {group = #llm.rank_group<tp>, group_size = 2 : i64, dim = 1 : i64} : (tensor<?x64xf32>) -> tensor<?x128xbf16>
  return
}

// -----

// Tests that a kernel function's llm.kernel is a #llm.kernel.
// expected-error@+1 {{llm.kernel must be a #llm.kernel, got "linear"}}
func.func @kernel_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = "linear"} {
  return
}

// -----

// Tests that the kernel contract is only valid on a function.
func.func @kernel_not_function() {
  // expected-error@+1 {{llm.kernel is only valid on a function}}
  %c = arith.constant {llm.kernel = #llm.kernel<"k">} 0 : i32
  return
}

// -----

// Tests that a kernel key is not empty.
// expected-error@+1 {{kernel key must not be empty}}
func.func @kernel_empty_key(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"">} {
  return
}

// -----

// Tests that a role names one argument.
// expected-error@+1 {{argument role 'x' appears twice}}
func.func @kernel_role_twice(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k", roles = [x, x]>} {
  return
}

// -----

// Tests that every argument has a role.
// expected-error@+1 {{has 2 kernel argument roles for 3 arguments}}
func.func @kernel_role_count(%x: memref<?x8xbf16>, %w: memref<4x8xbf16>, %y: memref<?x4xbf16>) attributes {llm.kernel = #llm.kernel<"k", roles = [x, out]>} {
  return
}

// -----

// Tests that an index role is a memref of i32.
// expected-error@+1 {{argument 1 (role 'seq_starts') must be a memref of i32, got 'memref<?xi64>'}}
func.func @kernel_index_role(%x: memref<?x8xf32>, %s: memref<?xi64>) attributes {llm.kernel = #llm.kernel<"k", roles = [x, seq_starts]>} {
  return
}

// -----

// Tests that a scale role is a memref of f32.
// expected-error@+1 {{argument 2 (role 'weight_scales') must be a memref of f32, got 'memref<1x1xbf16>'}}
func.func @kernel_scale_role(%x: memref<?x8xbf16>, %w: memref<4x8xf8E4M3FN>, %s: memref<1x1xbf16>, %y: memref<?x4xbf16>) attributes {llm.kernel = #llm.kernel<"k", roles = [x, weight, weight_scales, out]>} {
  return
}

// -----

// Tests that the expert coordinate is an i64.
// expected-error@+1 {{argument 1 (role 'expert_coordinate') must be an i64, got 'i32'}}
func.func @kernel_coordinate_role(%x: memref<?x8xbf16>, %c: i32) attributes {llm.kernel = #llm.kernel<"k", roles = [x, expert_coordinate]>} {
  return
}

// -----

// Tests that a data role is a memref.
// expected-error@+1 {{argument 0 (role 'x') must be a memref, got 'i64'}}
func.func @kernel_memref_role(%x: i64) attributes {llm.kernel = #llm.kernel<"k", roles = [x]>} {
  return
}

// -----

// Tests that llm.gpu_strategy is a #llm.gpu_strategy.
// expected-error@+1 {{llm.gpu_strategy must be a #llm.gpu_strategy, got "generic"}}
func.func @strategy_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.gpu_strategy = "generic"} {
  return
}

// -----

// Tests that a strategy is only set on a kernel function.
// expected-error@+1 {{llm.gpu_strategy is only valid on an llm.kernel function}}
func.func @strategy_without_kernel(%x: memref<?x8xf32>) attributes {llm.gpu_strategy = #llm.gpu_strategy<generic>} {
  return
}

// -----

// Tests that llm.mla_attend is a #llm.mla_attend.
// expected-error@+1 {{llm.mla_attend must be a #llm.mla_attend, got {softmax_scale = 6.250000e-02 : f32}}}
func.func @mla_attend_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mla_attend = {softmax_scale = 6.250000e-02 : f32}} {
  return
}

// -----

// Tests that the MLA parameters are only set on a kernel function.
// expected-error@+1 {{llm.mla_attend is only valid on an llm.kernel function}}
func.func @mla_attend_without_kernel(%x: memref<?x8xf32>) attributes {llm.mla_attend = #llm.mla_attend<softmax_scale = 6.250000e-02 : f32>} {
  return
}

// -----

// Tests that the softmax scale is finite and positive.
// expected-error@+1 {{mla_attend softmax_scale must be finite and > 0}}
func.func @mla_attend_zero_scale(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mla_attend = #llm.mla_attend<softmax_scale = 0.0 : f32>} {
  return
}

// -----

// Tests that an fp8 page has rows, lanes and scale groups.
// expected-error@+2 {{fp8 page extents must be >= 1, got rows_per_page 0, row_lanes 512, group_lanes 128}}
// expected-error@+1 {{failed to parse LLM_MlaAttendAttr parameter 'fp8_page'}}
func.func @fp8_page_no_rows(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mla_attend = #llm.mla_attend<softmax_scale = 1.0 : f32, fp8_page = #llm.fp8_page<rows_per_page = 0, row_lanes = 512, row_bytes = 528, scale_offset = 512, group_lanes = 128>>} {
  return
}

// -----

// Tests that an fp8 page's scales follow its values inside the row.
// expected-error@+2 {{fp8 page scales must follow the 512 values inside the row (4 f32 at byte 512 of 520)}}
// expected-error@+1 {{failed to parse LLM_MlaAttendAttr parameter 'fp8_page'}}
func.func @fp8_page_short_row(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mla_attend = #llm.mla_attend<softmax_scale = 1.0 : f32, fp8_page = #llm.fp8_page<rows_per_page = 64, row_lanes = 512, row_bytes = 520, scale_offset = 512, group_lanes = 128>>} {
  return
}

// -----

// Tests that the indexer's scores have pools of at least one token.
// expected-error@+1 {{kpool_scores kpool must be >= 1, got 0}}
func.func @kpool_scores_no_pool(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kpool_scores = #llm.kpool_scores<kpool = 0, scale = 1.0 : f32>} {
  return
}

// -----

// Tests that the indexer's selection has pools and selected tokens.
// expected-error@+1 {{kpool_select kpool and topk must be >= 1, got 4 and 0}}
func.func @kpool_select_no_topk(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kpool_select = #llm.kpool_select<kpool = 4, topk = 0>} {
  return
}

// -----

// Tests that the KDA chunk parameters are typed.
// expected-error@+1 {{llm.kda_chunk must be a #llm.kda_chunk, got {gate_lower_bound = -5.000000e+00 : f32}}}
func.func @kda_chunk_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_chunk = {gate_lower_bound = -5.000000e+00 : f32}} {
  return
}

// -----

// Tests that the KDA gate bound is finite.
// expected-error@+1 {{kda_chunk gate_lower_bound must be finite}}
func.func @kda_chunk_infinite_bound(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = 0xFF800000 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that the KDA decode form takes at least one token.
// expected-error@+1 {{kda_chunk decode_max_tokens must be >= 1, got 0}}
func.func @kda_chunk_no_decode(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.0 : f32, decode_max_tokens = 0>} {
  return
}

// -----

// Tests that kda_decode's constants are finite.
// expected-error@+1 {{kda_decode q_scale must be finite}}
func.func @kda_decode_nan_scale(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0x7FC00000 : f32, norm_eps = 1.0e-05 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that kda_decode's epsilons are positive.
// expected-error@+1 {{kda_decode epsilons must be positive}}
func.func @kda_decode_zero_eps(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.0 : f32, l2_eps = 0.0 : f32, q_scale = 0.125 : f32, norm_eps = 1.0e-05 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that kda_decode's request bound is not negative (0: every request).
// expected-error@+1 {{kda_decode decode_max_tokens must be >= 0, got -1}}
func.func @kda_decode_negative_bound(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.125 : f32, norm_eps = 1.0e-05 : f32, decode_max_tokens = -1>} {
  return
}

// -----

// Tests that kda_prepare's constants are finite.
// expected-error@+1 {{kda_prepare gate_lower_bound must be finite}}
func.func @kda_prepare_inf_bound(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = 0xFF800000 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.125 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that kda_prepare's L2 epsilon is positive.
// expected-error@+1 {{kda_prepare l2_eps must be positive}}
func.func @kda_prepare_zero_eps(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.0 : f32, l2_eps = 0.0 : f32, q_scale = 0.125 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that kda_prepare leaves some requests to kda_decode (its chunk path
// takes the longer ones).
// expected-error@+1 {{kda_prepare decode_max_tokens must be >= 1, got 0}}
func.func @kda_prepare_no_decode(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.125 : f32, decode_max_tokens = 0>} {
  return
}

// -----

// Tests that kda_output's norm epsilon is positive.
// expected-error@+1 {{kda_output norm_eps must be finite and positive}}
func.func @kda_output_zero_eps(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_output = #llm.kda_output<norm_eps = 0.0 : f32, decode_max_tokens = 4>} {
  return
}

// -----

// Tests that kda_output leaves some requests to kda_decode.
// expected-error@+1 {{kda_output decode_max_tokens must be >= 1, got 0}}
func.func @kda_output_no_decode(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.kda_output = #llm.kda_output<norm_eps = 1.0e-05 : f32, decode_max_tokens = 0>} {
  return
}

// -----

// Tests that a quantisation group has at least one value.
// expected-error@+1 {{group_quantize block must be >= 1, got 0}}
func.func @group_quantize_empty(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.group_quantize = #llm.group_quantize<block = 0>} {
  return
}

// -----

// Tests that mhc_mix has at least one slice.
// expected-error@+1 {{mhc_mix slices must be >= 1, got 0}}
func.func @mhc_mix_no_slices(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mhc_mix = #llm.mhc_mix<slices = 0>} {
  return
}

// -----

// Tests that the router selects between 1 and all of its experts.
// expected-error@+1 {{moe_select top_k must be in [1, 16], got 17}}
func.func @moe_select_too_many(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.moe_select = #llm.moe_select<experts = 16, groups = 1, top_k = 17, normalize = true, renorm_eps = 1.0e-20 : f32, scaling = 1.0 : f32>} {
  return
}

// -----

// Tests that the grouping's slots per token are between 1 and all experts.
// expected-error@+1 {{moe_group top_k must be in [1, 16], got 0}}
func.func @moe_group_no_slots(%x: memref<?x8xi32>) attributes {llm.kernel = #llm.kernel<"k">, llm.moe_group = #llm.moe_group<experts = 16, top_k = 0>} {
  return
}

// -----

// Tests that the grouping's parameters are typed.
// expected-error@+1 {{llm.moe_group must be a #llm.moe_group, got {top_k = 4 : i64}}}
func.func @moe_group_untyped(%x: memref<?x8xi32>) attributes {llm.kernel = #llm.kernel<"k">, llm.moe_group = {top_k = 4 : i64}} {
  return
}

// -----

// Tests that the expert groups divide the experts.
// expected-error@+1 {{moe_select groups must divide the 16 experts, got 3}}
func.func @moe_select_groups(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.moe_select = #llm.moe_select<experts = 16, groups = 3, top_k = 4, normalize = true, renorm_eps = 1.0e-20 : f32, scaling = 1.0 : f32>} {
  return
}

// -----

// Tests that mhc_pre has streams and a non-negative iteration count.
// expected-error@+1 {{mhc_pre needs hc_mult >= 1 and sinkhorn_iters >= 0, got 4 and -1}}
func.func @mhc_pre_iterations(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.mhc_pre = #llm.mhc_pre<hc_mult = 4, sinkhorn_iters = -1, hc_eps = 1.0e-6 : f32, norm_eps = 1.0e-5 : f32, post_mult = 2.0 : f32>} {
  return
}

// -----

// Tests that the router's parameters are typed.
// expected-error@+1 {{llm.moe_select must be a #llm.moe_select, got {top_k = 4 : i64}}}
func.func @moe_select_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.moe_select = {top_k = 4 : i64}} {
  return
}

// -----

// Tests that the residual write of a linear's epilogue has streams.
// expected-error@+1 {{linear_epilogue hc_mult must be >= 1, got 0}}
func.func @linear_epilogue_no_streams(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.linear_epilogue = #llm.linear_epilogue<mhc_post, hc_mult = 0>} {
  return
}

// -----

// Tests that a grouped-expert kernel routes at most its experts per token.
// expected-error@+1 {{grouped_experts top_k must be in [1, 16], got 17}}
func.func @grouped_experts_top_k(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.grouped_experts = #llm.grouped_experts<up, top_k = 17, experts = 16, min_slots = 64, swiglu_limit = 7.0 : f64>} {
  return
}

// -----

// Tests that a grouped-expert kernel works from at least one slot.
// expected-error@+1 {{grouped_experts min_slots must be >= 1, got 0}}
func.func @grouped_experts_min_slots(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.grouped_experts = #llm.grouped_experts<down, top_k = 4, experts = 16, min_slots = 0, swiglu_limit = 7.0 : f64>} {
  return
}

// -----

// Tests that a rank's share of the experts divides them.
// expected-error@+1 {{grouped_experts rank_experts must divide the 16 experts, got 5}}
func.func @grouped_experts_rank_share(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.grouped_experts = #llm.grouped_experts<up, top_k = 4, experts = 16, min_slots = 64, swiglu_limit = 7.0 : f64, rank_experts = 5>} {
  return
}

// -----

// Tests that the SwiGLU epilogue has its clamp.
// expected-error@+1 {{dense_matmul takes swiglu_limit exactly with the swiglu epilogue}}
func.func @dense_matmul_swiglu_limit(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = #llm.dense_matmul<epilogue = swiglu, min_rows = 64>} {
  return
}

// -----

// Tests that the slot-sum epilogue knows its slots.
// expected-error@+1 {{dense_matmul takes top_k exactly with the add_slot_sum epilogue}}
func.func @dense_matmul_slot_sum(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = #llm.dense_matmul<epilogue = add_slot_sum, min_rows = 64>} {
  return
}

// -----

// Tests that counts are not negative.
// expected-error@+1 {{dense_matmul min_rows, top_k and hc_mult must be positive where given}}
func.func @dense_matmul_negative(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = #llm.dense_matmul<epilogue = store, min_rows = -1>} {
  return
}

// -----

// Tests that the head-batched matmuls only store.
// expected-error@+1 {{dense_matmul's head-batched form stores its products (store epilogue, no hc_mult)}}
func.func @dense_matmul_heads_streams(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = #llm.dense_matmul<epilogue = store, hc_mult = 4, head_batched = #llm.head_batched<heads = 2, weight_row_offset = 0, weight_row_stride = 512, weight_transposed = false>>} {
  return
}

// -----

// Tests that a head-batched matmul has heads.
// expected-error@+2 {{head_batched needs heads >= 1 and a non-negative weight_row_offset and weight_row_stride, got 0, 0 and 512}}
// expected-error@+1 {{failed to parse LLM_DenseMatmulAttr parameter 'head_batched'}}
func.func @head_batched_no_heads(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<heads = 0, weight_row_offset = 0, weight_row_stride = 512, weight_transposed = false>>} {
  return
}

// -----

// Tests that the dense matmul's parameters are typed.
// expected-error@+1 {{llm.dense_matmul must be a #llm.dense_matmul, got {epilogue = "store"}}}
func.func @dense_matmul_untyped(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"k">, llm.dense_matmul = {epilogue = "store"}} {
  return
}

// -----

// Tests that the verifier rejects fp8 expert activations for bf16 experts.
func.func @moe_fp8_activations_bf16_experts(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: tensor<4x16x8xbf16>, %eu: tensor<4x16x8xbf16>, %ed: tensor<4x8x16xbf16>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{fp8_expert_activations needs fp8 block-scaled expert weights (gate, up and down)}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {fp8_expert_activations, num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x16x8xbf16>, tensor<4x16x8xbf16>, tensor<4x8x16xbf16>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}

// -----

// Tests that the verifier rejects fp8 expert activations when gate and up
// quantise x in different K groups.
func.func @moe_fp8_activations_k_blocks(%x: tensor<?x8xbf16>, %r: tensor<4x8xf32>, %b: tensor<4xf32>, %eg: !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, %eu: !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x2xf32>, block = [16, 4]>, %ed: !llm.fp8_weight<tensor<4x8x16xf8E4M3FN>, tensor<4x1x1xf32>, block = [8, 16]>, %sg: tensor<12x8xbf16>, %su: tensor<12x8xbf16>, %sd: tensor<8x12xbf16>) {
  // expected-error@+1 {{fp8_expert_activations needs gate and up to share their K block, got 8 and 4}}
  %y = llm.moe_ffn %x, %r, %b, %eg, %eu, %ed, %sg, %su, %sd {fp8_expert_activations, num_experts = 4 : i64, top_k = 2 : i64, n_group = 1 : i64, topk_group = 1 : i64, norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32, swiglu_limit = 10.0 : f32} : (tensor<?x8xbf16>, tensor<4x8xf32>, tensor<4xf32>, !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x1xf32>, block = [16, 8]>, !llm.fp8_weight<tensor<4x16x8xf8E4M3FN>, tensor<4x1x2xf32>, block = [16, 4]>, !llm.fp8_weight<tensor<4x8x16xf8E4M3FN>, tensor<4x1x1xf32>, block = [8, 16]>, tensor<12x8xbf16>, tensor<12x8xbf16>, tensor<8x12xbf16>) -> tensor<?x8xbf16>
  return
}
