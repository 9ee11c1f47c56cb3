// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that llm.kda_attention in recurrent mode becomes the one kernel
// kda_decode, whose state and conv state are the cache buffers (function
// arguments converted to memrefs), updated in place, and which allocates only
// the output: rows (request, head) (an scf.parallel marked
// llm.threads_within_row), one token after another, the token's conv outputs,
// decays and read-out in [d] scratch rows; the state's value columns are the
// loop the GPU threads share. No llm.kda_chunk attribute.
// CHECK-LABEL: func.func @kda
// CHECK-SAME: %[[STATE:[^:]*]]: memref<?x2x8x8xf32>
// CHECK-SAME: %[[CONV:[^:]*]]: memref<?x3x48xbf16>
// CHECK: %[[O:.*]] = memref.alloc(%{{.*}}) : memref<?x16xbf16>
// CHECK: call @kda_decode_0({{.*}}, %[[STATE]], %[[CONV]], {{.*}}, %[[O]])
// CHECK-NOT: call
// CHECK: return %{{.*}}, %[[STATE]], %[[CONV]]
// CHECK: func.func @kda_decode_0
// CHECK-NOT: llm.kda_chunk
// CHECK-COUNT-5: memref.alloc() : memref<8xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0{{.*}}, %c0{{.*}}) to (%{{.*}}, %c2)
// CHECK: } {llm.threads_within_row}
// CHECK-NOT: func.func @kda_prepare
func.func @kda(%q: tensor<?x16xbf16>, %f: tensor<?x16xbf16>, %b: tensor<?x2xbf16>,
               %w: tensor<16x1x4xbf16>, %alog: tensor<2xf32>, %dtb: tensor<16xf32>, %on: tensor<8xbf16>,
               %s0: !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
               %c0: !llm.conv_state<channels = 48, width = 3, bf16>,
               %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>)
    -> (tensor<?x16xbf16>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
        !llm.conv_state<channels = 48, width = 3, bf16>) {
  %o, %s1, %c1 = llm.kda_attention %q, %q, %q, %f, %b, %f, %w, %w, %w, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 8 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.35355339 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<recurrent>, chunk_size = 64 : i64}
      : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>,
         tensor<?x2xbf16>, tensor<?x16xbf16>, tensor<16x1x4xbf16>, tensor<16x1x4xbf16>,
         tensor<16x1x4xbf16>, tensor<2xf32>, tensor<16xf32>, tensor<8xbf16>,
         !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
         !llm.conv_state<channels = 48, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x16xbf16>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
          !llm.conv_state<channels = 48, width = 3, bf16>)
  return %o, %s1, %c1 : tensor<?x16xbf16>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
      !llm.conv_state<channels = 48, width = 3, bf16>
}

// -----

// Tests that chunked mode leaves requests of at most 4 tokens to kda_decode
// (which allocates the output) and the others to kda_prepare,
// kda_coefficients, kda_attention and kda_output (which writes into
// kda_decode's output), the four with row loops that are empty in steps of
// at most 4 tokens; kda_coefficients writes each chunk's A_q and T ([T, H
// chunk_size] each), kda_attention reads them and walks chunks of
// chunk_size tokens (the WY form); both are marked for the matrix-unit forms
// (llm.kda_coefficients, llm.kda_chunk).
// CHECK-LABEL: func.func @kda_chunked
// CHECK: %[[O:.*]] = memref.alloc(%{{.*}}) : memref<?x16xf32>
// CHECK: call @kda_decode_0({{.*}}, %[[O]])
// CHECK: call @kda_prepare_0(
// CHECK: %[[AQ:.*]] = memref.alloc(%{{.*}}) : memref<?x32xf32>
// CHECK: %[[TW:.*]] = memref.alloc(%{{.*}}) : memref<?x32xf32>
// CHECK: call @kda_coefficients_0({{.*}}, %[[AQ]], %[[TW]])
// CHECK: %[[RAW:.*]] = memref.alloc(%{{.*}}) : memref<?x16xf32>
// CHECK: call @kda_attention_0({{.*}}, %[[AQ]], %[[TW]], {{.*}}, %[[RAW]])
// CHECK: call @kda_output_0(%[[RAW]], {{.*}}, %[[O]])
// CHECK: return
// CHECK: func.func @kda_decode_0
// CHECK: arith.cmpi slt, %{{.*}}, %c5
// CHECK: func.func @kda_prepare_0
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[BIG:.*]] = arith.cmpi sge, %{{.*}}, %c5
// CHECK: arith.select %[[BIG]], %[[T]], %c0
// CHECK: func.func @kda_coefficients_0
// CHECK-SAME: llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>
// CHECK-SAME: roles = [x, key, decay, beta, seq_starts, query_coefficients, delta_weights]
// CHECK: memref.alloc() : memref<16x8xf32>
// CHECK: memref.alloc() : memref<16x16xf32>
// CHECK: memref.alloc() : memref<16x16xf32>
// A chunk's rows start at the tokens t with (t - t0) % 16 == 0.
// CHECK: arith.remui %{{.*}}, %c16
// CHECK: func.func @kda_attention_0
// CHECK-SAME: llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>
// CHECK-SAME: roles = [x, key, value, decay, query_coefficients, delta_weights, recurrent_state, positions, seq_starts, source_slots, dest_slots, out]
// CHECK: memref.alloc() : memref<16x8xf32>
// CHECK: memref.alloc() : memref<16x8xf32>
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[C16]]
// CHECK: func.func @kda_output_0
func.func @kda_chunked(%q: tensor<?x16xf32>, %b: tensor<?x2xf32>,
               %w: tensor<16x1x4xf32>, %alog: tensor<2xf32>, %dtb: tensor<16xf32>, %on: tensor<8xf32>,
               %s0: !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
               %c0: !llm.conv_state<channels = 48, width = 3, f32>,
               %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>) -> tensor<?x16xf32> {
  %o, %s1, %c1 = llm.kda_attention %q, %q, %q, %q, %b, %q, %w, %w, %w, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 8 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.35355339 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 16 : i64}
      : (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>,
         tensor<?x2xf32>, tensor<?x16xf32>, tensor<16x1x4xf32>, tensor<16x1x4xf32>,
         tensor<16x1x4xf32>, tensor<2xf32>, tensor<16xf32>, tensor<8xf32>,
         !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
         !llm.conv_state<channels = 48, width = 3, f32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x16xf32>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
          !llm.conv_state<channels = 48, width = 3, f32>)
  return %o : tensor<?x16xf32>
}

// -----

// Tests that a bf16-activation model's chunk kernel may round its products
// to tf32 (tf32_products: its inputs were bf16); the f32 one above keeps the
// default (false, not printed).
// CHECK-LABEL: func.func @kda_chunked_bf16
// CHECK: func.func @kda_coefficients_0
// CHECK-SAME: llm.kda_coefficients = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>
// CHECK: func.func @kda_attention_0
// CHECK-SAME: llm.kda_chunk = #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>
func.func @kda_chunked_bf16(%q: tensor<?x16xbf16>, %b: tensor<?x2xbf16>,
               %w: tensor<16x1x4xbf16>, %alog: tensor<2xf32>, %dtb: tensor<16xf32>, %on: tensor<8xbf16>,
               %s0: !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
               %c0: !llm.conv_state<channels = 48, width = 3, bf16>,
               %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>) -> tensor<?x16xbf16> {
  %o, %s1, %c1 = llm.kda_attention %q, %q, %q, %q, %b, %q, %w, %w, %w, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 2 : i64, head_dim = 8 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.35355339 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 16 : i64}
      : (tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>, tensor<?x16xbf16>,
         tensor<?x2xbf16>, tensor<?x16xbf16>, tensor<16x1x4xbf16>, tensor<16x1x4xbf16>,
         tensor<16x1x4xbf16>, tensor<2xf32>, tensor<16xf32>, tensor<8xbf16>,
         !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
         !llm.conv_state<channels = 48, width = 3, bf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x16xbf16>, !llm.kda_state<heads = 2, key_dim = 8, value_dim = 8, f32>,
          !llm.conv_state<channels = 48, width = 3, bf16>)
  return %o : tensor<?x16xbf16>
}

// -----

// Tests that a head of 64 value columns is split into 2 parts of 32 (z of
// kda_attention's row loop), each part holding its 32 columns of the state
// ([d_k, 32], the first scratch buffer), of the chunk's D rows and of the
// read-out.
// CHECK-LABEL: func.func @kda_parts
// CHECK: func.func @kda_attention_0
// CHECK: memref.alloc() : memref<64x32xf32>
// CHECK: memref.alloc() : memref<16x32xf32>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %[[PART:.*]]) = (%c0{{.*}}, %c0{{.*}}, %c0{{.*}}) to (%{{.*}}, %c1{{.*}}, %c2{{.*}})
// CHECK: %[[LO:.*]] = arith.muli %[[PART]], %c32
// CHECK: arith.addi %[[LO]], %c32
func.func @kda_parts(%q: tensor<?x64xf32>, %b: tensor<?x1xf32>,
               %w: tensor<64x1x4xf32>, %alog: tensor<1xf32>, %dtb: tensor<64xf32>, %on: tensor<64xf32>,
               %s0: !llm.kda_state<heads = 1, key_dim = 64, value_dim = 64, f32>,
               %c0: !llm.conv_state<channels = 192, width = 3, f32>,
               %pos: tensor<?xi32>, %starts: tensor<?xi32>, %slots: tensor<?xi32>) -> tensor<?x64xf32> {
  %o, %s1, %c1 = llm.kda_attention %q, %q, %q, %q, %b, %q, %w, %w, %w, %alog, %dtb, %on,
      %s0, %c0, %pos, %starts, %slots, %slots
      {heads = 1 : i64, head_dim = 64 : i64, conv_kernel = 4 : i64,
       gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.125 : f32,
       norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 16 : i64}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>,
         tensor<?x1xf32>, tensor<?x64xf32>, tensor<64x1x4xf32>, tensor<64x1x4xf32>,
         tensor<64x1x4xf32>, tensor<1xf32>, tensor<64xf32>, tensor<64xf32>,
         !llm.kda_state<heads = 1, key_dim = 64, value_dim = 64, f32>,
         !llm.conv_state<channels = 192, width = 3, f32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x64xf32>, !llm.kda_state<heads = 1, key_dim = 64, value_dim = 64, f32>,
          !llm.conv_state<channels = 192, width = 3, f32>)
  return %o : tensor<?x64xf32>
}
