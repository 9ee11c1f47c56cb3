// kda_prepare kernel functions (KdaOps.cpp's signature and contract; the
// strategy builder reads only the signature, roles and #llm.kda_prepare) for
// the GPU-IR interpreter runs of kda-prepare-kernel.mlir: 5 heads of 128
// channels (two blocks of heads, the second with one), a 4-tap conv. The
// bf16 model's prepared q, k and v rows are bf16 (KdaOps.cpp).

func.func @kda_prepare_f32(%a0: memref<?x640xf32>, %a1: memref<?x640xf32>, %a2: memref<?x640xf32>, %a3: memref<?x640xf32>, %a4: memref<?x5xf32>, %a5: memref<640x1x4xf32>, %a6: memref<640x1x4xf32>, %a7: memref<640x1x4xf32>, %a8: memref<5xf32>, %a9: memref<640xf32>, %a10: memref<?x3x1920xf32>, %a11: memref<?xi32>, %a12: memref<?xi32>, %a13: memref<?xi32>, %a14: memref<?x640xf32>, %a15: memref<?x640xf32>, %a16: memref<?x640xf32>, %a17: memref<?x640xf32>, %a18: memref<?x5xf32>)
    attributes {llm.kernel = #llm.kernel<"kda_prepare_f32", roles = [x, key, value, decay, beta, query_conv, key_conv, value_conv, decay_rate, decay_bias, conv_state, positions, seq_starts, source_slots, prepared_query, prepared_key, prepared_value, prepared_decay, prepared_beta]>, llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 1.250000e-01 : f32, decode_max_tokens = 4>, llm.min_request_tokens = 5 : i64} {
  return
}

func.func @kda_prepare_bf16(%a0: memref<?x640xbf16>, %a1: memref<?x640xbf16>, %a2: memref<?x640xbf16>, %a3: memref<?x640xbf16>, %a4: memref<?x5xbf16>, %a5: memref<640x1x4xbf16>, %a6: memref<640x1x4xbf16>, %a7: memref<640x1x4xbf16>, %a8: memref<5xf32>, %a9: memref<640xf32>, %a10: memref<?x3x1920xbf16>, %a11: memref<?xi32>, %a12: memref<?xi32>, %a13: memref<?xi32>, %a14: memref<?x640xbf16>, %a15: memref<?x640xbf16>, %a16: memref<?x640xbf16>, %a17: memref<?x640xf32>, %a18: memref<?x5xf32>)
    attributes {llm.kernel = #llm.kernel<"kda_prepare_bf16", roles = [x, key, value, decay, beta, query_conv, key_conv, value_conv, decay_rate, decay_bias, conv_state, positions, seq_starts, source_slots, prepared_query, prepared_key, prepared_value, prepared_decay, prepared_beta]>, llm.kda_prepare = #llm.kda_prepare<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 1.250000e-01 : f32, decode_max_tokens = 4>, llm.min_request_tokens = 5 : i64} {
  return
}
