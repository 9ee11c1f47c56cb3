// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that a missing config key names the key and the config file.
entry main() {
  // expected-error@+1 {{config key 'num_layers' not found in}}
  for i in 0 .. cfg.num_layers {
  }
  return;
}
