//===- server.cpp - the OpenAI-compatible HTTP server -----------------------===//
//
// Part of strata. HTTP through cpp-httplib (Debian libcpp-httplib-dev; why:
// docs/Serving.md): a thread pool runs the handlers, streams use its chunked
// content provider, whose DataSink::write reports a failed write, which is
// how a vanished client is noticed.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/server.h"

#include <chrono>
#include <csignal>
#include <ctime>
#include <deque>

#include <sys/socket.h>

#include <fmt/format.h>
#include <httplib.h>

#include "runtime/serve/text_stream.h"
#include "runtime/tokenizer/glm_chat.h"

namespace strata::runtime::serve {

using nlohmann::json;

namespace {

constexpr const char *kJson = "application/json";
constexpr auto kWaitSlice = std::chrono::milliseconds(50);

const char *const kRoutes[] = {"/v1/completions", "/v1/chat/completions",
                               "/v1/models", "/health", "/metrics"};

std::string routeLabel(const std::string &path) {
  for (const char *r : kRoutes)
    if (path == r)
      return r;
  return "other";
}

void setError(httplib::Response &res, const ApiError &error) {
  res.status = error.http_status;
  res.set_content(errorBody(error), kJson);
}

ApiError serverError(int status, std::string message, std::string code) {
  ApiError e;
  e.http_status = status;
  e.type = "server_error";
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

std::string dumpJson(const json &j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace

/// Events of one request, filled by the engine callback, drained by the
/// handler thread.
struct Server::Channel {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<EngineEvent> events;

  void push(EngineEvent event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(std::move(event));
    }
    cv.notify_one();
  }

  /// Waits up to `timeout` for events and takes them all.
  std::vector<EngineEvent> take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait_for(lock, timeout, [&] { return !events.empty(); });
    std::vector<EngineEvent> out(std::make_move_iterator(events.begin()),
                                 std::make_move_iterator(events.end()));
    events.clear();
    return out;
  }
};

/// A validated, tokenized request.
struct Server::Prepared {
  CompletionRequest request;
  GenerationRequest generation;
  ResponseIds ids;
};

//===----------------------------------------------------------------------===//
// Lifetime
//===----------------------------------------------------------------------===//

StatusOr<std::unique_ptr<Server>>
Server::create(ServerOptions options, std::unique_ptr<Engine> engine,
               std::unique_ptr<const tokenizer::Tokenizer> tokenizer) {
  if (!engine)
    return invalidArgument("server needs an engine");
  if (!tokenizer)
    return invalidArgument("server needs a tokenizer");
  if (options.max_context_tokens <= 0)
    return invalidArgument("max_context_tokens must be positive, got {}",
                           options.max_context_tokens);
  if (options.port < 0 || options.port > 65535)
    return invalidArgument("port must be in [0, 65535], got {}", options.port);
  if (options.host.empty())
    options.host = "127.0.0.1";
  if (options.model_id.empty())
    options.model_id = "strata";
  if (options.max_queue == 0)
    options.max_queue = 64;
  if (options.max_body_bytes == 0)
    options.max_body_bytes = size_t(8) << 20;
  if (options.http_threads == 0)
    options.http_threads = options.max_queue + 8;
  if (options.heartbeat_ms <= 0)
    options.heartbeat_ms = 1000;
  return std::unique_ptr<Server>(
      new Server(std::move(options), std::move(engine), std::move(tokenizer)));
}

Server::Server(ServerOptions options, std::unique_ptr<Engine> engine,
               std::unique_ptr<const tokenizer::Tokenizer> tokenizer)
    : options_(std::move(options)), created_(std::time(nullptr)),
      tokenizer_(std::move(tokenizer)), engine_(std::move(engine)),
      http_(std::make_unique<httplib::Server>()) {
  installRoutes();
}

Server::~Server() { stop(); }

Status Server::start() {
  // A write to a closed socket must fail with EPIPE, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ < 0)
      return unavailable("cannot bind {} on a free port", options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      return unavailable("cannot bind {}:{}", options_.host, options_.port);
    port_ = options_.port;
  }
  // httplib listens with a backlog of 5, which drops connections when many
  // clients connect at once; listen() again on the bound socket raises it.
  if (listen_fd_ >= 0)
    ::listen(listen_fd_, SOMAXCONN);
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  // httplib's stop() does nothing until the accept loop runs, so a stop()
  // right after start() would leave the loop running forever: wait for it.
  for (int ms = 0; ms < 5000 && !http_->is_running(); ++ms)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return okStatus();
}

void Server::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    if (stopped_)
      return;
    stopped_ = true;
  }
  stopping_ = true;
  http_->stop();
  if (listener_.joinable())
    listener_.join();
  // Handlers have returned and cancelled their requests; let the engine
  // deliver the last events before it is destroyed.
  std::unique_lock<std::mutex> lock(drain_mutex_);
  drain_cv_.wait_for(lock, std::chrono::seconds(5),
                     [&] { return in_flight_ == 0; });
}

void Server::releaseSlot() {
  {
    std::lock_guard<std::mutex> lock(drain_mutex_);
    --in_flight_;
  }
  drain_cv_.notify_all();
}

std::string Server::metricsText() const {
  AdmissionState admission{in_flight_.load(), options_.max_queue};
  return renderMetrics(metrics_, admission, engine_->stats());
}

//===----------------------------------------------------------------------===//
// Routes
//===----------------------------------------------------------------------===//

void Server::installRoutes() {
  size_t threads = options_.http_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_timeout(2);
  // httplib's default options add SO_REUSEPORT, with which a second server
  // on a taken port starts silently and shares it; only SO_REUSEADDR here.
  http_->set_socket_options([this](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd_ = sock;
  });

  http_->Get("/health", [this](const httplib::Request &,
                               httplib::Response &res) {
    res.set_content(R"({"status":"ok"})", kJson);
    metrics_.countRequest("/health", 200);
  });
  http_->Get("/v1/models", [this](const httplib::Request &,
                                  httplib::Response &res) {
    json model = {{"id", options_.model_id},
                  {"object", "model"},
                  {"created", created_},
                  {"owned_by", "strata"},
                  {"max_model_len", options_.max_context_tokens}};
    res.set_content(dumpJson({{"object", "list"}, {"data", {model}}}), kJson);
    metrics_.countRequest("/v1/models", 200);
  });
  http_->Get("/metrics", [this](const httplib::Request &,
                                httplib::Response &res) {
    // Counted before rendering, so the answer includes itself.
    metrics_.countRequest("/metrics", 200);
    res.set_content(metricsText(), "text/plain; version=0.0.4");
  });
  http_->Post("/v1/completions", [this](const httplib::Request &req,
                                        httplib::Response &res) {
    handleGenerate(req, res, Endpoint::kCompletions);
  });
  http_->Post("/v1/chat/completions", [this](const httplib::Request &req,
                                             httplib::Response &res) {
    handleGenerate(req, res, Endpoint::kChatCompletions);
  });

  // Every answer >= 400 passes here: ours (body already set) and httplib's
  // own (unknown route 404, body too large 413, malformed HTTP 400), which
  // get an OpenAI-style body.
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request &req, httplib::Response &res) {
    metrics_.countRequest(routeLabel(req.path), res.status);
    if (!res.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e;
    e.http_status = res.status;
    if (res.status == 404) {
      e.message = fmt::format("unknown route: {} {}", req.method, req.path);
      e.code = "not_found";
    } else if (res.status == 413) {
      e.message = fmt::format("request body larger than {} bytes",
                              options_.max_body_bytes);
      e.code = "payload_too_large";
    } else {
      e.message = fmt::format("http error {}", res.status);
    }
    setError(res, e);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http_->set_exception_handler([](const httplib::Request &,
                                  httplib::Response &res, std::exception_ptr) {
    setError(res, serverError(500, "internal error", "internal_error"));
  });
}

//===----------------------------------------------------------------------===//
// Generation
//===----------------------------------------------------------------------===//

bool Server::prepare(const httplib::Request &req, Endpoint endpoint,
                     Prepared &out, ApiError &out_error) {
  std::string param;
  StatusOr<CompletionRequest> parsed =
      parseCompletionRequest(req.body, endpoint, &param);
  if (!parsed.ok()) {
    out_error.message = std::string(parsed.status().message());
    if (!param.empty())
      out_error.param = param;
    return false;
  }
  CompletionRequest &r = out.request = std::move(*parsed);
  if (!r.model.empty() && r.model != options_.model_id) {
    out_error.http_status = 404;
    out_error.message = fmt::format("model \"{}\" does not exist; this server "
                                    "serves \"{}\"",
                                    r.model, options_.model_id);
    out_error.param = "model";
    out_error.code = "model_not_found";
    return false;
  }
  const bool chat = endpoint == Endpoint::kChatCompletions;
  const char *prompt_param = chat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  if (r.prompt_ids) {
    ids = *r.prompt_ids;
    for (size_t i = 0; i < ids.size(); ++i)
      if (size_t(ids[i]) >= tokenizer_->idLimit()) {
        out_error.message = fmt::format(
            "prompt[{}]: token id {} is not in the vocabulary (ids < {})", i,
            ids[i], tokenizer_->idLimit());
        out_error.param = fmt::format("prompt[{}]", i);
        return false;
      }
  } else {
    std::string text;
    if (chat) {
      tokenizer::GlmChatOptions chat_options;
      chat_options.add_generation_prompt = true;
      chat_options.enable_thinking = r.enable_thinking;
      StatusOr<std::string> rendered =
          tokenizer::renderGlmChat(r.messages, chat_options);
      if (!rendered.ok()) {
        out_error.message = fmt::format("messages: {}",
                                        rendered.status().message());
        out_error.param = "messages";
        return false;
      }
      text = std::move(*rendered);
    } else {
      text = options_.completion_prefix + r.prompt;
    }
    StatusOr<std::vector<int32_t>> encoded = tokenizer_->encode(text);
    if (!encoded.ok()) {
      out_error.message = fmt::format("{}: cannot tokenize: {}", prompt_param,
                                      encoded.status().message());
      out_error.param = prompt_param;
      return false;
    }
    ids = std::move(*encoded);
  }
  const int64_t context = options_.max_context_tokens;
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n >= context || (r.max_tokens && n + *r.max_tokens > context)) {
    out_error.message =
        r.max_tokens && n < context
            ? fmt::format("this model's context is {} tokens, but {} prompt "
                          "tokens plus max_tokens {} ask for {}",
                          context, n, *r.max_tokens, n + *r.max_tokens)
            : fmt::format("this model's context is {} tokens, but the prompt "
                          "is {} tokens (at least one token must be left to "
                          "generate)",
                          context, n);
    out_error.param = r.max_tokens && n < context ? "max_tokens" : prompt_param;
    out_error.code = "context_length_exceeded";
    return false;
  }
  out.generation.prompt_ids = std::move(ids);
  SamplingParams &s = out.generation.sampling;
  s.temperature = r.temperature;
  s.top_p = r.top_p;
  s.top_k = r.top_k;
  s.seed = r.seed;
  s.max_tokens = static_cast<int32_t>(r.max_tokens ? *r.max_tokens
                                                   : context - n);
  // ignore_eos: the end-of-sequence ids (the only stop ids the server
  // passes) no longer stop the request; it runs to max_tokens or a stop
  // string.
  if (!r.ignore_eos)
    s.stop_token_ids = options_.stop_token_ids;
  if (r.min_tokens > s.max_tokens) { // Only without max_tokens (parsing checks).
    out_error.message =
        fmt::format("min_tokens {} exceeds the {} tokens the context leaves",
                    r.min_tokens, s.max_tokens);
    out_error.param = "min_tokens";
    return false;
  }
  s.min_tokens = r.min_tokens;
  out.ids.id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl",
                           next_response_id_++);
  out.ids.model = options_.model_id;
  out.ids.created = std::time(nullptr);
  return true;
}

void Server::handleGenerate(const httplib::Request &req,
                            httplib::Response &res, Endpoint endpoint) {
  Prepared prepared;
  ApiError error;
  if (!prepare(req, endpoint, prepared, error)) {
    setError(res, error);
    return;
  }
  // Admission: at most max_queue generation requests at once.
  uint64_t current = in_flight_.load();
  do {
    if (current >= options_.max_queue) {
      setError(res, serverError(
                        503,
                        fmt::format("server busy: {} of {} request slots in "
                                    "use, retry later",
                                    current, options_.max_queue),
                        "server_busy"));
      return;
    }
  } while (!in_flight_.compare_exchange_weak(current, current + 1));
  if (stopping_) {
    releaseSlot();
    setError(res, serverError(503, "server is shutting down", "shutting_down"));
    return;
  }

  auto channel = std::make_shared<Channel>();
  size_t prompt_tokens = prepared.generation.prompt_ids.size();
  StatusOr<RequestId> id = engine_->submit(
      prepared.generation, [this, channel](EngineEvent event) {
        bool finished = event.finished;
        channel->push(std::move(event));
        if (finished)
          releaseSlot();
      });
  if (!id.ok()) {
    releaseSlot();
    StatusCode code = id.status().code();
    std::string message(id.status().message());
    if (code == StatusCode::kResourceExhausted ||
        code == StatusCode::kUnavailable)
      setError(res, serverError(503, message, "server_busy"));
    else if (code == StatusCode::kInvalidArgument) {
      ApiError e;
      e.message = message;
      setError(res, e);
    } else
      setError(res, serverError(500, message, "internal_error"));
    return;
  }
  metrics_.addPromptTokens(prompt_tokens);
  if (prepared.request.stream)
    respondStreaming(res, prepared, std::move(channel), *id);
  else
    respondNonStreaming(res, prepared, std::move(channel), *id);
}

void Server::respondNonStreaming(httplib::Response &res, Prepared &prepared,
                                 std::shared_ptr<Channel> channel,
                                 RequestId id) {
  TextStream text_stream(*tokenizer_, prepared.request.stop);
  std::string text;
  Usage usage{static_cast<int32_t>(prepared.generation.prompt_ids.size()), 0};
  std::optional<FinishReason> finish;
  Status error;
  while (!finish) {
    if (stopping_) {
      engine_->cancel(id);
      metrics_.countCancelled();
      setError(res, serverError(503, "server is shutting down",
                                "shutting_down"));
      return;
    }
    for (EngineEvent &event : channel->take(kWaitSlice)) {
      StatusOr<std::string> delta = text_stream.push(event.token_ids);
      if (!delta.ok()) {
        engine_->cancel(id);
        error = delta.status();
        finish = FinishReason::kError;
        break;
      }
      text += *delta;
      if (text_stream.stopped()) {
        engine_->cancel(id);
        finish = FinishReason::kStop;
        usage.completion_tokens = text_stream.consumedTokens();
        break;
      }
      if (event.finished) {
        finish = event.finish_reason;
        error = event.error;
        usage.completion_tokens = event.completion_tokens;
        StatusOr<std::string> tail = text_stream.finish();
        if (tail.ok())
          text += *tail;
        break;
      }
    }
  }
  metrics_.addGenerationTokens(usage.completion_tokens);
  if (*finish == FinishReason::kError || *finish == FinishReason::kCancelled) {
    std::string message = *finish == FinishReason::kCancelled
                              ? std::string("request cancelled by the engine")
                              : fmt::format("generation failed: {}",
                                            error.message());
    setError(res, serverError(*finish == FinishReason::kCancelled ? 503 : 500,
                              message, "engine_error"));
    return;
  }
  res.set_content(dumpJson(completionResponse(prepared.request.endpoint,
                                              prepared.ids, text, *finish,
                                              usage)),
                  kJson);
  metrics_.countRequest(prepared.request.endpoint == Endpoint::kChatCompletions
                            ? "/v1/chat/completions"
                            : "/v1/completions",
                        200);
}

namespace {

/// State of one streaming response, shared by the content provider and its
/// releaser.
struct StreamState {
  CompletionRequest request;
  ResponseIds ids;
  Usage usage;
  std::unique_ptr<TextStream> text;
  RequestId id = 0;
  bool first = true;
  bool finalized = false;
};

} // namespace

void Server::respondStreaming(httplib::Response &res, Prepared &prepared,
                              std::shared_ptr<Channel> channel,
                              RequestId id) {
  auto state = std::make_shared<StreamState>();
  state->request = std::move(prepared.request);
  state->ids = prepared.ids;
  state->usage.prompt_tokens =
      static_cast<int32_t>(prepared.generation.prompt_ids.size());
  state->text = std::make_unique<TextStream>(*tokenizer_, state->request.stop);
  state->id = id;
  const Endpoint endpoint = state->request.endpoint;
  metrics_.countRequest(endpoint == Endpoint::kChatCompletions
                            ? "/v1/chat/completions"
                            : "/v1/completions",
                        200);
  res.set_header("Cache-Control", "no-cache");

  auto provider = [this, state, channel, endpoint](size_t,
                                                   httplib::DataSink &sink) {
    if (state->finalized)
      return false;
    // Wait for events, in slices so stop() is noticed, up to the heartbeat.
    std::vector<EngineEvent> events;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(options_.heartbeat_ms);
    while (events.empty()) {
      if (stopping_)
        return false; // the releaser cancels the request
      if (std::chrono::steady_clock::now() >= deadline) {
        static const std::string kHeartbeat = ": keep-alive\n\n";
        return sink.write(kHeartbeat.data(), kHeartbeat.size());
      }
      events = channel->take(kWaitSlice);
    }
    std::string out;
    std::optional<FinishReason> finish;
    Status error;
    std::string tail;
    for (EngineEvent &event : events) {
      StatusOr<std::string> delta = state->text->push(event.token_ids);
      if (!delta.ok()) {
        engine_->cancel(state->id);
        finish = FinishReason::kError;
        error = delta.status();
        break;
      }
      if (!delta->empty()) {
        out += sseEvent(streamChunk(endpoint, state->ids, *delta, std::nullopt,
                                    state->first));
        state->first = false;
      }
      if (state->text->stopped()) {
        engine_->cancel(state->id);
        finish = FinishReason::kStop;
        state->usage.completion_tokens = state->text->consumedTokens();
        break;
      }
      if (event.finished) {
        finish = event.finish_reason;
        error = event.error;
        state->usage.completion_tokens = event.completion_tokens;
        StatusOr<std::string> rest = state->text->finish();
        if (rest.ok())
          tail = *rest;
        break;
      }
    }
    if (finish) {
      state->finalized = true;
      metrics_.addGenerationTokens(state->usage.completion_tokens);
      if (*finish == FinishReason::kError ||
          *finish == FinishReason::kCancelled) {
        ApiError e = serverError(
            500,
            *finish == FinishReason::kCancelled
                ? std::string("request cancelled by the engine")
                : fmt::format("generation failed: {}", error.message()),
            "engine_error");
        out += "data: " + errorBody(e) + "\n\n";
      } else {
        out += sseEvent(
            streamChunk(endpoint, state->ids, tail, finish, state->first));
        if (state->request.include_usage)
          out += sseEvent(usageChunk(endpoint, state->ids, state->usage));
      }
      out += sseDone();
    }
    if (!out.empty() && !sink.write(out.data(), out.size()))
      return false; // client gone: the releaser cancels
    if (finish)
      sink.done();
    return true;
  };
  auto releaser = [this, state](bool) {
    if (!state->finalized) {
      state->finalized = true;
      engine_->cancel(state->id);
      metrics_.countCancelled();
    }
  };
  res.set_chunked_content_provider("text/event-stream", std::move(provider),
                                   std::move(releaser));
}

} // namespace strata::runtime::serve
