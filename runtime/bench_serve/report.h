//===- report.h - serving benchmark reports: text, JSON, markdown, SVG ----===//
//
// Part of strata. One run prints a vLLM-style block (throughputs, then
// TTFT / TPOT / ITL / E2E mean, median, p90, p99 in ms) and writes JSON with
// vLLM's key names (`mean_ttft_ms`, `output_throughput`, ...; with
// `detailed`, every request's timings too). A concurrency sweep adds one
// markdown table (a row per concurrency) and an SVG plot of output
// throughput against median TPOT, a point per concurrency.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_SERVE_REPORT_H
#define STRATA_RUNTIME_BENCH_SERVE_REPORT_H

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/bench_serve/runner.h"

namespace strata::runtime::bench_serve {

/// What a run was, for reports.
struct RunLabel {
  std::string base_url, endpoint, model, dataset;
  size_t num_prompts = 0;
  double request_rate = 0; ///< infinity: all at once
  size_t max_concurrency = 0; ///< 0: no limit
  bool ignore_eos = false;
};

/// The text block of one run.
std::string formatRun(const RunLabel &label, const RunResult &result);

/// The JSON of one run (`detailed`: per-request records too).
nlohmann::json runJson(const RunLabel &label, const RunResult &result,
                       bool detailed);

/// One point of a sweep.
struct SweepPoint {
  RunLabel label;
  RunResult result;
};

/// The markdown table of a sweep.
std::string sweepMarkdown(const std::vector<SweepPoint> &points,
                          const std::string &title);

/// The SVG plot of a sweep (output tok/s against median TPOT).
std::string sweepSvg(const std::vector<SweepPoint> &points,
                     const std::string &title);

} // namespace strata::runtime::bench_serve

#endif // STRATA_RUNTIME_BENCH_SERVE_REPORT_H
