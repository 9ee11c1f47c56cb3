// Tests that a linker failure is reported with a command line that reproduces
// it (the object file is kept for it).

// RUN: not strata-artifact-build-test %s -o %t.strata --linker=%S/Inputs/failing-ld.sh 2>&1 | FileCheck %s
// RUN: not strata-artifact-build-test %s -o %t.strata --linker=%t.no-such-linker 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK: error: linking the kernel shared object failed: ld.lld failed (exit 3): failing-ld: cannot link
// CHECK-NEXT: repro: {{.*}}failing-ld.sh -shared --no-undefined {{.*}}strata-kernels-{{.*}}.o --as-needed -lm -lc -o {{.*}}.so
// MISSING: error: linking the kernel shared object failed: cannot run '{{.*}}no-such-linker': {{.*}}No such file or directory

func.func @copy(%x: memref<4xf32>, %y: memref<4xf32>) {
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}
