// RUN: strata-opt %s --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,strata-extern-dynamic-shared-memory))' | FileCheck %s
// RUN: strata-opt %s --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,strata-extern-dynamic-shared-memory{alignment=1024}))' | FileCheck %s --check-prefix=ALIGN

// Tests that gpu.dynamic_shared_memory's symbol becomes an external
// declaration (PTX `.extern .shared .b8 name[]`: the dynamic arena starts
// after the kernel's static workgroup buffers), aligned to 16 bytes or to
// the pass's `alignment` (sm_90a: 1024, the wgmma swizzle's repeat is 512),
// while a static workgroup buffer keeps its internal definition.
// CHECK-DAG: llvm.mlir.global internal @__wg_k_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
// CHECK-DAG: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// ALIGN-DAG: llvm.mlir.global internal @__wg_k_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
// ALIGN-DAG: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
gpu.module @kernels {
  gpu.func @k(%out: memref<2xi8>) workgroup(%table : memref<16xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %arena = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %a = memref.load %arena[%c0] : memref<?xi8, #gpu.address_space<workgroup>>
    %t = memref.load %table[%c0] : memref<16xi8, #gpu.address_space<workgroup>>
    memref.store %a, %out[%c0] : memref<2xi8>
    memref.store %t, %out[%c1] : memref<2xi8>
    gpu.return
  }
}
