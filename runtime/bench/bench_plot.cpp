//===- bench_plot.cpp - strata-bench's plots ------------------------------===//
//
// Part of strata. See bench_plot.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "runtime/base/svg_chart.h"

namespace strata::runtime {

namespace {

std::string caseName(const StepBenchReport &r) {
  if (r.step == "decode")
    return fmt::format("decode B={} ctx {}", r.requests, r.context);
  return fmt::format("prefill {} x {}", r.requests, r.tokens);
}

Chart rooflineChart(const std::vector<StepBenchReport> &reports) {
  const StepBenchReport &first = reports.front();
  Chart chart;
  chart.id = "roofline";
  chart.title = fmt::format("strata-bench roofline on {} ({})", first.target,
                            first.device);
  chart.x.label = "arithmetic intensity (FLOP per byte)";
  chart.y.label = "achieved rate (GFLOP/s)";
  chart.x.log = chart.y.log = true;

  // Steps: the step roofline's FLOPs and bytes over the wall time.
  ChartSeries steps;
  steps.name = "steps (roofline FLOPs and bytes / wall time)";
  steps.line = false;
  ChartSeries kernels;
  kernels.name = "kernels (2 M N K FLOPs / bound bytes)";
  kernels.line = false;
  size_t uncounted = 0;
  std::map<std::string, bool> seen_uncounted;
  for (const StepBenchReport &r : reports) {
    const StepRoofline &f = r.roofline;
    if (f.flops > 0 && f.bytes() > 0 && r.step_wall_seconds > 0) {
      steps.points.emplace_back(f.flops / f.bytes(),
                                f.flops / r.step_wall_seconds * 1e-9);
      steps.labels.push_back(caseName(r));
    }
    // The five slowest counted kernels of a single run are labelled.
    size_t labelled = 0;
    for (const KernelStats &k : r.kernels) {
      std::optional<double> flops = matmulFlopsPerDispatch(k);
      if (!flops || k.bytes_per_dispatch <= 0 || k.seconds <= 0) {
        if (!seen_uncounted[k.name]) {
          seen_uncounted[k.name] = true;
          ++uncounted;
        }
        continue;
      }
      kernels.points.emplace_back(
          *flops / k.bytes_per_dispatch,
          *flops * static_cast<double>(k.dispatches) / k.seconds * 1e-9);
      kernels.labels.push_back(reports.size() == 1 && labelled++ < 5 ? k.name
                                                                     : "");
    }
  }

  // The ceilings across the intensities drawn.
  double lo = 1e300, hi = 0;
  for (const ChartSeries *series : {&steps, &kernels})
    for (auto [x, y] : series->points) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  if (hi <= 0) {
    lo = 0.1;
    hi = 100;
  }
  lo /= 4;
  hi *= 4;
  if (first.copy_bytes_per_second > 0) {
    ChartSeries copy;
    copy.name = fmt::format("copy rate {:.0f} GB/s x intensity",
                            first.copy_bytes_per_second * 1e-9);
    copy.color = "#555";
    copy.markers = false;
    copy.dashed = true;
    for (double x : {lo, hi})
      copy.points.emplace_back(x, x * first.copy_bytes_per_second * 1e-9);
    chart.series.push_back(std::move(copy));
  }
  if (first.gemm_flops_per_second > 0) {
    ChartSeries gemm;
    gemm.name = fmt::format("GEMM rate {:.1f} TFLOP/s",
                            first.gemm_flops_per_second * 1e-12);
    gemm.color = "#000";
    gemm.markers = false;
    gemm.dashed = true;
    for (double x : {lo, hi})
      gemm.points.emplace_back(x, first.gemm_flops_per_second * 1e-9);
    chart.series.push_back(std::move(gemm));
  }
  chart.series.push_back(std::move(steps));
  chart.series.push_back(std::move(kernels));
  if (uncounted)
    chart.notes.push_back(fmt::format(
        "{} kernel(s) without a matrix-product shape have no FLOP count and "
        "are not drawn",
        uncounted));
  return chart;
}

/// Decode wall time per batch size, one line per context.
Chart decodeChart(const std::vector<StepBenchReport> &reports) {
  Chart chart;
  chart.id = "decode";
  chart.title = "decode step wall time per batch size";
  chart.x.label = "batch size (requests in the step)";
  chart.y.label = "wall time per step (ms)";
  chart.x.log = true;
  std::map<int64_t, ChartSeries> by_context;
  for (const StepBenchReport &r : reports) {
    if (r.step != "decode")
      continue;
    ChartSeries &series = by_context[r.context];
    series.name = fmt::format("context {}", r.context);
    series.points.emplace_back(static_cast<double>(r.requests),
                               r.step_wall_seconds * 1e3);
    series.labels.push_back(fmt::format("{:.2f}", r.step_wall_seconds * 1e3));
  }
  for (auto &[context, series] : by_context) {
    std::sort(series.points.begin(), series.points.end());
    chart.series.push_back(std::move(series));
  }
  return chart;
}

} // namespace

std::optional<double> matmulFlopsPerDispatch(const KernelStats &kernel) {
  const auto &shapes = kernel.arg_shapes;
  for (size_t a = 0; a < shapes.size(); ++a) {
    for (size_t b = a + 1; b < shapes.size(); ++b) {
      for (size_t c = 0; c < shapes.size(); ++c) {
        if (c == a || c == b || shapes[a].size() != 2 ||
            shapes[b].size() != 2 || shapes[c].size() != 2)
          continue;
        const auto &A = shapes[a], &B = shapes[b], &C = shapes[c];
        double m = static_cast<double>(A[0]), k = static_cast<double>(A[1]);
        if (k <= 1)
          continue;
        // B[N, K] or B[K, N], into C[M, N].
        if (B[1] == A[1] && C[0] == A[0] && C[1] == B[0])
          return 2 * m * static_cast<double>(B[0]) * k;
        if (B[0] == A[1] && C[0] == A[0] && C[1] == B[1])
          return 2 * m * static_cast<double>(B[1]) * k;
      }
    }
  }
  return std::nullopt;
}

std::string benchPlotSvg(const std::vector<StepBenchReport> &reports) {
  if (reports.empty())
    return "";
  std::vector<Chart> charts = {rooflineChart(reports)};
  bool decode = std::any_of(reports.begin(), reports.end(),
                            [](const StepBenchReport &r) {
                              return r.step == "decode";
                            });
  if (reports.size() > 1 && decode)
    charts.push_back(decodeChart(reports));
  return charts.size() == 1 ? chartSvg(charts[0]) : stackedChartsSvg(charts);
}

} // namespace strata::runtime
