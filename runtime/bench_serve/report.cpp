//===- report.cpp - serving benchmark reports: text, JSON, markdown, SVG --===//
//
// Part of strata. See report.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/report.h"

#include "runtime/base/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace strata::runtime::bench_serve {

using nlohmann::json;

namespace {

std::string rateText(double rate) {
  return std::isfinite(rate) ? fmt::format("{:g}", rate) : "inf";
}

std::string concurrencyText(size_t c) {
  return c ? fmt::format("{}", c) : "unlimited";
}

// Distinct request errors with their counts, most frequent first.
std::vector<std::pair<std::string, size_t>>
errorCounts(const std::vector<RequestRecord> &records) {
  std::map<std::string, size_t> counts;
  for (const RequestRecord &r : records)
    if (!r.ok)
      ++counts[r.error];
  std::vector<std::pair<std::string, size_t>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  return out;
}

void addLatency(json &j, const std::string &name, const LatencyStats &s) {
  j["mean_" + name + "_ms"] = s.mean * 1e3;
  j["median_" + name + "_ms"] = s.median * 1e3;
  j["p90_" + name + "_ms"] = s.p90 * 1e3;
  j["p99_" + name + "_ms"] = s.p99 * 1e3;
  j["std_" + name + "_ms"] = s.std * 1e3;
  j["min_" + name + "_ms"] = s.min * 1e3;
  j["max_" + name + "_ms"] = s.max * 1e3;
}

} // namespace

std::string formatRun(const RunLabel &label, const RunResult &result) {
  const BenchMetrics &m = result.metrics;
  std::string out = fmt::format("{:=^60}\n", " Serving Benchmark Result ");
  auto row = [&](std::string_view name, std::string value) {
    out += fmt::format("{:<42}{:>18}\n", name, value);
  };
  row("Server:", label.base_url + label.endpoint);
  row("Dataset:", label.dataset);
  row("Request rate (req/s):", rateText(label.request_rate));
  row("Max concurrency:", concurrencyText(label.max_concurrency));
  row("Successful requests:", fmt::format("{}", m.completed));
  row("Failed requests:", fmt::format("{}", m.failed));
  row("Benchmark duration (s):", fmt::format("{:.2f}", m.duration));
  row("Total input tokens:", fmt::format("{}", m.total_input_tokens));
  row("Total generated tokens:", fmt::format("{}", m.total_output_tokens));
  row("Request throughput (req/s):", fmt::format("{:.2f}", m.request_throughput));
  row("Input token throughput (tok/s):",
      fmt::format("{:.2f}", m.input_throughput));
  row("Output token throughput (tok/s):",
      fmt::format("{:.2f}", m.output_throughput));
  row("Total token throughput (tok/s):",
      fmt::format("{:.2f}", m.total_throughput));
  if (m.short_outputs)
    row("Outputs shorter than max_tokens:", fmt::format("{}", m.short_outputs));
  auto latency = [&](std::string_view title, std::string_view name,
                     const LatencyStats &s) {
    out += fmt::format("{:-^60}\n", fmt::format(" {} ", title));
    row(fmt::format("Mean {} (ms):", name), fmt::format("{:.2f}", s.mean * 1e3));
    row(fmt::format("Median {} (ms):", name),
        fmt::format("{:.2f}", s.median * 1e3));
    row(fmt::format("P90 {} (ms):", name), fmt::format("{:.2f}", s.p90 * 1e3));
    row(fmt::format("P99 {} (ms):", name), fmt::format("{:.2f}", s.p99 * 1e3));
  };
  latency("Time to First Token", "TTFT", m.ttft);
  latency("Time per Output Token (excl. 1st token)", "TPOT", m.tpot);
  latency("Inter-token Latency", "ITL", m.itl);
  latency("End-to-end Latency", "E2E", m.e2e);
  const std::map<std::string, double> &s = result.server_metrics;
  auto server = [&](const char *name) {
    auto it = s.find(name);
    return it == s.end() ? 0.0 : it->second;
  };
  if (!s.empty()) {
    out += fmt::format("{:-^60}\n", " Server /metrics during the run ");
    row("Prompt tokens:", fmt::format("{:.0f}", server("strata_prompt_tokens_total")));
    row("Generated tokens:",
        fmt::format("{:.0f}", server("strata_generation_tokens_total")));
    const double steps = server("strata_step_time_seconds_count");
    if (steps > 0) {
      row("Engine steps:", fmt::format("{:.0f}", steps));
      row("Mean step time (ms):",
          fmt::format("{:.2f}", server("strata_step_time_seconds_sum") / steps *
                                    1e3));
    }
    std::string replays;
    for (const char *step : {"decode", "mtp_verify", "mtp_draft", "mtp_chain",
                             "decode+draft", "mtp_verify+draft"}) {
      const double n = server(
          fmt::format("strata_graph_replays_total{{step=\"{}\"}}", step)
              .c_str());
      if (n > 0)
        replays += fmt::format("{}{} {:.0f}", replays.empty() ? "" : ", ",
                               step, n);
    }
    if (!replays.empty())
      row("Steps replayed from graphs:", replays);
    if (server("strata_verify_rollbacks_total") > 0)
      row("MTP rollbacks:",
          fmt::format("{:.0f}", server("strata_verify_rollbacks_total")));
    const double drafts = server("strata_mtp_draft_tokens_total");
    if (drafts > 0) {
      row("MTP acceptance:",
          fmt::format("{:.3f}", server("strata_mtp_accepted_tokens_total") /
                                    drafts));
      std::string by_position;
      for (int k = 1; k <= 8; ++k) {
        const std::string label = fmt::format("{{position=\"{}\"}}", k);
        const double d =
            server(("strata_mtp_draft_tokens_by_position_total" + label).c_str());
        if (d <= 0)
          break;
        by_position += fmt::format(
            "{}{:.3f}", k > 1 ? " " : "",
            server(("strata_mtp_accepted_tokens_by_position_total" + label)
                       .c_str()) /
                d);
      }
      if (!by_position.empty())
        row("MTP acceptance by position:", by_position);
    }
  }
  out += fmt::format("{:=^60}\n", "");
  for (const auto &[error, count] : errorCounts(result.records))
    out += fmt::format("error ({} request{}): {}\n", count,
                       count == 1 ? "" : "s", error);
  if (!result.error.ok())
    out += fmt::format("run stopped early: {}\n", result.error.message());
  return out;
}

json runJson(const RunLabel &label, const RunResult &result, bool detailed) {
  const BenchMetrics &m = result.metrics;
  json j;
  j["base_url"] = label.base_url;
  j["endpoint"] = label.endpoint;
  j["model_id"] = label.model;
  j["dataset"] = label.dataset;
  j["num_prompts"] = label.num_prompts;
  j["request_rate"] = std::isfinite(label.request_rate)
                          ? json(label.request_rate)
                          : json("inf");
  j["max_concurrency"] =
      label.max_concurrency ? json(label.max_concurrency) : json(nullptr);
  j["ignore_eos"] = label.ignore_eos;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["duration"] = m.duration;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["input_throughput"] = m.input_throughput;
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_throughput;
  j["short_outputs"] = m.short_outputs;
  addLatency(j, "ttft", m.ttft);
  addLatency(j, "tpot", m.tpot);
  addLatency(j, "itl", m.itl);
  addLatency(j, "e2el", m.e2e);
  json errors = json::array();
  for (const auto &[error, count] : errorCounts(result.records))
    errors.push_back({{"error", error}, {"count", count}});
  j["errors"] = errors;
  j["server_metrics"] = result.server_metrics;
  j["error"] = result.error.ok() ? json(nullptr)
                                 : json(std::string(result.error.message()));
  if (detailed) {
    json requests = json::array();
    for (const RequestRecord &r : result.records)
      requests.push_back({{"ok", r.ok},
                          {"error", r.error},
                          {"start", r.start},
                          {"ttft", r.ttft},
                          {"e2e", r.e2e},
                          {"itl", r.itl},
                          {"prompt_tokens", r.prompt_tokens},
                          {"output_tokens", r.output_tokens},
                          {"expected_output_tokens", r.expected_output_tokens}});
    j["requests"] = requests;
  }
  return j;
}

std::string sweepMarkdown(const std::vector<SweepPoint> &points,
                          const std::string &title) {
  std::string out = fmt::format("### {}\n\n", title);
  out += "| concurrency | requests | failed | duration (s) | req/s | output "
         "tok/s | total tok/s | TTFT mean / median / p99 (ms) | TPOT mean / "
         "median / p99 (ms) | ITL median / p99 (ms) | E2E median (s) |\n";
  out += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const SweepPoint &p : points) {
    const BenchMetrics &m = p.result.metrics;
    out += fmt::format(
        "| {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} / {:.1f} "
        "/ {:.1f} | {:.2f} / {:.2f} / {:.2f} | {:.2f} / {:.2f} | {:.2f} |\n",
        concurrencyText(p.label.max_concurrency), m.completed, m.failed,
        m.duration, m.request_throughput, m.output_throughput,
        m.total_throughput, m.ttft.mean * 1e3, m.ttft.median * 1e3,
        m.ttft.p99 * 1e3, m.tpot.mean * 1e3, m.tpot.median * 1e3,
        m.tpot.p99 * 1e3, m.itl.median * 1e3, m.itl.p99 * 1e3, m.e2e.median);
  }
  return out;
}

std::string sweepSvg(const std::vector<SweepPoint> &points,
                     const std::string &title) {
  // Output throughput against median TPOT, in sweep order, a labelled
  // point per concurrency.
  ChartSeries curve;
  for (const SweepPoint &p : points) {
    curve.points.emplace_back(p.result.metrics.tpot.median * 1e3,
                              p.result.metrics.output_throughput);
    curve.labels.push_back("c=" + concurrencyText(p.label.max_concurrency));
  }
  Chart chart;
  chart.title = title;
  chart.x.label = "median TPOT (ms per output token, lower is better)";
  chart.y.label = "output throughput (tokens/s)";
  chart.series.push_back(std::move(curve));
  return chartSvg(chart);
}

} // namespace strata::runtime::bench_serve
