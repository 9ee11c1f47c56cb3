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

def ExternDynamicSharedMemoryPass
    : Pass<"strata-extern-dynamic-shared-memory", "gpu::GPUModuleOp"> {
  let summary = "make gpu.dynamic_shared_memory's symbol an external "
                "declaration";
  let description = [{
    convert-gpu-to-nvvm lowers `gpu.dynamic_shared_memory` to an internal
    zero-sized workgroup array, which the NVPTX backend emits as a one-byte
    static `.shared` variable: ptxas may place the kernel's other static
    workgroup buffers after it, where the dynamic arena overlaps them. This
    pass gives every zero-sized array of address space 3 external linkage,
    so it is emitted as `.extern .shared .b8 name[]`, whose address is the
    start of the dynamic shared memory, after every static buffer
    (CUDA's `extern __shared__`), aligned to `alignment` bytes (sm_90a:
    1024, the wgmma swizzle's repeat with room; ptxas pads every kernel's
    static buffers of the module up to it, so other targets keep 16). Runs
    on the LLVM dialect inside each gpu.module, before gpu-module-to-binary.
  }];
  let options = [
    Option<"alignment", "alignment", "uint64_t", /*default=*/"16",
           "byte alignment of the dynamic arena">,
  ];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

def GridDependencyControlPass
    : Pass<"strata-grid-dependency-control", "gpu::GPUModuleOp"> {
  let summary = "start every NVVM kernel with griddepcontrol.wait and "
                "griddepcontrol.launch_dependents";
  let description = [{
    Inserts `nvvm.griddepcontrol wait` and then
    `nvvm.griddepcontrol launch_dependents` at the start of every kernel
    (`llvm.func` with `nvvm.kernel` or `gpu.kernel`) of the module, so that
    the runtime may launch the kernels with programmatic stream
    serialization (CUDA's programmatic dependent launch, sm_90 and later):
    the next kernel's launch overlaps this one's last blocks and waits, in
    its first instruction, until this one is complete. A plain launch is
    unaffected (the wait returns at once). Runs on the LLVM dialect inside
    each gpu.module, before gpu-module-to-binary; the artifact records it in
    `LaunchInfo.grid_dependency_control`.

    ```
    llvm.func @k(...) attributes {nvvm.kernel} {
      nvvm.griddepcontrol wait
      nvvm.griddepcontrol launch_dependents
      ...
    ```
  }];
  let dependentDialects = ["NVVM::NVVMDialect"];
}

#endif // STRATA_LIB_TARGET_PASSES_TD
