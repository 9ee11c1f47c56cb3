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

void ServerMetrics::countFinished(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_[reason];
}

std::map<std::string, uint64_t> ServerMetrics::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
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

/// A histogram with `labels` (already formatted, no braces) on every line.
void histogram(std::string &out, const std::string &name, const char *help,
               const std::string &labels, const HistogramSnapshot &h) {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.upper_bounds.size() && i < h.bucket_counts.size();
       ++i) {
    cumulative += h.bucket_counts[i];
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                       h.upper_bounds[i], cumulative);
  }
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep,
                     h.count);
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n", name, braces, h.sum);
  out += fmt::format("{}_count{} {}\n", name, braces, h.count);
}

void byPosition(std::string &out, const char *name, const char *help,
                const std::vector<uint64_t> &values) {
  header(out, name, "counter", help);
  for (size_t k = 0; k < values.size(); ++k)
    out += fmt::format("{}{{position=\"{}\"}} {}\n", name, k + 1, values[k]);
}

void byStep(std::string &out, const char *name, const char *help,
            const std::map<std::string, uint64_t> &values) {
  header(out, name, "counter", help);
  for (const auto &[step, count] : values)
    out += fmt::format("{}{{step=\"{}\"}} {}\n", name, step, count);
}

/// vLLM's names and semantics (vllm/v1/metrics/loggers.py), labelled with
/// model_name and engine as vLLM labels them.
void appendVllmMetrics(std::string &out, const ServerMetrics &server,
                       const EngineStats &engine,
                       const std::string &model_name) {
  // Label values escape backslash, quote and newline (Prometheus text).
  std::string escaped;
  for (char c : model_name) {
    if (c == '\\' || c == '"')
      escaped += '\\';
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += c;
  }
  const std::string labels =
      fmt::format("model_name=\"{}\",engine=\"0\"", escaped);
  auto one = [&](const char *name, const char *type, const char *help,
                 auto value) {
    header(out, name, type, help);
    out += fmt::format("{}{{{}}} {}\n", name, labels, value);
  };
  one("vllm:num_requests_running", "gauge",
      "Number of requests in model execution batches.",
      engine.running_requests);
  one("vllm:num_requests_waiting", "gauge",
      "Number of requests waiting to be processed.", engine.queued_requests);
  one("vllm:kv_cache_usage_perc", "gauge",
      "KV-cache usage. 1 means 100 percent usage.",
      engine.kv_blocks_total ? double(engine.kv_blocks_in_use) /
                                   double(engine.kv_blocks_total)
                             : 0.0);
  one("vllm:prefix_cache_queries_total", "counter",
      "Prefix cache queries, in terms of number of queried tokens.",
      engine.prefix_cache_queried_tokens);
  one("vllm:prefix_cache_hits_total", "counter",
      "Prefix cache hits, in terms of number of cached tokens.",
      engine.prefix_cache_hit_tokens);
  one("vllm:num_preemptions_total", "counter",
      "Cumulative number of preemption from the engine.", engine.preemptions);
  one("vllm:prompt_tokens_total", "counter",
      "Number of prefill tokens processed.", server.promptTokens());
  one("vllm:generation_tokens_total", "counter",
      "Number of generation tokens processed.", server.generationTokens());
  header(out, "vllm:request_success_total", "counter",
         "Count of successfully processed requests.");
  std::map<std::string, uint64_t> finished = server.finished();
  for (const char *reason : {"stop", "length", "abort", "error"})
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} "
                       "{}\n",
                       labels, reason, finished[reason]);
  histogram(out, "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.", labels,
            server.ttft());
  histogram(out, "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.", labels,
            server.itl());
  histogram(out, "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.", labels,
            server.e2e());
  histogram(out, "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.", labels,
            server.queue());
  histogram(out, "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.", labels,
            server.prefill());
  histogram(out, "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.", labels,
            server.decode());
  histogram(out, "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.", labels,
            server.inference());
  histogram(out, "vllm:request_prompt_tokens",
            "Number of prefill tokens processed.", labels,
            server.promptTokensPerRequest());
  histogram(out, "vllm:request_generation_tokens",
            "Number of generation tokens processed.", labels,
            server.generationTokensPerRequest());
  histogram(out, "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.", labels,
            engine.iteration_tokens);
  // Speculative decoding: every verification has a first draft, so the
  // verifications are the drafts at position 1.
  one("vllm:spec_decode_num_drafts_total", "counter",
      "Number of spec decoding drafts.",
      engine.mtp_draft_tokens_by_position.empty()
          ? uint64_t(0)
          : engine.mtp_draft_tokens_by_position[0]);
  one("vllm:spec_decode_num_draft_tokens_total", "counter",
      "Number of draft tokens.", engine.mtp_draft_tokens);
  one("vllm:spec_decode_num_accepted_tokens_total", "counter",
      "Number of accepted tokens.", engine.mtp_accepted_tokens);
  header(out, "vllm:spec_decode_num_accepted_tokens_per_pos", "counter",
         "Accepted tokens per draft position.");
  for (size_t k = 0; k < engine.mtp_accepted_tokens_by_position.size(); ++k)
    out += fmt::format(
        "vllm:spec_decode_num_accepted_tokens_per_pos{{{},position=\"{}\"}} "
        "{}\n",
        labels, k, engine.mtp_accepted_tokens_by_position[k]);
}

} // namespace

std::string renderMetrics(const ServerMetrics &server,
                          const AdmissionState &admission,
                          const EngineStats &engine,
                          const std::string &model_name) {
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

  metric(out, "strata_verify_rollbacks_total", "counter",
         "MTP verifications re-run after a rejected draft (artifacts "
         "without per-token KDA states: the accepted tokens re-run from the "
         "restored state; 0 otherwise).",
         engine.verify_rollbacks);
  byStep(out, "strata_graph_captures_total",
         "Step shapes captured into a replayable graph, by step kind.",
         engine.graph_captures);
  byStep(out, "strata_graph_replays_total",
         "Steps run by replaying a captured graph, by step kind.",
         engine.graph_replays);

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
  appendVllmMetrics(out, server, engine, model_name);
  return out;
}

std::vector<double> ServerMetrics::tokenBuckets(int64_t max_model_len) {
  std::vector<double> buckets;
  for (int64_t decade = 1; decade <= max_model_len; decade *= 10)
    for (int64_t m : {1, 2, 5})
      if (m * decade <= max_model_len)
        buckets.push_back(static_cast<double>(m * decade));
  return buckets;
}

} // namespace strata::runtime::serve
