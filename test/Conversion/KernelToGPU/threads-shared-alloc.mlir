// Tests scratch left in memref.alloc (over the 32 KiB private budget) with
// threads: the kernel gets 128 threads, the shared table becomes the block's
// slice of the global scratch argument (made after the thread mapping, shared
// by the block's threads), and the per-iteration temporary, which fits the
// private budget on its own (step 4 places each buffer that still fits) and
// is touched only inside one distributed loop, is private memory.
// RUN: strata-opt %s --convert-kernels-to-gpu='chip=sm_90' | FileCheck %s

// CHECK-LABEL: gpu.func @private_temp(
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = memref.alloca() : memref<1xf32, #gpu.address_space<private>>
// CHECK: memref.view %arg2[%{{.*}}][] : memref<?xi8> to memref<16384xf32>
// CHECK: %[[TG:.*]] = memref.memory_space_cast %[[T]]
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16384) step
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c8) step
// CHECK: memref.store %{{.*}}, %[[TG]]
// CHECK: gpu.barrier
// CHECK-NOT: memref.dealloc %[[T]]
// CHECK: gpu.return
func.func @private_temp(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"temp">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16384 = arith.constant 16384 : index
  %zero = arith.constant 0.0 : f32
  %big = memref.alloc() : memref<16384xf32>
  %t = memref.alloc() : memref<1xf32>
  scf.parallel (%i) = (%c0) to (%c16384) step (%c1) {
    memref.store %zero, %big[%i] : memref<16384xf32>
    scf.reduce
  }
  %rows = memref.dim %x, %c0 : memref<?x8xf32>
  scf.for %r = %c0 to %rows step %c1 {
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      %v = memref.load %x[%r, %j] : memref<?x8xf32>
      %b = memref.load %big[%j] : memref<16384xf32>
      %s = arith.addf %v, %b : f32
      memref.store %s, %t[%c0] : memref<1xf32>
      %w = memref.load %t[%c0] : memref<1xf32>
      memref.store %w, %y[%r, %j] : memref<?x8xf32>
      scf.reduce
    }
  }
  memref.dealloc %t : memref<1xf32>
  memref.dealloc %big : memref<16384xf32>
  return
}
