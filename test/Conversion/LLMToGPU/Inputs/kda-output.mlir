// kda_output kernel functions (KdaOps.cpp's signature and contract; the
// strategy builder reads only the signature, roles and #llm.kda_output) for
// the GPU-IR interpreter runs of kda-output-kernel.mlir: 5 heads of 128
// channels (two blocks of heads, the second with one), a 4-tap conv.

func.func @kda_output_f32(%a0: memref<?x640xf32>, %a1: memref<?x640xf32>, %a2: memref<128xf32>, %a3: memref<?x640xf32>, %a4: memref<?x640xf32>, %a5: memref<?x640xf32>, %a6: memref<?x3x1920xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x640xf32>)
    attributes {llm.kernel = #llm.kernel<"kda_output_f32", roles = [read_out, output_gate, out_norm_weight, x, key, value, conv_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.kda_output = #llm.kda_output<norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>, llm.min_request_tokens = 5 : i64} {
  return
}

func.func @kda_output_bf16(%a0: memref<?x640xf32>, %a1: memref<?x640xbf16>, %a2: memref<128xbf16>, %a3: memref<?x640xbf16>, %a4: memref<?x640xbf16>, %a5: memref<?x640xbf16>, %a6: memref<?x3x1920xbf16>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x640xbf16>)
    attributes {llm.kernel = #llm.kernel<"kda_output_bf16", roles = [read_out, output_gate, out_norm_weight, x, key, value, conv_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.kda_output = #llm.kda_output<norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>, llm.min_request_tokens = 5 : i64} {
  return
}
