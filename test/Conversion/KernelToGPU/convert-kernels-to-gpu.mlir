// Tests convert-kernels-to-gpu: a row kernel gets a grid-stride row loop and
// a grid that follows its input's row count, with its small scratch in
// private memory; a linear-style kernel's output temporary is forwarded into
// the output and fill + matmul fuse into one 2-D grid loop; a kernel whose
// loops write arguments one after another runs on one block; large scratch
// stays memref.alloc (device malloc); a bf16 linear's f32 accumulator becomes one
// private element per thread; a decoded weight table is recomputed at its
// loads.
// RUN: strata-opt %s --convert-kernels-to-gpu | FileCheck %s

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @strata_kernels

// CHECK-LABEL: gpu.func @row_kernel(
// CHECK-SAME: kernel
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 1>, array<i64: -1, 1>]
// CHECK: %[[PRIVATE:.*]] = memref.alloca() : memref<16xf32, #gpu.address_space<private>>
// CHECK: %[[SCRATCH:.*]] = memref.memory_space_cast %[[PRIVATE]] : memref<16xf32, #gpu.address_space<private>> to memref<16xf32>
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[BID:.*]] = gpu.block_id  x
// CHECK: %[[GDIM:.*]] = gpu.grid_dim  x
// CHECK: %[[LB:.*]] = arith.addi %c0, %{{.*}}
// CHECK: %[[STEP:.*]] = arith.muli %[[GDIM]], %c1
// CHECK: scf.for %{{.*}} = %[[LB]] to %[[ROWS]] step %[[STEP]]
// CHECK-NOT: memref.dealloc
// CHECK: gpu.return
func.func @row_kernel(%x: memref<?x16xf32>, %y: memref<?x16xf32>) attributes {llm.kernel = "row"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %scratch = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%scratch : memref<16xf32>)
  %rows = memref.dim %x, %c0 : memref<?x16xf32>
  scf.for %r = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %v = memref.load %x[%r, %j] : memref<?x16xf32>
      memref.store %v, %scratch[%j] : memref<16xf32>
      %w = memref.load %scratch[%j] : memref<16xf32>
      memref.store %w, %y[%r, %j] : memref<?x16xf32>
    }
  }
  memref.dealloc %scratch : memref<16xf32>
  return
}

// CHECK-LABEL: gpu.func @linear_kernel(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 8>, array<i64: -1, 1>]
// CHECK-NOT: memref.alloc
// CHECK: gpu.block_id  x
// CHECK: gpu.block_id  y
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %arg2
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// CHECK: gpu.return
#id = affine_map<(d0, d1) -> (d0, d1)>
#xk = affine_map<(d0, d1, d2) -> (d0, d2)>
#wk = affine_map<(d0, d1, d2) -> (d1, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @linear_kernel(%x: memref<?x4xf32>, %w: memref<8x4xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = "linear"} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x4xf32>
  %t = memref.alloc(%rows) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xk, #wk, #id3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32>, memref<8x4xf32>) outs(%t : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x8xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  memref.dealloc %t : memref<?x8xf32>
  return
}

// CHECK-LABEL: gpu.func @two_outputs(
// CHECK-SAME: strata.grid = [array<i64: -1, 1>, array<i64: -1, 1>, array<i64: -1, 1>]
// CHECK-NOT: gpu.block_id
// CHECK: gpu.return
func.func @two_outputs(%x: memref<?xf32>, %y: memref<?xf32>, %z: memref<?xf32>) attributes {llm.kernel = "two"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %y[%i] : memref<?xf32>
  }
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %y[%i] : memref<?xf32>
    memref.store %v, %z[%i] : memref<?xf32>
  }
  return
}

// CHECK-LABEL: gpu.func @big_scratch(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>,
// CHECK: memref.alloc() : memref<16384xf32>
// CHECK: scf.for
// CHECK: memref.dealloc
func.func @big_scratch(%x: memref<?xf32>) attributes {llm.kernel = "big"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<16384xf32>
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %s[%i] : memref<16384xf32>
    %u = memref.load %s[%c0] : memref<16384xf32>
    memref.store %u, %x[%i] : memref<?xf32>
  }
  memref.dealloc %s : memref<16384xf32>
  return
}

// A bf16 linear: the f32 accumulator is a temporary truncated into the
// output, so fill, matmul and truncation fuse and the accumulator becomes
// one private element per thread.
// CHECK-LABEL: gpu.func @bf16_linear(
// CHECK-NOT: memref.alloc(
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<1xf32, #gpu.address_space<private>>
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: arith.truncf
// CHECK-NOT: scf.parallel
// CHECK: gpu.return
func.func @bf16_linear(%x: memref<?x4xbf16>, %w: memref<8x4xbf16>, %y: memref<?x8xbf16>) attributes {llm.kernel = "linear"} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x4xbf16>
  %t = memref.alloc(%rows) : memref<?x8xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xk, #wk, #id3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xbf16>, memref<8x4xbf16>) outs(%t : memref<?x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %m = arith.mulf %af, %bf : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x8xf32>) outs(%y : memref<?x8xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %t : memref<?x8xf32>
  return
}

// A weight table decoded element by element from read-only arguments (the
// fp8 dequantisation) is recomputed where it is read, not built per block.
// CHECK-LABEL: gpu.func @table_linear(
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: %[[W:.*]] = memref.load %arg1
// CHECK: %[[S:.*]] = memref.load %arg2
// CHECK: arith.mulf %[[W]], %[[S]]
// CHECK: gpu.return
func.func @table_linear(%x: memref<?x4xf32>, %w: memref<8x4xf32>, %s: memref<1xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = "table"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %table = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%table : memref<8x4xf32>)
  scf.for %n = %c0 to %c8 step %c1 {
    scf.for %k = %c0 to %c4 step %c1 {
      %v = memref.load %w[%n, %k] : memref<8x4xf32>
      %sc = memref.load %s[%c0] : memref<1xf32>
      %d = arith.mulf %v, %sc : f32
      memref.store %d, %table[%n, %k] : memref<8x4xf32>
    }
  }
  %rows = memref.dim %x, %c0 : memref<?x4xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x8xf32>)
  linalg.generic {indexing_maps = [#xk, #wk, #id3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %table : memref<?x4xf32>, memref<8x4xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  }
  memref.dealloc %table : memref<8x4xf32>
  return
}
