// RUN: strata-compile %s --compile-to=ast -verify-diagnostics

// Tests that an unterminated interpolation hole points into the string.
entry main() {
  // expected-error@+1 {{unterminated '{' in string literal}}
  let x = "layers.{i";
}
