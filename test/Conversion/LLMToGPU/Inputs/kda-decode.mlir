// kda_decode kernel functions (KdaOps.cpp's signature and contract; the
// strategy builders read only the signature, roles and #llm.kda_decode) for
// the GPU-IR interpreter runs of kda-decode-kernel.mlir: 2 heads of 64
// channels, a 4-tap conv.

func.func @kda_decode_tokens(%a0: memref<?x128xf32>, %a1: memref<?x128xf32>, %a2: memref<?x128xf32>, %a3: memref<?x128xf32>, %a4: memref<?x2xf32>, %a5: memref<?x128xf32>, %a6: memref<128x1x4xf32>, %a7: memref<128x1x4xf32>, %a8: memref<128x1x4xf32>, %a9: memref<2xf32>, %a10: memref<128xf32>, %a11: memref<64xf32>, %a12: memref<?x2x64x64xf32>, %a13: memref<?x3x384xf32>, %a14: memref<?xi32>, %a15: memref<?xi32>, %a16: memref<?xi32>, %a17: memref<?xi32>, %a18: memref<?xi32>, %a19: memref<?x128xf32>)
    attributes {llm.kernel = #llm.kernel<"kda_decode_tokens", roles = [x, key, value, decay, beta, output_gate, query_conv, key_conv, value_conv, decay_rate, decay_bias, out_norm_weight, recurrent_state, conv_state, positions, seq_starts, source_slots, dest_slots, token_slots, out]>, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 1.250000e-01 : f32, norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>} {
  return
}

func.func @kda_decode_plain_bf16(%a0: memref<?x128xbf16>, %a1: memref<?x128xbf16>, %a2: memref<?x128xbf16>, %a3: memref<?x128xbf16>, %a4: memref<?x2xbf16>, %a5: memref<?x128xbf16>, %a6: memref<128x1x4xbf16>, %a7: memref<128x1x4xbf16>, %a8: memref<128x1x4xbf16>, %a9: memref<2xf32>, %a10: memref<128xf32>, %a11: memref<64xbf16>, %a12: memref<?x2x64x64xf32>, %a13: memref<?x3x384xbf16>, %a14: memref<?xi32>, %a15: memref<?xi32>, %a16: memref<?xi32>, %a17: memref<?xi32>, %a18: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"kda_decode_plain_bf16", roles = [x, key, value, decay, beta, output_gate, query_conv, key_conv, value_conv, decay_rate, decay_bias, out_norm_weight, recurrent_state, conv_state, positions, seq_starts, source_slots, dest_slots, out]>, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 1.250000e-01 : f32, norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 4>} {
  return
}

func.func @kda_decode_recurrent(%a0: memref<?x128xf32>, %a1: memref<?x128xf32>, %a2: memref<?x128xf32>, %a3: memref<?x128xf32>, %a4: memref<?x2xf32>, %a5: memref<?x128xf32>, %a6: memref<128x1x4xf32>, %a7: memref<128x1x4xf32>, %a8: memref<128x1x4xf32>, %a9: memref<2xf32>, %a10: memref<128xf32>, %a11: memref<64xf32>, %a12: memref<?x2x64x64xf32>, %a13: memref<?x3x384xf32>, %a14: memref<?xi32>, %a15: memref<?xi32>, %a16: memref<?xi32>, %a17: memref<?xi32>, %a18: memref<?xi32>, %a19: memref<?x128xf32>)
    attributes {llm.kernel = #llm.kernel<"kda_decode_recurrent", roles = [x, key, value, decay, beta, output_gate, query_conv, key_conv, value_conv, decay_rate, decay_bias, out_norm_weight, recurrent_state, conv_state, positions, seq_starts, source_slots, dest_slots, token_slots, out]>, llm.kda_decode = #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 9.99999997E-7 : f32, q_scale = 1.250000e-01 : f32, norm_eps = 9.99999974E-6 : f32, decode_max_tokens = 0>} {
  return
}
