// Tests that the sm_90 linear kernels assemble with ptxas into a cubin and
// that ptxas reports no spills for either kernel.

// REQUIRES: ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: strata-opt %S/../GPU/Inputs/linear.mlir --strata-lower='target=sm_90 toolkit=%cuda_toolkit gpu-format=isa' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: %cuda_toolkit/bin/ptxas -arch=sm_90 -v %t/strata_kernels.sm_90.ptx -o %t/ptxas.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: strata-opt %S/../GPU/Inputs/linear.mlir --strata-lower='target=sm_90 toolkit=%cuda_toolkit' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: llvm-readelf -h -s %t/strata_kernels.sm_90.cubin | FileCheck %s --check-prefix=CUBIN

// PTXAS-LABEL: Compiling entry function 'linear_bf16_128x256_bf16' for 'sm_90'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-LABEL: Compiling entry function 'linear_fp8_128x256_bf16' for 'sm_90'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// CUBIN: Machine: NVIDIA CUDA architecture
// CUBIN: Flags: {{.*}}sm_90
// CUBIN-DAG: FUNC GLOBAL {{.*}} linear_bf16_128x256_bf16
// CUBIN-DAG: FUNC GLOBAL {{.*}} linear_fp8_128x256_bf16
