// kda_coefficients and kda_attention kernel functions in chunked mode
// (KdaOps.cpp's signatures and contracts, the tiny model's: 2 heads of 128
// channels, chunks of 32) for the GPU-IR interpreter runs of
// kda-chunk-kernel.mlir: 3xTF32 products (f32-activation models) and single
// tf32 ones (tf32_products, bf16 models, whose prepared q, k and v rows are
// bf16).

func.func @kda_coefficients_0(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x2xf32>, %a4: memref<?xi32>, %a5: memref<?x64xf32>, %a6: memref<?x64xf32>)
    attributes {llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_coefficients_0", roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]>, llm.min_request_tokens = 5 : i64} {
  return
}

func.func @kda_coefficients_tf32(%a0: memref<?x256xbf16>, %a1: memref<?x256xbf16>, %a2: memref<?x256xf32>, %a3: memref<?x2xf32>, %a4: memref<?xi32>, %a5: memref<?x64xf32>, %a6: memref<?x64xf32>)
    attributes {llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>, llm.kernel = #llm.kernel<"kda_coefficients_tf32", roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]>, llm.min_request_tokens = 5 : i64} {
  return
}

func.func @kda_attention_0(%a0: memref<?x256xf32>, %a1: memref<?x256xf32>, %a2: memref<?x256xf32>, %a3: memref<?x256xf32>, %a4: memref<?x64xf32>, %a5: memref<?x64xf32>, %a6: memref<?x2x128x128xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xf32>)
    attributes {llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>, llm.kernel = #llm.kernel<"kda_attention_0", roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}

func.func @kda_attention_tf32(%a0: memref<?x256xbf16>, %a1: memref<?x256xbf16>, %a2: memref<?x256xbf16>, %a3: memref<?x256xf32>, %a4: memref<?x64xf32>, %a5: memref<?x64xf32>, %a6: memref<?x2x128x128xf32>, %a7: memref<?xi32>, %a8: memref<?xi32>, %a9: memref<?xi32>, %a10: memref<?xi32>, %a11: memref<?x256xf32>)
    attributes {llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>, llm.kernel = #llm.kernel<"kda_attention_tf32", roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.min_request_tokens = 5 : i64} {
  return
}
