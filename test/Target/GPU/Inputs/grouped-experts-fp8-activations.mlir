// The routed experts' kernel functions of a real-width MoE layer (hidden
// 4096, 288 experts of 2048, top 8) with fp8 expert activations
// (strata-compile --expert-activations=fp8): x and the activation as e4m3
// codes with one f32 scale per row and 128-wide K group (role x_scales).
func.func @moe_up_0(%a0: memref<?x4096xf8E4M3FN>, %a1: memref<?x32xf32>, %a2: memref<?x8xi32>, %a3: memref<?x8xi32>, %a4: memref<289xi32>, %a5: memref<288x2048x4096xf8E4M3FN>, %a6: memref<288x16x32xf32>, %a7: memref<288x2048x4096xf8E4M3FN>, %a8: memref<288x16x32xf32>, %a9: memref<?x8x2048xbf16>)
    attributes {llm.grouped_experts = #llm.grouped_experts<up, top_k = 8, experts = 288, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"moe_up_0", roles = [x, x_scales, chosen, slot_order, expert_starts, weight, weight_scales, up_weight, up_scales, out]>} {
  return
}

func.func @moe_down_0(%a0: memref<?x8x2048xf8E4M3FN>, %a1: memref<?x8x16xf32>, %a2: memref<?x8xi32>, %a3: memref<?x8xf32>, %a4: memref<?x8xi32>, %a5: memref<289xi32>, %a6: memref<288x4096x2048xf8E4M3FN>, %a7: memref<288x32x16xf32>, %a8: memref<?x8x4096xbf16>)
    attributes {llm.grouped_experts = #llm.grouped_experts<down, top_k = 8, experts = 288, min_slots = 64, swiglu_limit = 1.000000e+01 : f64>, llm.kernel = #llm.kernel<"moe_down_0", roles = [x, x_scales, chosen, route_weights, slot_order, expert_starts, weight, weight_scales, out]>} {
  return
}
