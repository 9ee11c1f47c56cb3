// Tests that convert-kernels-to-gpu rejects a chip TargetInfo does not know
// (the block size comes from its subgroup size) and the host target.
// RUN: not strata-opt %s --convert-kernels-to-gpu='chip=gfx1' 2>&1 | FileCheck %s
// RUN: not strata-opt %s --convert-kernels-to-gpu='chip=cpu' 2>&1 | FileCheck %s --check-prefix=HOST

// CHECK: error: unknown GPU chip 'gfx1'
// HOST: error: unknown GPU chip 'cpu'
func.func @copy(%x: memref<?xf32>, %y: memref<?xf32>) attributes {llm.kernel = #llm.kernel<"copy">} {
  memref.copy %x, %y : memref<?xf32> to memref<?xf32>
  return
}
