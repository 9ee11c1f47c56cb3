/*===- test_kernels.c - kernels in the packed memref-descriptor ABI -------===*
 *
 * Part of strata. Test data for cpu_device_test.cpp: what the compiler emits
 * for `func @scale(%in: memref<?xf32>, %out: memref<?xf32>, %alpha: f32)`,
 * written by hand. Each memref<?xf32> is 5 slots (allocated, aligned, offset,
 * size, stride), the f32 scalar one slot.
 *
 *===----------------------------------------------------------------------===*/

#include <math.h>
#include <stdint.h>

void strata_test_scale(void **args) {
  float *in = *(float **)args[1];
  int64_t in_offset = *(int64_t *)args[2];
  int64_t n = *(int64_t *)args[3];
  int64_t in_stride = *(int64_t *)args[4];
  float *out = *(float **)args[6];
  int64_t out_offset = *(int64_t *)args[7];
  int64_t out_stride = *(int64_t *)args[9];
  float alpha = *(float *)args[10];
  for (int64_t i = 0; i < n; ++i)
    out[out_offset + i * out_stride] =
        alpha * expf(in[in_offset + i * in_stride]);
}

/* `func @scratch_probe(%scratch: memref<?xi8>, %out: memref<?xf32>)`: writes
 * every byte of the scratch region (byte i = i mod 251), reads them back and
 * stores out[0] = the region's size, out[1] = the bytes' sum (program_test:
 * the scratch binding gets the whole region it declares). */
void strata_test_scratch_probe(void **args) {
  uint8_t *scratch = *(uint8_t **)args[1];
  int64_t offset = *(int64_t *)args[2];
  int64_t n = *(int64_t *)args[3];
  float *out = *(float **)args[6];
  int64_t out_offset = *(int64_t *)args[7];
  for (int64_t i = 0; i < n; ++i)
    scratch[offset + i] = (uint8_t)(i % 251);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += scratch[offset + i];
  out[out_offset] = (float)n;
  out[out_offset + 1] = (float)sum;
}
