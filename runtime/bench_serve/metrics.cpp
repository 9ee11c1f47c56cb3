//===- metrics.cpp - serving benchmark metrics from per-request timings ---===//
//
// Part of strata. See metrics.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/metrics.h"

#include <algorithm>
#include <cmath>

namespace strata::runtime::bench_serve {

double percentile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

LatencyStats latencyStats(const std::vector<double> &values) {
  LatencyStats s;
  s.count = values.size();
  if (values.empty())
    return s;
  double sum = 0;
  for (double v : values)
    sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values)
    squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / static_cast<double>(values.size()));
  s.median = percentile(values, 50);
  s.p90 = percentile(values, 90);
  s.p99 = percentile(values, 99);
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

BenchMetrics computeMetrics(const std::vector<RequestRecord> &records,
                            double duration) {
  BenchMetrics m;
  m.duration = duration;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const RequestRecord &r : records) {
    if (!r.ok) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input_tokens += r.prompt_tokens;
    m.total_output_tokens += r.output_tokens;
    if (r.expected_output_tokens && r.output_tokens != r.expected_output_tokens)
      ++m.short_outputs;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    if (r.output_tokens > 1)
      tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1));
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
  }
  if (duration > 0) {
    m.request_throughput = static_cast<double>(m.completed) / duration;
    m.input_throughput = static_cast<double>(m.total_input_tokens) / duration;
    m.output_throughput = static_cast<double>(m.total_output_tokens) / duration;
    m.total_throughput = m.input_throughput + m.output_throughput;
  }
  m.ttft = latencyStats(ttft);
  m.tpot = latencyStats(tpot);
  m.itl = latencyStats(itl);
  m.e2e = latencyStats(e2e);
  return m;
}

} // namespace strata::runtime::bench_serve
