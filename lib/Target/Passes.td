//===- Passes.td - strata target passes --------------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Passes that handle compiled device code.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_PASSES_TD
#define STRATA_LIB_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def WriteGpuBinariesPass : Pass<"strata-write-gpu-binaries", "ModuleOp"> {
  let summary = "write every object of every gpu.binary to a file";
  let description = [{
    For each `gpu.binary @name` and each of its `#gpu.object`s, writes the
    object's bytes to `<dir>/<name>.<chip>.<ext>`, where `ext` is `hsaco`
    (ROCDL, format=bin), `s` (ROCDL, format=isa), `cubin` (NVVM, format=bin),
    `ptx` (NVVM, format=isa), `fatbin` or `bc` (offload). The IR is left
    unchanged. Used by the GPU lit tests to disassemble kernels
    (llvm-objdump, llvm-readobj, ptxas -v) and by developers to hand a
    kernel to a standalone runner (docs/GPULowering.md).

    ```
    strata-opt k.mlir --strata-lower='target=sm_90 toolkit=/usr/local/cuda' \
        --strata-write-gpu-binaries='dir=out'   # out/strata_kernels.sm_90.cubin
    ```
  }];
  let options = [
    Option<"dir", "dir", "std::string", "\".\"",
           "folder the objects are written to (must exist)">
  ];
}

#endif // STRATA_LIB_TARGET_PASSES_TD
