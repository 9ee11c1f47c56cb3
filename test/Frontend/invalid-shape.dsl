// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that a block argument whose shape contradicts the declared parameter
// type is a diagnostic at the parameter.
// expected-error@+1 {{type mismatch for argument 'x' of 'norm': expected [?, 8] bf16, got [?, 4] bf16}}
def norm(x: [?, cfg.hidden_size] bf16) {
  return x;
}

entry main(h: [?, 4] bf16) {
  let y = norm(h);
  return y;
}
