// Kernels of the artifact end-to-end tests: out = silu(x @ w) * alpha.
// Built by strata-artifact-build-test, run by strata-artifact-run-test.

// y = x @ w (y zeroed first; linalg.matmul accumulates).
func.func @matmul(%x: memref<?x8xf32>, %w: memref<8x16xf32>,
                  %y: memref<?x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x16xf32>)
  linalg.matmul ins(%x, %w : memref<?x8xf32>, memref<8x16xf32>)
                outs(%y : memref<?x16xf32>)
  return
}

// out = in / (1 + exp(-in)) * alpha; math.exp becomes a call to libm's expf.
func.func @silu_scale(%in: memref<?x?xf32>, %out: memref<?x?xf32>,
                      %alpha: f32) {
  linalg.generic {
      indexing_maps = [affine_map<(i, j) -> (i, j)>,
                       affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%in : memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %unused: f32):
    %one = arith.constant 1.0 : f32
    %neg = arith.negf %a : f32
    %e = math.exp %neg : f32
    %den = arith.addf %one, %e : f32
    %s = arith.divf %a, %den : f32
    %r = arith.mulf %s, %alpha : f32
    linalg.yield %r : f32
  }
  return
}
