// models/common/kpool_indexer.dsl - the pooled DSA indexer of an MLA layer
// (spec glm5_next-indexer-mtp-cache.md §1-3). Returns (selection {T, S},
// counts {T}) for llm.mla_attention. Reads and returns this layer's tail ring
// and pooled index cache. `batch` = (positions, seq_starts, slots,
// block_table).
import "paging.dsl";
import "index_projections.dsl";

def kpool_indexer(x, q_latent, prefix, batch) {
  let (positions, seq_starts, slots, block_table) = batch;
  let d = cfg.hidden_size;
  let heads = cfg.index_n_heads;
  let head_dim = cfg.index_head_dim;
  let kpool = cfg.index_kpool;
  let topk = cfg.index_topk;
  assert topk % kpool == 0, "index_topk {topk} must be a multiple of index_kpool {kpool}";
  let (q, k, w) = index_projections(x, q_latent, prefix);
  // The gate is a bare parameter (no `.weight` suffix), spec §6 item 11.
  let g = linear(x, weight("{prefix}.index_kpool_compress_gate", tensor([head_dim, d], bf16)), head_dim);
  let ape = weight("{prefix}.index_kpool_compress_ape", tensor([kpool, head_dim], bf16));
  // Ring depth 16 = next_pow2(kpool + 2 * (3 + 1)) for 3 MTP drafts
  // (spec §3.1, ATOM speculative_kpool_history_size).
  let ring_t = mlir_type("!llm.tail_ring<depth = 16, width = {head_dim}, bf16>");
  // bf16 pooled rows, or with --index-cache-dtype=fp8 Hadamard-rotated e4m3
  // rows with a ue8m0 scale each (spec §1, the serving form).
  let pool_t = mlir_type("!llm.index_pool<page_size = {page_size()}, kpool = {kpool}, width = {head_dim}, {opt.index_cache_dtype}>");
  let ring_in = input("tail_ring", ring_t);
  let pool_in = input("index_pool", pool_t);
  // Pools are formed before the ring is updated (op contract).
  let pooled: [?, head_dim] f32 = llm.kpool_compress(k, g, ape, ring_in, positions, seq_starts, slots, kpool = kpool);
  let ring: ring_t = llm.tail_ring_write(ring_in, k, g, positions, seq_starts, slots);
  let pool: pool_t = llm.index_cache_write(pool_in, pooled, positions, seq_starts, block_table);
  output(ring);
  output(pool);
  // Selection width: topk + kpool - 1 = 2051 rounded up to 128 -> 2176
  // (spec §2.5). scale = (head_dim * heads)^-1/2 folds 128^-1/2 * 32^-1/2.
  let width = ceil_div(topk + kpool - 1, 128) * 128;
  let (selection, counts): ([?, width] i32, [?] i32) =
      llm.kpool_indexer(q, w, pool, positions, seq_starts, block_table,
                        topk = topk, kpool = kpool, heads = heads,
                        head_dim = head_dim, scale = pow(head_dim * heads, -0.5));
  return (selection, counts);
}
