/*===- cts_kernels.c - the conformance kernels for the CPU backend --------===*
 *
 * Part of strata. What the compiler emits, in the packed memref-descriptor
 * ABI, for
 *   func @cts_axpb(%in: memref<?xf32>, %out: memref<?xf32>, %alpha: f32,
 *                  %beta: f32)   // out[i] = alpha * in[i] + beta
 * written by hand. Each memref<?xf32> is 5 slots (allocated, aligned,
 * offset, size, stride), each f32 one slot. cts_kernels_ptx.cpp holds the
 * same kernel in PTX, cts_axpb.ll in AMDGPU LLVM IR.
 *
 *===----------------------------------------------------------------------===*/

#include <stdint.h>

void cts_axpb(void **args) {
  float *in = *(float **)args[1];
  int64_t in_offset = *(int64_t *)args[2];
  int64_t in_stride = *(int64_t *)args[4];
  float *out = *(float **)args[6];
  int64_t out_offset = *(int64_t *)args[7];
  int64_t n = *(int64_t *)args[8];
  int64_t out_stride = *(int64_t *)args[9];
  float alpha = *(float *)args[10];
  float beta = *(float *)args[11];
  for (int64_t i = 0; i < n; ++i)
    out[out_offset + i * out_stride] =
        alpha * in[in_offset + i * in_stride] + beta;
}
