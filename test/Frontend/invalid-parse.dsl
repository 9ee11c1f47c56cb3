// RUN: strata-compile %s --compile-to=ast -verify-diagnostics

// Tests that a syntax error names what was expected and what was found.
entry main() {
  let x = 1
  // expected-error@+1 {{expected ';' after let, got 'let'}}
  let y = 2;
}
