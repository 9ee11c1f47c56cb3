// RUN: strata-opt %s --pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,strata-grid-dependency-control))' | FileCheck %s

// Tests that every kernel starts with griddepcontrol.wait and then
// griddepcontrol.launch_dependents, before its first load, and that a
// device function that is not a kernel is left alone.
// CHECK-LABEL: llvm.func @k(
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK: llvm.load
// CHECK-LABEL: llvm.func @helper(
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: llvm.return
gpu.module @kernels {
  gpu.func @k(%in: memref<2xf32>, %out: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %x = memref.load %in[%c0] : memref<2xf32>
    memref.store %x, %out[%c0] : memref<2xf32>
    gpu.return
  }
  gpu.func @helper(%x: f32) -> f32 {
    gpu.return %x : f32
  }
}
