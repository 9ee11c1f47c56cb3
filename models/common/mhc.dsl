// models/common/mhc.dsl - manifold-constrained hyper-connections (mHC), spec
// glm5_next-target.md §3.2. The residual is hc_mult streams {T, hc_mult, D};
// every sub-layer is wrapped in mhc_pre (collapse) and mhc_post (expand).

// Collapses the streams for the sub-layer at `site` ("attn" or "ffn") of the
// layer whose checkpoint prefix is `prefix`. Returns (x {T, D}, post {T, H},
// comb {T, H, H}).
def mhc_pre(streams, prefix, site) {
  let hc = cfg.hc_mult;
  let d = cfg.hidden_size;
  let rows = (2 + hc) * hc; // pre, post and the hc x hc comb matrix: 24
  let fn = weight("{prefix}.hc_{site}_fn", tensor([rows, hc * d], f32));
  let base = weight("{prefix}.hc_{site}_base", tensor([rows], f32));
  let scale = weight("{prefix}.hc_{site}_scale", tensor([3], f32));
  // norm_eps is rms_norm_eps (not hc_eps) and post_mult = 2.0 is hard-coded
  // in every implementation (spec §1 "hc post multiplier", §6 item 4).
  let (x, post, comb): ([?, d] bf16, [?, hc] f32, [?, hc, hc] f32) =
      llm.mhc_pre(streams, fn, base, scale, hc_mult = hc, hc_eps = cfg.hc_eps,
                  norm_eps = cfg.rms_norm_eps,
                  sinkhorn_iters = cfg.hc_sinkhorn_iters, post_mult = 2.0);
  return (x, post, comb);
}

// Writes the sub-layer output y {T, D} back: the whole residual connection.
def mhc_post(y, streams, post, comb) {
  let hc = cfg.hc_mult;
  let mixed: [?, hc, cfg.hidden_size] bf16 =
      llm.mhc_post(y, streams, post, comb, hc_mult = hc);
  return mixed;
}
