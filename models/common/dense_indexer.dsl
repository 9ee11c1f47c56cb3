// models/common/dense_indexer.dsl - the dense DSA indexer of an MLA layer
// (DeepSeek-V3.2's lightning indexer without rope; docs/DSL.md "The dense
// indexer"): one index key per token (the wk + k_norm output, no pooling, no
// compression gate or position table, no tail ring), scores per token, the
// top index_topk tokens (every token while the context is within topk).
// index_kpool is not read. Returns (selection {T, S}, counts {T}) for
// llm.mla_attention. Reads and returns this layer's index cache (one row per
// token). `batch` = (positions, seq_starts, slots, block_table).
import "paging.dsl";
import "index_projections.dsl";

def dense_indexer(x, q_latent, prefix, batch) {
  let (positions, seq_starts, slots, block_table) = batch;
  let heads = cfg.index_n_heads;
  let head_dim = cfg.index_head_dim;
  let topk = cfg.index_topk;
  let (q, k, w) = index_projections(x, q_latent, prefix);
  // kpool = 1: llm.kpool_indexer's per-token form (one key row per token);
  // bf16, or with --index-cache-dtype=fp8 Hadamard-rotated e4m3 rows with a
  // ue8m0 scale each (spec §1).
  let pool_t = mlir_type("!llm.index_pool<page_size = {page_size()}, kpool = 1, width = {head_dim}, {opt.index_cache_dtype}>");
  let pool_in = input("index_pool", pool_t);
  let pool: pool_t = llm.index_cache_write(pool_in, k, positions, seq_starts, block_table);
  output(pool);
  // Selection width: topk rounded up to 128 (2048 for the real model).
  // scale = (head_dim * heads)^-1/2 folds 128^-1/2 * 32^-1/2.
  let width = ceil_div(topk, 128) * 128;
  let (selection, counts): ([?, width] i32, [?] i32) =
      llm.kpool_indexer(q, w, pool, positions, seq_starts, block_table,
                        topk = topk, kpool = 1, heads = heads,
                        head_dim = head_dim, scale = pow(head_dim * heads, -0.5));
  return (selection, counts);
}
