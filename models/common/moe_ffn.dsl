// models/common/moe_ffn.dsl - sigmoid-routed MoE with a shared expert (spec
// glm5_next-target.md §3.6). x {T, D} -> {T, D}.
import "norms.dsl";

def moe_ffn(x, prefix) {
  let d = cfg.hidden_size;
  let e = cfg.n_routed_experts;
  let i = cfg.moe_intermediate_size;
  let shared = cfg.n_shared_experts * i;
  assert cfg.scoring_func == "sigmoid", "moe_ffn implements sigmoid routing, got '{cfg.scoring_func}'";
  // The router runs in fp32 (moe_router_dtype); its weight is stored fp32
  // here (spec §4: bf16 or fp32 not confirmed).
  let router = weight("{prefix}.gate.weight", tensor([e, d], f32));
  let bias = weight("{prefix}.gate.e_score_correction_bias", tensor([e], f32));
  let gate = expert_weight("{prefix}.experts.\{e\}.gate_proj.weight", e, i, d);
  let up = expert_weight("{prefix}.experts.\{e\}.up_proj.weight", e, i, d);
  let down = expert_weight("{prefix}.experts.\{e\}.down_proj.weight", e, d, i);
  let shared_gate = proj_weight("{prefix}.shared_experts.gate_proj.weight", shared, d, true);
  let shared_up = proj_weight("{prefix}.shared_experts.up_proj.weight", shared, d, true);
  let shared_down = proj_weight("{prefix}.shared_experts.down_proj.weight", d, shared, true);
  // renorm_eps 1e-20: spec §3.6 (w_i = 2.5 s_i / (sum s_j + 1e-20)).
  let y: [?, d] bf16 = llm.moe_ffn(x, router, bias, gate, up, down, shared_gate,
      shared_up, shared_down, num_experts = e, top_k = cfg.num_experts_per_tok,
      n_group = cfg.n_group, topk_group = cfg.topk_group,
      norm_topk_prob = cfg.norm_topk_prob, renorm_eps = 1.0e-20,
      routed_scaling_factor = cfg.routed_scaling_factor,
      swiglu_limit = cfg.swiglu_limit);
  return y;
}
