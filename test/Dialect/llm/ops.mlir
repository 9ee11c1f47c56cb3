// RUN: strata-opt %s | strata-opt | FileCheck %s

// Tests that rms_norm round-trips.
// CHECK-LABEL: @rms_norm
func.func @rms_norm(%x: tensor<4x256xbf16>, %w: tensor<256xbf16>) -> tensor<4x256xbf16> {
  // CHECK: llm.rms_norm
  %y = llm.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<4x256xbf16>, tensor<256xbf16>) -> tensor<4x256xbf16>
  return %y : tensor<4x256xbf16>
}
