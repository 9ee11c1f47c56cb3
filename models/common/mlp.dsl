// models/common/mlp.dsl - the dense clamped-SwiGLU MLP (spec
// glm5_next-target.md §3.7). x {T, D} -> {T, D}.
import "norms.dsl";

def dense_mlp(x, prefix) {
  let d = cfg.hidden_size;
  let i = cfg.intermediate_size;
  let gate = proj_weight("{prefix}.gate_proj.weight", i, d, true);
  let up = proj_weight("{prefix}.up_proj.weight", i, d, true);
  let down = proj_weight("{prefix}.down_proj.weight", d, i, true);
  let y: [?, d] bf16 = llm.swiglu_mlp(x, gate, up, down, swiglu_limit = cfg.swiglu_limit);
  return y;
}
