// Tests the errors of convert-kernels-to-gpu's global scratch: an allocation
// inside a loop (it needs a slice per iteration), and one whose size is not
// an expression of argument extents (here read from memory), so no plan can
// size the scratch buffer.
// RUN: strata-opt %s --split-input-file --convert-kernels-to-gpu --verify-diagnostics

func.func @alloc_in_loop(%x: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"loop">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{kernel 'alloc_in_loop' allocates 'memref<?xf32>' inside a loop; GPU scratch must be allocated at kernel scope}}
    %t = memref.alloc(%i) : memref<?xf32>
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %t[%c0] : memref<?xf32>
    %u = memref.load %t[%c0] : memref<?xf32>
    memref.store %u, %x[%i] : memref<?xf32>
    memref.dealloc %t : memref<?xf32>
  }
  return
}

// -----

func.func @data_sized(%x: memref<?xf32>, %len: memref<1xindex>) attributes {llm.kernel = #llm.kernel<"data">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.load %len[%c0] : memref<1xindex>
  // expected-error @+1 {{kernel 'data_sized': the size of scratch 'memref<?xf32>' is not an expression of argument extents (constants, memref.dim of arguments, +, *, max), so the plan cannot size the scratch buffer}}
  %t = memref.alloc(%m) : memref<?xf32>
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %t[%c0] : memref<?xf32>
    %u = memref.load %t[%c0] : memref<?xf32>
    memref.store %u, %x[%i] : memref<?xf32>
  }
  memref.dealloc %t : memref<?xf32>
  return
}
