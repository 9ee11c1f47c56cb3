//===- bench_plot.cpp - strata-bench's plots ------------------------------===//
//
// Part of strata. See bench_plot.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

  // Steps: the step roofline's FLOPs and bytes over the wall time; a
  // single run's step is labelled, a matrix's are told apart by color.
  const bool single = reports.size() == 1;
  ChartSeries decode, prefill;
  decode.name = "decode steps (roofline FLOPs and bytes / wall time)";
  prefill.name = "prefill steps (roofline FLOPs and bytes / wall time)";
  decode.line = prefill.line = false;
  ChartSeries kernels;
  kernels.name = "kernels (2 M N K FLOPs / bound bytes)";
  kernels.line = false;
  std::set<std::string> uncounted, too_fast;
  for (const StepBenchReport &r : reports) {
    const StepRoofline &f = r.roofline;
    if (f.flops > 0 && f.bytes() > 0 && r.step_wall_seconds > 0) {
      ChartSeries &steps = r.step == "decode" ? decode : prefill;
      steps.points.emplace_back(f.flops / f.bytes(),
                                f.flops / r.step_wall_seconds * 1e-9);
      steps.labels.push_back(single ? caseName(r) : "");
    }
    // The five slowest counted kernels of a single run are labelled.
    size_t labelled = 0;
    for (const KernelStats &k : r.kernels) {
      std::optional<double> flops = matmulFlopsPerDispatch(k);
      if (!flops || k.bytes_per_dispatch <= 0 || k.seconds <= 0) {
        uncounted.insert(k.name);
        continue;
      }
      // A point above twice the run's own roofline cannot be: the kernel
      // did not read its bound bytes (the empty twin of a _rows kernel) or
      // did not do the FLOPs its shape says. It is left out.
      double intensity = *flops / k.bytes_per_dispatch;
      double rate = *flops * static_cast<double>(k.dispatches) / k.seconds;
      double roof = r.copy_bytes_per_second > 0
                        ? intensity * r.copy_bytes_per_second
                        : HUGE_VAL;
      if (r.gemm_flops_per_second > 0)
        roof = std::min(roof, r.gemm_flops_per_second);
      if (rate > 2 * roof) {
        too_fast.insert(k.name);
        continue;
      }
      kernels.points.emplace_back(intensity, rate * 1e-9);
      kernels.labels.push_back(single && labelled++ < 5 ? k.name : "");
    }
  }

  // The ceilings across the intensities drawn.
  double lo = 1e300, hi = 0;
  for (const ChartSeries *series : {&decode, &prefill, &kernels})
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
  // Kernels first, so that the steps are drawn over them.
  chart.series.push_back(std::move(kernels));
  for (ChartSeries *steps : {&decode, &prefill})
    if (!steps->points.empty())
      chart.series.push_back(std::move(*steps));
  if (!uncounted.empty())
    chart.notes.push_back(fmt::format(
        "{} kernel(s) without a linear's shape (no FLOP count) are not drawn",
        uncounted.size()));
  if (!too_fast.empty())
    chart.notes.push_back(
        fmt::format("{} kernel(s) above twice the run's roofline (empty twins, "
                    "overstated FLOPs) are not drawn",
                    too_fast.size()));
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
  // The linear convention of the kernels: input A first, weight B second,
  // the result C[M, N] a later argument.
  const auto &shapes = kernel.arg_shapes;
  if (shapes.size() < 3 || shapes[0].size() != 2 || shapes[1].size() != 2)
    return std::nullopt;
  const auto &A = shapes[0], &B = shapes[1];
  // An input and a "weight" of the same extents are an elementwise kernel's.
  if (A[1] <= 1 || A == B)
    return std::nullopt;
  for (size_t c = 2; c < shapes.size(); ++c) {
    const auto &C = shapes[c];
    if (C.size() != 2 || C[0] != A[0])
      continue;
    double m = static_cast<double>(A[0]), k = static_cast<double>(A[1]);
    // B[N, K] or B[K, N], into C[M, N].
    if (B[1] == A[1] && C[1] == B[0])
      return 2 * m * static_cast<double>(B[0]) * k;
    if (B[0] == A[1] && C[1] == B[1])
      return 2 * m * static_cast<double>(B[1]) * k;
  }
  return std::nullopt;
}

std::string benchPlotSvg(const std::vector<StepBenchReport> &reports) {
  if (reports.empty())
    return "";
  std::vector<Chart> charts = {rooflineChart(reports)};
  bool decode =
      std::any_of(reports.begin(), reports.end(),
                  [](const StepBenchReport &r) { return r.step == "decode"; });
  if (reports.size() > 1 && decode)
    charts.push_back(decodeChart(reports));
  return charts.size() == 1 ? chartSvg(charts[0]) : stackedChartsSvg(charts);
}

StatusOr<std::vector<StepBenchReport>> parseBenchJson(const std::string &text) {
  nlohmann::json j =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalidArgument("not a strata-bench JSON report");
  std::vector<nlohmann::json> cases;
  if (j.contains("cases") && j["cases"].is_array())
    cases.assign(j["cases"].begin(), j["cases"].end());
  else
    cases.push_back(j);
  std::vector<StepBenchReport> reports;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json &c = cases[i];
    auto number = [&](const nlohmann::json &object,
                      const char *key) -> StatusOr<double> {
      if (!object.is_object() || !object.contains(key) ||
          !object[key].is_number())
        return invalidArgument("case {}: no number '{}'", i, key);
      return object[key].get<double>();
    };
    StepBenchReport r;
    for (const char *key : {"device", "target", "step"})
      if (!c.contains(key) || !c[key].is_string())
        return invalidArgument("case {}: no string '{}'", i, key);
    r.device = c["device"].get<std::string>();
    r.target = c["target"].get<std::string>();
    r.step = c["step"].get<std::string>();
    STRATA_ASSIGN_OR_RETURN(double tokens, number(c, "tokens"));
    STRATA_ASSIGN_OR_RETURN(double requests, number(c, "requests"));
    STRATA_ASSIGN_OR_RETURN(double context, number(c, "context"));
    r.tokens = static_cast<int64_t>(tokens);
    r.requests = static_cast<int64_t>(requests);
    r.context = static_cast<int64_t>(context);
    STRATA_ASSIGN_OR_RETURN(r.step_wall_seconds,
                            number(c, "step_wall_seconds"));
    STRATA_ASSIGN_OR_RETURN(r.copy_bytes_per_second,
                            number(c, "copy_bytes_per_second"));
    const nlohmann::json &f =
        c.contains("roofline") ? c["roofline"] : nlohmann::json();
    STRATA_ASSIGN_OR_RETURN(r.roofline.weight_bytes, number(f, "weight_bytes"));
    STRATA_ASSIGN_OR_RETURN(r.roofline.expert_bytes, number(f, "expert_bytes"));
    STRATA_ASSIGN_OR_RETURN(r.roofline.state_bytes, number(f, "state_bytes"));
    STRATA_ASSIGN_OR_RETURN(r.roofline.flops, number(f, "flops"));
    STRATA_ASSIGN_OR_RETURN(r.gemm_flops_per_second,
                            number(f, "gemm_flops_per_second"));
    if (!c.contains("kernels") || !c["kernels"].is_array())
      return invalidArgument("case {}: no 'kernels' array", i);
    for (const nlohmann::json &k : c["kernels"]) {
      KernelStats stats;
      if (!k.contains("name") || !k["name"].is_string())
        return invalidArgument("case {}: a kernel without a name", i);
      stats.name = k["name"].get<std::string>();
      STRATA_ASSIGN_OR_RETURN(double dispatches, number(k, "dispatches"));
      stats.dispatches = static_cast<uint64_t>(dispatches);
      STRATA_ASSIGN_OR_RETURN(stats.seconds, number(k, "seconds"));
      STRATA_ASSIGN_OR_RETURN(stats.bytes_per_dispatch,
                              number(k, "bytes_per_dispatch"));
      if (k.contains("arg_shapes") && k["arg_shapes"].is_array())
        for (const nlohmann::json &shape : k["arg_shapes"]) {
          std::vector<int64_t> extents;
          for (const nlohmann::json &e : shape)
            if (e.is_number_integer())
              extents.push_back(e.get<int64_t>());
          stats.arg_shapes.push_back(std::move(extents));
        }
      r.kernels.push_back(std::move(stats));
    }
    reports.push_back(std::move(r));
  }
  if (reports.empty())
    return invalidArgument("the report has no cases");
  return reports;
}

} // namespace strata::runtime
