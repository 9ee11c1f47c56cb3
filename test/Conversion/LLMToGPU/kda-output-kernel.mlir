// Tests the kda_output kernel (lib/Conversion/LLMToGPU/KdaTokenKernels.cpp,
// docs/GPULowering.md "KDA on the matrix units") by running its GPU-dialect IR
// on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) against
// llm.kda_attention's definition of the output side in float64
// (Inputs/run_kda_output.py): the gated output norm of every token of the long
// requests and their conv state (a fresh request, one reading and writing its
// slot in place; a short and a one-token request untouched); 5 heads of 128
// channels (4 a lane on sm_90's 32 lanes, 2 on gfx942's 64), f32 and bf16
// operands. Outputs within 2e-6 of the largest (one bf16 step for bf16), the
// conv state exact, the rest untouched. The CPU keeps the generic kernel.
// RUN: strata-opt %S/Inputs/kda-output.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: strata-opt %S/Inputs/kda-output.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_kda_output.py %t.sm_90.mlir --kernel kda_output_f32 --lanes 32 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_output.py %t.sm_90.mlir --kernel kda_output_bf16 --lanes 32 --dtype bf16 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_output.py %t.gfx942.mlir --kernel kda_output_f32 --lanes 64 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_output.py %t.gfx942.mlir --kernel kda_output_bf16 --lanes 64 --dtype bf16 | FileCheck %s
// Threads in reverse order between synchronisations: the same results.
// RUN: env STRATA_INTERP_ORDER=reverse %python %S/Inputs/run_kda_output.py %t.sm_90.mlir --kernel kda_output_f32 --lanes 32 | FileCheck %s

// CHECK: o: within bound; rows taken [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 15]
// CHECK-NEXT: conv state: exact
// CHECK-NEXT: kda_output: PASS
