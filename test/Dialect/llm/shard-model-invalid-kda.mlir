// RUN: strata-opt --split-input-file --verify-diagnostics --llm-shard-model="tensor-parallel-size=2" %s

// The errors of llm-shard-model on KDA layers (2 heads, T = 2).

// Tests that a KDA output read by anything but its o_proj is an error (the
// row-parallel o_proj's all-reduce is what makes it whole again).
func.func @kda_two_users(%x: tensor<?x8xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %s0: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %c0: !llm.conv_state<channels = 24, width = 3, bf16>)
    -> (tensor<?x8xbf16>, tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>) {
  %wq = llm.weight "q.weight" : tensor<8x8xbf16>
  %q = llm.linear %x, %wq : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wk = llm.weight "k.weight" : tensor<8x8xbf16>
  %k = llm.linear %x, %wk : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wv = llm.weight "v.weight" : tensor<8x8xbf16>
  %v = llm.linear %x, %wv : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wfa = llm.weight "fa.weight" : tensor<4x8xbf16>
  %fa = llm.linear %x, %wfa : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wfb = llm.weight "fb.weight" : tensor<8x4xbf16>
  %f = llm.linear %fa, %wfb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %wb = llm.weight "b.weight" : tensor<2x8xbf16>
  %b = llm.linear %x, %wb : (tensor<?x8xbf16>, tensor<2x8xbf16>) -> tensor<?x2xbf16>
  %wga = llm.weight "ga.weight" : tensor<4x8xbf16>
  %ga = llm.linear %x, %wga : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wgb = llm.weight "gb.weight" : tensor<8x4xbf16>
  %g = llm.linear %ga, %wgb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %qc = llm.weight "qc.weight" : tensor<8x1x4xbf16>
  %kc = llm.weight "kc.weight" : tensor<8x1x4xbf16>
  %vc = llm.weight "vc.weight" : tensor<8x1x4xbf16>
  %alog = llm.weight "A_log" : tensor<2xf32>
  %dtb = llm.weight "dt_bias" : tensor<8xf32>
  %on = llm.weight "o_norm.weight" : tensor<4xbf16>
  // expected-error@+1 {{llm-shard-model: expected the KDA output to have one user, an llm.linear}}
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>,
         !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  %wo = llm.weight "o.weight" : tensor<8x8xbf16>
  %y = llm.linear %o, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  return %y, %o, %s1, %c1 : tensor<?x8xbf16>, tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
      !llm.conv_state<channels = 24, width = 3, bf16>
}

// -----

// Tests that a KDA cache operand that is not an argument of the step
// function (a second layer on the first one's updated state) is an error:
// the pass gives the step function's cache arguments their per-rank types.
func.func @kda_chained_state(%x: tensor<?x8xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>,
    %s0: !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, %c0: !llm.conv_state<channels = 24, width = 3, bf16>)
    -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>, !llm.conv_state<channels = 24, width = 3, bf16>) {
  %wq = llm.weight "q.weight" : tensor<8x8xbf16>
  %q = llm.linear %x, %wq : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wk = llm.weight "k.weight" : tensor<8x8xbf16>
  %k = llm.linear %x, %wk : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wv = llm.weight "v.weight" : tensor<8x8xbf16>
  %v = llm.linear %x, %wv : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wfa = llm.weight "fa.weight" : tensor<4x8xbf16>
  %fa = llm.linear %x, %wfa : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wfb = llm.weight "fb.weight" : tensor<8x4xbf16>
  %f = llm.linear %fa, %wfb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %wb = llm.weight "b.weight" : tensor<2x8xbf16>
  %b = llm.linear %x, %wb : (tensor<?x8xbf16>, tensor<2x8xbf16>) -> tensor<?x2xbf16>
  %wga = llm.weight "ga.weight" : tensor<4x8xbf16>
  %ga = llm.linear %x, %wga : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wgb = llm.weight "gb.weight" : tensor<8x4xbf16>
  %g = llm.linear %ga, %wgb : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %qc = llm.weight "qc.weight" : tensor<8x1x4xbf16>
  %kc = llm.weight "kc.weight" : tensor<8x1x4xbf16>
  %vc = llm.weight "vc.weight" : tensor<8x1x4xbf16>
  %alog = llm.weight "A_log" : tensor<2xf32>
  %dtb = llm.weight "dt_bias" : tensor<8xf32>
  %on = llm.weight "o_norm.weight" : tensor<4xbf16>
  %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>,
         !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  %wo = llm.weight "o.weight" : tensor<8x8xbf16>
  %y = llm.linear %o, %wo : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wq2 = llm.weight "second.q.weight" : tensor<8x8xbf16>
  %q2 = llm.linear %y, %wq2 : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wk2 = llm.weight "second.k.weight" : tensor<8x8xbf16>
  %k2 = llm.linear %y, %wk2 : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wv2 = llm.weight "second.v.weight" : tensor<8x8xbf16>
  %v2 = llm.linear %y, %wv2 : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  %wfa2 = llm.weight "second.fa.weight" : tensor<4x8xbf16>
  %fa2 = llm.linear %y, %wfa2 : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wfb2 = llm.weight "second.fb.weight" : tensor<8x4xbf16>
  %f2 = llm.linear %fa2, %wfb2 : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %wb2 = llm.weight "second.b.weight" : tensor<2x8xbf16>
  %b2 = llm.linear %y, %wb2 : (tensor<?x8xbf16>, tensor<2x8xbf16>) -> tensor<?x2xbf16>
  %wga2 = llm.weight "second.ga.weight" : tensor<4x8xbf16>
  %ga2 = llm.linear %y, %wga2 : (tensor<?x8xbf16>, tensor<4x8xbf16>) -> tensor<?x4xbf16>
  %wgb2 = llm.weight "second.gb.weight" : tensor<8x4xbf16>
  %g2 = llm.linear %ga2, %wgb2 : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  %qc2 = llm.weight "second.qc.weight" : tensor<8x1x4xbf16>
  %kc2 = llm.weight "second.kc.weight" : tensor<8x1x4xbf16>
  %vc2 = llm.weight "second.vc.weight" : tensor<8x1x4xbf16>
  %alog2 = llm.weight "second.A_log" : tensor<2xf32>
  %dtb2 = llm.weight "second.dt_bias" : tensor<8xf32>
  %on2 = llm.weight "second.o_norm.weight" : tensor<4xbf16>
  // expected-error@+1 {{llm-shard-model: expected the cache operand to be an argument of the step function}}
  %o2, %s2, %c2 = llm.kda_attention %q2, %k2, %v2, %f2, %b2, %g2, %qc2, %kc2, %vc2, %alog2, %dtb2, %on2,
      %s1, %c1, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 4 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.5 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
      : (tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>,
         tensor<?x2xbf16>, tensor<?x8xbf16>, tensor<8x1x4xbf16>, tensor<8x1x4xbf16>,
         tensor<8x1x4xbf16>, tensor<2xf32>, tensor<8xf32>, tensor<4xbf16>,
         !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
         !llm.conv_state<channels = 24, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
          !llm.conv_state<channels = 24, width = 3, bf16>)
  %wo2 = llm.weight "second.o.weight" : tensor<8x8xbf16>
  %y2 = llm.linear %o2, %wo2 : (tensor<?x8xbf16>, tensor<8x8xbf16>) -> tensor<?x8xbf16>
  return %y2, %s2, %c2 : tensor<?x8xbf16>, !llm.kda_state<heads = 2, key_dim = 4, value_dim = 4, f32>,
      !llm.conv_state<channels = 24, width = 3, bf16>
}
