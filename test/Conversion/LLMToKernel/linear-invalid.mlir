// RUN: strata-opt --split-input-file --convert-llm-to-kernel --verify-diagnostics %s

// Tests that an fp8 weight that does not come from llm.weight (here a
// function argument) cannot be bound to a kernel and is reported.
func.func @fp8_weight_argument(%x: tensor<?x128xbf16>,
    %w: !llm.fp8_weight<tensor<128x128xf8E4M3FN>, tensor<1x1xf32>, block = [128, 128]>) -> tensor<?x128xbf16> {
  // expected-error@+1 {{failed to legalize operation 'llm.linear'}}
  %y = llm.linear %x, %w : (tensor<?x128xbf16>, !llm.fp8_weight<tensor<128x128xf8E4M3FN>, tensor<1x1xf32>, block = [128, 128]>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
