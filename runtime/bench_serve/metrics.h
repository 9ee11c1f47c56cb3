//===- metrics.h - serving benchmark metrics from per-request timings -----===//
//
// Part of strata. The numbers `vllm bench serve` and sglang.bench_serving
// report, computed from one record per request (times in seconds from the
// start of the run):
//
//   request throughput   completed requests / duration
//   input, output tok/s  summed prompt / generated tokens of completed
//                        requests / duration
//   TTFT                 first streamed text - request sent
//   TPOT                 (E2E - TTFT) / (output tokens - 1), per request
//                        with more than one output token
//   ITL                  gaps between consecutive streamed text chunks, over
//                        every request (a chunk may hold several tokens, as
//                        with MTP; vLLM counts it the same way)
//   E2E                  last byte of the response - request sent
//
// Each latency gets mean, median, p90, p99 (and min, max, std): percentiles
// interpolate linearly between order statistics (numpy's default, which
// both references use). Failed requests count in `failed` only.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_SERVE_METRICS_H
#define STRATA_RUNTIME_BENCH_SERVE_METRICS_H

#include <cstdint>
#include <string>
#include <vector>

namespace strata::runtime::bench_serve {

/// What one request did.
struct RequestRecord {
  /// True when the server answered 200 and the stream ended normally.
  bool ok = false;
  /// Why not (transport error, HTTP status with the server's message, an
  /// error event in the stream).
  std::string error;
  /// Seconds from the start of the run to the request being sent.
  double start = 0;
  /// Seconds from the request being sent to the first streamed text chunk
  /// (0 when none arrived) and to the end of the response.
  double ttft = 0, e2e = 0;
  /// Gaps between consecutive text chunks, seconds.
  std::vector<double> itl;
  /// Prompt and generated tokens (the server's usage when it reports it).
  int64_t prompt_tokens = 0, output_tokens = 0;
  /// Output tokens the dataset asked for (max_tokens).
  int64_t expected_output_tokens = 0;
};

/// Summary of one latency distribution, seconds.
struct LatencyStats {
  size_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0, std = 0;
};

/// Linear-interpolation percentile q in [0, 100] of `values` (any order);
/// 0 for an empty set.
double percentile(std::vector<double> values, double q);
/// mean, median, p90, p99, min, max and population std of `values`.
LatencyStats latencyStats(const std::vector<double> &values);

/// The run's result.
struct BenchMetrics {
  size_t completed = 0, failed = 0;
  /// Seconds from the start of the run to the end of the last request.
  double duration = 0;
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  double request_throughput = 0;
  double input_throughput = 0, output_throughput = 0, total_throughput = 0;
  LatencyStats ttft, tpot, itl, e2e;
  /// Completed requests whose output_tokens differ from what was asked
  /// (a stop token or string came first: without --ignore-eos).
  size_t short_outputs = 0;
};

/// Computes the metrics of `records` over a run of `duration` seconds.
BenchMetrics computeMetrics(const std::vector<RequestRecord> &records,
                            double duration);

} // namespace strata::runtime::bench_serve

#endif // STRATA_RUNTIME_BENCH_SERVE_METRICS_H
