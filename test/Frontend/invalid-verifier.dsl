// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that an op verifier error points at the DSL call that built the op.
entry main(x: [?, 8] bf16) {
  // expected-error@+1 {{'llm.rms_norm' op requires attribute 'eps'}}
  let y: [?, 8] bf16 = llm.rms_norm(x, none, none, epsilon = 1.0e-5);
  return y;
}
