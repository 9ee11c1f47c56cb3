// models/common/index_projections.dsl - the per-token projections of the
// DSA indexer (spec glm5_next-indexer-mtp-cache.md §1), shared by the pooled
// (kpool_indexer.dsl) and the dense (dense_indexer.dsl) form. x {T, D} is
// the normed layer input, q_latent {T, q_lora_rank} the MLA query latent.
// Returns (q {T, heads, head_dim}, k {T, head_dim}, w {T, heads} f32).
import "norms.dsl";

def index_projections(x, q_latent, prefix) {
  let d = cfg.hidden_size;
  let heads = cfg.index_n_heads;
  let head_dim = cfg.index_head_dim;
  // The whole indexer is bf16 (spec §1 "Weights per indexer").
  let q_flat = linear(q_latent, proj_weight("{prefix}.wq_b.weight", heads * head_dim, cfg.q_lora_rank, false), heads * head_dim);
  let q = reshape(q_flat, [dyn, heads, head_dim]); // {T, heads*head_dim} -> {T, heads, head_dim}
  let k_raw = linear(x, proj_weight("{prefix}.wk.weight", head_dim, d, false), head_dim);
  let k = layer_norm(k_raw, "{prefix}.k_norm", head_dim, 1.0e-6); // eps 1e-6, spec §1
  // Head weights in fp32 (vLLM: bf16 can flip near-tie rankings).
  let w = linear(x, proj_weight("{prefix}.weights_proj.weight", heads, d, false), heads, f32);
  return (q, k, w);
}
