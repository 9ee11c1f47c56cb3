module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @lanes(%out: memref<?x6xi32>, %total: memref<1xi32>) workgroup(%row: memref<64xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c63 = arith.constant 63 : index
      %w = arith.constant 32 : i32
      %o1 = arith.constant 1 : i32
      %o3 = arith.constant 3 : i32
      %o5 = arith.constant 5 : i32
      %o7 = arith.constant 7 : i32
      %v = arith.index_cast %tid : index to i32
      %x, %xv = gpu.shuffle xor %v, %o1, %w : i32
      %u, %uv = gpu.shuffle up %v, %o3, %w : i32
      %d, %dv = gpu.shuffle down %v, %o5, %w : i32
      %i, %iv = gpu.shuffle idx %v, %o7, %w : i32
      %m1 = arith.constant -1 : i32
      %us = arith.select %uv, %u, %m1 : i32
      %ds = arith.select %dv, %d, %m1 : i32
      memref.store %x, %out[%tid, %c0] : memref<?x6xi32>
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      memref.store %us, %out[%tid, %c1] : memref<?x6xi32>
      memref.store %ds, %out[%tid, %c2] : memref<?x6xi32>
      memref.store %i, %out[%tid, %c3] : memref<?x6xi32>
      %sq = arith.muli %v, %v : i32
      memref.store %sq, %row[%tid] : memref<64xi32, #gpu.address_space<workgroup>>
      gpu.barrier
      %rev = arith.subi %c63, %tid : index
      %r = memref.load %row[%rev] : memref<64xi32, #gpu.address_space<workgroup>>
      memref.store %r, %out[%tid, %c4] : memref<?x6xi32>
      %old = memref.atomic_rmw addi %v, %total[%c0] : (i32, memref<1xi32>) -> i32
      %big = arith.constant 2147483647 : i32
      %wrap = arith.addi %big, %v : i32
      %neg = arith.constant -8 : i32
      %q = arith.divui %neg, %o3 : i32
      %mix = arith.xori %wrap, %q : i32
      memref.store %mix, %out[%tid, %c5] : memref<?x6xi32>
      gpu.return
    }
    gpu.func @collatz(%out: memref<?xi32>) kernel attributes {known_block_size = array<i32: 8, 1, 1>} {
      %tid = gpu.thread_id x
      %c1 = arith.constant 1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c0 = arith.constant 0 : i32
      %t = arith.index_cast %tid : index to i32
      %start = arith.addi %t, %c1 : i32
      %n, %steps = scf.while (%x = %start, %k = %c0) : (i32, i32) -> (i32, i32) {
        %more = arith.cmpi ne, %x, %c1 : i32
        scf.condition(%more) %x, %k : i32, i32
      } do {
      ^bb0(%x: i32, %k: i32):
        %r = arith.remui %x, %c2 : i32
        %odd = arith.cmpi ne, %r, %c0 : i32
        %up = arith.muli %x, %c3 : i32
        %up1 = arith.addi %up, %c1 : i32
        %down = arith.divui %x, %c2 : i32
        %next = arith.select %odd, %up1, %down : i32
        %k1 = arith.addi %k, %c1 : i32
        scf.yield %next, %k1 : i32, i32
      }
      memref.store %steps, %out[%tid] : memref<?xi32>
      gpu.return
    }
    gpu.func @fp8_decode(%codes: memref<8xi8>, %out: memref<8xf32>, %signs: memref<8xi32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = vector.load %codes[%c0] : memref<8xi8>, vector<8xi8>
      %bits = arith.extui %v : vector<8xi8> to vector<8xi32>
      %c128 = arith.constant dense<128> : vector<8xi32>
      %c24 = arith.constant dense<24> : vector<8xi32>
      %signbit = arith.andi %bits, %c128 : vector<8xi32>
      %sign = arith.shli %signbit, %c24 : vector<8xi32>
      %c127 = arith.constant dense<127> : vector<8xi32>
      %em = arith.andi %bits, %c127 : vector<8xi32>
      %c20 = arith.constant dense<20> : vector<8xi32>
      %bias = arith.constant dense<1006632960> : vector<8xi32>
      %shifted = arith.shli %em, %c20 : vector<8xi32>
      %normal = arith.addi %shifted, %bias : vector<8xi32>
      %c7 = arith.constant dense<7> : vector<8xi32>
      %mant = arith.andi %em, %c7 : vector<8xi32>
      %mf = arith.uitofp %mant : vector<8xi32> to vector<8xf32>
      %ulp = arith.constant dense<0.001953125> : vector<8xf32>
      %sub = arith.mulf %mf, %ulp : vector<8xf32>
      %subbits = arith.bitcast %sub : vector<8xf32> to vector<8xi32>
      %c8 = arith.constant dense<8> : vector<8xi32>
      %small = arith.cmpi ult, %em, %c8 : vector<8xi32>
      %mag = arith.select %small, %subbits, %normal : vector<8xi1>, vector<8xi32>
      %word = arith.ori %mag, %sign : vector<8xi32>
      %f = arith.bitcast %word : vector<8xi32> to vector<8xf32>
      vector.store %f, %out[%c0] : memref<8xf32>, vector<8xf32>
      %top = arith.shrui %word, %c24 : vector<8xi32>
      vector.store %top, %signs[%c0] : memref<8xi32>, vector<8xi32>
      gpu.return
    }
    gpu.func @ldmatrix(%in: memref<32x8xbf16>, %plain: memref<32x8xbf16>, %trans: memref<32x8xbf16>) workgroup(%tile: memref<32x8xbf16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %row = vector.load %in[%tid, %c0] : memref<32x8xbf16>, vector<8xbf16>
      vector.store %row, %tile[%tid, %c0] : memref<32x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
      gpu.barrier
      %p = nvgpu.ldmatrix %tile[%tid, %c0] {numTiles = 4 : i32, transpose = false} : memref<32x8xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
      %t = nvgpu.ldmatrix %tile[%tid, %c0] {numTiles = 4 : i32, transpose = true} : memref<32x8xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
      %pf = vector.shape_cast %p : vector<4x2xbf16> to vector<8xbf16>
      %tf = vector.shape_cast %t : vector<4x2xbf16> to vector<8xbf16>
      vector.store %pf, %plain[%tid, %c0] : memref<32x8xbf16>, vector<8xbf16>
      vector.store %tf, %trans[%tid, %c0] : memref<32x8xbf16>, vector<8xbf16>
      gpu.return
    }
    gpu.func @async_copies(%src: memref<32x8xbf16>, %out: memref<32x3x8xbf16>) workgroup(%first: memref<32x8xbf16, #gpu.address_space<workgroup>>, %second: memref<32x8xbf16, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c9 = arith.constant 9 : index
      %n = arith.remui %tid, %c9 : index
      %a = nvgpu.device_async_copy %src[%tid, %c0], %first[%tid, %c0], 8, %n : memref<32x8xbf16> to memref<32x8xbf16, #gpu.address_space<workgroup>>
      %ga = nvgpu.device_async_create_group %a
      %b = nvgpu.device_async_copy %src[%tid, %c0], %second[%tid, %c0], 8 : memref<32x8xbf16> to memref<32x8xbf16, #gpu.address_space<workgroup>>
      %gb = nvgpu.device_async_create_group %b
      nvgpu.device_async_wait %gb {numGroups = 1 : i32}
      %x = vector.load %first[%tid, %c0] : memref<32x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
      %y = vector.load %second[%tid, %c0] : memref<32x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
      nvgpu.device_async_wait %gb
      %z = vector.load %second[%tid, %c0] : memref<32x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
      vector.store %x, %out[%tid, %c0, %c0] : memref<32x3x8xbf16>, vector<8xbf16>
      vector.store %y, %out[%tid, %c1, %c0] : memref<32x3x8xbf16>, vector<8xbf16>
      vector.store %z, %out[%tid, %c2, %c0] : memref<32x3x8xbf16>, vector<8xbf16>
      gpu.return
    }
    gpu.func @mbarriers(%src: memref<32xi32>, %out: memref<32x3xi32>) workgroup(%data: memref<32xi32, #gpu.address_space<workgroup>>, %copied: memref<32xi32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %ticks = arith.constant 1000000 : index
      %false = arith.constant false
      %true = arith.constant true
      %bars = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        nvgpu.mbarrier.init %bars[%c0], %c32 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
        nvgpu.mbarrier.init %bars[%c1], %c32 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
        nvgpu.mbarrier.init %bars[%c2], %c32 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
      }
      gpu.barrier
      %producer = arith.cmpi ult, %tid, %c32 : index
      scf.if %producer {
        %v = arith.index_cast %tid : index to i32
        memref.store %v, %data[%tid] : memref<32xi32, #gpu.address_space<workgroup>>
        %tok = nvgpu.mbarrier.arrive %bars[%c0] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3> -> !nvgpu.mbarrier.token
        %cp = nvgpu.device_async_copy %src[%tid], %copied[%tid], 1 : memref<32xi32> to memref<32xi32, #gpu.address_space<workgroup>>
        %g = nvgpu.device_async_create_group %cp
        %addr = nvgpu.mbarrier.get %bars[%c1] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3> -> i32
        %ptr = llvm.inttoptr %addr : i32 to !llvm.ptr<3>
        nvvm.cp.async.mbarrier.arrive %ptr {noinc = true} : !llvm.ptr<3>
        nvgpu.mbarrier.try_wait.parity %bars[%c2], %false, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
        %w = memref.load %data[%tid] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %w, %out[%tid, %c2] : memref<32x3xi32>
      } else {
        %j = arith.subi %tid, %c32 : index
        nvgpu.mbarrier.try_wait.parity %bars[%c0], %false, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
        %r = memref.load %data[%j] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %r, %out[%j, %c0] : memref<32x3xi32>
        nvgpu.mbarrier.try_wait.parity %bars[%c1], %false, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
        %s = memref.load %copied[%j] : memref<32xi32, #gpu.address_space<workgroup>>
        memref.store %s, %out[%j, %c1] : memref<32x3xi32>
        %k = arith.muli %j, %c2 : index
        %kv = arith.index_cast %k : index to i32
        memref.store %kv, %data[%j] : memref<32xi32, #gpu.address_space<workgroup>>
        %t2 = nvgpu.mbarrier.arrive %bars[%c2] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3> -> !nvgpu.mbarrier.token
      }
      gpu.return
    }
    gpu.func @mbarrier_stuck(%out: memref<64xi32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %ticks = arith.constant 1000000 : index
      %false = arith.constant false
      %bars = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        nvgpu.mbarrier.init %bars[%c0], %c64 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %tok = nvgpu.mbarrier.arrive %bars[%c0] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>> -> !nvgpu.mbarrier.token
      %one = arith.constant 1 : index
      %t1 = arith.cmpi ult, %tid, %one : index
      scf.if %t1 {
        nvgpu.mbarrier.try_wait.parity %bars[%c0], %false, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
        %tok2 = nvgpu.mbarrier.arrive %bars[%c0] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>> -> !nvgpu.mbarrier.token
        %true = arith.constant true
        nvgpu.mbarrier.try_wait.parity %bars[%c0], %true, %ticks : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
      }
      gpu.return
    }
    gpu.func @diverges(%out: memref<?xi32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %tid = gpu.thread_id x
      %c32 = arith.constant 32 : index
      %low = arith.cmpi ult, %tid, %c32 : index
      scf.if %low {
        gpu.barrier
      }
      gpu.return
    }
  }
}
