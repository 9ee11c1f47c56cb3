// Tests the kda_prepare kernel (lib/Conversion/LLMToGPU/KdaPrepareKernel.cpp,
// docs/GPULowering.md "KDA on the matrix units") by running its GPU-dialect IR
// on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) against
// llm.kda_attention's definition of the key side in float64
// (Inputs/run_kda_prepare.py): a fresh request, a short one (kda_decode's:
// untouched), one with history from its source slot's conv state and a
// one-token one; 5 heads (a block of 4 and one of 1), 128 channels a head
// (4 a lane on sm_90's 32 lanes, 2 on gfx942's 64), f32 and bf16 operands.
// Every prepared value within 2e-6 of its buffer's largest, untouched rows as
// they were. The CPU keeps the generic kernel.
// RUN: strata-opt %S/Inputs/kda-prepare.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: strata-opt %S/Inputs/kda-prepare.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_kda_prepare.py %t.sm_90.mlir --kernel kda_prepare_f32 --lanes 32 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_prepare.py %t.sm_90.mlir --kernel kda_prepare_bf16 --lanes 32 --dtype bf16 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_prepare.py %t.gfx942.mlir --kernel kda_prepare_f32 --lanes 64 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_prepare.py %t.gfx942.mlir --kernel kda_prepare_bf16 --lanes 64 --dtype bf16 | FileCheck %s
// Threads in reverse order between synchronisations: the same results.
// RUN: env STRATA_INTERP_ORDER=reverse %python %S/Inputs/run_kda_prepare.py %t.sm_90.mlir --kernel kda_prepare_f32 --lanes 32 | FileCheck %s

// CHECK: q: within 2e-6
// CHECK-NEXT: k: within 2e-6
// CHECK-NEXT: v: within 2e-6
// CHECK-NEXT: g: within 2e-6
// CHECK-NEXT: beta: within 2e-6
// CHECK-NEXT: rows taken [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 15]
// CHECK-NEXT: kda_prepare: PASS
