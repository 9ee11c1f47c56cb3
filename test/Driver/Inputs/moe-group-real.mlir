// A moe_group kernel function of GLM-5.3-Flash's shape (288 experts, 8 a
// token), as the kernel phase of strata-compile leaves it; moe-select-kernel.test
// builds its GPU kernel with strata-opt and runs it through the GPU-IR
// interpreter.
func.func @moe_group_0(%a0: memref<?x8xi32>, %a1: memref<?x8xi32>, %a2: memref<289xi32>)
    attributes {llm.kernel = #llm.kernel<"moe_group_0", roles = [chosen, slot_order, expert_starts]>, llm.moe_group = #llm.moe_group<experts = 288, top_k = 8>} {
  return
}
