// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that a failing model-file assertion reports its interpolated message.
entry main() {
  // expected-error@+1 {{assertion failed: hidden_size 8 is not 16}}
  assert cfg.hidden_size == 16, "hidden_size {cfg.hidden_size} is not 16";
  return;
}
