// Input of test/Target/GPU/workgroup-vector.test: a kernel that copies
// through workgroup memory with vector<4xf32> loads and stores.
module attributes {gpu.container_module} {
  gpu.module @strata_kernels {
    gpu.func @copy_through_shared(%in: memref<64xf32>, %out: memref<64xf32>) workgroup(%buf: memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
      %tid = gpu.thread_id x
      %c4 = arith.constant 4 : index
      %i = arith.muli %tid, %c4 : index
      %v = vector.load %in[%i] : memref<64xf32>, vector<4xf32>
      vector.store %v, %buf[%i] : memref<64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      gpu.barrier
      %w = vector.load %buf[%i] : memref<64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
      vector.store %w, %out[%i] : memref<64xf32>, vector<4xf32>
      gpu.return
    }
  }
}
