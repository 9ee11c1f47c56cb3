// Group quantisation kernel functions (FfnOps.cpp's moe_quantize_x /
// moe_quantize_act signature and contract) for the GPU-IR interpreter runs
// of group-quantize-kernel.mlir: x [T, 384] in three 128-wide groups (bf16
// and f32) and activations [T, 3, 256] in two groups a slot.

func.func @quantize_x(%a0: memref<?x384xbf16>, %a1: memref<?x384xf8E4M3FN>, %a2: memref<?x3xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 128>, llm.kernel = #llm.kernel<"quantize_x", roles = [x, out, x_scales]>} {
  return
}

func.func @quantize_x_f32(%a0: memref<?x384xf32>, %a1: memref<?x384xf8E4M3FN>, %a2: memref<?x3xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 128>, llm.kernel = #llm.kernel<"quantize_x_f32", roles = [x, out, x_scales]>} {
  return
}

func.func @quantize_act(%a0: memref<?x3x256xbf16>, %a1: memref<?x3x256xf8E4M3FN>, %a2: memref<?x3x2xf32>)
    attributes {llm.group_quantize = #llm.group_quantize<block = 128>, llm.kernel = #llm.kernel<"quantize_act", roles = [x, out, x_scales]>} {
  return
}
