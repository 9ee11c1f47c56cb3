//===- server.h - the OpenAI-compatible HTTP server -------------------------===//
//
// Part of strata. The public API of runtime/serve: an HTTP server (cpp-httplib)
// with the OpenAI routes
//   POST /v1/completions, POST /v1/chat/completions  (streaming and not)
//   GET /v1/models, GET /health, GET /metrics, POST /tokenize, /detokenize
// over an Engine (engine.h). Requests are validated (api.h), chat messages
// rendered with the GLM chat template (tokenizer/glm_chat.h), prompts
// tokenized, checked against the context length, admitted (at most
// `max_queue` generation requests at once, more get 503) and submitted to the
// engine; generated ids become text with stop strings applied
// (text_stream.h). A streaming client that goes away is noticed on the next
// write (a token or a heartbeat comment), a non-streaming one by peeking at
// its socket, and its requests are cancelled in the engine. docs/Serving.md
// describes the behaviour in full.
//
// Ownership: the Server owns the engine and the tokenizer. Lifetime:
// create() -> start() -> (serve) -> stop() (or the destructor). stop()
// cancels what is in flight and waits for the engine to finish it.
// Thread-safety: start/stop from one controlling thread; port(),
// metricsText() and engine() from any thread. Handlers run on the HTTP
// thread pool (`http_threads`).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_SERVER_H
#define STRATA_RUNTIME_SERVE_SERVER_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/serve/api.h"
#include "runtime/serve/engine.h"
#include "runtime/serve/metrics.h"
#include "runtime/tokenizer/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace strata::runtime::serve {

/// max_tokens of a /v1/completions request that gives none (OpenAI's and
/// vLLM's default). Chat requests without one may use the rest of the
/// context, as in vLLM.
inline constexpr int64_t kDefaultCompletionMaxTokens = 16;

/// Zero-initialized fields take the documented default.
struct ServerOptions {
  /// Address to listen on (default "127.0.0.1").
  std::string host;
  /// Port; 0 picks a free one (read it back with Server::port()).
  int port = 0;
  /// Model id of /v1/models and of responses (default "strata"). Requests
  /// naming another model get 404 model_not_found.
  std::string model_id;
  /// Context length: prompt plus generated tokens (required, > 0).
  int64_t max_context_tokens = 0;
  /// Generation requests admitted at once (queued in the engine or running);
  /// more are answered 503. Default 64.
  size_t max_queue = 0;
  /// Largest request body in bytes; larger ones get 413. Default 8 MiB.
  size_t max_body_bytes = 0;
  /// HTTP worker threads. Each admitted request holds one while it runs, so
  /// the default is max_queue + 8 (the extra answer /health, /metrics and
  /// 503s while the queue is full).
  size_t http_threads = 0;
  /// While a stream waits for the engine, a ": keep-alive" comment is sent
  /// after this many milliseconds of silence, so a vanished client is
  /// noticed. Default 1000.
  int heartbeat_ms = 0;
  /// End-of-sequence ids passed to the engine with every request.
  std::vector<int32_t> stop_token_ids;
  /// When non-empty, every /v1/* request must carry
  /// `Authorization: Bearer <api_key>`; others get 401 with an OpenAI error
  /// body (code invalid_api_key). /health and /metrics stay open (as in
  /// vLLM). Default: no key.
  std::string api_key;
  /// GLM reasoning parser (vLLM's --reasoning-parser glm45): in chat
  /// answers, the text between the <think> and </think> tokens is returned
  /// as `reasoning_content` (message and stream deltas), the rest as
  /// `content`. Needs both tokens in the tokenizer. Default false.
  bool reasoning_parser = false;
  /// GLM tool-call parser (vLLM's --tool-call-parser glm45 / glm47): chat
  /// requests with tools and tool_choice other than none get their calls
  /// as tool_calls (tool_parser.h). Off: tools are rendered into the
  /// prompt, calls stay in the content. Default true.
  bool tool_parser = true;
  /// CORS: origins allowed to call the server from a browser ("*" for any);
  /// matching requests get Access-Control-Allow-Origin and OPTIONS
  /// preflights are answered 204. Default none (no CORS headers).
  std::vector<std::string> allowed_origins;
  /// Receives one line per finished generation request (request id, route,
  /// status, tokens, finish reasons, seconds). Optional.
  std::function<void(const std::string &)> log;
  /// Text put before every /v1/completions prompt before tokenization (what
  /// the model's post-processor adds, e.g. "[gMASK]<sop>"). Default none.
  std::string completion_prefix;
};

class Server {
public:
  /// Checks the options; INVALID_ARGUMENT names a bad field.
  static StatusOr<std::unique_ptr<Server>>
  create(ServerOptions options, std::unique_ptr<Engine> engine,
         std::unique_ptr<const tokenizer::Tokenizer> tokenizer);
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  /// Binds and starts serving on a background thread. UNAVAILABLE when the
  /// address cannot be bound.
  Status start();
  /// The bound port (after start()).
  int port() const { return port_; }
  /// Stops accepting, cancels requests in flight and waits (at most a few
  /// seconds) for the engine to finish them. Idempotent.
  void stop();
  /// Graceful shutdown, first half: new generation requests get 503 and
  /// /health 503 from now on; waits up to `timeout` for the requests in
  /// flight to finish (streams end with [DONE] as usual). Returns whether
  /// they all did. Call stop() after it.
  bool drain(std::chrono::milliseconds timeout);

  /// The /metrics text.
  std::string metricsText() const;
  Engine &engine() { return *engine_; }

private:
  struct Channel;
  struct Prepared;
  struct ChoiceState;
  struct StreamState;

  Server(ServerOptions options, std::unique_ptr<Engine> engine,
         std::unique_ptr<const tokenizer::Tokenizer> tokenizer);
  void installRoutes();
  void handleGenerate(const httplib::Request &req, httplib::Response &res,
                      Endpoint endpoint);
  /// vLLM's POST /tokenize ({prompt} or {messages}) and /detokenize.
  void handleTokenize(const httplib::Request &req, httplib::Response &res);
  void handleDetokenize(const httplib::Request &req, httplib::Response &res);
  /// Validates, renders, tokenizes and checks the context; on error fills
  /// `out_error` and returns false.
  bool prepare(const httplib::Request &req, Endpoint endpoint,
               Prepared &out, ApiError &out_error);
  void respondNonStreaming(const httplib::Request &req,
                           httplib::Response &res, Prepared &prepared,
                           std::shared_ptr<Channel> channel,
                           std::shared_ptr<std::vector<ChoiceState>> choices);
  void respondStreaming(httplib::Response &res, Prepared &prepared,
                        std::shared_ptr<Channel> channel,
                        std::shared_ptr<std::vector<ChoiceState>> choices);
  /// Feeds one engine event to its choice: the text that became final goes
  /// to `delta`, log-probabilities of the tokens kept (a stop string drops
  /// the ones after it) to `entries`; a stop string or the engine's last
  /// event finishes the choice.
  void applyEvent(const Prepared &prepared, ChoiceState &choice,
                  EngineEvent &event, std::string &delta,
                  std::string &reasoning_delta,
                  std::vector<LogprobEntry> &entries);
  /// Adds decoded content text to `delta`, through the tool-call parser
  /// when the choice has one (completed calls go to choice.tool_calls).
  void appendContent(const Prepared &prepared, ChoiceState &choice,
                     const std::string &text, std::string &delta);
  /// Token `id`'s text with special tokens kept ("" if it does not decode).
  std::string tokenText(int32_t id) const;
  /// The response's view of one token's log-probabilities.
  LogprobEntry logprobEntry(int32_t token, const TokenLogprob &logprob) const;
  /// echo with logprobs: the entries of choice `index`'s echoed prompt
  /// tokens (the completion prefix's tokens left out: they are not in the
  /// echoed text), top_logprobs cut to the request's logprobs; a prompt's
  /// first token gets a null entry.
  std::vector<LogprobEntry> echoEntries(const Prepared &prepared,
                                        const ChoiceState &choice) const;
  /// vLLM's prompt_logprobs of choice `choice` (promptLogprobsJson).
  nlohmann::json promptLogprobs(const Prepared &prepared,
                                const ChoiceState &choice) const;
  /// Whether `origin` may call the server (allowed_origins).
  bool originAllowed(const std::string &origin) const;
  /// The request log line (ServerOptions::log).
  void logRequest(const Prepared &prepared,
                  const std::vector<ChoiceState> &choices, int status,
                  const Usage &usage) const;
  /// Records a choice's end in the vLLM metrics (e2e latency, finish
  /// reason; "abort" when it never finished). Once per choice.
  void recordFinish(const Prepared &prepared, ChoiceState &choice);
  /// Usage of all choices: each prompt counted once.
  static Usage usageOf(const Prepared &prepared,
                       const std::vector<ChoiceState> &choices);
  void releaseSlot();
  void closeResponse();

  // Declared before engine_ so they outlive engine callbacks run by the
  // engine's destructor.
  ServerOptions options_;
  ServerMetrics metrics_;
  std::atomic<uint64_t> in_flight_{0};
  std::mutex drain_mutex_;
  std::condition_variable drain_cv_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> draining_{false};
  /// Admitted responses not yet fully written (drain waits for them).
  std::atomic<uint64_t> open_responses_{0};
  std::atomic<uint64_t> next_response_id_{1};
  int64_t created_ = 0;
  int port_ = 0;
  int listen_fd_ = -1; // the listening socket, seen in httplib's socket options
  /// Ids of "<think>" and "</think>" (-1: the tokenizer has none).
  int32_t think_start_id_ = -1, think_end_id_ = -1;
  /// The tokens of ServerOptions::completion_prefix, which every text
  /// prompt of /v1/completions starts with.
  std::vector<int32_t> completion_prefix_ids_;

  std::unique_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<httplib::Server> http_;
  std::thread listener_;
  std::mutex stop_mutex_;
  bool stopped_ = false;
};

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_SERVER_H
