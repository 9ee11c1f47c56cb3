//===- metrics.h - Prometheus /metrics of strata-serve ----------------------===//
//
// Part of strata. The server's own counters (HTTP requests by endpoint and
// status, tokens in and out, admitted requests) and the text exposition
// (Prometheus format 0.0.4) of those plus the engine's EngineStats. Metric
// names are a contract with runtime/eval (strata-eval reads the prefix-cache
// and MTP counters); docs/Serving.md lists them all.
//
// Thread-safety: ServerMetrics may be updated and read from any thread.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_METRICS_H
#define STRATA_RUNTIME_SERVE_METRICS_H

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

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

  /// (endpoint, status) -> count.
  std::map<std::pair<std::string, int>, uint64_t> requests() const;
  uint64_t promptTokens() const { return prompt_tokens_; }
  uint64_t generationTokens() const { return generation_tokens_; }
  uint64_t cancelled() const { return cancelled_; }

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::atomic<uint64_t> prompt_tokens_{0};
  std::atomic<uint64_t> generation_tokens_{0};
  std::atomic<uint64_t> cancelled_{0};
};

/// Gauges of the server's admission control.
struct AdmissionState {
  uint64_t in_flight = 0; // admitted generation requests not yet finished
  uint64_t capacity = 0;  // --max-queue
};

/// The full /metrics text.
std::string renderMetrics(const ServerMetrics &server,
                          const AdmissionState &admission,
                          const EngineStats &engine);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_METRICS_H
