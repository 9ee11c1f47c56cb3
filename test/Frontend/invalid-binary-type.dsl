// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that adding tensors of different shapes is rejected.
entry main(a: [?, 8] bf16, b: [?, 4] bf16) {
  // expected-error@+1 {{type mismatch in '+': [?, 8] bf16 vs [?, 4] bf16}}
  let c = a + b;
  return c;
}
