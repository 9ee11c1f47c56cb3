//===- metrics_test.cpp - Prometheus /metrics of strata-serve -------------===//
//
// Part of strata. The rendered text, and that strata-eval's parser reads
// the counters it needs from it (the names are a contract).
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/eval/eval_client.h"

namespace strata::runtime::serve {
namespace {

EngineStats sampleStats() {
  EngineStats s;
  s.queued_requests = 3;
  s.running_requests = 2;
  s.kv_blocks_in_use = 10;
  s.kv_blocks_total = 128;
  s.prefix_cache_queried_tokens = 500;
  s.prefix_cache_hit_tokens = 320;
  s.mtp_draft_tokens = 90;
  s.mtp_accepted_tokens = 60;
  s.mtp_draft_tokens_by_position = {50, 40};
  s.mtp_accepted_tokens_by_position = {40, 20};
  s.verify_rollbacks = 30;
  s.graph_captures = {{"decode", 2}, {"mtp_verify", 1}};
  s.graph_replays = {{"decode", 70}, {"mtp_verify", 44}};
  Histogram h({0.01, 0.1});
  h.observe(0.005);
  h.observe(0.01);
  h.observe(0.05);
  h.observe(3);
  s.step_time = h.snapshot();
  return s;
}

// Tests every line of the exposition for a known state.
TEST(ServeMetrics, Render) {
  ServerMetrics m;
  m.countRequest("/v1/completions", 200);
  m.countRequest("/v1/completions", 200);
  m.countRequest("/v1/chat/completions", 400);
  m.countRequest("other", 404);
  m.addPromptTokens(12);
  m.addGenerationTokens(7);
  m.countCancelled();
  std::string text = renderMetrics(m, AdmissionState{5, 64}, sampleStats());
  for (const char *line : {
           "# TYPE strata_http_requests_total counter",
           "strata_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1",
           "strata_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2",
           "strata_http_requests_total{endpoint=\"other\",status=\"404\"} 1",
           "strata_prompt_tokens_total 12",
           "strata_generation_tokens_total 7",
           "strata_cancelled_requests_total 1",
           "strata_requests_in_flight 5",
           "strata_requests_capacity 64",
           "# TYPE strata_queue_depth gauge",
           "strata_queue_depth 3",
           "strata_running_requests 2",
           "strata_kv_blocks_in_use 10",
           "strata_kv_blocks_total 128",
           "strata_prefix_cache_queried_tokens_total 500",
           "strata_prefix_cache_hit_tokens_total 320",
           "strata_mtp_draft_tokens_total 90",
           "strata_mtp_accepted_tokens_total 60",
           "strata_mtp_draft_tokens_by_position_total{position=\"1\"} 50",
           "strata_mtp_draft_tokens_by_position_total{position=\"2\"} 40",
           "strata_mtp_accepted_tokens_by_position_total{position=\"1\"} 40",
           "strata_mtp_accepted_tokens_by_position_total{position=\"2\"} 20",
           "strata_verify_rollbacks_total 30",
           "# TYPE strata_graph_captures_total counter",
           "strata_graph_captures_total{step=\"decode\"} 2",
           "strata_graph_captures_total{step=\"mtp_verify\"} 1",
           "strata_graph_replays_total{step=\"decode\"} 70",
           "strata_graph_replays_total{step=\"mtp_verify\"} 44",
           "# TYPE strata_step_time_seconds histogram",
           "strata_step_time_seconds_bucket{le=\"0.01\"} 2",
           "strata_step_time_seconds_bucket{le=\"0.1\"} 3",
           "strata_step_time_seconds_bucket{le=\"+Inf\"} 4",
           "strata_step_time_seconds_count 4",
       })
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line;
  double sum = 0;
  for (double x : {0.005, 0.01, 0.05, 3.0})
    sum += x;
  EXPECT_NE(text.find(fmt::format("strata_step_time_seconds_sum {}\n", sum)),
            std::string::npos);
  // Every non-comment line is `name[{labels}] value`.
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    ASSERT_NE(end, std::string::npos);
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("# ", 0) == 0)
      continue;
    EXPECT_NE(line.find(' '), std::string::npos) << line;
    EXPECT_TRUE(line.rfind("strata_", 0) == 0 || line.rfind("vllm:", 0) == 0)
        << line;
  }
}

// Tests vLLM's names: the model_name label, KV usage as a fraction, the
// request histograms with vLLM's buckets, success by finish reason.
TEST(ServeMetrics, VllmNames) {
  ServerMetrics m;
  m.observeTtft(0.03);
  m.observeItl(0.02);
  m.observeE2e(1.2);
  m.observeQueue(0.1);
  m.countFinished("stop");
  m.countFinished("stop");
  m.countFinished("abort");
  EngineStats stats = sampleStats();
  stats.preemptions = 4;
  std::string text = renderMetrics(m, AdmissionState{}, stats, "glm");
  const std::string l = "model_name=\"glm\",engine=\"0\"";
  for (std::string line : {
           "vllm:num_requests_running{" + l + "} 2",
           "vllm:num_requests_waiting{" + l + "} 3",
           "vllm:kv_cache_usage_perc{" + l + "} 0.078125",
           "vllm:prefix_cache_queries_total{" + l + "} 500",
           "vllm:prefix_cache_hits_total{" + l + "} 320",
           "vllm:num_preemptions_total{" + l + "} 4",
           "vllm:request_success_total{" + l + ",finished_reason=\"stop\"} 2",
           "vllm:request_success_total{" + l + ",finished_reason=\"abort\"} 1",
           "vllm:request_success_total{" + l + ",finished_reason=\"length\"} 0",
           "vllm:time_to_first_token_seconds_bucket{" + l + ",le=\"0.02\"} 0",
           "vllm:time_to_first_token_seconds_bucket{" + l + ",le=\"0.04\"} 1",
           "vllm:time_to_first_token_seconds_bucket{" + l + ",le=\"2560\"} 1",
           "vllm:inter_token_latency_seconds_bucket{" + l + ",le=\"0.025\"} 1",
           "vllm:e2e_request_latency_seconds_bucket{" + l + ",le=\"1\"} 0",
           "vllm:e2e_request_latency_seconds_bucket{" + l + ",le=\"1.5\"} 1",
           "vllm:request_queue_time_seconds_count{" + l + "} 1",
           "vllm:spec_decode_num_drafts_total{" + l + "} 50",
           "vllm:spec_decode_num_accepted_tokens_per_pos{" + l + ",position=\"1\"} 20",
       })
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line;
}

// Tests vLLM's request-phase and token histograms: prefill / decode /
// inference seconds on the latency buckets, prompt and generation tokens on
// 1-2-5 buckets up to the model length, tokens per engine step on vLLM's
// iteration buckets.
TEST(ServeMetrics, VllmPhaseAndTokenHistograms) {
  EXPECT_EQ(ServerMetrics::tokenBuckets(1000),
            (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(ServerMetrics::tokenBuckets(4096).back(), 2000);
  ServerMetrics m(4096);
  m.observePhases(0.2, 3.0, 3.2);
  m.observeRequestTokens(37, 16);
  m.observeRequestTokens(4000, 1);
  EngineStats stats = sampleStats();
  Histogram iteration(iterationTokenBuckets());
  for (double tokens : {1.0, 8.0, 9.0, 2048.0})
    iteration.observe(tokens);
  stats.iteration_tokens = iteration.snapshot();
  std::string text = renderMetrics(m, AdmissionState{}, stats, "glm");
  const std::string l = "model_name=\"glm\",engine=\"0\"";
  for (std::string line : {
           "vllm:request_prefill_time_seconds_bucket{" + l + ",le=\"0.3\"} 1",
           "vllm:request_decode_time_seconds_bucket{" + l + ",le=\"2.5\"} 0",
           "vllm:request_decode_time_seconds_bucket{" + l + ",le=\"5\"} 1",
           "vllm:request_inference_time_seconds_sum{" + l + "} 3.2",
           "vllm:request_prompt_tokens_bucket{" + l + ",le=\"50\"} 1",
           "vllm:request_prompt_tokens_bucket{" + l + ",le=\"2000\"} 1",
           "vllm:request_prompt_tokens_bucket{" + l + ",le=\"+Inf\"} 2",
           "vllm:request_generation_tokens_bucket{" + l + ",le=\"1\"} 1",
           "vllm:request_generation_tokens_bucket{" + l + ",le=\"20\"} 2",
           "vllm:iteration_tokens_total_bucket{" + l + ",le=\"1\"} 1",
           "vllm:iteration_tokens_total_bucket{" + l + ",le=\"8\"} 2",
           "vllm:iteration_tokens_total_bucket{" + l + ",le=\"16\"} 3",
           "vllm:iteration_tokens_total_bucket{" + l + ",le=\"2048\"} 4",
           "vllm:iteration_tokens_total_count{" + l + "} 4",
       })
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line;
}

// Tests that strata-eval's parser finds the prefix-cache and MTP counters.
TEST(ServeMetrics, ReadByStrataEval) {
  ServerMetrics m;
  std::string text = renderMetrics(m, AdmissionState{}, sampleStats());
  StatusOr<eval::ServerCounters> c = eval::parseServerCounters(text);
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->prefixQueriedTokens, 500);
  EXPECT_EQ(c->prefixHitTokens, 320);
  EXPECT_EQ(c->mtpDraftTokens, 90);
  EXPECT_EQ(c->mtpAcceptedTokens, 60);
  EXPECT_EQ(c->mtpDraftByPosition, (std::map<int, double>{{1, 50}, {2, 40}}));
  EXPECT_EQ(c->mtpAcceptedByPosition, (std::map<int, double>{{1, 40}, {2, 20}}));
}

// Tests histogram bucketing: upper bounds are inclusive, larger values only
// count in +Inf.
TEST(ServeMetrics, Histogram) {
  Histogram h({1, 2});
  h.observe(1);
  h.observe(1.5);
  h.observe(2.5);
  HistogramSnapshot s = h.snapshot();
  EXPECT_EQ(s.bucket_counts, (std::vector<uint64_t>{1, 1}));
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.sum, 5.0);
  EXPECT_EQ(Histogram().snapshot().upper_bounds.size(), 13u);
}

} // namespace
} // namespace strata::runtime::serve
