// A bf16 and an fp8 block-scaled linear (the q_a_proj shape scaled down):
// input of the ROCDL and NVVM ISA tests.
func.func @linear_bf16(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "proj.weight" : tensor<128x256xbf16>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, tensor<128x256xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
func.func @linear_fp8(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  %w = llm.weight "q.weight" : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
