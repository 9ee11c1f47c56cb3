// RUN: strata-opt --select-kernel-strategy=chip=gfx942 --build-strategy-kernels=chip=gfx942 --mlir-print-op-generic %s -o %t.gfx942.mlir
// RUN: strata-opt --select-kernel-strategy=chip=gfx950 --build-strategy-kernels=chip=gfx950 --mlir-print-op-generic %s -o %t.gfx950.mlir
// RUN: %python %S/../../Driver/Inputs/run_head_matmul.py %t.gfx942.mlir --kernel mla_absorb_0 --lanes 64 --heads 2 --k 256 --n 512 --rows 4100 --stride 512 --offset 0 --weight-rows 1024 --weight-cols 512 --transposed --tile 128,128 --blocks 0,0,0:31,3,1:32,2,1 | FileCheck %s --check-prefix=ABSORB
// RUN: %python %S/../../Driver/Inputs/run_head_matmul.py %t.gfx950.mlir --kernel mla_absorb_0 --lanes 64 --heads 2 --k 256 --n 512 --rows 4096 --stride 512 --offset 0 --weight-rows 1024 --weight-cols 512 --transposed --tile 128,128 --blocks 7,1,0 | FileCheck %s --check-prefix=ABSORB
// RUN: %python %S/../../Driver/Inputs/run_head_matmul.py %t.gfx942.mlir --kernel mla_project_0 --lanes 64 --heads 2 --k 512 --n 256 --rows 8192 --stride 512 --offset 256 --weight-rows 1024 --weight-cols 512 --f32-in --bf16-out --tile 128,128 --blocks 0,1,1:63,0,0 | FileCheck %s --check-prefix=PROJECT

// Tests MLA's head-batched matmuls on their staged tiles (AMD's two stage
// buffers through registers), run on the CPU through the GPU-dialect
// interpreter against the product in float64: mla_absorb reads W_UK as
// [K, N] rows (weight_transposed), which the kernel stages by loading 8
// columns of one K row and storing them as column K of 8 stage rows
// (storeTransposed); mla_project reads f32 x rounded to bf16. Steps from
// 4096 (absorb: 2 heads x 4 column tiles) and 8192 rows (project) take the
// staged tiles (kStagedMinTiles), and 4100 rows end in a partial row tile
// (block x = 32: rows past the step re-read the last one, their results
// are not written). The NVIDIA forms (the ring: cp.async copies of W^T's
// rows transposed into the decoded buffers) are in
// strategies/dense_matmul.mlir; the interpreter has no asynchronous copies.

// ABSORB: mla_absorb_0: {{[0-9]+}} of the grid {{.*}} blocks wrote {{[0-9]+}} values (whole tiles); largest difference within the bound
// ABSORB: mla_absorb_0: PASS
// PROJECT: mla_project_0: 2 of the grid (64, 2, 2)'s blocks wrote 32768 values (whole tiles); largest difference within the bound
// PROJECT: mla_project_0: PASS

func.func @mla_absorb_0(%a0: memref<?x2x256xbf16>, %a1: memref<1024x512xbf16>, %a2: memref<?x2x512xf32>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<heads = 2, weight_row_offset = 0, weight_row_stride = 512, weight_transposed = true>>, llm.kernel = #llm.kernel<"mla_absorb_0", roles = [x, weight, out]>} {
  return
}

func.func @mla_project_0(%a0: memref<?x2x512xf32>, %a1: memref<1024x512xbf16>, %a2: memref<?x2x256xbf16>)
    attributes {llm.dense_matmul = #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<heads = 2, weight_row_offset = 256, weight_row_stride = 512, weight_transposed = false>>, llm.kernel = #llm.kernel<"mla_project_0", roles = [x, weight, out]>} {
  return
}
