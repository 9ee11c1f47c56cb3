// Tests the group quantisation kernel (lib/Conversion/LLMToGPU/
// GroupQuantizeKernel.cpp, docs/GPULowering.md "fp8 expert activations") by
// running its GPU-dialect IR on the CPU (test/Tools/Inputs/
// gpu_ir_interpreter.py) against fp8_expert_activations' definition in numpy
// (Inputs/run_group_quantize.py): codes and scales bit for bit, for x rows
// (bf16 and f32) and the slots' activation rows, with 32-lane (sm_90: 4
// values a lane) and 64-lane (gfx942: 2) subgroups; a block's last groups
// past the row (3 groups of 16) stored nowhere.
// RUN: strata-opt %S/Inputs/group-quantize.mlir --select-kernel-strategy=chip=sm_90 --build-strategy-kernels=chip=sm_90 --mlir-print-op-generic -o %t.sm_90.mlir
// RUN: strata-opt %S/Inputs/group-quantize.mlir --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic -o %t.gfx942.mlir
// RUN: %python %S/Inputs/run_group_quantize.py %t.sm_90.mlir --kernel quantize_x --lanes 32 --shape 5,384 | FileCheck %s
// RUN: %python %S/Inputs/run_group_quantize.py %t.gfx942.mlir --kernel quantize_x --lanes 64 --shape 3,384 | FileCheck %s
// RUN: %python %S/Inputs/run_group_quantize.py %t.sm_90.mlir --kernel quantize_x_f32 --lanes 32 --shape 2,384 --dtype f32 | FileCheck %s
// RUN: %python %S/Inputs/run_group_quantize.py %t.sm_90.mlir --kernel quantize_act --lanes 32 --shape 3,3,256 | FileCheck %s
// RUN: %python %S/Inputs/run_group_quantize.py %t.gfx942.mlir --kernel quantize_act --lanes 64 --shape 2,3,256 | FileCheck %s
// The sm_90a assembly has subgroup butterflies and no block barrier, no local memory.
// REQUIRES: ptxas
// RUN: rm -rf %t.ptx && mkdir -p %t.ptx
// RUN: strata-opt %S/Inputs/group-quantize.mlir --select-kernel-strategy=chip=sm_90a --build-strategy-kernels=chip=sm_90a --strata-target='target=sm_90a toolkit=%cuda_toolkit gpu-format=isa' --strata-write-gpu-binaries=dir=%t.ptx -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx/strata_kernels.sm_90a.ptx
// RUN: %cuda_toolkit/bin/ptxas -arch=sm_90a -v %t.ptx/strata_kernels.sm_90a.ptx -o %t.ptx/k.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CHECK: codes: equal (0 differ)
// CHECK-NEXT: scales: equal
// CHECK-NEXT: past T: untouched
// CHECK-NEXT: group_quantize: PASS

// PTX-LABEL: .visible .entry quantize_x(
// PTX-NOT: bar.sync
// PTX: shfl.sync.bfly.b32
// PTX-NOT: bar.sync
// PTX: ret;

// PTXAS-COUNT-3: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
