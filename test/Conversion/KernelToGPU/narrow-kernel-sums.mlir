// Tests narrow-kernel-sums: an llm.kernel function's f64 sums (fp32 mode's
// dotAccumulatorType) become f32 sums, its f64 scratch f32 scratch, and the
// casts between f32 and f64 disappear; a function without llm.kernel keeps
// its f64; an f64 kernel argument is an error.
// RUN: strata-opt %s --split-input-file --narrow-kernel-sums --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @dot
// CHECK-NOT: f64
// CHECK: %[[ACC:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]] : memref<?x4xf32>)
// CHECK: scf.for {{.*}} iter_args(%[[PARTIAL:.*]] = %{{.*}}) -> (f32)
// CHECK: %[[XB:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK: %[[P:.*]] = arith.mulf %[[XB]], %{{.*}} : f32
// CHECK: arith.addf %[[PARTIAL]], %[[P]] : f32
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK-NOT: f64
// CHECK: return
func.func @dot(%x: memref<?x4xbf16>, %w: memref<4xf32>, %y: memref<?xf32>)
    attributes {llm.kernel = #llm.kernel<"dot">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f64
  %n = memref.dim %x, %c0 : memref<?x4xbf16>
  %acc = memref.alloc(%n) : memref<?x4xf64>
  linalg.fill ins(%zero : f64) outs(%acc : memref<?x4xf64>)
  scf.for %t = %c0 to %n step %c1 {
    %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%run = %zero) -> (f64) {
      %xv = memref.load %x[%t, %i] : memref<?x4xbf16>
      %wv = memref.load %w[%i] : memref<4xf32>
      %xd = arith.extf %xv : bf16 to f64
      %wd = arith.extf %wv : f32 to f64
      %p = arith.mulf %xd, %wd : f64
      %a = arith.addf %run, %p : f64
      scf.yield %a : f64
    }
    memref.store %s, %acc[%t, %c0] : memref<?x4xf64>
    %r = memref.load %acc[%t, %c0] : memref<?x4xf64>
    %f = arith.truncf %r : f64 to f32
    memref.store %f, %y[%t] : memref<?xf32>
  }
  memref.dealloc %acc : memref<?x4xf64>
  return
}

// The graph's own functions are not kernels: untouched.
// CHECK-LABEL: func.func @host
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
func.func @host(%a: f64) -> f64 {
  %s = arith.addf %a, %a : f64
  return %s : f64
}

// -----

// expected-error @+1 {{kernel 'wide_argument' has an f64 argument; only its sums may be f64}}
func.func @wide_argument(%x: memref<?xf64>)
    attributes {llm.kernel = #llm.kernel<"wide_argument">} {
  return
}
