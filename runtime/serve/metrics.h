//===- metrics.h - Prometheus /metrics of strata-serve ----------------------===//
//
// Part of strata. The server's own counters (HTTP requests by endpoint and
// status, tokens in and out, admitted requests) and the text exposition
// (Prometheus format 0.0.4) of those plus the engine's EngineStats, under
// strata's names and under vLLM's (so vLLM dashboards read strata-serve).
// Metric names are a contract with runtime/eval (strata-eval reads the
// prefix-cache and MTP counters); docs/Serving.md lists them all.
//
// Thread-safety: ServerMetrics may be updated and read from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_METRICS_H
#define STRATA_RUNTIME_SERVE_METRICS_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/serve/engine.h"

namespace strata::runtime::serve {

/// Counters kept by the HTTP side.
class ServerMetrics {
public:
  /// Counts one answered HTTP request. `endpoint` is a route of the server or
  /// "other" (unknown paths share one label, so clients cannot grow the
  /// label set).
  void countRequest(const std::string &endpoint, int status);
  void addPromptTokens(uint64_t n) { prompt_tokens_ += n; }
  void addGenerationTokens(uint64_t n) { generation_tokens_ += n; }
  void countCancelled() { cancelled_ += 1; }

  /// Per finished engine request (one per choice), vLLM's request metrics:
  /// time to first token, each inter-token gap, end-to-end latency and
  /// queue time (seconds), and the finish reason ("stop", "length",
  /// "abort", "error").
  void observeTtft(double seconds) { ttft_.observe(seconds); }
  void observeItl(double seconds) { itl_.observe(seconds); }
  /// TTFT for the first delivery of a request, ITL for later ones.
  void observeTtftOrItl(bool first,
                        std::chrono::steady_clock::duration elapsed) {
    double seconds = std::chrono::duration<double>(elapsed).count();
    first ? observeTtft(seconds) : observeItl(seconds);
  }
  void observeE2e(double seconds) { e2e_.observe(seconds); }
  void observeQueue(double seconds) { queue_.observe(seconds); }
  /// A finished request's phases as vLLM splits them: prefill (first
  /// admission -> first token), decode (first token -> end), inference
  /// (first admission -> end), and its prompt and generated token counts.
  void observePhases(double prefill, double decode, double inference) {
    prefill_.observe(prefill);
    decode_.observe(decode);
    inference_.observe(inference);
  }
  void observeRequestTokens(uint64_t prompt, uint64_t generated) {
    prompt_tokens_per_request_.observe(static_cast<double>(prompt));
    generation_tokens_per_request_.observe(static_cast<double>(generated));
  }
  void countFinished(const std::string &reason);

  /// (endpoint, status) -> count.
  std::map<std::pair<std::string, int>, uint64_t> requests() const;
  uint64_t promptTokens() const { return prompt_tokens_; }
  uint64_t generationTokens() const { return generation_tokens_; }
  uint64_t cancelled() const { return cancelled_; }

  /// finish reason -> requests.
  std::map<std::string, uint64_t> finished() const;
  HistogramSnapshot ttft() const { return ttft_.snapshot(); }
  HistogramSnapshot itl() const { return itl_.snapshot(); }
  HistogramSnapshot e2e() const { return e2e_.snapshot(); }
  HistogramSnapshot queue() const { return queue_.snapshot(); }
  HistogramSnapshot prefill() const { return prefill_.snapshot(); }
  HistogramSnapshot decode() const { return decode_.snapshot(); }
  HistogramSnapshot inference() const { return inference_.snapshot(); }
  HistogramSnapshot promptTokensPerRequest() const {
    return prompt_tokens_per_request_.snapshot();
  }
  HistogramSnapshot generationTokensPerRequest() const {
    return generation_tokens_per_request_.snapshot();
  }

  /// The token-count histograms' buckets: vLLM's 1, 2, 5, 10, 20, 50, ...
  /// up to `max_model_len` (build_1_2_5_buckets).
  explicit ServerMetrics(int64_t max_model_len = 1 << 20)
      : prompt_tokens_per_request_(
            tokenBuckets(max_model_len > 0 ? max_model_len : 1 << 20)),
        generation_tokens_per_request_(
            tokenBuckets(max_model_len > 0 ? max_model_len : 1 << 20)) {}
  static std::vector<double> tokenBuckets(int64_t max_model_len);

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> finished_;
  // vLLM's bucket choices (vllm/v1/metrics/loggers.py).
  Histogram ttft_{{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
                   0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
                   160.0, 640.0, 2560.0}};
  Histogram itl_{{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                  0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}};
  Histogram e2e_{kRequestLatencyBuckets()};
  Histogram queue_{kRequestLatencyBuckets()};
  Histogram prefill_{kRequestLatencyBuckets()};
  Histogram decode_{kRequestLatencyBuckets()};
  Histogram inference_{kRequestLatencyBuckets()};
  Histogram prompt_tokens_per_request_;
  Histogram generation_tokens_per_request_;
  static std::vector<double> kRequestLatencyBuckets() {
    return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,   15.0, 20.0,
            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  }
  std::atomic<uint64_t> prompt_tokens_{0};
  std::atomic<uint64_t> generation_tokens_{0};
  std::atomic<uint64_t> cancelled_{0};
};

/// Gauges of the server's admission control.
struct AdmissionState {
  uint64_t in_flight = 0; // admitted generation requests not yet finished
  uint64_t capacity = 0;  // --max-queue
};

/// The full /metrics text: strata's own names, then vLLM's (`vllm:*`,
/// labelled model_name=`model_name` and engine="0"; docs/Serving.md maps
/// the two).
std::string renderMetrics(const ServerMetrics &server,
                          const AdmissionState &admission,
                          const EngineStats &engine,
                          const std::string &model_name = "strata");

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_METRICS_H
