// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that a config value of the wrong type names where it came from.
entry main() {
  // expected-error@+1 {{expected an integer loop bound, got a list (cfg.layer_types)}}
  for i in 0 .. cfg.layer_types {
  }
  return;
}
