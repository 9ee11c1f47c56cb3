// RUN: strata-compile %s --compile-to=ast -verify-diagnostics

// Tests that a malformed token is a diagnostic at its position.
entry main() {
  // expected-error@+1 {{unexpected character '$'}}
  let x = $;
}
