// RUN: strata-compile %s --compile-to=ast -verify-diagnostics

// Tests that a missing imported file is reported at the import.
// expected-error@+1 {{cannot open imported file}}
import "Inputs/does-not-exist.dsl";
