//===- test_engine.h - a deterministic Engine for serve tests ---------------===//
//
// Part of strata. TEST ONLY (library strata_serve_test_support, linked by
// the unit tests and test/lib/Serve's strata-serve-test-server, never by
// strata-serve): an Engine that "generates" by echoing the prompt ids
// cyclically (token i = prompt[i % prompt size]), `tokens_per_step` tokens
// per step, one step every `step_delay`, on one engine thread, like a
// batching scheduler would. It keeps the Engine contract (engine.h): queue
// limit -> RESOURCE_EXHAUSTED, stop tokens -> kStop, max_tokens -> kLength,
// cancel -> kCancelled, and records every cancel so tests can check that a
// vanished client was cancelled. Asked for log-probabilities it sends
// synthetic ones (token i of a request: -(i mod 8)/8; top list: the token
// and the ids after it, each 1 lower), so the wire format can be tested.
//
// Also provides the byte-level test tokenizer the serve tests use: one token
// per byte (ids 0..255, no merges) plus GLM's special tokens from id 256, so
// the echo of a prompt decodes to the prompt's text.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_TEST_ENGINE_H
#define STRATA_RUNTIME_SERVE_TEST_ENGINE_H

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/serve/engine.h"

namespace strata::runtime::serve::testing {

struct TestEngineOptions {
  std::chrono::milliseconds step_delay{5};
  /// Requests generating at once; the rest wait (0: no limit).
  size_t max_running = 0;
  /// Requests waiting at most; more are refused with RESOURCE_EXHAUSTED
  /// (0: no limit).
  size_t max_waiting = 0;
  /// Tokens per step; > 1 also counts MTP drafts (tokens_per_step - 1 per
  /// step, all accepted, by position).
  int tokens_per_step = 1;
  /// When non-empty, the echo starts after the last of these ids in the
  /// prompt (e.g. <|user|> and <|observation|>: the echo is then the last
  /// turn, which lets a chat test script the model's answer).
  std::vector<int32_t> echo_after;
  /// A prompt holding this id is refused by submit() with INVALID_ARGUMENT
  /// (-1: none).
  int32_t reject_token = -1;
  /// A prompt holding this id fails with kError after its first token, and
  /// the engine reports itself unhealthy from then on (-1: none).
  int32_t error_token = -1;
};

class TestEngine : public Engine {
public:
  explicit TestEngine(TestEngineOptions options = {});
  ~TestEngine() override;

  StatusOr<RequestId> submit(GenerationRequest request,
                             EngineCallback callback) override;
  void cancel(RequestId id) override;
  EngineStats stats() const override;
  /// Unhealthy once a request failed through error_token.
  Status health() const override;

  /// Requests cancel() was called for (that were still active).
  size_t cancelledCount() const;
  /// Waits until cancel(id) has been called; false on timeout.
  bool waitForCancel(RequestId id, std::chrono::milliseconds timeout) const;
  /// Waits until no request is active; false on timeout.
  bool waitIdle(std::chrono::milliseconds timeout) const;
  /// Ids given out so far.
  RequestId lastId() const;

private:
  struct Active {
    GenerationRequest request;
    EngineCallback callback;
    int32_t generated = 0;
    bool cancelled = false;
    std::chrono::steady_clock::time_point submitted;
    double queue_seconds = -1;
  };
  void loop();

  TestEngineOptions options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::map<RequestId, Active> waiting_, running_;
  std::set<RequestId> cancelled_;
  RequestId next_id_ = 1;
  bool shutdown_ = false;
  EngineStats stats_;
  Status health_;
  Histogram step_time_;
  std::thread thread_;
};

/// tokenizer.json text of the byte-level test tokenizer.
std::string testTokenizerJson();
/// Id of the first special token; "<|endoftext|>" has this id.
constexpr int32_t kTestEndOfText = 256;

} // namespace strata::runtime::serve::testing

#endif // STRATA_RUNTIME_SERVE_TEST_ENGINE_H
