// Linear kernel functions (the kernel phase's form) for the K split over the
// grid (MatmulKernel.cpp buildGridSplit, buildSplitK): a narrow bf16 linear
// (N = 128, K = 4096) whose decode forms split; a bf16 linear of N = 2560
// (40 column tiles), K = 4096, whose row tiles split; an fp8 o_proj of K =
// 16384, N = 4096 with mHC's residual write (the slice's MLA o_proj), whose
// row tiles split; a narrow one of K = 2048 (its decode forms split, its row
// tiles would have 1024 a split) and a wide one (N = 16384) that do not; a
// bf16 linear of N = 8192, K = 4096 (the slice's kda.qkv_proj) whose row
// tiles split on sm_90a's ring only (from 65 rows: at 64 rows the plain
// tiles would be 128, too many to split).
func.func @tiles_split(%a0: memref<?x4096xbf16>, %a1: memref<2560x4096xbf16>, %a2: memref<?x2560xbf16>)
    attributes {llm.kernel = #llm.kernel<"tiles_split", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}
func.func @linear_split(%a0: memref<?x4096xbf16>, %a1: memref<128x4096xbf16>, %a2: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"linear_split", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}
func.func @o_proj_fp8(%a0: memref<?x16384xbf16>, %a1: memref<4096x16384xf8E4M3FN>, %a2: memref<32x128xf32>, %a3: memref<?x4x4096xbf16>, %a4: memref<?x4xf32>, %a5: memref<?x4x4xf32>, %a6: memref<?x4x4096xbf16>)
    attributes {llm.kernel = #llm.kernel<"o_proj_fp8", roles = [x, weight, weight_scales, streams, stream_post, stream_comb, out]>, llm.linear_epilogue = #llm.linear_epilogue<mhc_post, hc_mult = 4>, llm.weight_block = array<i64: 128, 128>} {
  return
}
func.func @short_k(%a0: memref<?x2048xbf16>, %a1: memref<128x2048xbf16>, %a2: memref<?x128xbf16>)
    attributes {llm.kernel = #llm.kernel<"short_k", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}
func.func @wide_n(%a0: memref<?x8192xbf16>, %a1: memref<16384x8192xbf16>, %a2: memref<?x16384xbf16>)
    attributes {llm.kernel = #llm.kernel<"wide_n", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}
func.func @qkv_ring_split(%a0: memref<?x4096xbf16>, %a1: memref<8192x4096xbf16>, %a2: memref<?x8192xbf16>)
    attributes {llm.kernel = #llm.kernel<"qkv_ring_split", roles = [x, weight, out]>, llm.linear_kernel} {
  return
}
