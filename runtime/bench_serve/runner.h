//===- runner.h - send a serving benchmark's requests ----------------------===//
//
// Part of strata. Sends prompts to an OpenAI-compatible server the way
// `vllm bench serve` does: every request streamed (SSE) with
// `stream_options.include_usage`, arrivals Poisson at --request-rate (or all
// at once for inf), at most --max-concurrency in flight, and times each one
// (metrics.h). HTTP through cpp-httplib's client, as strata-eval.
//
// Requests run on `workers` threads, each taking the next prompt in order
// and waiting for its arrival time, so a request starts at the later of its
// arrival and a free slot (vLLM's semaphore). A request ends with the
// stream's [DONE], a transport error, an HTTP error (the server's message is
// kept), an error event, or its deadline (--request-timeout, counted from
// the send, so a server that only sends keep-alives cannot hang the run).
//
// Thread-safety: runBenchmark blocks and shares nothing between calls.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_SERVE_RUNNER_H
#define STRATA_RUNTIME_BENCH_SERVE_RUNNER_H

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/bench_serve/dataset.h"
#include "runtime/bench_serve/metrics.h"

namespace strata::runtime::bench_serve {

/// How to send. Zero-initialized fields take the defaults in comments.
struct RunOptions {
  /// Server base URL, e.g. http://127.0.0.1:8000. Required.
  std::string base_url;
  /// "/v1/completions" (default) or "/v1/chat/completions".
  std::string endpoint = "/v1/completions";
  /// "model" of the requests. Required (resolveModel finds the served one).
  std::string model;
  /// Requests per second (Poisson arrivals); infinity: all at once.
  double request_rate = std::numeric_limits<double>::infinity();
  /// Most requests in flight; 0: no limit.
  size_t max_concurrency = 0;
  /// "ignore_eos": true in every request (fixed output lengths).
  bool ignore_eos = false;
  /// Sampling temperature of the requests (default 0: greedy).
  double temperature = 0;
  /// Seconds one request may take in all (default 600).
  double request_timeout = 600;
  /// Seed of the arrival times.
  uint64_t seed = 0;
  /// Progress lines on stderr every this many seconds; 0: none.
  double progress_interval = 1;
  /// Prefix of the progress lines, e.g. "c=32".
  std::string label;
};

/// One run.
struct RunResult {
  std::vector<RequestRecord> records;
  double duration = 0;
  BenchMetrics metrics;
  /// Set when the run stopped early (a failed warm-up): the records hold
  /// what was done.
  Status error;
  /// What the server's Prometheus /metrics counted during the measured run
  /// (after minus before; empty when it has no /metrics):
  /// strata_prompt_tokens_total, strata_generation_tokens_total,
  /// strata_step_time_seconds_sum / _count, strata_mtp_draft_tokens_total,
  /// strata_mtp_accepted_tokens_total, and per draft position k
  /// strata_mtp_{draft,accepted}_tokens_by_position_total{position="k"}
  /// (metric names as strata-serve's).
  std::map<std::string, double> server_metrics;
};

/// The counters of `text` (Prometheus exposition) named in
/// RunResult::server_metrics, labelled series summed. Unknown lines are
/// skipped.
std::map<std::string, double> parseServerMetrics(const std::string &text);

/// The id of the first model the server lists at GET /v1/models.
/// UNAVAILABLE naming the URL and the transport error or HTTP status when
/// the server cannot be reached or answers wrongly.
StatusOr<std::string> resolveModel(const std::string &base_url,
                                   double timeout_seconds);

/// Sends `warmups` (not measured; a failure stops the benchmark), then
/// `prompts`, and measures those. Returns INVALID_ARGUMENT for bad options;
/// a run that starts always returns a RunResult (with `error` set when it
/// stopped early).
StatusOr<RunResult> runBenchmark(const RunOptions &options,
                                 const std::vector<BenchPrompt> &prompts,
                                 const std::vector<BenchPrompt> &warmups = {});

/// The JSON body of one request (exposed for tests).
std::string requestBody(const RunOptions &options, const BenchPrompt &prompt);

/// Feeds server-sent-event bytes and collects what a benchmark needs:
/// text chunks with their arrival times, usage, an error event, [DONE].
class SseParser {
public:
  /// Adds `data` received at `now` seconds. Returns false once the stream
  /// is malformed (the error names what).
  bool feed(std::string_view data, double now);
  /// Arrival times of the chunks that carried text.
  const std::vector<double> &textTimes() const { return text_times_; }
  /// usage.prompt_tokens / completion_tokens (-1 when not reported).
  int64_t promptTokens() const { return prompt_tokens_; }
  int64_t completionTokens() const { return completion_tokens_; }
  /// Chunks with text (the output token count without usage).
  size_t textChunks() const { return text_times_.size(); }
  bool done() const { return done_; }
  /// An error event's message or a malformed stream; empty when none.
  const std::string &error() const { return error_; }

private:
  void event(std::string_view payload, double now);
  std::string buffer_;
  std::vector<double> text_times_;
  int64_t prompt_tokens_ = -1, completion_tokens_ = -1;
  bool done_ = false;
  std::string error_;
};

} // namespace strata::runtime::bench_serve

#endif // STRATA_RUNTIME_BENCH_SERVE_RUNNER_H
