// models/common/indexer.dsl - the DSA indexer of an MLA layer in the form
// the compile options choose: pooled (kpool_indexer.dsl) or dense
// (dense_indexer.dsl). `strata-compile --indexer=pooled|dense` (opt.indexer)
// decides; without it the config's index_kpool_compress does (absent: true).
// Returns (selection {T, S}, counts {T}) for llm.mla_attention.
import "kpool_indexer.dsl";
import "dense_indexer.dsl";

// "pooled" or "dense".
def indexer_form() {
  if opt.indexer != "config" {
    return opt.indexer;
  }
  if has(cfg.index_kpool_compress) {
    if !cfg.index_kpool_compress {
      return "dense";
    }
  }
  return "pooled";
}

def indexer(x, q_latent, prefix, batch) {
  if indexer_form() == "dense" {
    return dense_indexer(x, q_latent, prefix, batch);
  }
  return kpool_indexer(x, q_latent, prefix, batch);
}

// Columns of the selection `indexer` returns: topk + kpool - 1 rounded up to
// 128 for the pooled form (2176), topk rounded up to 128 for the dense one.
def indexer_selection_width() {
  if indexer_form() == "dense" {
    return ceil_div(cfg.index_topk, 128) * 128;
  }
  return ceil_div(cfg.index_topk + cfg.index_kpool - 1, 128) * 128;
}
