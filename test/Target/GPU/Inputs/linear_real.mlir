// Real GLM-5.3-Flash linear shapes for the H200 check (check_linear.py):
// q_a_proj [1536, 4096] in bf16 and fp8 (128x128 block scales), and
// kv_a_proj_with_mqa [512, 4096] in bf16.
func.func @q_a_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x1536xbf16> {
  %w = llm.weight "q_a.weight" : tensor<1536x4096xbf16>
  %y = llm.linear %x, %w : (tensor<?x4096xbf16>, tensor<1536x4096xbf16>) -> tensor<?x1536xbf16>
  return %y : tensor<?x1536xbf16>
}
func.func @q_a_fp8(%x: tensor<?x4096xbf16>) -> tensor<?x1536xbf16> {
  %w = llm.weight "q_a8.weight" : !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x4096xbf16>, !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>) -> tensor<?x1536xbf16>
  return %y : tensor<?x1536xbf16>
}
func.func @kv_a_bf16(%x: tensor<?x4096xbf16>) -> tensor<?x512xbf16> {
  %w = llm.weight "kv_a.weight" : tensor<512x4096xbf16>
  %y = llm.linear %x, %w : (tensor<?x4096xbf16>, tensor<512x4096xbf16>) -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}
