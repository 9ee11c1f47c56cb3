//===- runner_test.cpp - tests of the SSE parser and request bodies -------===//

#include "runtime/bench_serve/runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata::runtime::bench_serve {
namespace {

using ::testing::HasSubstr;

// Tests that events split anywhere are reassembled, comments and empty
// chunks are skipped, text chunks are timed at their arrival, and usage and
// [DONE] are read (completions and chat shapes).
TEST(BenchServeSseTest, ParsesSplitStreams) {
  std::string stream =
      ": keep-alive\n\n"
      "data: {\"choices\":[{\"index\":0,\"text\":\"Hel\"}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
      "\"completion_tokens\":3,\"total_tokens\":8}}\n\n"
      "data: [DONE]\n\n";
  SseParser sse;
  // One byte at a time: chunk k arrives at time k.
  for (size_t i = 0; i < stream.size(); ++i)
    ASSERT_TRUE(sse.feed(stream.substr(i, 1), double(i)));
  EXPECT_TRUE(sse.done());
  EXPECT_TRUE(sse.error().empty());
  ASSERT_EQ(sse.textTimes().size(), 2u);
  // Each event is complete when its second newline arrives.
  EXPECT_EQ(sse.textTimes()[0],
            double(stream.find("\n\n", stream.find("Hel")) + 1));
  EXPECT_EQ(sse.promptTokens(), 5);
  EXPECT_EQ(sse.completionTokens(), 3);
}

// Tests that an error event and a malformed event stop the parser.
TEST(BenchServeSseTest, ErrorEvents) {
  SseParser error;
  EXPECT_FALSE(error.feed(
      "data: {\"error\":{\"message\":\"engine failure\",\"type\":\"x\"}}\n\n",
      0));
  EXPECT_EQ(error.error(), "server error event: engine failure");
  SseParser bad;
  EXPECT_FALSE(bad.feed("data: {oops\n\n", 0));
  EXPECT_THAT(bad.error(), HasSubstr("event is not a JSON object: {oops"));
  SseParser none;
  EXPECT_TRUE(none.feed("data: {\"choices\":[]}\n\n", 0));
  EXPECT_FALSE(none.done());
  EXPECT_EQ(none.completionTokens(), -1);
}

// Tests the request bodies: streamed with usage, token-id prompts,
// ignore_eos only when asked, chat messages.
TEST(BenchServeSseTest, RequestBodies) {
  RunOptions o;
  o.model = "m";
  BenchPrompt p;
  p.ids = std::vector<int32_t>{1, 2, 3};
  p.output_tokens = 7;
  auto j = nlohmann::json::parse(requestBody(o, p));
  EXPECT_EQ(j["prompt"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(j["max_tokens"], 7);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_FALSE(j.contains("ignore_eos"));
  o.ignore_eos = true;
  o.endpoint = "/v1/chat/completions";
  p.text = "hi";
  j = nlohmann::json::parse(requestBody(o, p));
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_EQ(j["messages"][0]["content"], "hi");
  EXPECT_FALSE(j.contains("prompt"));
}

// Tests that the server counters are read from Prometheus text, labelled
// series summed (those by draft position or step kind kept apart; one whose
// labels do not close is skipped) and other metrics skipped.
TEST(BenchServeSseTest, ServerMetrics) {
  auto m = parseServerMetrics(
      "# HELP strata_prompt_tokens_total Prompt tokens.\n"
      "# TYPE strata_prompt_tokens_total counter\n"
      "strata_prompt_tokens_total 120\n"
      "strata_generation_tokens_total 64\n"
      "strata_step_time_seconds_bucket{le=\"0.1\"} 3\n"
      "strata_step_time_seconds_sum 0.25\n"
      "strata_step_time_seconds_count 10\n"
      "strata_mtp_accepted_tokens_total{position=\"1\"} 5\n"
      "strata_mtp_accepted_tokens_total{position=\"2\"} 2\n"
      "strata_mtp_accepted_tokens_by_position_total{position=\"1\"} 5\n"
      "strata_mtp_accepted_tokens_by_position_total{position=\"2\"} 2\n"
      "strata_graph_replays_total{step=\"mtp_verify\"} 4\n"
      "strata_graph_replays_total{step=\"decode\" 9\n"
      "strata_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 9\n");
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(m["strata_graph_replays_total{step=\"mtp_verify\"}"], 4);
  EXPECT_EQ(m["strata_mtp_accepted_tokens_by_position_total{position=\"2\"}"],
            2);
  EXPECT_EQ(m["strata_prompt_tokens_total"], 120);
  EXPECT_EQ(m["strata_generation_tokens_total"], 64);
  EXPECT_EQ(m["strata_step_time_seconds_sum"], 0.25);
  EXPECT_EQ(m["strata_step_time_seconds_count"], 10);
  EXPECT_EQ(m["strata_mtp_accepted_tokens_total"], 7);
  EXPECT_TRUE(parseServerMetrics("garbage\n{}\n").empty());
}

} // namespace
} // namespace strata::runtime::bench_serve
