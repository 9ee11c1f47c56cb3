// RUN: strata-opt --strata-print-kernel-plan --verify-diagnostics %s -o /dev/null

// Tests that a step calling a function that is not a kernel has no plan.
func.func private @helper(memref<4xf32>)
func.func @step(%x: memref<4xf32>) {
  // expected-error@+1 {{call of 'helper' which is not a kernel}}
  call @helper(%x) : (memref<4xf32>) -> ()
  return
}
