// models/common/kda_attention.dsl - Kimi Delta Attention (spec
// glm5_next-target.md §3.4). x {T, D} (normed) -> {T, D}. Reads this layer's
// recurrent and conv state as entry inputs and returns the updated ones as
// entry outputs. `state_batch` = (positions, seq_starts, src_slots,
// dst_slots, token_slots): request r's state is read from slot src_slots[r]
// and the updated one written to slot dst_slots[r]; a request of at most 4
// tokens keeps the state after token t in slot token_slots[t] (an MTP
// verification keeps every position's, docs/Scheduler.md).
import "norms.dsl";

def kda_attention(x, prefix, state_batch) {
  let (positions, seq_starts, src_slots, dst_slots, token_slots) = state_batch;
  let lin = cfg.linear_attn_config;
  let d = cfg.hidden_size;
  let heads = lin.num_heads;
  let head_dim = lin.head_dim;
  let p = heads * head_dim; // 8192
  let kernel = lin.short_conv_kernel_size;
  // All KDA tensors are bf16 (never fp8), spec §4.
  let q = linear(x, proj_weight("{prefix}.q_proj.weight", p, d, false), p);
  let k = linear(x, proj_weight("{prefix}.k_proj.weight", p, d, false), p);
  let v = linear(x, proj_weight("{prefix}.v_proj.weight", p, d, false), p);
  let forget_low = linear(x, proj_weight("{prefix}.f_a_proj.weight", head_dim, d, false), head_dim);
  let forget = linear(forget_low, proj_weight("{prefix}.f_b_proj.weight", p, head_dim, false), p);
  let beta = linear(x, proj_weight("{prefix}.b_proj.weight", heads, d, false), heads);
  let gate_low = linear(x, proj_weight("{prefix}.g_a_proj.weight", head_dim, d, false), head_dim);
  let gate = linear(gate_low, proj_weight("{prefix}.g_b_proj.weight", p, head_dim, false), p);
  // Depthwise conv taps {P, 1, K} (PyTorch Conv1d layout; spec §4).
  let q_conv = weight("{prefix}.q_conv1d.weight", tensor([p, 1, kernel], bf16));
  let k_conv = weight("{prefix}.k_conv1d.weight", tensor([p, 1, kernel], bf16));
  let v_conv = weight("{prefix}.v_conv1d.weight", tensor([p, 1, kernel], bf16));
  let a_log = weight("{prefix}.A_log", tensor([heads], f32));
  let dt_bias = weight("{prefix}.dt_bias", tensor([p], f32));
  let o_norm = weight("{prefix}.o_norm.weight", tensor([head_dim], bf16));
  let state_t = mlir_type("!llm.kda_state<heads = {heads}, key_dim = {head_dim}, value_dim = {head_dim}, f32>");
  // Conv state: the last K-1 pre-conv q, k, v inputs (3P channels), spec §5.
  let conv_t = mlir_type("!llm.conv_state<channels = {3 * p}, width = {kernel - 1}, bf16>");
  let state = input("kda_state", state_t);
  let conv_state = input("conv_state", conv_t);
  // l2_eps 1e-6 inside the sqrt and q_scale = head_dim^-1/2 (spec §3.4);
  // chunk 64 is the chunked-prefill block of the WY form.
  let (o, state_out, conv_out): ([?, p] bf16, state_t, conv_t) =
      llm.kda_attention(q, k, v, forget, beta, gate, q_conv, k_conv, v_conv,
                        a_log, dt_bias, o_norm, state, conv_state, positions,
                        seq_starts, src_slots, dst_slots, token_slots,
                        heads = heads,
                        head_dim = head_dim, conv_kernel = kernel,
                        gate_lower_bound = lin.gate_lower_bound,
                        l2_eps = 1.0e-6, q_scale = pow(head_dim, -0.5),
                        norm_eps = cfg.rms_norm_eps,
                        mode = attr("#llm.kda_mode<chunked>"), chunk_size = 32);
  output(state_out);
  output(conv_out);
  let y = linear(o, proj_weight("{prefix}.o_proj.weight", d, p, false), d);
  return y;
}
