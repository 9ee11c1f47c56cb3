// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that a call of an op the dialect does not define is reported.
entry main(x: [?, 8] bf16) {
  // expected-error@+1 {{unknown op 'llm.rms_normalize'}}
  let y: [?, 8] bf16 = llm.rms_normalize(x);
  return y;
}
