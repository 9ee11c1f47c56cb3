//===- serve_test_server.cpp - strata-serve over the test echo engine -----===//
//
// Part of strata. TEST ONLY: runs runtime/serve's Server on a free port over
// the deterministic echo engine and the byte-level test tokenizer
// (runtime/serve/test_engine.h), prints "listening on port N", and serves
// until its stdin closes, so a client test (test/runtime/serve/) can drive
// real OpenAI clients against the server without a model.
//
//   strata-serve-test-server [--max-queue N] [--step-ms N] [--context N]
//                            [--api-key KEY] [--allowed-origins ORIGIN]
//                            [--echo-last-turn 1] [--drain-ms N]
//                            [--error-token ID]
//
//===----------------------------------------------------------------------===//

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "runtime/serve/server.h"
#include "runtime/serve/test_engine.h"

using namespace strata::runtime;

int main(int argc, char **argv) {
  serve::ServerOptions options;
  options.model_id = "strata-test";
  options.max_context_tokens = 4096;
  options.heartbeat_ms = 100;
  options.reasoning_parser = true;
  options.stop_token_ids = {serve::testing::kTestEndOfText};
  serve::testing::TestEngineOptions engine_options;
  long drain_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--echo-last-turn")
      // The echo starts after the last <|user|> or <|observation|>.
      engine_options.echo_after = value ? std::vector<int32_t>{
                                              serve::testing::kTestEndOfText + 4,
                                              serve::testing::kTestEndOfText + 6}
                                        : std::vector<int32_t>{};
    else if (flag == "--error-token")
      engine_options.error_token = static_cast<int32_t>(value);
    else if (flag == "--drain-ms")
      drain_ms = value;
    else if (flag == "--api-key")
      options.api_key = argv[i + 1];
    else if (flag == "--allowed-origins")
      options.allowed_origins.push_back(argv[i + 1]);
    else if (flag == "--max-queue")
      options.max_queue = size_t(value);
    else if (flag == "--step-ms")
      engine_options.step_delay = std::chrono::milliseconds(value);
    else if (flag == "--context")
      options.max_context_tokens = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto tokenizer =
      tokenizer::Tokenizer::fromJson(serve::testing::testTokenizerJson());
  if (!tokenizer.ok())
    return 1;
  auto server = serve::Server::create(
      options, std::make_unique<serve::testing::TestEngine>(engine_options),
      std::move(*tokenizer));
  if (!server.ok() || !(*server)->start().ok()) {
    std::fprintf(stderr, "cannot start the server\n");
    return 1;
  }
  std::printf("listening on port %d\n", (*server)->port());
  std::fflush(stdout);
  // Serve until stdin reaches EOF (the driving test exited or closed it).
  while (std::getchar() != EOF) {
  }
  // --drain-ms: stdin's end works like strata-serve's SIGTERM with
  // --shutdown-timeout.
  if (drain_ms > 0) {
    bool drained = (*server)->drain(std::chrono::milliseconds(drain_ms));
    std::printf("drained: %s\n", drained ? "yes" : "timeout");
    std::fflush(stdout);
  }
  (*server)->stop();
  return 0;
}
