// Shared blocks for imports.dsl.
def double_norm(x) {
  let a: [?, cfg.hidden_size] bf16 = llm.rms_norm(x, weight("w0", tensor([cfg.hidden_size], bf16)), none, eps = cfg.rms_norm_eps);
  let b: [?, cfg.hidden_size] bf16 = llm.rms_norm(a, weight("w1", tensor([cfg.hidden_size], bf16)), none, eps = cfg.rms_norm_eps);
  return b;
}
