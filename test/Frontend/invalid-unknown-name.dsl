// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that an undefined variable is reported where it is used.
entry main() {
  // expected-error@+1 {{unknown name 'hiden'}}
  let x = hiden + 1;
  return;
}
