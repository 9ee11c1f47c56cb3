// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that indexing past the end of a per-layer config list is reported.
entry main() {
  for i in 0 .. cfg.num_hidden_layers + 1 {
    // expected-error@+1 {{index 3 out of range for cfg.layer_types of length 3}}
    let kind = cfg.layer_types[i];
  }
  return;
}
