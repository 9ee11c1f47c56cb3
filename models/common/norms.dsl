// models/common/norms.dsl - normalizations and plain projections shared by
// every block. See docs/DSL.md for the language.

// RMSNorm with a checkpoint weight `[dim]` bf16 (HF Glm5NextTextRMSNorm:
// normalize in fp32, round, multiply by the weight). x: {T, ..., dim}.
def rms_norm(x, name, dim, eps = cfg.rms_norm_eps) {
  let w = weight(name, tensor([dim], bf16));
  let t = type_of(x);
  let y: t = llm.rms_norm(x, w, none, eps = eps);
  return y;
}

// LayerNorm with weight and bias `[dim]` (the indexer's k_norm). x: {T, dim}.
def layer_norm(x, prefix, dim, eps) {
  let w = weight("{prefix}.weight", tensor([dim], bf16));
  let b = weight("{prefix}.bias", tensor([dim], bf16));
  let t = type_of(x);
  let y: t = llm.layer_norm(x, w, b, eps = eps);
  return y;
}

// The checkpoint weight of a projection `[out_dim, in_dim]`. It is fp8 e4m3
// with fp32 block scales (`<name>_scale_inv`, one per weight_block_size
// block) exactly when the config has a quantization_config and the tensor is
// one the checkpoint quantizes (`quantized`, spec glm5_next-target.md §4:
// MLA q_a/q_b/kv_a/o_proj, dense MLP and expert projections); bf16 otherwise.
def proj_weight(name, out_dim, in_dim, quantized) {
  if quantized && has(cfg.quantization_config) {
    let q = cfg.quantization_config;
    assert q.quant_method == "fp8", "only fp8 quantization is supported, got '{q.quant_method}'";
    let bo = q.weight_block_size[0];
    let bi = q.weight_block_size[1];
    return weight(name, mlir_type("!llm.fp8_weight<tensor<{out_dim}x{in_dim}xf8E4M3FN>, tensor<{ceil_div(out_dim, bo)}x{ceil_div(in_dim, bi)}xf32>, block = [{bo}, {bi}]>"));
  }
  return weight(name, tensor([out_dim, in_dim], bf16));
}

// Per-expert weights `[experts, out_dim, in_dim]` stacked from the checkpoint
// names `pattern` with `{e}` = 0 .. experts - 1; fp8 like proj_weight.
def expert_weight(pattern, experts, out_dim, in_dim) {
  if has(cfg.quantization_config) {
    let bo = cfg.quantization_config.weight_block_size[0];
    let bi = cfg.quantization_config.weight_block_size[1];
    return expert_weights(pattern, experts, mlir_type("!llm.fp8_weight<tensor<{experts}x{out_dim}x{in_dim}xf8E4M3FN>, tensor<{experts}x{ceil_div(out_dim, bo)}x{ceil_div(in_dim, bi)}xf32>, block = [{bo}, {bi}]>"));
  }
  return expert_weights(pattern, experts, tensor([experts, out_dim, in_dim], bf16));
}

// y = x W^T: x {T, in} -> y {T, out_dim}.
def linear(x, w, out_dim, dtype = bf16) {
  let y: [?, out_dim] dtype = llm.linear(x, w);
  return y;
}
