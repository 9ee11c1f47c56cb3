// Tests that --strata-write-gpu-binaries reports a folder it cannot write.

// RUN: not strata-opt %s --strata-write-gpu-binaries=dir=%t/missing -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: cannot write gpu object to '{{.*}}missing{{/|\\}}kernels.gfx942.hsaco'
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#rocdl.target<chip = "gfx942">, bin = "\7FELF">]
}
