// Tests the errors of CPU kernel compilation (lib/Target/CPU): signatures the
// kernel ABI cannot express are rejected with the kernel and argument named.

// RUN: split-file %s %t
// RUN: not strata-artifact-build-test %t/results.mlir -o %t/a.strata 2>&1 | FileCheck %s --check-prefix=RESULTS
// RUN: not strata-artifact-build-test %t/scalar.mlir -o %t/a.strata 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not strata-artifact-build-test %t/layout.mlir -o %t/a.strata 2>&1 | FileCheck %s --check-prefix=LAYOUT
// RUN: not strata-artifact-build-test %t/empty.mlir -o %t/a.strata 2>&1 | FileCheck %s --check-prefix=EMPTY

// RESULTS: results.mlir:2:1: error: kernel 'sum' returns values; kernels write results to buffer arguments
// SCALAR: scalar.mlir:2:1: error: kernel argument 1 has unsupported scalar type 'i16' (expected i32, i64, index, f32 or f64)
// LAYOUT: layout.mlir:2:1: error: kernel argument 0 has a non-identity layout: 'memref<4xf32, strided<[2]>>'
// EMPTY: error: no public func.func kernels to compile

//--- results.mlir
// A kernel may not return values.
func.func @sum(%x: f32) -> f32 {
  return %x : f32
}

//--- scalar.mlir
// Scalars are i32, i64, index, f32 or f64.
func.func @scale(%x: memref<4xf32>, %n: i16) {
  return
}

//--- layout.mlir
// Buffers are contiguous row-major.
func.func @strided(%x: memref<4xf32, strided<[2]>>) {
  return
}

//--- empty.mlir
// Private functions are not kernels.
func.func private @helper(%x: memref<4xf32>) {
  return
}
