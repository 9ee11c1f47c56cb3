// Tests the kda_decode kernel (lib/Conversion/LLMToGPU/KdaDecodeKernel.cpp,
// docs/GPULowering.md "KDA's decode form") by running its GPU-dialect IR on
// the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) against llm.kda_attention's
// definition in float64 (Inputs/run_kda_decode.py): a step of a fresh token,
// a 3-token verification with per-token slots (two sharing one), a 6-token
// request left to the chunk path (untouched) and a token updating its slot in
// place; 32-lane subgroups (sm_90: two per block) and 64-lane ones (gfx942:
// one), f32 and bf16 operands, per-token slots or dst slots, and recurrent
// mode (every request taken). Read-out within 2e-5 of the largest value (one
// bf16 step for bf16), state within 1e-5, conv state exact, the rest
// untouched. The CPU keeps the generic kernel.
// RUN: strata-opt %S/Inputs/kda-decode.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: strata-opt %S/Inputs/kda-decode.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_kda_decode.py %t.sm_90.mlir --kernel kda_decode_tokens --lanes 32 --token-slots | FileCheck %s --check-prefixes=CHECK,CHUNKED
// RUN: %python %S/Inputs/run_kda_decode.py %t.gfx942.mlir --kernel kda_decode_tokens --lanes 64 --token-slots | FileCheck %s --check-prefixes=CHECK,CHUNKED
// RUN: %python %S/Inputs/run_kda_decode.py %t.sm_90.mlir --kernel kda_decode_plain_bf16 --lanes 32 --dtype bf16 | FileCheck %s --check-prefixes=CHECK,CHUNKED
// RUN: %python %S/Inputs/run_kda_decode.py %t.gfx942.mlir --kernel kda_decode_recurrent --lanes 64 --token-slots --max-tokens 0 | FileCheck %s --check-prefixes=CHECK,RECURRENT
// Threads in reverse order between synchronisations: the same results (no
// two threads race for an address).
// RUN: env STRATA_INTERP_ORDER=reverse %python %S/Inputs/run_kda_decode.py %t.sm_90.mlir --kernel kda_decode_tokens --lanes 32 --token-slots | FileCheck %s --check-prefixes=CHECK,CHUNKED

// CHUNKED: read-out: within bound; rows taken [0, 1, 2, 3, 10]
// RECURRENT: read-out: within bound; rows taken [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
// CHECK-NEXT: state: within 1e-5
// CHECK-NEXT: conv state: exact
// CHECK-NEXT: kda_decode: PASS
