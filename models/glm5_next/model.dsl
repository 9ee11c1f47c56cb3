// models/glm5_next/model.dsl - GLM-5.3-Flash (glm5_next): the target model
// and the MTP draft layer, as two entries of one module. Sources and deltas:
// models/glm5_next/README.md. Language: docs/DSL.md.
import "../common/norms.dsl";
import "../common/mhc.dsl";
import "../common/kda_attention.dsl";
import "../common/mla_attention.dsl";
import "../common/mlp.dsl";
import "../common/moe_ffn.dsl";

// One decoder layer of the target: attention and FFN sub-layers, each wrapped
// in mHC pre/post (spec glm5_next-target.md §3.2 "Per layer"). The layer kind
// comes from the config: layer_types[i] and mlp_layer_types[i].
def decoder_layer(streams, i, batch, state_batch) {
  let d = cfg.hidden_size;
  let p = "model.language_model.layers.{i}";
  let kind = cfg.layer_types[i];
  let mlp_kind = cfg.mlp_layer_types[i];

  let (attn_in, attn_post, attn_comb) = mhc_pre(streams, p, "attn");
  let attn_x = rms_norm(attn_in, "{p}.input_layernorm.weight", d);
  let attn_out = attn_x;
  if kind == "linear_attention" {
    attn_out = kda_attention(attn_x, "{p}.self_attn", state_batch);
  } else if kind == "deepseek_sparse_attention" {
    attn_out = mla_attention(attn_x, "{p}.self_attn", batch);
  } else {
    assert false, "unknown layer_types[{i}] '{kind}'";
  }
  let attn_streams = mhc_post(attn_out, streams, attn_post, attn_comb);

  let (ffn_in, ffn_post, ffn_comb) = mhc_pre(attn_streams, p, "ffn");
  let ffn_x = rms_norm(ffn_in, "{p}.post_attention_layernorm.weight", d);
  let ffn_out = ffn_x;
  if mlp_kind == "dense" {
    ffn_out = dense_mlp(ffn_x, "{p}.mlp");
  } else if mlp_kind == "sparse" {
    ffn_out = moe_ffn(ffn_x, "{p}.mlp");
  } else {
    assert false, "unknown mlp_layer_types[{i}] '{mlp_kind}'";
  }
  let out_streams = mhc_post(ffn_out, attn_streams, ffn_post, ffn_comb);
  return out_streams;
}

def embed_weight() {
  return weight("model.language_model.embed_tokens.weight", tensor([cfg.vocab_size, cfg.hidden_size], bf16));
}

def lm_head_weight() {
  // Untied from the embedding (tie_word_embeddings = false); no `model.` prefix.
  assert !cfg.tie_word_embeddings, "glm5_next ships an untied lm_head";
  return weight("lm_head.weight", tensor([cfg.vocab_size, cfg.hidden_size], bf16));
}

// Target forward. ids/positions {T}; seq_starts {N+1}; slots {N};
// block_table {N, pages}; rows {R} (token rows that get logits);
// state_src_slots / state_dst_slots {N}: the KDA state slots each request
// reads and writes (slots[r] both, except in a prefix-cache fork);
// state_token_slots {T}: the slot that keeps the KDA state after each token
// (state_dst_slots of its request, except in an MTP verification, which
// keeps the state after every position). Returns
// (logits {R, vocab} f32, hidden {T, D}: the model.norm output the MTP draft
// starts from, greedy {R} i32: each logits row's argmax), then every layer's
// updated caches in layer order.
entry glm5_next_target(ids: [?] i32, positions: [?] i32, seq_starts: [?] i32,
                       slots: [?] i32, block_table: [?, ?] i32, rows: [?] i32,
                       state_src_slots: [?] i32, state_dst_slots: [?] i32,
                       state_token_slots: [?] i32) {
  let d = cfg.hidden_size;
  let hc = cfg.hc_mult;
  let layers = cfg.num_hidden_layers;
  assert len(cfg.layer_types) == layers, "layer_types has {len(cfg.layer_types)} entries, expected num_hidden_layers = {layers}";
  assert len(cfg.mlp_layer_types) == layers, "mlp_layer_types has {len(cfg.mlp_layer_types)} entries, expected num_hidden_layers = {layers}";
  assert cfg.mhc, "glm5_next needs mhc = true";
  let batch = (positions, seq_starts, slots, block_table);
  let state_batch = (positions, seq_starts, state_src_slots, state_dst_slots,
                     state_token_slots);

  let embedding: [?, d] bf16 = llm.embedding(ids, embed_weight());
  // All hc_mult streams start as copies of the embedding (spec §3.1).
  let streams: [?, hc, d] bf16 = llm.hc_expand(embedding, hc_mult = hc);
  for i in 0 .. layers {
    scope "layer{i}" {
      streams = decoder_layer(streams, i, batch, state_batch);
    }
  }
  // Unweighted mean of the streams: GLM ships no hc_head (spec §3.3).
  let collapsed: [?, d] bf16 = llm.hc_collapse(streams, hc_mult = hc);
  let hidden = rms_norm(collapsed, "model.language_model.norm.weight", d);
  let logits: [?, cfg.vocab_size] f32 = llm.lm_head(hidden, lm_head_weight(), rows);
  // Each logits row's greedy token, so a greedy caller copies ids, not rows.
  let greedy: [?] i32 = llm.argmax(logits);
  return (logits, hidden, greedy);
}

// Whether the draft chain reuses step 0's selection (spec
// glm5_next-indexer-mtp-cache.md §4.4 item 2; true for GLM-5.3).
def index_share() {
  if has(cfg.index_share_for_mtp_iteration) {
    return cfg.index_share_for_mtp_iteration;
  }
  return false;
}

// The MTP layer's input projection: z {T, D} from the next tokens' masked
// embedding and the previous hidden rows (plain residual adds, no mHC).
def mtp_input(ids, hidden, positions, p) {
  let d = cfg.hidden_size;
  let embedding: [?, d] bf16 = llm.embedding(ids, embed_weight());
  // e = 0 at position 0 (vLLM fused_eh_norm convention, spec §4.2-4.3).
  let embedding_masked: [?, d] bf16 = llm.position_mask(embedding, positions, position = 0);
  let e_norm = rms_norm(embedding_masked, "{p}.enorm.weight", d);
  let h_norm = rms_norm(hidden, "{p}.hnorm.weight", d);
  // Embedding half first: {T, D} ++ {T, D} -> {T, 2D}.
  let eh: [?, 2 * d] bf16 = tensor.concat([e_norm, h_norm], dim = 1);
  // eh_proj is bf16 in every checkpoint inspected (spec §4.1).
  return linear(eh, proj_weight("{p}.eh_proj.weight", d, 2 * d, false), d);
}

// The MTP layer after its attention: (logits, h_out, greedy).
def mtp_output(z, attn_out, rows, p) {
  let d = cfg.hidden_size;
  let attn_res = z + attn_out;
  let ffn_x = rms_norm(attn_res, "{p}.post_attention_layernorm.weight", d);
  let ffn_out = moe_ffn(ffn_x, "{p}.mlp");
  let ffn_res = attn_res + ffn_out;
  // Post-norm output: both the logit input and the next step's hidden.
  let h_out = rms_norm(ffn_res, "{p}.shared_head.norm.weight", d);
  let logits: [?, cfg.vocab_size] f32 = llm.lm_head(h_out, lm_head_weight(), rows);
  let greedy: [?] i32 = llm.argmax(logits);
  return (logits, h_out, greedy);
}

// MTP draft step 0 (checkpoint layer num_hidden_layers; spec
// glm5_next-indexer-mtp-cache.md §4.2). ids {T} are the next tokens, hidden
// {T, D} the target's hidden. The target's embedding and lm_head. Returns
// (logits, h_out: the hidden for the next draft step, greedy: each logits
// row's argmax), then the draft layer's updated caches; under
// index_share_for_mtp_iteration also each request's last 4 rows' selections
// (the shared selection cache the chain reads).
entry glm5_next_mtp_draft(ids: [?] i32, hidden: [?, cfg.hidden_size] bf16,
                          positions: [?] i32, seq_starts: [?] i32,
                          slots: [?] i32, block_table: [?, ?] i32,
                          rows: [?] i32) {
  let d = cfg.hidden_size;
  let n = cfg.num_hidden_layers;
  assert cfg.num_nextn_predict_layers == 1, "one MTP layer expected, got {cfg.num_nextn_predict_layers}";
  let batch = (positions, seq_starts, slots, block_table);
  scope "layer{n}" {
    let p = "model.language_model.layers.{n}";
    let z = mtp_input(ids, hidden, positions, p);
    let attn_x = rms_norm(z, "{p}.input_layernorm.weight", d);
    let (attn_out, selection, counts) = mla_attention_selecting(attn_x, "{p}.self_attn", batch);
    if index_share() {
      let shared_t = shared_selection_type();
      let shared_in = input("shared_selection", shared_t);
      let shared: shared_t = llm.shared_selection_write(shared_in, selection, counts, seq_starts, slots);
      output(shared);
    }
    return mtp_output(z, attn_out, rows, p);
  }
}

// MTP draft chain steps 1..k-1: one row per request (the previous draft
// token and h_out). Under index_share_for_mtp_iteration they attend to the
// selection step 0 kept in row shared_rows[r] of the request's shared
// selection cache, with no indexer and no cache writes; otherwise this is
// glm5_next_mtp_draft (shared_rows unread). The same results as
// glm5_next_mtp_draft.
entry glm5_next_mtp_chain(ids: [?] i32, hidden: [?, cfg.hidden_size] bf16,
                          positions: [?] i32, seq_starts: [?] i32,
                          slots: [?] i32, block_table: [?, ?] i32,
                          rows: [?] i32, shared_rows: [?] i32) {
  let d = cfg.hidden_size;
  let n = cfg.num_hidden_layers;
  let batch = (positions, seq_starts, slots, block_table);
  scope "layer{n}" {
    let p = "model.language_model.layers.{n}";
    let z = mtp_input(ids, hidden, positions, p);
    let attn_x = rms_norm(z, "{p}.input_layernorm.weight", d);
    let attn_out = none;
    if index_share() {
      attn_out = mla_attention_shared(attn_x, "{p}.self_attn", batch, shared_rows);
    } else {
      attn_out = mla_attention(attn_x, "{p}.self_attn", batch);
    }
    return mtp_output(z, attn_out, rows, p);
  }
}
