// Tests that the threads of convert-kernels-to-gpu reach sm_90 PTX: the
// 128-thread block (.maxntid), the thread index (%tid.x), barriers between
// the phases (bar.sync 0), and the shared scratch and the thread-0 broadcast
// slot as .shared arrays read and written with ld/st.shared, each on a 16-byte
// boundary (LLVM merges neighbouring accesses into 16-byte st.shared.v2.b64,
// which faulted on the H200 with the arrays at their element alignment).

// RUN: rm -rf %t && mkdir -p %t
// RUN: strata-opt %S/../../Conversion/KernelToGPU/threads.mlir --convert-kernels-to-gpu='chip=sm_90' | strata-opt --strata-target='target=sm_90 toolkit=%cuda_toolkit gpu-format=isa' --strata-write-gpu-binaries=dir=%t -o /dev/null
// RUN: FileCheck %s < %t/strata_kernels.sm_90.ptx

// CHECK: .target sm_90
// CHECK-LABEL: .entry recurrence(
// CHECK: .maxntid 128, 1, 1
// CHECK-DAG: .shared .align 16 .f32 __wg_recurrence_0
// CHECK-DAG: .shared .align 16 .b8 __wg_recurrence_1[256];
// CHECK-DAG: .shared .align 16 .b8 __wg_recurrence_2[32];
// CHECK-DAG: .shared .align 16 .b8 __wg_recurrence_3[32];
// CHECK: %tid.x;
// CHECK: bar.sync 0;
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared
// CHECK-LABEL: .entry columns(
// CHECK: .maxntid 128, 1, 1
// CHECK-NOT: .shared
// CHECK: %tid.x;
// CHECK: %ctaid.y;
// CHECK-NOT: bar.sync
// CHECK-LABEL: .entry accumulate(
// CHECK-NOT: bar.sync
// CHECK-LABEL: .entry shared_accumulator(
// CHECK: .shared .align 16 .f32 __wg_shared_accumulator_0
// CHECK: bar.sync 0;
// The block reductions of softmax: warp shuffles, partial results through
// shared memory.
// CHECK-LABEL: .entry softmax(
// CHECK: shfl.sync.bfly
// CHECK: bar.sync 0;
