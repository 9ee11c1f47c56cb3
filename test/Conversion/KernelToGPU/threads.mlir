// Tests the threads of a block in convert-kernels-to-gpu (chip=sm_90: 128
// threads; gfx942: 256): a KDA-shaped recurrence (requests over the grid, a
// serial time loop in every thread with the state update, cumulative sum and
// read-out distributed over the threads, a serial prefix sum on thread 0 whose
// result is broadcast through workgroup memory, barriers between the phases,
// the state copy as one flattened loop, the shared scratch in workgroup
// memory), a 2-D elementwise row loop whose columns go to the threads, rows
// over the threads when the row has nothing to distribute, a loop that
// writes one element of shared scratch (not independent: thread 0), and a
// (token, head) row loop whose threads stay within the row.
// unroll=false: the mapping alone (the strided loops' unroll: unroll-strided.test).
// RUN: strata-opt %s --convert-kernels-to-gpu='chip=sm_90 unroll=false' | FileCheck %s
// RUN: strata-opt %s --convert-kernels-to-gpu='chip=gfx942 unroll=false' | FileCheck %s --check-prefix=AMD
// RUN: strata-opt %s --convert-kernels-to-gpu | FileCheck %s --check-prefix=ONE

// AMD: gpu.func @recurrence(
// AMD-SAME: known_block_size = array<i32: 256, 1, 1>
// ONE: gpu.func @recurrence(
// ONE-SAME: known_block_size = array<i32: 1, 1, 1>
// ONE-NOT: gpu.thread_id
// ONE-NOT: gpu.barrier

// CHECK-LABEL: gpu.func @recurrence(
// CHECK-SAME: workgroup(%[[SLOT:.*]] : memref<1xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WS:.*]] : memref<8x8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WC:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[WP:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK-SAME: strata.grid = [array<i64: 3, 0>, array<i64: -1, 1>, array<i64: -1, 1>]
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %c0
// CHECK: %[[S:.*]] = memref.memory_space_cast %[[WS]] : memref<8x8xf32, #gpu.address_space<workgroup>> to memref<8x8xf32>
// CHECK: %[[C:.*]] = memref.memory_space_cast %[[WC]]
// CHECK: %[[P:.*]] = memref.memory_space_cast %[[WP]]
// CHECK: gpu.block_id x
// The request loop: serial within a block.
// CHECK: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// The state copy in: one loop over 8 x 8 elements, thread tid takes tid, tid + 128, ...
// CHECK: gpu.barrier
// CHECK: scf.for %[[F:.*]] = %[[TID]] to %{{.*}} step %c128
// CHECK: arith.remui %[[F]], %{{.*}}
// CHECK: arith.divui %[[F]], %{{.*}}
// CHECK: memref.load %arg2[%[[R]],
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The time loop: serial in every thread (the cumulative sum carries over t).
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK: %[[LB:.*]] = arith.addi %c0{{.*}}, %{{.*}}
// CHECK: %[[ST:.*]] = arith.muli %c1{{.*}}, %c128
// CHECK: scf.for %{{.*}} = %[[LB]] to %c8 step %[[ST]] {
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The prefix sum (a loop with a result that writes memory) on thread 0, its
// total broadcast through workgroup memory.
// CHECK: scf.if %[[FIRST]] {
// CHECK: %[[TOTAL:.*]] = scf.for
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: memref.store %[[TOTAL]], %[[SLOT]][%c0]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[BCAST:.*]] = memref.load %[[SLOT]][%c0]
// The state update: a flattened 8 x 8 nest.
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %[[TID]] to %{{.*}} step %c128
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The read-out: columns over the threads, the reduction over rows serial.
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c8 step %{{.*}} {
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.mulf %{{.*}}, %[[BCAST]]
// CHECK: memref.store %{{.*}}, %arg4[%[[T]], %[[J]]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
// CHECK: gpu.return
func.func @recurrence(%k: memref<?x8xf32>, %v: memref<?x8xf32>, %state: memref<?x8x8xf32>, %starts: memref<?xi32>, %out: memref<?x8xf32>) attributes {llm.kernel = #llm.kernel<"kda-like">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8x8xf32>
  %cum = memref.alloc() : memref<8xf32>
  %prefix = memref.alloc() : memref<8xf32>
  %n = memref.dim %starts, %c0 : memref<?xi32>
  %requests = arith.subi %n, %c1 : index
  scf.for %r = %c0 to %requests step %c1 {
    %b32 = memref.load %starts[%r] : memref<?xi32>
    %r1 = arith.addi %r, %c1 : index
    %e32 = memref.load %starts[%r1] : memref<?xi32>
    %begin = arith.index_cast %b32 : i32 to index
    %end = arith.index_cast %e32 : i32 to index
    scf.for %i = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %x = memref.load %state[%r, %i, %j] : memref<?x8x8xf32>
        memref.store %x, %s[%i, %j] : memref<8x8xf32>
      }
    }
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %zero, %cum[%i] : memref<8xf32>
    }
    scf.for %t = %begin to %end step %c1 {
      scf.for %i = %c0 to %c8 step %c1 {
        %c = memref.load %cum[%i] : memref<8xf32>
        %kk = memref.load %k[%t, %i] : memref<?x8xf32>
        %sum = arith.addf %c, %kk : f32
        memref.store %sum, %cum[%i] : memref<8xf32>
      }
      %total = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
        memref.store %acc, %prefix[%i] : memref<8xf32>
        %c = memref.load %cum[%i] : memref<8xf32>
        %next = arith.addf %acc, %c : f32
        scf.yield %next : f32
      }
      scf.for %i = %c0 to %c8 step %c1 {
        scf.for %j = %c0 to %c8 step %c1 {
          %old = memref.load %s[%i, %j] : memref<8x8xf32>
          %p = memref.load %prefix[%i] : memref<8xf32>
          %decay = math.exp %p : f32
          %kk = memref.load %k[%t, %i] : memref<?x8xf32>
          %vv = memref.load %v[%t, %j] : memref<?x8xf32>
          %kv = arith.mulf %kk, %vv : f32
          %scaled = arith.mulf %old, %decay : f32
          %new = arith.addf %scaled, %kv : f32
          memref.store %new, %s[%i, %j] : memref<8x8xf32>
        }
      }
      scf.for %j = %c0 to %c8 step %c1 {
        %dot = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
          %x = memref.load %s[%i, %j] : memref<8x8xf32>
          %kk = memref.load %k[%t, %i] : memref<?x8xf32>
          %m = arith.mulf %x, %kk : f32
          %a = arith.addf %acc, %m : f32
          scf.yield %a : f32
        }
        %o = arith.mulf %dot, %total : f32
        memref.store %o, %out[%t, %j] : memref<?x8xf32>
      }
    }
    scf.for %i = %c0 to %c8 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        %x = memref.load %s[%i, %j] : memref<8x8xf32>
        memref.store %x, %state[%r, %i, %j] : memref<?x8x8xf32>
      }
    }
  }
  memref.dealloc %s : memref<8x8xf32>
  memref.dealloc %cum : memref<8xf32>
  memref.dealloc %prefix : memref<8xf32>
  return
}

// The columns of a 2-D row loop go to the threads: grid y = ceil(300 / 128);
// the scratch it uses only inside the loop stays private.
// CHECK-LABEL: gpu.func @columns(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 3>, array<i64: -1, 1>]
// CHECK-NOT: gpu.barrier
// CHECK: %[[TID2:.*]] = gpu.thread_id x
// CHECK: memref.alloca() : memref<1xf32, #gpu.address_space<private>>
// CHECK: %[[BY:.*]] = gpu.block_id y
// CHECK: %[[GY:.*]] = gpu.grid_dim y
// CHECK: %[[BY128:.*]] = arith.muli %[[BY]], %c128
// CHECK: arith.addi %[[BY128]], %[[TID2]]
// CHECK: arith.muli %[[GY]], %c128
// CHECK: scf.parallel
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @columns(%x: memref<?x300xf32>, %y: memref<?x300xbf16>) attributes {llm.kernel = #llm.kernel<"elementwise">} {
  %c0 = arith.constant 0 : index
  %rows = memref.dim %x, %c0 : memref<?x300xf32>
  %t = memref.alloc(%rows) : memref<?x300xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x300xf32>) outs(%t : memref<?x300xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : memref<?x300xf32>) outs(%y : memref<?x300xbf16>) {
  ^bb0(%a: f32, %b: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %t : memref<?x300xf32>
  return
}

// A constant column extent beyond the grid's y limit is divided by the
// threads before the cap: ceil(200000 / 128) = 1563 blocks (not
// ceil(65535 / 128) = 512); the lm_head's vocabulary is such a dimension.
// CHECK-LABEL: gpu.func @wide_columns(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 1563>, array<i64: -1, 1>]
// ONE-LABEL: gpu.func @wide_columns(
// ONE-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 65535>, array<i64: -1, 1>]
func.func @wide_columns(%x: memref<?x200000xf32>, %y: memref<?x200000xf32>) attributes {llm.kernel = #llm.kernel<"elementwise">} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x200000xf32>) outs(%y : memref<?x200000xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// A row whose loop accumulates into one scratch element has nothing to
// distribute: the rows go to the threads (blockIdx.x * 128 + tid) and the
// scratch, touched only inside the row loop, stays private.
// CHECK-LABEL: gpu.func @accumulate(
// CHECK-NOT: workgroup
// CHECK: %[[TID3:.*]] = gpu.thread_id x
// CHECK: memref.alloca() : memref<1xf32, #gpu.address_space<private>>
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[BX128:.*]] = arith.muli %[[BX]], %c128
// CHECK: arith.addi %[[BX128]], %[[TID3]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @accumulate(%x: memref<?x16xf32>, %y: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"sum">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<1xf32>
  %rows = memref.dim %x, %c0 : memref<?x16xf32>
  scf.for %r = %c0 to %rows step %c1 {
    memref.store %zero, %acc[%c0] : memref<1xf32>
    scf.for %j = %c0 to %c16 step %c1 {
      %a = memref.load %acc[%c0] : memref<1xf32>
      %v = memref.load %x[%r, %j] : memref<?x16xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%c0] : memref<1xf32>
    }
    %sum = memref.load %acc[%c0] : memref<1xf32>
    memref.store %sum, %y[%r] : memref<?xf32>
  }
  memref.dealloc %acc : memref<1xf32>
  return
}

// The same with the scratch initialised before the row loop (so shared by
// the rows of a block): the row stays with the block, and its loop, not
// independent (every iteration writes the one element), runs on thread 0
// with the scratch in workgroup memory.
// CHECK-LABEL: gpu.func @shared_accumulator(
// CHECK-SAME: workgroup(%[[ACC:.*]] : memref<1xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[FIRST4:.*]] = arith.cmpi eq
// CHECK: scf.if %[[FIRST4]] {
// CHECK-NEXT: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: scf.if %[[FIRST4]] {
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %arg1
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: }
func.func @shared_accumulator(%x: memref<?x16xf32>, %y: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"sum">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<1xf32>
  memref.store %zero, %acc[%c0] : memref<1xf32>
  %rows = memref.dim %x, %c0 : memref<?x16xf32>
  scf.for %r = %c0 to %rows step %c1 {
    scf.for %j = %c0 to %c16 step %c1 {
      %a = memref.load %acc[%c0] : memref<1xf32>
      %v = memref.load %x[%r, %j] : memref<?x16xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%c0] : memref<1xf32>
    }
    %sum = memref.load %acc[%c0] : memref<1xf32>
    memref.store %sum, %y[%r] : memref<?xf32>
  }
  memref.dealloc %acc : memref<1xf32>
  return
}

// A softmax row: the score loop also carries the maximum and the exp loop
// the sum. Each is split into a distributed loop of stores and a reduction
// that reads the stored values back, shared by the block (strided partial
// reductions, gpu.all_reduce).
// CHECK-LABEL: gpu.func @softmax(
// CHECK-SAME: workgroup(%{{.*}} : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: %[[TID5:.*]] = gpu.thread_id x
// CHECK: scf.for %[[R5:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step %{{.*}} {
// CHECK: memref.store
// CHECK-NOT: scf.yield %{{.*}} : f32
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[MP:.*]] = scf.for %{{.*}} = %{{.*}} to %c256 step %{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32) {
// CHECK: arith.maximumf
// CHECK: %[[MT:.*]] = gpu.all_reduce maximumf %[[MP]] uniform
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %[[MT]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.subf %{{.*}}, %[[M]]
// CHECK: math.exp
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: %[[SP:.*]] = scf.for {{.*}} -> (f32) {
// CHECK: %[[ST:.*]] = gpu.all_reduce add %[[SP]] uniform
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[ST]]
// CHECK: scf.for
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// CHECK: memref.store %{{.*}}, %arg1[%[[R5]],
// CHECK-NOT: scf.if
// CHECK: gpu.return
func.func @softmax(%x: memref<?x256xf32>, %y: memref<?x256xf32>) attributes {llm.kernel = #llm.kernel<"softmax">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %s = memref.alloc() : memref<256xf32>
  %rows = memref.dim %x, %c0 : memref<?x256xf32>
  scf.for %r = %c0 to %rows step %c1 {
    %m = scf.for %i = %c0 to %c256 step %c1 iter_args(%a = %lowest) -> (f32) {
      %v = memref.load %x[%r, %i] : memref<?x256xf32>
      %e = arith.mulf %v, %two : f32
      memref.store %e, %s[%i] : memref<256xf32>
      %n = arith.maximumf %a, %e : f32
      scf.yield %n : f32
    }
    %sum = scf.for %i = %c0 to %c256 step %c1 iter_args(%a = %zero) -> (f32) {
      %v = memref.load %s[%i] : memref<256xf32>
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %s[%i] : memref<256xf32>
      %n = arith.addf %a, %e : f32
      scf.yield %n : f32
    }
    scf.for %i = %c0 to %c256 step %c1 {
      %v = memref.load %s[%i] : memref<256xf32>
      %q = arith.divf %v, %sum : f32
      memref.store %q, %y[%r, %i] : memref<?x256xf32>
    }
  }
  memref.dealloc %s : memref<256xf32>
  return
}

// A 2-D parallel row loop marked llm.threads_within_row (attention: one row
// per (token, head)): both dimensions go to the grid (x = tokens, y = 4
// heads, not divided by the threads) and the threads share the row's loop
// over the 256 columns; the same loop unmarked gives its innermost dimension
// (the heads) to the threads and keeps the columns serial.
// CHECK-LABEL: gpu.func @head_rows(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 4>, array<i64: -1, 1>]
// CHECK: %[[HTID:.*]] = gpu.thread_id x
// CHECK: gpu.block_id x
// CHECK: gpu.block_id y
// CHECK-NOT: gpu.thread_id
// CHECK: scf.parallel
// CHECK: arith.muli %[[HTID]], %c1
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256 step
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @head_columns(
// CHECK-SAME: strata.grid = [array<i64: 0, 0>, array<i64: -1, 1>, array<i64: -1, 1>]
// CHECK: gpu.block_id y
// CHECK: arith.muli %{{.*}}, %c128
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c256 step %c1
// CHECK: gpu.return
func.func @head_rows(%x: memref<?x4x256xf32>, %y: memref<?x4x256xf32>) attributes {llm.kernel = #llm.kernel<"heads">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %tokens = memref.dim %x, %c0 : memref<?x4x256xf32>
  scf.parallel (%t, %h) = (%c0, %c0) to (%tokens, %c4) step (%c1, %c1) {
    scf.for %c = %c0 to %c256 step %c1 {
      %v = memref.load %x[%t, %h, %c] : memref<?x4x256xf32>
      %e = math.exp %v : f32
      memref.store %e, %y[%t, %h, %c] : memref<?x4x256xf32>
    }
    scf.reduce
  } {llm.threads_within_row}
  return
}
func.func @head_columns(%x: memref<?x4x256xf32>, %y: memref<?x4x256xf32>) attributes {llm.kernel = #llm.kernel<"heads">} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %tokens = memref.dim %x, %c0 : memref<?x4x256xf32>
  scf.parallel (%t, %h) = (%c0, %c0) to (%tokens, %c4) step (%c1, %c1) {
    scf.for %c = %c0 to %c256 step %c1 {
      %v = memref.load %x[%t, %h, %c] : memref<?x4x256xf32>
      %e = math.exp %v : f32
      memref.store %e, %y[%t, %h, %c] : memref<?x4x256xf32>
    }
    scf.reduce
  }
  return
}
