// RUN: strata-opt --split-input-file --convert-llm-to-kernel --verify-diagnostics %s

// Tests that a sharded fp8 weight is refused by name: the artifact cannot
// describe each rank's slice of its block scales yet.
func.func @sharded_fp8_weight(%x: tensor<?x256xbf16>) -> tensor<?x128xbf16> {
  // expected-error@+1 {{convert-llm-to-kernel: sharded fp8 weights have no kernel lowering yet (the artifact cannot describe each rank's slice of the scales)}}
  %w = llm.weight "w" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<128x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
