//===- metrics.cpp - Prometheus /metrics of strata-serve --------------------===//
//
// Part of strata. Text exposition format: "# HELP", "# TYPE", then
// `name{labels} value` lines; histograms as cumulative `_bucket{le=...}`,
// `_sum`, `_count`.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/metrics.h"

#include <fmt/format.h>

namespace strata::runtime::serve {

void ServerMetrics::countRequest(const std::string &endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

std::map<std::pair<std::string, int>, uint64_t>
ServerMetrics::requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_;
}

namespace {

void header(std::string &out, const char *name, const char *type,
            const char *help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void metric(std::string &out, const char *name, const char *type,
            const char *help, uint64_t value) {
  header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

void byPosition(std::string &out, const char *name, const char *help,
                const std::vector<uint64_t> &values) {
  header(out, name, "counter", help);
  for (size_t k = 0; k < values.size(); ++k)
    out += fmt::format("{}{{position=\"{}\"}} {}\n", name, k + 1, values[k]);
}

} // namespace

std::string renderMetrics(const ServerMetrics &server,
                          const AdmissionState &admission,
                          const EngineStats &engine) {
  std::string out;
  header(out, "strata_http_requests_total", "counter",
         "HTTP requests answered, by endpoint and status code.");
  for (const auto &[key, count] : server.requests())
    out += fmt::format(
        "strata_http_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
        key.first, key.second, count);
  metric(out, "strata_prompt_tokens_total", "counter",
         "Prompt tokens of admitted generation requests.",
         server.promptTokens());
  metric(out, "strata_generation_tokens_total", "counter",
         "Tokens generated for clients.", server.generationTokens());
  metric(out, "strata_cancelled_requests_total", "counter",
         "Requests cancelled because the client went away or the server "
         "stopped.",
         server.cancelled());
  metric(out, "strata_requests_in_flight", "gauge",
         "Generation requests admitted by the server and not finished.",
         admission.in_flight);
  metric(out, "strata_requests_capacity", "gauge",
         "Most generation requests admitted at once (--max-queue); more are "
         "answered 503.",
         admission.capacity);
  metric(out, "strata_queue_depth", "gauge",
         "Requests waiting in the engine's queue.", engine.queued_requests);
  metric(out, "strata_running_requests", "gauge",
         "Requests the engine is running.", engine.running_requests);
  metric(out, "strata_kv_blocks_in_use", "gauge", "KV-cache pages in use.",
         engine.kv_blocks_in_use);
  metric(out, "strata_kv_blocks_total", "gauge", "KV-cache pages in total.",
         engine.kv_blocks_total);
  metric(out, "strata_prefix_cache_queried_tokens_total", "counter",
         "Prompt tokens looked up in the prefix cache.",
         engine.prefix_cache_queried_tokens);
  metric(out, "strata_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens served from the prefix cache.",
         engine.prefix_cache_hit_tokens);
  metric(out, "strata_mtp_draft_tokens_total", "counter",
         "MTP draft tokens proposed.", engine.mtp_draft_tokens);
  metric(out, "strata_mtp_accepted_tokens_total", "counter",
         "MTP draft tokens accepted.", engine.mtp_accepted_tokens);
  byPosition(out, "strata_mtp_draft_tokens_by_position_total",
             "MTP draft tokens proposed at draft position k (1-based).",
             engine.mtp_draft_tokens_by_position);
  byPosition(out, "strata_mtp_accepted_tokens_by_position_total",
             "MTP draft tokens accepted at draft position k (1-based).",
             engine.mtp_accepted_tokens_by_position);

  const HistogramSnapshot &h = engine.step_time;
  header(out, "strata_step_time_seconds", "histogram",
         "Time of one engine step (one batch through the model).");
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.upper_bounds.size() && i < h.bucket_counts.size();
       ++i) {
    cumulative += h.bucket_counts[i];
    out += fmt::format("strata_step_time_seconds_bucket{{le=\"{}\"}} {}\n",
                       h.upper_bounds[i], cumulative);
  }
  out += fmt::format("strata_step_time_seconds_bucket{{le=\"+Inf\"}} {}\n",
                     h.count);
  out += fmt::format("strata_step_time_seconds_sum {}\n", h.sum);
  out += fmt::format("strata_step_time_seconds_count {}\n", h.count);
  return out;
}

} // namespace strata::runtime::serve
