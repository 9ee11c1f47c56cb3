//===- engine.h - the model engine behind strata-serve ----------------------===//
//
// Part of strata. The one interface between the OpenAI-compatible HTTP server
// (server.h) and whatever generates tokens (the scheduler + executor). The
// server renders and tokenizes prompts, turns generated ids into text,
// enforces stop strings and speaks HTTP; an engine only sees token ids.
//
// Contract (every Engine implementation keeps it; the server relies on it):
//  * submit() takes a request and a callback. On success the request gets an
//    id and the callback is later called with EngineEvents for it: zero or
//    more events with new token ids, then exactly one event with
//    `finished == true`, then never again. The callback may run on any engine
//    thread, even before submit() returns, but never concurrently with itself
//    for the same request; it must not block and must not call back into the
//    engine (the server's callback only pushes into a queue).
//  * submit() fails with RESOURCE_EXHAUSTED or UNAVAILABLE when the engine
//    cannot take more work (HTTP 503), INVALID_ARGUMENT when the request is
//    malformed for this model (HTTP 400, e.g. a token id out of the vocab).
//    A failed submit never calls the callback.
//  * cancel(id) is non-blocking and thread-safe; the request ends soon after
//    with finish_reason kCancelled (unless it had already finished, in which
//    case nothing more happens). Unknown and finished ids are ignored.
//  * stats() is a thread-safe snapshot for /metrics; health() says whether
//    the engine still works (/health).
//  * Ids of stop tokens (SamplingParams::stop_token_ids) end the request with
//    kStop; the stop token is counted in completion_tokens but is not
//    delivered in token_ids.
//
// Ownership: the server owns its Engine (std::unique_ptr) and destroys it
// after the HTTP side has stopped and every request has finished.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_ENGINE_H
#define STRATA_RUNTIME_SERVE_ENGINE_H

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/base/status.h"

namespace strata::runtime::serve {

/// Sampling parameters of one request; zero-initialized fields take the
/// documented default.
struct SamplingParams {
  /// Softmax temperature; 0 means greedy (argmax). Default 1 (OpenAI's).
  double temperature = 1.0;
  /// Nucleus sampling mass in (0, 1]; 1 disables it (default).
  double top_p = 1.0;
  /// Keep the k most likely tokens; 0 disables it (default).
  int32_t top_k = 0;
  /// Seed of the request's sampler; unset: the engine picks one.
  std::optional<uint64_t> seed;
  /// Most tokens to generate (>= 1; the server always sets it).
  int32_t max_tokens = 16;
  /// Token ids that end generation with kStop (end-of-sequence tokens).
  std::vector<int32_t> stop_token_ids;
  /// Stop token ids are not generated before this many tokens (their
  /// logits are masked; vLLM's min_tokens). 0: off.
  int32_t min_tokens = 0;
  /// vLLM's min_p in [0, 1] (0: off), repetition_penalty > 0 (1: off),
  /// OpenAI's presence and frequency penalties in [-2, 2] (0: off), and
  /// logit_bias as (token id, bias in [-100, 100]) pairs
  /// (runtime/sampling/logits_processors.h has the rules).
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  std::vector<std::pair<int32_t, float>> logit_bias;
  /// Log-probabilities per generated token: -1 none, 0 the sampled token's,
  /// n > 0 also the n most likely tokens (raw: before penalties and
  /// temperature, vLLM's default).
  int32_t logprobs = -1;
  /// Log-probabilities of the prompt's tokens (vLLM's prompt_logprobs): -1
  /// none, 0 each prompt token's own from the second on, n > 0 also the n
  /// most likely tokens at each position. The engine then needs every
  /// prompt position's logits: the request takes no prefix-cache hits.
  int32_t prompt_logprobs = -1;
};

/// Log-probabilities of one token (generated, or of the prompt).
struct TokenLogprob {
  double logprob = 0;
  /// The most likely tokens at that position with theirs, best first.
  std::vector<std::pair<int32_t, double>> top;
  /// The token's rank at its position: 1 + the tokens with a higher
  /// log-probability (vLLM's Logprob.rank); 0 when not known.
  int64_t rank = 0;
};

/// One generation request: the prompt as token ids plus sampling.
struct GenerationRequest {
  std::vector<int32_t> prompt_ids;
  SamplingParams sampling;
};

/// Why a request ended.
enum class FinishReason {
  kStop,      // a stop token (or, decided by the server, a stop string)
  kLength,    // max_tokens reached
  kCancelled, // cancel() or server shutdown
  kError,     // engine failure; EngineEvent::error says what
  kToolCalls, // set by the server, never by an engine: the answer is tool
              // calls (chat with tools; OpenAI's "tool_calls")
};

/// OpenAI's spelling of `reason` ("stop", "length", "cancelled", "error",
/// "tool_calls").
std::string_view finishReasonName(FinishReason reason);

/// One delivery to a request's callback.
struct EngineEvent {
  /// Tokens generated since the previous event, in order (several per step
  /// when MTP drafts are accepted). Never holds a stop token.
  std::vector<int32_t> token_ids;
  /// With SamplingParams::logprobs >= 0: one entry per id of token_ids.
  std::vector<TokenLogprob> logprobs;
  /// With SamplingParams::prompt_logprobs >= 0, on one event (the first
  /// with tokens, or the last): one entry per prompt token from the second
  /// on (the first has no context); empty on every other event.
  std::vector<TokenLogprob> prompt_logprobs;
  /// True on the last event of the request.
  bool finished = false;
  /// Set when finished.
  FinishReason finish_reason = FinishReason::kStop;
  /// Set when finished: prompt tokens and generated tokens (stop token
  /// included) of the request.
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  /// Prompt tokens served from the prefix cache (at admission).
  int32_t cached_tokens = 0;
  /// Seconds the request waited in the engine's queue before it first ran;
  /// -1 when not known (not admitted yet, or an engine that does not say).
  double queue_seconds = -1;
  /// Non-OK only with kError.
  Status error;
};

using RequestId = uint64_t;
using EngineCallback = std::function<void(EngineEvent event)>;

/// A fixed-bucket histogram of durations in seconds (Prometheus semantics:
/// bucket i counts observations <= upper_bounds[i]; +Inf is `count`).
struct HistogramSnapshot {
  std::vector<double> upper_bounds; // ascending
  std::vector<uint64_t> bucket_counts; // non-cumulative, same length
  uint64_t count = 0;
  double sum = 0;
};

/// Thread-safe histogram an engine can keep its step times in.
class Histogram {
public:
  /// Default buckets: 1 ms .. 10 s (1, 2.5, 5 per decade).
  Histogram();
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double seconds);
  HistogramSnapshot snapshot() const;

private:
  mutable std::mutex mutex_;
  HistogramSnapshot data_;
};

/// What /metrics shows about the engine. Counters only grow.
struct EngineStats {
  uint64_t queued_requests = 0;  // submitted, not yet scheduled
  uint64_t running_requests = 0; // scheduled, not finished
  uint64_t kv_blocks_in_use = 0;
  uint64_t kv_blocks_total = 0;
  uint64_t prefix_cache_queried_tokens = 0; // prompt tokens looked up
  uint64_t prefix_cache_hit_tokens = 0;     // prompt tokens served from cache
  uint64_t preemptions = 0; // requests preempted (recomputed later)
  uint64_t mtp_draft_tokens = 0;
  uint64_t mtp_accepted_tokens = 0;
  /// Index k-1 holds draft position k (1-based).
  std::vector<uint64_t> mtp_draft_tokens_by_position;
  std::vector<uint64_t> mtp_accepted_tokens_by_position;
  /// MTP verifications with a rejected draft (the accepted tokens re-run).
  uint64_t verify_rollbacks = 0;
  /// Step shapes captured into graphs and steps replayed from them, by step
  /// kind (decode, mtp_verify, mtp_draft).
  std::map<std::string, uint64_t> graph_captures, graph_replays;
  /// Time of one engine step (one batch through the model).
  HistogramSnapshot step_time;
  /// Tokens of one engine step (prompt chunks, decode and verify tokens):
  /// vLLM's iteration_tokens_total.
  HistogramSnapshot iteration_tokens;
};

/// vLLM's iteration_tokens_total buckets (vllm/v1/metrics/loggers.py).
std::vector<double> iterationTokenBuckets();

/// The model engine. See the file comment for the contract.
class Engine {
public:
  virtual ~Engine() = default;

  /// Starts `request`; `callback` receives its events. Returns the id to pass
  /// to cancel().
  virtual StatusOr<RequestId> submit(GenerationRequest request,
                                     EngineCallback callback) = 0;
  /// Asks the engine to end request `id` early.
  virtual void cancel(RequestId id) = 0;
  /// A snapshot of the counters.
  virtual EngineStats stats() const = 0;
  /// OK while the engine can serve; the error that broke it otherwise
  /// (/health answers 503 with it). Thread-safe. Default: always OK.
  virtual Status health() const { return okStatus(); }
};

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_ENGINE_H
