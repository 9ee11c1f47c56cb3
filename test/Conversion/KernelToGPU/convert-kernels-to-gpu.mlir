// Tests convert-kernels-to-gpu: a row kernel gets a grid-stride row loop and
// a grid that follows its input's row count, with its small scratch in
// private memory; a linear-style kernel's output temporary is forwarded into
// the output and fill + matmul fuse into one 2-D grid loop; a kernel whose
// loops write arguments one after another runs on one block; large and
// dynamic scratch become slices of a global scratch argument, two
// allocations one after the other at 64-byte aligned offsets, a dynamic size
// recorded as a program over argument extents; a private array after a loop
// is allocated at the top of the kernel; a bf16 linear's f32 accumulator becomes one
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
func.func @row_kernel(%x: memref<?x16xf32>, %y: memref<?x16xf32>) attributes {llm.kernel = #llm.kernel<"row">} {
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
func.func @linear_kernel(%x: memref<?x4xf32>, %w: memref<8x4xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"linear">} {
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
func.func @two_outputs(%x: memref<?xf32>, %y: memref<?xf32>, %z: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"two">} {
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

// Scratch beyond private memory becomes a view into the block's slice of a
// new last argument: block x + gx (y + gy z) at dim(scratch) / (gx gy gz)
// bytes per block; strata.scratch records 65536 B aligned to 64.
// CHECK-LABEL: gpu.func @big_scratch(
// CHECK-SAME: %[[X:.*]]: memref<?xf32>, %[[SCRATCH:.*]]: memref<?xi8>)
// CHECK-SAME: strata.grid = [array<i64: 0, 0>,
// CHECK-SAME: strata.scratch = [array<i64: 0, 65536>, array<i64: 5, 64>]
// CHECK-DAG: %[[BX:.*]] = gpu.block_id  x
// CHECK-DAG: %[[GX:.*]] = gpu.grid_dim  x
// CHECK-DAG: %[[BY:.*]] = gpu.block_id  y
// CHECK-DAG: %[[GY:.*]] = gpu.grid_dim  y
// CHECK-DAG: %[[BZ:.*]] = gpu.block_id  z
// CHECK-DAG: %[[GZ:.*]] = gpu.grid_dim  z
// CHECK: %[[T0:.*]] = arith.muli %[[GY]], %[[BZ]]
// CHECK: %[[T1:.*]] = arith.addi %[[BY]], %[[T0]]
// CHECK: %[[T2:.*]] = arith.muli %[[GX]], %[[T1]]
// CHECK: %[[ID:.*]] = arith.addi %[[BX]], %[[T2]]
// CHECK: %[[GYZ:.*]] = arith.muli %[[GY]], %[[GZ]]
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[GX]], %[[GYZ]]
// CHECK: %[[TOTAL:.*]] = memref.dim %[[SCRATCH]], %{{.*}} : memref<?xi8>
// CHECK: %[[PER:.*]] = arith.divui %[[TOTAL]], %[[BLOCKS]]
// CHECK: %[[BASE:.*]] = arith.muli %[[ID]], %[[PER]]
// CHECK: %[[VIEW:.*]] = memref.view %[[SCRATCH]][%[[BASE]]][] : memref<?xi8> to memref<16384xf32>
// CHECK-NOT: memref.alloc
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[VIEW]]
// CHECK-NOT: memref.dealloc
// CHECK: gpu.return
func.func @big_scratch(%x: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"big">} {
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
func.func @bf16_linear(%x: memref<?x4xbf16>, %w: memref<8x4xbf16>, %y: memref<?x8xbf16>) attributes {llm.kernel = #llm.kernel<"linear">} {
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
func.func @table_linear(%x: memref<?x4xf32>, %w: memref<8x4xf32>, %s: memref<1xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"table">} {
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

// Two scratch allocations, a static one and one of a size computed from
// argument extents (max(dim(%x, 1) * 16, 1) floats): the second starts at the
// first's 64-byte aligned end; the program is [65536 B aligned] +
// [4 * max(extent(0, 1) * 16, 1) aligned].
// CHECK-LABEL: gpu.func @dynamic_scratch(
// CHECK-SAME: %{{.*}}: memref<?x?xf32>, %[[SCRATCH:.*]]: memref<?xi8>)
// CHECK-SAME: strata.scratch = [array<i64: 0, 65536>, array<i64: 5, 64>, array<i64: 0, 4>, array<i64: 1, 0, 1>, array<i64: 0, 16>, array<i64: 3>, array<i64: 0, 1>, array<i64: 4>, array<i64: 3>, array<i64: 5, 64>, array<i64: 2>]
// CHECK: arith.divui
// CHECK-NEXT: %[[BASE:.*]] = arith.muli
// CHECK: %[[C65536:.*]] = arith.constant 65536 : index
// CHECK: %[[UP:.*]] = arith.ceildivui %[[C65536]], %[[C64:.*]] : index
// CHECK: %[[BYTES0:.*]] = arith.muli %[[UP]], %[[C64]]
// CHECK: memref.view %[[SCRATCH]][%[[BASE]]][] : memref<?xi8> to memref<16384xf32>
// CHECK: %[[NEXT:.*]] = arith.addi %[[BASE]], %[[BYTES0]]
// CHECK: %[[N:.*]] = arith.maxsi
// CHECK: memref.view %[[SCRATCH]][%[[NEXT]]][%[[N]]] : memref<?xi8> to memref<?xf32>
// CHECK-NOT: memref.alloc
// CHECK: gpu.return
func.func @dynamic_scratch(%x: memref<?x?xf32>) attributes {llm.kernel = #llm.kernel<"dyn">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %s = memref.alloc() : memref<16384xf32>
  %w = memref.dim %x, %c1 : memref<?x?xf32>
  %w16 = arith.muli %w, %c16 : index
  %n = arith.maxsi %w16, %c1 : index
  %t = memref.alloc(%n) : memref<?xf32>
  %rows = memref.dim %x, %c0 : memref<?x?xf32>
  scf.for %i = %c0 to %rows step %c1 {
    %v = memref.load %x[%i, %c0] : memref<?x?xf32>
    memref.store %v, %s[%c0] : memref<16384xf32>
    memref.store %v, %t[%c0] : memref<?xf32>
    %u = memref.load %t[%c0] : memref<?xf32>
    %q = memref.load %s[%c0] : memref<16384xf32>
    %sum = arith.addf %u, %q : f32
    memref.store %sum, %x[%i, %c0] : memref<?x?xf32>
  }
  memref.dealloc %t : memref<?xf32>
  memref.dealloc %s : memref<16384xf32>
  return
}

// A private array allocated after a loop is created at the top of the
// kernel (an alloca outside LLVM's entry block would make the stack
// dynamic).
// CHECK-LABEL: gpu.func @late_private(
// CHECK-NEXT: memref.alloca() : memref<8xf32, #gpu.address_space<private>>
// CHECK: scf.for
// CHECK: memref.memory_space_cast
// CHECK: scf.for
func.func @late_private(%x: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"late">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %j = %c0 to %c8 step %c1 {
    memref.store %zero, %x[%c0, %j] : memref<?x8xf32>
  }
  %s = memref.alloc() : memref<8xf32>
  %rows = memref.dim %x, %c0 : memref<?x8xf32>
  scf.for %r = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%r, %j] : memref<?x8xf32>
      memref.store %v, %s[%j] : memref<8xf32>
      %w = memref.load %s[%j] : memref<8xf32>
      memref.store %w, %x[%r, %j] : memref<?x8xf32>
    }
  }
  memref.dealloc %s : memref<8xf32>
  return
}
