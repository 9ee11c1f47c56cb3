//===- bench_plot.h - strata-bench's plots ----------------------*- C++ -*-===//
//
// Part of strata. `strata-bench --plot FILE.svg` draws what the tables say:
//
//  * a roofline chart: arithmetic intensity (FLOP per byte) against achieved
//    rate (GFLOP/s), both log scales, with the run's own ceilings as lines:
//    the copy rate (bytes/s x intensity) and, with --gemm-tflops, the GEMM
//    rate. Each step of the run is a point (the step roofline's FLOPs and
//    bytes over its wall time); each kernel whose FLOPs follow from its
//    argument extents is a point too: a matrix product A[M, K] x B[N, K]
//    (or B[K, N]) into C[M, N] does 2 M N K FLOPs over its bound bytes.
//    Kernels of other shapes have no FLOP count and are left out; a note
//    under the chart says how many.
//  * for a matrix run, the decode wall time per batch size, one line per
//    context, under the roofline.
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
/// a matrix product (2 M N K), else std::nullopt.
std::optional<double> matmulFlopsPerDispatch(const KernelStats &kernel);

/// The SVG of one run (one report) or of a matrix run (several).
std::string benchPlotSvg(const std::vector<StepBenchReport> &reports);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_BENCH_PLOT_H
