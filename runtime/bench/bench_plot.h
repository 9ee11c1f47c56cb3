//===- bench_plot.h - strata-bench's plots ----------------------*- C++ -*-===//
//
// Part of strata. `strata-bench --plot FILE.svg` draws what the tables say:
//
//  * a roofline chart: arithmetic intensity (FLOP per byte) against achieved
//    rate (GFLOP/s), both log scales, with the run's own ceilings as lines:
//    the copy rate (bytes/s x intensity) and, with --gemm-tflops, the GEMM
//    rate. Each step of the run is a point (the step roofline's FLOPs and
//    bytes over its wall time); each kernel whose FLOPs follow from its
//    argument extents is a point too: a linear-shaped kernel, input A[M, K]
//    first, weight B[N, K] (or B[K, N]) second and a result C[M, N] later,
//    does 2 M N K FLOPs over its bound bytes (A and B of the same extents
//    are read as elementwise). Kernels of other shapes have no FLOP count,
//    and a kernel above twice the run's roofline did not read its bound
//    bytes (an empty _rows twin) or do the FLOPs its shape says; both are
//    left out, and notes under the chart say how many.
//  * for a matrix run, the decode wall time per batch size, one line per
//    context, under the roofline.
//
// `--from-json FILE` redraws a saved --json report without running.
//
// Thread-safety: plain functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_BENCH_PLOT_H
#define STRATA_RUNTIME_BENCH_BENCH_PLOT_H

#include <optional>
#include <string>
#include <vector>

#include "runtime/bench/step_bench.h"

namespace strata::runtime {

/// FLOPs of one dispatch of `kernel` when its argument extents are those of
/// a linear (A[M, K], B[N, K] or B[K, N], then C[M, N]): 2 M N K, else
/// std::nullopt.
std::optional<double> matmulFlopsPerDispatch(const KernelStats &kernel);

/// The SVG of one run (one report) or of a matrix run (several).
std::string benchPlotSvg(const std::vector<StepBenchReport> &reports);

/// The reports of a saved `--json` file (formatJson: one report;
/// formatMatrixJson: {"cases": [...]}) with the fields the plot draws, so
/// that `strata-bench --from-json FILE --plot out.svg` redraws a run made
/// elsewhere (an H200 matrix). INVALID_ARGUMENT naming what is missing.
StatusOr<std::vector<StepBenchReport>> parseBenchJson(const std::string &text);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_BENCH_PLOT_H
