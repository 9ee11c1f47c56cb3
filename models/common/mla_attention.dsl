// models/common/mla_attention.dsl - sparse NoPE MLA with its DSA indexer
// (spec glm5_next-target.md §3.5). x {T, D} (normed) -> {T, D}. Used by the
// target's MLA layers and by the MTP draft layer. `batch` = (positions,
// seq_starts, slots, block_table).
import "norms.dsl";
import "paging.dsl";
import "indexer.dsl";

// The query heads {T, heads, qk_dim} and the latent query {T, q_rank} of x.
def mla_queries(x, prefix) {
  let d = cfg.hidden_size;
  let heads = cfg.num_attention_heads;
  let q_rank = cfg.q_lora_rank;
  assert cfg.qk_rope_head_dim == 0, "mla_attention is NoPE: qk_rope_head_dim must be 0, got {cfg.qk_rope_head_dim}";
  let qk_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim; // 256; never cfg.head_dim (0), spec §6 item 2
  let q_a = linear(x, proj_weight("{prefix}.q_a_proj.weight", q_rank, d, true), q_rank);
  let q_latent = rms_norm(q_a, "{prefix}.q_a_layernorm.weight", q_rank);
  let q_flat = linear(q_latent, proj_weight("{prefix}.q_b_proj.weight", heads * qk_dim, q_rank, true), heads * qk_dim);
  let q = reshape(q_flat, [dyn, heads, qk_dim]); // {T, heads*qk_dim} -> {T, heads, qk_dim}
  return (q, q_latent);
}

// The latent cache type: c_kv after kv_a_layernorm, no zero pad (spec §3.5):
// bf16, or with --kv-cache-dtype=fp8 e4m3 rows with per-128-lane fp32 scales
// (docs/KVCache.md "fp8 pages").
def latent_cache_type() {
  return mlir_type("!llm.latent_pool<page_size = {page_size()}, width = {cfg.kv_lora_rank}, pad = 0, {opt.kv_cache_dtype}>");
}

// Attention of q over the selected cached latent rows, and o_proj.
def mla_attend(q, cache, selection, counts, prefix, batch) {
  let (positions, seq_starts, slots, block_table) = batch;
  let d = cfg.hidden_size;
  let heads = cfg.num_attention_heads;
  let kv_rank = cfg.kv_lora_rank;
  let qk_dim = cfg.qk_nope_head_dim + cfg.qk_rope_head_dim;
  let v_dim = cfg.v_head_dim;
  // kv_b_proj is bf16 even in the fp8 checkpoint; rows per head [K(256) | V(256)].
  let kv_b = proj_weight("{prefix}.kv_b_proj.weight", heads * (qk_dim + v_dim), kv_rank, false);
  // softmax scale = qk_head_dim^-1/2 = 256^-1/2 = 1/16 (spec §3.5, §6 item 8).
  let attn_heads: [?, heads, v_dim] bf16 =
      llm.mla_attention(q, kv_b, cache, selection, counts, seq_starts,
                        block_table, heads = heads, qk_head_dim = qk_dim,
                        v_head_dim = v_dim, kv_lora_rank = kv_rank,
                        softmax_scale = pow(qk_dim, -0.5));
  let o = reshape(attn_heads, [dyn, heads * v_dim]); // {T, heads, v_dim} -> {T, heads*v_dim}
  return linear(o, proj_weight("{prefix}.o_proj.weight", d, heads * v_dim, true), d);
}

// The layer's output and its indexer's (selection, counts).
def mla_attention_selecting(x, prefix, batch) {
  let (positions, seq_starts, slots, block_table) = batch;
  let d = cfg.hidden_size;
  let kv_rank = cfg.kv_lora_rank;
  let (q, q_latent) = mla_queries(x, prefix);
  // kv_a_proj_with_mqa outputs exactly kv_lora_rank (no rope part).
  let kv_a = linear(x, proj_weight("{prefix}.kv_a_proj_with_mqa.weight", kv_rank, d, true), kv_rank);
  let kv_latent = rms_norm(kv_a, "{prefix}.kv_a_layernorm.weight", kv_rank);
  let cache_t = latent_cache_type();
  let cache_in = input("latent_cache", cache_t);
  let cache: cache_t = llm.latent_cache_write(cache_in, kv_latent, positions, seq_starts, block_table);
  output(cache);
  // Pooled or dense (indexer.dsl, --indexer).
  let (selection, counts) = indexer(x, q_latent, "{prefix}.indexer", batch);
  let y = mla_attend(q, cache, selection, counts, prefix, batch);
  return (y, selection, counts);
}

def mla_attention(x, prefix, batch) {
  let (y, selection, counts) = mla_attention_selecting(x, prefix, batch);
  return y;
}

// The shared selection cache of the MTP draft layer
// (index_share_for_mtp_iteration): a verification's k + 1 = 4 rows.
def shared_selection_type() {
  return mlir_type("!llm.shared_selection<rows = 4, width = {indexer_selection_width()}>");
}

// The MTP draft chain's attention under index_share_for_mtp_iteration (spec
// glm5_next-indexer-mtp-cache.md §4.4 item 2): the selection of the row that
// row `shared_rows[r]` of the request's shared selection cache kept, no
// indexer. Its own latent row is not written: no query of the chain attends
// to it (the kept selection ends before it), and the next step 0 rewrites
// that position before a query past it reads it.
def mla_attention_shared(x, prefix, batch, shared_rows) {
  let (positions, seq_starts, slots, block_table) = batch;
  let (q, q_latent) = mla_queries(x, prefix);
  let cache = input("latent_cache", latent_cache_type());
  let shared = input("shared_selection", shared_selection_type());
  let width = indexer_selection_width();
  let (selection, counts): ([?, width] i32, [?] i32) =
      llm.shared_selection_read(shared, positions, seq_starts, slots, shared_rows);
  return mla_attend(q, cache, selection, counts, prefix, batch);
}
