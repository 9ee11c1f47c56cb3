// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that llm.mhc_pre becomes two kernels (MhcMix.h): the fp32 mixing
// projection's partial sums [T, 16 slices, 24 + 1] (one (token, slice, output
// or sum of squares) row each, marked llm.threads_within_row: a GPU block
// reduces one slice; llm.mhc_mix names the slices for a GPU target's own
// kernel), then the per-token kernel with three destinations (x, post, comb).
// CHECK-LABEL: func.func @mhc_pre
// CHECK: %[[MIX:.*]] = memref.alloc(%{{.*}}) : memref<?x16x25xf32>
// CHECK: call @mhc_mix_0(%{{.*}}, %{{.*}}, %[[MIX]])
// CHECK: %[[X:.*]] = memref.alloc(%{{.*}}) : memref<?x32xbf16>
// CHECK: %[[POST:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: %[[COMB:.*]] = memref.alloc(%{{.*}}) : memref<?x4x4xf32>
// CHECK: call @mhc_pre_0(%{{.*}}, %[[MIX]], %{{.*}}, %{{.*}}, %[[X]], %[[POST]], %[[COMB]])
// CHECK: func.func @mhc_mix_0({{.*}}llm.mhc_mix = #llm.mhc_mix<slices = 16>
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%{{.*}}, %c16, %c25)
// CHECK: scf.for %{{.*}} = %[[K0:.*]] to %{{.*}} step
// CHECK: arith.select
// CHECK: } {llm.threads_within_row}
// The per-token kernel: the slices' sums, the mixing values and the comb
// matrix's two Sinkhorn buffers are scratch; each step a loop over
// independent entries (sums, m with the post weights, the softmax, the
// first column pass), Sinkhorn's further 19 iterations one scf.for around a
// row pass and a column pass.
// CHECK: func.func @mhc_pre_0
// CHECK: memref.alloc() : memref<25xf32>
// CHECK: memref.alloc() : memref<24xf32>
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: memref.alloc() : memref<16xf32>
// CHECK: scf.for
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c25)
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c24)
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16)
// CHECK: math.exp
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16
// CHECK: arith.divf
// CHECK: scf.for %{{.*}} = %c1{{(_[0-9]+)?}} to %c20{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} {
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: memref.dealloc
// CHECK: return
func.func @mhc_pre(%r: tensor<?x4x32xbf16>) -> (tensor<?x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) {
  %fn = llm.weight "hc_attn_fn" : tensor<24x128xf32>
  %base = llm.weight "hc_attn_base" : tensor<24xf32>
  %scale = llm.weight "hc_attn_scale" : tensor<3xf32>
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale
      {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
       sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32}
      : (tensor<?x4x32xbf16>, tensor<24x128xf32>, tensor<24xf32>, tensor<3xf32>)
      -> (tensor<?x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  return %x, %post, %comb : tensor<?x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>
}

// -----

// Tests that hc_expand / hc_collapse / mhc_post each call their own kernel.
// CHECK-LABEL: func.func @streams
// CHECK: call @hc_expand_0
// CHECK: call @mhc_post_0
// CHECK: call @hc_collapse_0
// CHECK-NOT: = llm.
func.func @streams(%e: tensor<?x32xbf16>, %y: tensor<?x32xbf16>, %post: tensor<?x4xf32>, %comb: tensor<?x4x4xf32>) -> tensor<?x32xbf16> {
  %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x32xbf16>) -> tensor<?x4x32xbf16>
  %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64}
      : (tensor<?x32xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x32xbf16>
  %h = llm.hc_collapse %r2 {hc_mult = 4 : i64} : (tensor<?x4x32xbf16>) -> tensor<?x32xbf16>
  return %h : tensor<?x32xbf16>
}

// -----

// Tests the fused forms of llm-fuse-hyper-connections: mhc_pre with the input
// norm takes the norm weight and ends in the norm (1 / sqrt of the mean square);
// mhc_post with a projection calls mhc_post_linear, marked as a linear with
// the residual write as its epilogue (and, fp8, with its weight block).
// CHECK-LABEL: func.func @fused
// CHECK: call @mhc_pre_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: call @mhc_post_linear_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: func.func @mhc_pre_0(%{{.*}}: memref<?x4x32xbf16>, %{{.*}}: memref<?x16x25xf32>, %{{.*}}: memref<24xf32>, %{{.*}}: memref<3xf32>, %{{.*}}: memref<32xbf16>, %{{.*}}: memref<?x32xbf16>, %{{.*}}: memref<?x4xf32>, %{{.*}}: memref<?x4x4xf32>)
// CHECK: math.sqrt
// CHECK: func.func @mhc_post_linear_0(%{{.*}}: memref<?x256xbf16>, %{{.*}}: memref<32x256xf8E4M3FN>, %{{.*}}: memref<1x2xf32>, %{{.*}}: memref<?x4x32xbf16>, %{{.*}}: memref<?x4xf32>, %{{.*}}: memref<?x4x4xf32>, %{{.*}}: memref<?x4x32xbf16>)
// CHECK-SAME: llm.linear_epilogue = #llm.linear_epilogue<mhc_post, hc_mult = 4>
// CHECK-SAME: llm.weight_block = array<i64: 128, 128>
// CHECK: scf.parallel
func.func @fused(%r: tensor<?x4x32xbf16>, %o: tensor<?x256xbf16>) -> tensor<?x4x32xbf16> {
  %fn = llm.weight "hc_attn_fn" : tensor<24x128xf32>
  %base = llm.weight "hc_attn_base" : tensor<24xf32>
  %scale = llm.weight "hc_attn_scale" : tensor<3xf32>
  %w = llm.weight "n.weight" : tensor<32xbf16>
  %wo = llm.weight "o.weight" : !llm.fp8_weight<tensor<32x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale x_norm(%w)
      {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
       sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32, x_norm_eps = 1.0e-05 : f32}
      : (tensor<?x4x32xbf16>, tensor<24x128xf32>, tensor<24xf32>, tensor<3xf32>, tensor<32xbf16>)
      -> (tensor<?x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
  %r2 = llm.mhc_post %o, %r, %post, %comb projection(%wo) {hc_mult = 4 : i64}
      : (tensor<?x256xbf16>, tensor<?x4x32xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>,
         !llm.fp8_weight<tensor<32x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x4x32xbf16>
  return %r2 : tensor<?x4x32xbf16>
}
