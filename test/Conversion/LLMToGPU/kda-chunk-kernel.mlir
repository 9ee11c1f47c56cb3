// Tests KDA's chunk kernels (lib/Conversion/LLMToGPU/KdaChunkKernel.cpp,
// docs/GPULowering.md "KDA on the matrix units") by running chosen blocks of
// their GPU-dialect IR on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py:
// the tf32 mma.sync m16n8k8 and cvt.rna.tf32, the f32 MFMA 16x16x4, the
// chunk's rows in dynamic workgroup memory; Inputs/run_kda_chunk.py):
// kda_coefficients' A_q and T rows against their definition in float64 (a
// token window holding chunks of two requests and a short one it skips),
// then kda_attention on them against the delta rule token by token in
// float64: a 40-token request from a zero state (a chunk of 32 and one of
// 8), a 9-token one from a slot's state into another slot, a 3-token one left
// to kda_decode (its blocks write nothing). On sm_90 the 3xTF32 products are
// fp32-class (within 2e-6 of the largest value) and the single tf32 ones
// (tf32_products, the bf16 models' kernels: their prepared q, k and v rows
// bf16) within 2e-3 but not 2e-6; gfx942's f32 MFMA within 2e-6.
// RUN: strata-opt %S/Inputs/kda-chunk.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: strata-opt %S/Inputs/kda-chunk.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_kda_chunk.py %t.sm_90.mlir --coefficients kda_coefficients_0 --kernel kda_attention_0 --lanes 32 --bound 2e-6 | FileCheck %s
// RUN: %python %S/Inputs/run_kda_chunk.py %t.sm_90.mlir --coefficients kda_coefficients_tf32 --kernel kda_attention_tf32 --rows bf16 --lanes 32 --bound 2e-3 | FileCheck %s
// RUN: not %python %S/Inputs/run_kda_chunk.py %t.sm_90.mlir --coefficients kda_coefficients_tf32 --kernel kda_attention_tf32 --rows bf16 --lanes 32 --bound 2e-6 | FileCheck %s --check-prefix=TF32-TIGHT
// RUN: %python %S/Inputs/run_kda_chunk.py %t.gfx942.mlir --coefficients kda_coefficients_0 --kernel kda_attention_0 --lanes 64 --bound 2e-6 | FileCheck %s
// Threads in reverse order between synchronisations: the same results.
// RUN: env STRATA_INTERP_ORDER=reverse %python %S/Inputs/run_kda_chunk.py %t.sm_90.mlir --coefficients kda_coefficients_tf32 --kernel kda_attention_tf32 --rows bf16 --lanes 32 --bound 2e-3 | FileCheck %s

// CHECK: coefficients: within bound, the rest untouched
// CHECK-NEXT: request 0 head 1 part 2: read-out within bound, state within bound
// CHECK-NEXT: request 2 head 0 part 1: read-out within bound, state within bound
// CHECK-NEXT: the rest: untouched
// CHECK-NEXT: kda_attention: PASS
// TF32-TIGHT: kda_attention: FAIL
