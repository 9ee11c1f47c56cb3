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

#include <cerrno>
#include <cstdlib>

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <fmt/format.h>
#include <httplib.h>

#include "runtime/serve/text_stream.h"
#include "runtime/serve/tool_parser.h"
#include "runtime/tokenizer/glm_chat.h"

namespace strata::runtime::serve {

using nlohmann::json;

namespace {

constexpr const char *kJson = "application/json";
constexpr auto kWaitSlice = std::chrono::milliseconds(50);

const char *const kRoutes[] = {"/v1/completions", "/v1/chat/completions",
                               "/v1/models",      "/health",
                               "/metrics",        "/tokenize",
                               "/detokenize"};

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

/// How often a non-streaming request checks that its client is still there.
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(250);

/// "host:port" of a socket address, numerically; "" on failure.
std::string addressOf(const sockaddr_storage &addr, socklen_t len) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr *>(&addr), len, host,
                  sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "";
  return std::string(host) + ":" + port;
}

/// The socket a request arrived on: the descriptor whose peer and local
/// addresses are the request's (httplib 0.11 does not hand the socket to
/// handlers). -1 when none matches. The descriptor stays valid while the
/// handler runs: httplib closes it only after the handler returns.
int connectionSocket(const httplib::Request &req) {
  const std::string peer =
      req.remote_addr + ":" + std::to_string(req.remote_port);
  const std::string local =
      req.local_addr + ":" + std::to_string(req.local_port);
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return -1;
  int found = -1;
  while (dirent *entry = readdir(dir)) {
    char *end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    struct stat st;
    if (!end || *end != '\0' || fd == dirfd(dir) ||
        fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&addr),
                    &len) != 0 ||
        addressOf(addr, len) != peer)
      continue;
    len = sizeof addr;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&addr),
                    &len) != 0 ||
        addressOf(addr, len) != local)
      continue;
    found = static_cast<int>(fd);
    break;
  }
  closedir(dir);
  return found;
}

/// Whether the peer of `fd` closed the connection (end of stream or a
/// reset), without consuming anything. A client that only half-closes its
/// sending side after the request would count as gone; HTTP clients do not
/// do that.
bool peerClosed(int fd) {
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 ||
         (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/// The client's X-Request-Id when it is usable (1..128 printable ASCII
/// characters), else "".
std::string requestIdOf(const httplib::Request &req) {
  std::string id = req.get_header_value("X-Request-Id");
  if (id.empty() || id.size() > 128)
    return "";
  for (char c : id)
    if (c < 0x21 || c > 0x7e)
      return "";
  return id;
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

/// Events of one HTTP request's engine requests (one per choice), filled by
/// the engine callbacks, drained by the handler thread.
struct Server::Channel {
  struct Tagged {
    size_t choice;
    EngineEvent event;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Tagged> events;

  void push(size_t choice, EngineEvent event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back({choice, std::move(event)});
    }
    cv.notify_one();
  }

  /// Waits up to `timeout` for events and takes them all.
  std::vector<Tagged> take(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait_for(lock, timeout, [&] { return !events.empty(); });
    std::vector<Tagged> out(std::make_move_iterator(events.begin()),
                            std::make_move_iterator(events.end()));
    events.clear();
    return out;
  }
};

/// A validated, tokenized request: one engine request per choice.
struct Server::Prepared {
  CompletionRequest request;
  /// Choice i (OpenAI's index) is generations[i], for prompt
  /// prompt_of_choice[i].
  std::vector<GenerationRequest> generations;
  std::vector<size_t> prompt_of_choice;
  /// Per prompt: its text (echo), token count and how many of its first
  /// tokens are the completion prefix (not in the text).
  std::vector<std::string> prompt_texts;
  std::vector<int32_t> prompt_sizes;
  std::vector<size_t> prefix_tokens;
  ResponseIds ids;
  /// Chat with tool_choice required / named: the text the assistant turn
  /// was prefilled with ("<tool_call>" or "<tool_call>NAME\n").
  std::string tool_prefill;
  /// X-Request-Id (the client's, else ids.id) and the arrival time.
  std::string request_id;
  std::chrono::steady_clock::time_point start;
};

/// The server's view of one choice while it generates.
struct Server::ChoiceState {
  std::unique_ptr<TextStream> text;
  /// With the reasoning parser (chat): the reasoning's text, whether the
  /// ids now go to it, and the ids it took (the markers included).
  std::unique_ptr<TextStream> reasoning;
  bool in_reasoning = false;
  int32_t reasoning_tokens = 0;
  std::string out_reasoning;
  /// With tools (tool_choice other than none): the call parser and the
  /// calls found, as response JSON.
  std::unique_ptr<GlmToolParser> tools;
  json tool_calls = json::array();
  size_t tool_calls_sent = 0; // streaming
  /// OpenAI's choice index.
  size_t index = 0;
  RequestId id = 0;
  bool finished = false;
  FinishReason finish = FinishReason::kStop;
  Status error;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  /// Ids delivered so far (completion_tokens while running).
  int32_t generated = 0;
  /// Metrics: the last token delivery, whether the queue time and the end
  /// were recorded; when the scheduler first admitted the request and when
  /// its first token came (vLLM's prefill / decode / inference phases).
  std::chrono::steady_clock::time_point last_token;
  std::optional<std::chrono::steady_clock::time_point> admitted, first_token;
  bool queue_observed = false;
  bool end_recorded = false;
  /// Non-streaming: the text and log-probabilities so far.
  std::string out_text;
  std::vector<LogprobEntry> logprobs;
  /// The prompt's log-probabilities (SamplingParams::prompt_logprobs), one
  /// per prompt token from the second on, once the engine sent them.
  std::vector<TokenLogprob> prompt_logprobs;
  /// Streaming: no chunk sent yet; offset of the next token's text.
  bool first = true;
  size_t text_offset = 0;
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
    : options_(std::move(options)), metrics_(options_.max_context_tokens),
      created_(std::time(nullptr)), tokenizer_(std::move(tokenizer)),
      engine_(std::move(engine)),
      http_(std::make_unique<httplib::Server>()) {
  std::optional<int32_t> start = tokenizer_->tokenToId("<think>");
  std::optional<int32_t> end = tokenizer_->tokenToId("</think>");
  if (start && end) {
    think_start_id_ = *start;
    think_end_id_ = *end;
  }
  if (!options_.completion_prefix.empty()) {
    StatusOr<std::vector<int32_t>> prefix =
        tokenizer_->encode(options_.completion_prefix);
    if (prefix.ok())
      completion_prefix_ids_ = std::move(*prefix);
  }
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

bool Server::drain(std::chrono::milliseconds timeout) {
  draining_ = true;
  // Done when the engine has finished every request and every response has
  // been written (a stream's releaser runs after its [DONE]).
  std::unique_lock<std::mutex> lock(drain_mutex_);
  return drain_cv_.wait_for(lock, timeout, [&] {
    return in_flight_ == 0 && open_responses_ == 0;
  });
}

void Server::closeResponse() {
  {
    std::lock_guard<std::mutex> lock(drain_mutex_);
    --open_responses_;
  }
  drain_cv_.notify_all();
}

void Server::handleTokenize(const httplib::Request &req,
                            httplib::Response &res) {
  json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  ApiError e;
  if (!j.is_object()) {
    e.message = "request body must be a JSON object";
    setError(res, e);
    return;
  }
  std::string text;
  for (auto &[key, value] : j.items()) {
    if (key == "model" || key == "add_generation_prompt" ||
        key == "add_special_tokens" || key == "prompt" || key == "messages")
      continue;
    e.message = key + ": unknown field";
    e.param = key;
    setError(res, e);
    return;
  }
  if (j.contains("prompt") == j.contains("messages")) {
    e.message = "exactly one of prompt and messages is required";
    setError(res, e);
    return;
  }
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string()) {
      e.message = "prompt: expected a string";
      e.param = "prompt";
      setError(res, e);
      return;
    }
    // add_special_tokens (default true): the completions prefix, as
    // /v1/completions adds it.
    bool special = j.value("add_special_tokens", true);
    text = (special ? options_.completion_prefix : std::string()) +
           j["prompt"].get<std::string>();
  } else {
    json body = {{"messages", j["messages"]}};
    std::string param;
    StatusOr<CompletionRequest> parsed = parseCompletionRequest(
        body.dump(), Endpoint::kChatCompletions, &param);
    if (!parsed.ok()) {
      e.message = std::string(parsed.status().message());
      e.param = param;
      setError(res, e);
      return;
    }
    tokenizer::GlmChatOptions chat_options;
    chat_options.add_generation_prompt = j.value("add_generation_prompt", true);
    StatusOr<std::string> rendered =
        tokenizer::renderGlmChat(parsed->messages, chat_options);
    if (!rendered.ok()) {
      e.message = fmt::format("messages: {}", rendered.status().message());
      e.param = "messages";
      setError(res, e);
      return;
    }
    text = std::move(*rendered);
  }
  StatusOr<std::vector<int32_t>> ids = tokenizer_->encode(text);
  if (!ids.ok()) {
    e.message = fmt::format("cannot tokenize: {}", ids.status().message());
    setError(res, e);
    return;
  }
  res.set_content(dumpJson({{"count", ids->size()},
                            {"max_model_len", options_.max_context_tokens},
                            {"tokens", *ids}}),
                  kJson);
  metrics_.countRequest("/tokenize", 200);
}

void Server::handleDetokenize(const httplib::Request &req,
                              httplib::Response &res) {
  json j = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  ApiError e;
  e.param = "tokens";
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
    e.message = "tokens: expected an array of token ids";
    setError(res, e);
    return;
  }
  std::vector<int32_t> ids;
  for (const json &id : j["tokens"]) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() >= int64_t(tokenizer_->idLimit())) {
      e.message = fmt::format("tokens: {} is not a token id (ids < {})",
                              id.dump(), tokenizer_->idLimit());
      setError(res, e);
      return;
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  StatusOr<std::string> text = tokenizer_->decode(ids);
  if (!text.ok()) {
    e.message = fmt::format("cannot detokenize: {}", text.status().message());
    setError(res, e);
    return;
  }
  res.set_content(dumpJson({{"prompt", *text}}), kJson);
  metrics_.countRequest("/detokenize", 200);
}

bool Server::originAllowed(const std::string &origin) const {
  for (const std::string &allowed : options_.allowed_origins)
    if (allowed == "*" || allowed == origin)
      return !origin.empty();
  return false;
}

void Server::logRequest(const Prepared &prepared,
                        const std::vector<ChoiceState> &choices, int status,
                        const Usage &usage) const {
  if (!options_.log)
    return;
  std::string finishes;
  for (const ChoiceState &c : choices)
    finishes += (finishes.empty() ? "" : ",") +
                std::string(c.finished ? finishReasonName(c.finish)
                                       : std::string_view("cancelled"));
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - prepared.start)
                       .count();
  options_.log(fmt::format(
      "request {} {} status {} choices {} prompt_tokens {} cached_tokens {} "
      "completion_tokens {} finish {} stream {} seconds {:.3f}",
      prepared.request_id,
      prepared.request.endpoint == Endpoint::kChatCompletions
          ? "/v1/chat/completions"
          : "/v1/completions",
      status, choices.size(), usage.prompt_tokens, usage.cached_tokens,
      usage.completion_tokens, finishes, prepared.request.stream, seconds));
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
  return renderMetrics(metrics_, admission, engine_->stats(),
                       options_.model_id);
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
  // TCP_NODELAY (inherited by the accepted sockets): a streamed chunk is
  // several small writes, which Nagle's algorithm would hold until the
  // client's delayed ACK (~40 ms) of the previous one.
  http_->set_tcp_nodelay(true);
  http_->set_socket_options([this](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    listen_fd_ = sock;
  });

  // Authentication: /v1/* needs the API key when one is set. The
  // comparison looks at every byte whatever the mismatch (no early exit).
  if (!options_.api_key.empty())
    http_->set_pre_routing_handler([this](const httplib::Request &req,
                                          httplib::Response &res) {
      // CORS preflights carry no credentials (browsers never send them).
      if (req.path.rfind("/v1/", 0) != 0 || req.method == "OPTIONS")
        return httplib::Server::HandlerResponse::Unhandled;
      const std::string expected = "Bearer " + options_.api_key;
      const std::string given = req.get_header_value("Authorization");
      unsigned char diff = given.size() != expected.size();
      for (size_t i = 0; i < expected.size(); ++i)
        diff |= static_cast<unsigned char>(
            (i < given.size() ? given[i] : 0) ^ expected[i]);
      if (diff == 0)
        return httplib::Server::HandlerResponse::Unhandled;
      ApiError e;
      e.http_status = 401;
      e.message = given.empty()
                      ? std::string("missing API key: send the header "
                                    "'Authorization: Bearer <key>'")
                      : std::string("incorrect API key provided");
      e.code = "invalid_api_key";
      setError(res, e);
      metrics_.countRequest(routeLabel(req.path), 401);
      return httplib::Server::HandlerResponse::Handled;
    });

  // X-Request-Id: a client's id is returned on every answer; generation
  // requests without one get theirs (handleGenerate). CORS headers for
  // allowed origins.
  http_->set_post_routing_handler([this](const httplib::Request &req,
                                         httplib::Response &res) {
    if (!res.has_header("X-Request-Id")) {
      std::string id = requestIdOf(req);
      if (!id.empty())
        res.set_header("X-Request-Id", id);
    }
    std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && originAllowed(origin)) {
      res.set_header("Access-Control-Allow-Origin",
                     originAllowed("*") ? std::string("*") : origin);
      res.set_header("Vary", "Origin");
    }
  });
  if (!options_.allowed_origins.empty())
    http_->Options(".*", [this](const httplib::Request &req,
                                httplib::Response &res) {
      res.status = 204;
      if (originAllowed(req.get_header_value("Origin"))) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers",
                       "Authorization, Content-Type, X-Request-Id");
        res.set_header("Access-Control-Max-Age", "600");
      }
    });

  // /health: 503 while draining (--shutdown-timeout) or once the engine
  // has failed, so a load balancer takes the server out.
  http_->Get("/health", [this](const httplib::Request &,
                               httplib::Response &res) {
    Status health = engine_->health();
    if (draining_ || !health.ok()) {
      res.status = 503;
      res.set_content(
          dumpJson({{"status", draining_ ? "draining" : "unhealthy"},
                    {"error", draining_ ? std::string("server is shutting "
                                                      "down")
                                        : std::string(health.message())}}),
          kJson);
      metrics_.countRequest("/health", 503);
      return;
    }
    res.set_content(R"({"status":"ok"})", kJson);
    metrics_.countRequest("/health", 200);
  });
  // vLLM's /tokenize and /detokenize.
  http_->Post("/tokenize", [this](const httplib::Request &req,
                                  httplib::Response &res) {
    handleTokenize(req, res);
  });
  http_->Post("/detokenize", [this](const httplib::Request &req,
                                    httplib::Response &res) {
    handleDetokenize(req, res);
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
  const size_t id_limit = tokenizer_->idLimit();
  auto outOfVocab = [&](const std::string &at, int32_t id) {
    out_error.message = fmt::format(
        "{}: token id {} is not in the vocabulary (ids < {})", at, id,
        id_limit);
    out_error.param = at;
    return false;
  };
  for (const auto &[id, bias] : r.logit_bias)
    if (size_t(id) >= id_limit)
      return outOfVocab(fmt::format("logit_bias.{}", id), id);
  for (size_t i = 0; i < r.stop_token_ids.size(); ++i)
    if (size_t(r.stop_token_ids[i]) >= id_limit)
      return outOfVocab(fmt::format("stop_token_ids[{}]", i),
                        r.stop_token_ids[i]);

  // Prompts as token ids (chat: one, the rendered conversation).
  std::vector<std::vector<int32_t>> prompts;
  if (chat) {
    tokenizer::GlmChatOptions chat_options;
    chat_options.add_generation_prompt = true;
    chat_options.enable_thinking = r.enable_thinking;
    chat_options.tools_json = r.tools_json;
    StatusOr<std::string> rendered =
        tokenizer::renderGlmChat(r.messages, chat_options);
    if (!rendered.ok()) {
      out_error.message =
          fmt::format("messages: {}", rendered.status().message());
      out_error.param = "messages";
      return false;
    }
    // tool_choice required / named: the answer starts inside a call (no
    // thinking first), so the model has to write one.
    if (r.tool_choice == ToolChoice::kRequired ||
        r.tool_choice == ToolChoice::kNamed) {
      out.tool_prefill = "<tool_call>";
      if (r.tool_choice == ToolChoice::kNamed)
        out.tool_prefill += r.tool_choice_name + "\n";
      if (r.enable_thinking.value_or(true))
        *rendered += "\n<think></think>";
      *rendered += "\n" + out.tool_prefill;
    }
    StatusOr<std::vector<int32_t>> encoded = tokenizer_->encode(*rendered);
    if (!encoded.ok()) {
      out_error.message = fmt::format("messages: cannot tokenize: {}",
                                      encoded.status().message());
      out_error.param = "messages";
      return false;
    }
    prompts.push_back(std::move(*encoded));
    out.prompt_texts.push_back("");
    out.prefix_tokens.push_back(0);
  }
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    const PromptInput &in = r.prompts[p];
    std::string at = r.prompts.size() > 1 ? fmt::format("prompt[{}]", p)
                                          : std::string("prompt");
    if (in.ids) {
      for (size_t i = 0; i < in.ids->size(); ++i)
        if (size_t((*in.ids)[i]) >= id_limit)
          return outOfVocab(fmt::format("{}[{}]", at, i), (*in.ids)[i]);
      prompts.push_back(*in.ids);
      StatusOr<std::string> text = tokenizer_->decode(*in.ids);
      out.prompt_texts.push_back(text.ok() ? *text : std::string());
      out.prefix_tokens.push_back(0);
      continue;
    }
    StatusOr<std::vector<int32_t>> encoded =
        tokenizer_->encode(options_.completion_prefix + in.text);
    if (!encoded.ok()) {
      out_error.message = fmt::format("{}: cannot tokenize: {}", at,
                                      encoded.status().message());
      out_error.param = at;
      return false;
    }
    // The prefix's tokens lead the prompt when its text tokenizes apart
    // (GLM's [gMASK]<sop> are special tokens); else none are counted.
    const std::vector<int32_t> &prefix = completion_prefix_ids_;
    out.prefix_tokens.push_back(
        encoded->size() >= prefix.size() &&
                std::equal(prefix.begin(), prefix.end(), encoded->begin())
            ? prefix.size()
            : 0);
    prompts.push_back(std::move(*encoded));
    out.prompt_texts.push_back(in.text);
  }

  const int64_t context = options_.max_context_tokens;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const int64_t n = static_cast<int64_t>(prompts[p].size());
    std::string prompt_param =
        chat ? "messages"
             : (prompts.size() > 1 ? fmt::format("prompt[{}]", p) : "prompt");
    if (n >= context || (r.max_tokens && n + *r.max_tokens > context)) {
      out_error.message =
          r.max_tokens && n < context
              ? fmt::format("this model's context is {} tokens, but {} "
                            "prompt tokens plus max_tokens {} ask for {}",
                            context, n, *r.max_tokens, n + *r.max_tokens)
              : fmt::format("this model's context is {} tokens, but the "
                            "prompt is {} tokens (at least one token must be "
                            "left to generate)",
                            context, n);
      out_error.param = r.max_tokens && n < context ? "max_tokens"
                                                    : prompt_param;
      out_error.code = "context_length_exceeded";
      return false;
    }
    // Default max_tokens: OpenAI's and vLLM's 16 for completions; the rest
    // of the context for chat (vLLM).
    const int64_t max_tokens =
        r.max_tokens ? *r.max_tokens
                     : (chat ? context - n
                             : std::min<int64_t>(kDefaultCompletionMaxTokens,
                                                 context - n));
    if (r.min_tokens > max_tokens) {
      out_error.message = fmt::format(
          "min_tokens {} exceeds the {} tokens max_tokens (or the context) "
          "leaves",
          r.min_tokens, max_tokens);
      out_error.param = "min_tokens";
      return false;
    }
    out.prompt_sizes.push_back(static_cast<int32_t>(n));
    for (int32_t k = 0; k < r.n; ++k) {
      GenerationRequest g;
      g.prompt_ids = prompts[p];
      SamplingParams &sp = g.sampling;
      sp.temperature = r.temperature;
      sp.top_p = r.top_p;
      sp.top_k = r.top_k;
      sp.min_p = r.min_p;
      sp.repetition_penalty = r.repetition_penalty;
      sp.presence_penalty = r.presence_penalty;
      sp.frequency_penalty = r.frequency_penalty;
      sp.logit_bias = r.logit_bias;
      sp.logprobs = r.logprobs;
      // echo with logprobs needs the prompt's too, with as many top
      // tokens as the generated ones get.
      sp.prompt_logprobs =
          std::max(r.prompt_logprobs, r.echo ? r.logprobs : -1);
      // Sample k of a seeded request is seeded seed + k (vLLM's rule for
      // n > 1), so the samples differ and each is reproducible.
      if (r.seed)
        sp.seed = *r.seed + static_cast<uint64_t>(k);
      sp.max_tokens = static_cast<int32_t>(max_tokens);
      // ignore_eos: the end-of-sequence ids no longer stop the request;
      // stop_token_ids given by the client still do.
      if (!r.ignore_eos)
        sp.stop_token_ids = options_.stop_token_ids;
      sp.stop_token_ids.insert(sp.stop_token_ids.end(),
                               r.stop_token_ids.begin(),
                               r.stop_token_ids.end());
      sp.min_tokens = r.min_tokens;
      out.generations.push_back(std::move(g));
      out.prompt_of_choice.push_back(p);
    }
  }
  out.ids.id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl",
                           next_response_id_++);
  out.ids.model = options_.model_id;
  out.ids.created = std::time(nullptr);
  out.request_id = requestIdOf(req);
  if (out.request_id.empty())
    out.request_id = out.ids.id;
  return true;
}

void Server::handleGenerate(const httplib::Request &req,
                            httplib::Response &res, Endpoint endpoint) {
  Prepared prepared;
  prepared.start = std::chrono::steady_clock::now();
  ApiError error;
  if (!prepare(req, endpoint, prepared, error)) {
    setError(res, error);
    return;
  }
  res.set_header("X-Request-Id", prepared.request_id);
  // Admission: at most max_queue engine requests at once; a request with
  // several choices takes one slot per choice, all or none.
  const uint64_t needed = prepared.generations.size();
  uint64_t current = in_flight_.load();
  do {
    if (current + needed > options_.max_queue) {
      setError(res, serverError(
                        503,
                        fmt::format("server busy: {} of {} request slots in "
                                    "use, {} needed, retry later",
                                    current, options_.max_queue, needed),
                        "server_busy"));
      return;
    }
  } while (!in_flight_.compare_exchange_weak(current, current + needed));
  if (stopping_ || draining_) {
    for (uint64_t i = 0; i < needed; ++i)
      releaseSlot();
    setError(res, serverError(503, "server is shutting down", "shutting_down"));
    return;
  }

  auto channel = std::make_shared<Channel>();
  auto choices = std::make_shared<std::vector<ChoiceState>>(needed);
  for (size_t i = 0; i < needed; ++i) {
    ChoiceState &c = (*choices)[i];
    c.index = i;
    // Tool calls are written with special tokens, so they stay in the text
    // while the parser reads it (vLLM's GLM parsers do the same).
    const bool parse_tools =
        endpoint == Endpoint::kChatCompletions && options_.tool_parser &&
        prepared.request.tool_choice != ToolChoice::kNone;
    c.text = std::make_unique<TextStream>(
        *tokenizer_, prepared.request.stop,
        prepared.request.skip_special_tokens && !parse_tools,
        prepared.request.include_stop_str_in_output);
    if (parse_tools) {
      c.tools = std::make_unique<GlmToolParser>(
          prepared.request.tool_string_params);
      c.tools->push(prepared.tool_prefill);
    }
    if (endpoint == Endpoint::kChatCompletions && options_.reasoning_parser &&
        think_start_id_ >= 0)
      c.reasoning = std::make_unique<TextStream>(
          *tokenizer_, std::vector<std::string>{},
          prepared.request.skip_special_tokens, false);
    StatusOr<RequestId> id = engine_->submit(
        prepared.generations[i], [this, channel, i](EngineEvent event) {
          bool finished = event.finished;
          channel->push(i, std::move(event));
          if (finished)
            releaseSlot();
        });
    if (!id.ok()) {
      // This slot and those of the choices never submitted are free; the
      // ones already submitted are cancelled and free themselves.
      for (size_t j = i; j < needed; ++j)
        releaseSlot();
      for (size_t j = 0; j < i; ++j)
        engine_->cancel((*choices)[j].id);
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
    c.id = *id;
  }
  uint64_t prompt_tokens = 0;
  for (size_t i = 0; i < needed; ++i)
    prompt_tokens += prepared.generations[i].prompt_ids.size();
  metrics_.addPromptTokens(prompt_tokens);
  ++open_responses_; // closed by respondNonStreaming or the stream releaser
  if (prepared.request.stream)
    respondStreaming(res, prepared, std::move(channel), std::move(choices));
  else
    respondNonStreaming(req, res, prepared, std::move(channel),
                        std::move(choices));
}

std::string Server::tokenText(int32_t id) const {
  tokenizer::DecodeOptions options;
  options.skip_special_tokens = false;
  StatusOr<std::string> decoded = tokenizer_->decode({id}, options);
  return decoded.ok() ? *decoded : std::string();
}

LogprobEntry Server::logprobEntry(int32_t token,
                                  const TokenLogprob &logprob) const {
  auto text = [&](int32_t id, std::string &bytes) {
    tokenizer::DecodeOptions options;
    options.skip_special_tokens = false;
    tokenizer_->appendTokenBytes(id, options, /*first=*/true, bytes);
    return tokenText(id);
  };
  LogprobEntry e;
  e.token = text(token, e.bytes);
  e.logprob = logprob.logprob;
  for (const auto &[id, lp] : logprob.top) {
    LogprobEntry::Alternative a;
    a.token = text(id, a.bytes);
    a.logprob = lp;
    e.top.push_back(std::move(a));
  }
  return e;
}

std::vector<LogprobEntry>
Server::echoEntries(const Prepared &prepared, const ChoiceState &c) const {
  const std::vector<int32_t> &ids = prepared.generations[c.index].prompt_ids;
  const size_t first =
      prepared.prefix_tokens[prepared.prompt_of_choice[c.index]];
  const size_t top = static_cast<size_t>(std::max(prepared.request.logprobs, 0));
  std::vector<LogprobEntry> entries;
  for (size_t i = first; i < ids.size(); ++i) {
    // Entry i - 1 of the engine's list is prompt token i's.
    if (i == 0 || i - 1 >= c.prompt_logprobs.size()) {
      LogprobEntry e = logprobEntry(ids[i], TokenLogprob{});
      e.null = true;
      entries.push_back(std::move(e));
      continue;
    }
    TokenLogprob lp = c.prompt_logprobs[i - 1];
    if (lp.top.size() > top)
      lp.top.resize(top);
    entries.push_back(logprobEntry(ids[i], lp));
  }
  return entries;
}

json Server::promptLogprobs(const Prepared &prepared,
                            const ChoiceState &c) const {
  const std::vector<int32_t> &ids = prepared.generations[c.index].prompt_ids;
  const size_t top = static_cast<size_t>(prepared.request.prompt_logprobs);
  std::vector<PromptLogprobPosition> positions;
  for (size_t i = 1; i < ids.size() && i - 1 < c.prompt_logprobs.size();
       ++i) {
    const TokenLogprob &lp = c.prompt_logprobs[i - 1];
    PromptLogprobPosition position;
    position.tokens.push_back(
        {ids[i], lp.logprob, lp.rank, tokenText(ids[i])});
    for (size_t j = 0; j < lp.top.size() && j < top; ++j)
      if (lp.top[j].first != ids[i])
        position.tokens.push_back({lp.top[j].first, lp.top[j].second,
                                   static_cast<int64_t>(j + 1),
                                   tokenText(lp.top[j].first)});
    positions.push_back(std::move(position));
  }
  return promptLogprobsJson(positions);
}

void Server::applyEvent(const Prepared &prepared, ChoiceState &c,
                        EngineEvent &event, std::string &delta,
                        std::string &reasoning_delta,
                        std::vector<LogprobEntry> &entries) {
  if (c.finished)
    return; // events after a stop string (the cancel's end)
  // vLLM's request metrics: queue time once, the first token, the gaps
  // between token deliveries (one per engine step), the end.
  const auto now = std::chrono::steady_clock::now();
  if (event.queue_seconds >= 0 && !c.queue_observed) {
    metrics_.observeQueue(event.queue_seconds);
    c.queue_observed = true;
    c.admitted = prepared.start +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(event.queue_seconds));
  }
  if (!event.token_ids.empty() && !c.first_token)
    c.first_token = now;
  if (!event.token_ids.empty()) {
    metrics_.observeTtftOrItl(c.generated == 0, c.generated == 0
                                                    ? now - prepared.start
                                                    : now - c.last_token);
    c.last_token = now;
  }
  struct RecordEnd {
    Server &server;
    ChoiceState &c;
    const Prepared &prepared;
    ~RecordEnd() {
      if (c.finished)
        server.recordFinish(prepared, c);
    }
  } record_end{*this, c, prepared};
  if (!event.token_ids.empty() || event.finished)
    c.cached_tokens = std::max(c.cached_tokens, event.cached_tokens);
  c.generated += static_cast<int32_t>(event.token_ids.size());
  if (!event.prompt_logprobs.empty())
    c.prompt_logprobs = std::move(event.prompt_logprobs);
  const bool want_logprobs = prepared.request.logprobs >= 0;
  auto addLogprob = [&](size_t i) {
    if (want_logprobs && i < event.logprobs.size())
      entries.push_back(logprobEntry(event.token_ids[i], event.logprobs[i]));
  };
  auto fail = [&](Status status) {
    engine_->cancel(c.id);
    c.error = std::move(status);
    c.finish = FinishReason::kError;
    c.finished = true;
  };
  // Runs of ids in order: content to c.text; with the reasoning parser,
  // the ids after <think> up to </think> to c.reasoning (the two markers go
  // to neither).
  const std::vector<int32_t> &ids = event.token_ids;
  size_t i = 0;
  while (i < ids.size()) {
    if (c.reasoning && (ids[i] == think_start_id_ || ids[i] == think_end_id_)) {
      c.in_reasoning = ids[i] == think_start_id_;
      ++c.reasoning_tokens;
      addLogprob(i++);
      continue;
    }
    size_t end = i;
    while (end < ids.size() && !(c.reasoning && (ids[end] == think_start_id_ ||
                                                 ids[end] == think_end_id_)))
      ++end;
    std::vector<int32_t> run(ids.begin() + i, ids.begin() + end);
    if (c.in_reasoning) {
      StatusOr<std::string> pushed = c.reasoning->push(run);
      if (!pushed.ok())
        return fail(pushed.status());
      reasoning_delta += *pushed;
      c.reasoning_tokens += static_cast<int32_t>(run.size());
      for (size_t j = i; j < end; ++j)
        addLogprob(j);
      i = end;
      continue;
    }
    const int32_t before = c.text->consumedTokens();
    StatusOr<std::string> pushed = c.text->push(run);
    if (!pushed.ok())
      return fail(pushed.status());
    appendContent(prepared, c, *pushed, delta);
    size_t used = static_cast<size_t>(c.text->consumedTokens() - before);
    for (size_t j = i; j < i + used; ++j)
      addLogprob(j);
    if (c.text->stopped()) {
      engine_->cancel(c.id);
      if (c.tools)
        delta += c.tools->finish().content;
      c.finish = c.tools && !c.tool_calls.empty() ? FinishReason::kToolCalls
                                                  : FinishReason::kStop;
      c.completion_tokens = c.text->consumedTokens() + c.reasoning_tokens;
      c.finished = true;
      return;
    }
    i = end;
  }
  if (event.finished) {
    c.finish = event.finish_reason;
    c.error = event.error;
    c.completion_tokens = event.completion_tokens;
    StatusOr<std::string> tail = c.text->finish();
    if (tail.ok())
      appendContent(prepared, c, *tail, delta);
    if (c.tools) {
      delta += c.tools->finish().content;
      if (!c.tool_calls.empty() && c.finish == FinishReason::kStop)
        c.finish = FinishReason::kToolCalls;
    }
    if (c.reasoning) {
      StatusOr<std::string> rest = c.reasoning->finish();
      if (rest.ok())
        reasoning_delta += *rest;
    }
    c.finished = true;
  }
}

void Server::appendContent(const Prepared &prepared, ChoiceState &c,
                           const std::string &text, std::string &delta) {
  if (!c.tools) {
    delta += text;
    return;
  }
  ToolParseOutput parsed = c.tools->push(text);
  delta += parsed.content;
  for (ToolCall &call : parsed.calls) {
    size_t index = c.tool_calls.size();
    c.tool_calls.push_back(
        {{"id", fmt::format("call_{}_{}_{}", prepared.ids.id, c.index,
                            index)},
         {"type", "function"},
         {"function",
          {{"name", std::move(call.name)},
           {"arguments", std::move(call.arguments)}}}});
  }
}

void Server::recordFinish(const Prepared &prepared, ChoiceState &c) {
  if (c.end_recorded)
    return;
  c.end_recorded = true;
  const auto end = std::chrono::steady_clock::now();
  metrics_.observeE2e(
      std::chrono::duration<double>(end - prepared.start).count());
  // vLLM records the phases of every request that was scheduled and
  // produced a token, whatever its end.
  if (c.admitted && c.first_token) {
    auto seconds = [](auto d) {
      return std::max(0.0, std::chrono::duration<double>(d).count());
    };
    metrics_.observePhases(seconds(*c.first_token - *c.admitted),
                           seconds(end - *c.first_token),
                           seconds(end - *c.admitted));
  }
  size_t prompt = prepared.prompt_of_choice[c.index];
  metrics_.observeRequestTokens(
      static_cast<uint64_t>(prepared.prompt_sizes[prompt]),
      static_cast<uint64_t>(c.finished ? c.completion_tokens : c.generated));
  const char *reason = "abort";
  if (c.finished) {
    switch (c.finish) {
    case FinishReason::kStop:
    case FinishReason::kToolCalls:
      reason = "stop";
      break;
    case FinishReason::kLength:
      reason = "length";
      break;
    case FinishReason::kCancelled:
      reason = "abort";
      break;
    case FinishReason::kError:
      reason = "error";
      break;
    }
  }
  metrics_.countFinished(reason);
}

Usage Server::usageOf(const Prepared &prepared,
                      const std::vector<ChoiceState> &choices) {
  // Each prompt counts once (n samples share it), its cached tokens too.
  Usage usage;
  for (int32_t n : prepared.prompt_sizes)
    usage.prompt_tokens += n;
  std::vector<int32_t> cached(prepared.prompt_sizes.size(), 0);
  for (size_t i = 0; i < choices.size(); ++i) {
    usage.completion_tokens += choices[i].finished
                                   ? choices[i].completion_tokens
                                   : choices[i].generated;
    size_t p = prepared.prompt_of_choice[i];
    cached[p] = std::max(cached[p], choices[i].cached_tokens);
  }
  for (int32_t c : cached)
    usage.cached_tokens += c;
  return usage;
}

void Server::respondNonStreaming(
    const httplib::Request &req, httplib::Response &res, Prepared &prepared,
    std::shared_ptr<Channel> channel,
    std::shared_ptr<std::vector<ChoiceState>> choices_ptr) {
  std::vector<ChoiceState> &choices = *choices_ptr;
  struct Close {
    Server &server;
    ~Close() { server.closeResponse(); }
  } close{*this};
  size_t open = choices.size();
  auto cancelAll = [&] {
    for (ChoiceState &c : choices)
      if (!c.finished) {
        engine_->cancel(c.id);
        recordFinish(prepared, c); // abort
      }
  };
  // A client that hangs up is noticed by peeking at its socket (nothing is
  // written before the answer), and its requests are cancelled.
  int socket = -2; // -2: not looked up yet
  auto next_check = std::chrono::steady_clock::now() + kPeerCheckInterval;
  while (open > 0) {
    if (stopping_) {
      cancelAll();
      metrics_.countCancelled();
      setError(res, serverError(503, "server is shutting down",
                                "shutting_down"));
      return;
    }
    if (std::chrono::steady_clock::now() >= next_check) {
      next_check += kPeerCheckInterval;
      if (socket == -2)
        socket = connectionSocket(req);
      if (socket >= 0 && peerClosed(socket)) {
        cancelAll();
        metrics_.countCancelled();
        logRequest(prepared, choices, 499, usageOf(prepared, choices));
        setError(res, serverError(499, "client closed the connection",
                                  "client_closed"));
        return;
      }
    }
    for (Channel::Tagged &tagged : channel->take(kWaitSlice)) {
      ChoiceState &c = choices[tagged.choice];
      bool was_open = !c.finished;
      std::string delta, reasoning;
      applyEvent(prepared, c, tagged.event, delta, reasoning, c.logprobs);
      c.out_text += delta;
      c.out_reasoning += reasoning;
      if (was_open && c.finished)
        --open;
    }
  }
  Usage usage = usageOf(prepared, choices);
  metrics_.addGenerationTokens(usage.completion_tokens);
  for (ChoiceState &c : choices) {
    if (c.finish != FinishReason::kError && c.finish != FinishReason::kCancelled)
      continue;
    logRequest(prepared, choices,
               c.finish == FinishReason::kCancelled ? 503 : 500, usage);
    std::string message =
        c.finish == FinishReason::kCancelled
            ? std::string("request cancelled by the engine")
            : fmt::format("generation failed: {}", c.error.message());
    cancelAll();
    setError(res, serverError(c.finish == FinishReason::kCancelled ? 503 : 500,
                              message, "engine_error"));
    return;
  }
  const Endpoint endpoint = prepared.request.endpoint;
  std::vector<ChoiceResult> results;
  for (size_t i = 0; i < choices.size(); ++i) {
    ChoiceState &c = choices[i];
    ChoiceResult result;
    result.index = static_cast<int32_t>(i);
    std::string prefix;
    if (prepared.request.echo)
      prefix = prepared.prompt_texts[prepared.prompt_of_choice[i]];
    result.text = prefix + c.out_text;
    if (c.reasoning)
      result.reasoning = c.out_reasoning;
    result.tool_calls = c.tool_calls;
    result.finish = c.finish;
    if (prepared.request.logprobs >= 0 && prepared.request.echo) {
      std::vector<LogprobEntry> entries = echoEntries(prepared, c);
      entries.insert(entries.end(), c.logprobs.begin(), c.logprobs.end());
      result.logprobs = logprobsJson(endpoint, entries, 0);
    } else if (prepared.request.logprobs >= 0) {
      result.logprobs = logprobsJson(endpoint, c.logprobs, prefix.size());
    }
    if (prepared.request.prompt_logprobs >= 0)
      result.prompt_logprobs = promptLogprobs(prepared, c);
    results.push_back(std::move(result));
  }
  res.set_content(
      dumpJson(completionResponse(endpoint, prepared.ids, results, usage)),
      kJson);
  logRequest(prepared, choices, 200, usage);
  metrics_.countRequest(endpoint == Endpoint::kChatCompletions
                            ? "/v1/chat/completions"
                            : "/v1/completions",
                        200);
}

/// State of one streaming response, shared by the content provider and its
/// releaser.
struct Server::StreamState {
  std::unique_ptr<Prepared> prepared;
  std::shared_ptr<std::vector<ChoiceState>> choices;
  size_t open = 0; // choices not finished
  bool finalized = false;
};

void Server::respondStreaming(
    httplib::Response &res, Prepared &prepared,
    std::shared_ptr<Channel> channel,
    std::shared_ptr<std::vector<ChoiceState>> choices) {
  auto state = std::make_shared<StreamState>();
  state->prepared = std::make_unique<Prepared>(std::move(prepared));
  state->choices = std::move(choices);
  state->open = state->choices->size();
  const Endpoint endpoint = state->prepared->request.endpoint;
  metrics_.countRequest(endpoint == Endpoint::kChatCompletions
                            ? "/v1/chat/completions"
                            : "/v1/completions",
                        200);
  res.set_header("Cache-Control", "no-cache");

  auto provider = [this, state, channel, endpoint](size_t,
                                                   httplib::DataSink &sink) {
    if (state->finalized)
      return false;
    const Prepared &prep = *state->prepared;
    std::vector<ChoiceState> &choices = *state->choices;
    // Wait for events, in slices so stop() is noticed, up to the heartbeat.
    std::vector<Channel::Tagged> events;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(options_.heartbeat_ms);
    while (events.empty()) {
      if (stopping_)
        return false; // the releaser cancels the requests
      if (std::chrono::steady_clock::now() >= deadline) {
        static const std::string kHeartbeat = ": keep-alive\n\n";
        return sink.write(kHeartbeat.data(), kHeartbeat.size());
      }
      events = channel->take(kWaitSlice);
    }
    std::string out;
    std::optional<ApiError> failure;
    auto chunk = [&](size_t index, const std::string &text,
                     std::optional<FinishReason> finish, const json *logprobs,
                     const std::string &reasoning = "",
                     const json *tool_calls = nullptr) {
      ChoiceState &c = choices[index];
      json j = streamChunk(endpoint, prep.ids, static_cast<int32_t>(index),
                           text, finish, c.first, logprobs, reasoning,
                           tool_calls);
      if (prep.request.continuous_usage_stats) {
        Usage u = usageOf(prep, choices);
        j["usage"] = usageJson(u);
      }
      out += sseEvent(j);
      c.first = false;
    };
    for (Channel::Tagged &tagged : events) {
      ChoiceState &c = choices[tagged.choice];
      if (c.finished)
        continue;
      // echo: the prompt's text goes first, as its own delta (with
      // logprobs: the prompt tokens', which come with the first event).
      if (c.first && prep.request.echo) {
        const std::string &prompt =
            prep.prompt_texts[prep.prompt_of_choice[tagged.choice]];
        if (!tagged.event.prompt_logprobs.empty())
          c.prompt_logprobs = std::move(tagged.event.prompt_logprobs);
        json echoed;
        if (prep.request.logprobs >= 0)
          echoed = logprobsJson(endpoint, echoEntries(prep, c), 0);
        chunk(tagged.choice, prompt, std::nullopt,
              echoed.is_null() ? nullptr : &echoed);
        c.text_offset = prompt.size();
      }
      std::string delta, reasoning;
      std::vector<LogprobEntry> entries;
      applyEvent(prep, c, tagged.event, delta, reasoning, entries);
      json logprobs;
      if (prep.request.logprobs >= 0 && !entries.empty()) {
        logprobs = logprobsJson(endpoint, entries, c.text_offset);
        for (const LogprobEntry &e : entries)
          c.text_offset += e.token.size();
      }
      const json *lp = logprobs.is_null() ? nullptr : &logprobs;
      // New tool calls go out whole, each with its index.
      json new_calls;
      for (; c.tool_calls_sent < c.tool_calls.size(); ++c.tool_calls_sent) {
        json call = c.tool_calls[c.tool_calls_sent];
        call["index"] = c.tool_calls_sent;
        new_calls.push_back(std::move(call));
      }
      const json *calls = new_calls.is_null() ? nullptr : &new_calls;
      const bool any = !delta.empty() || !reasoning.empty() || lp || calls;
      if (!c.finished) {
        if (any)
          chunk(tagged.choice, delta, std::nullopt, lp, reasoning, calls);
        continue;
      }
      --state->open;
      if (c.finish == FinishReason::kError ||
          c.finish == FinishReason::kCancelled) {
        if (any) // what came before the failure
          chunk(tagged.choice, delta, std::nullopt, lp, reasoning, calls);
        failure = serverError(
            500,
            c.finish == FinishReason::kCancelled
                ? std::string("request cancelled by the engine")
                : fmt::format("generation failed: {}", c.error.message()),
            "engine_error");
        break;
      }
      if (any)
        chunk(tagged.choice, delta, std::nullopt, lp, reasoning, calls);
      chunk(tagged.choice, "", c.finish, nullptr);
    }
    const bool done = failure || state->open == 0;
    if (done) {
      state->finalized = true;
      Usage usage = usageOf(prep, choices);
      metrics_.addGenerationTokens(usage.completion_tokens);
      logRequest(prep, choices, 200, usage);
      if (failure) {
        for (ChoiceState &c : choices)
          if (!c.finished)
            engine_->cancel(c.id);
        out += "data: " + errorBody(*failure) + "\n\n";
      } else if (prep.request.include_usage) {
        out += sseEvent(usageChunk(endpoint, prep.ids, usage));
      }
      out += sseDone();
    }
    if (!out.empty() && !sink.write(out.data(), out.size()))
      return false; // client gone: the releaser cancels
    if (done)
      sink.done();
    return true;
  };
  auto releaser = [this, state](bool) {
    struct Close {
      Server &server;
      ~Close() { server.closeResponse(); }
    } close{*this};
    if (!state->finalized) {
      state->finalized = true;
      for (ChoiceState &c : *state->choices)
        if (!c.finished) {
          engine_->cancel(c.id);
          recordFinish(*state->prepared, c); // abort
        }
      metrics_.countCancelled();
      // 499: the client closed the connection (nginx's code).
      logRequest(*state->prepared, *state->choices, 499,
                 usageOf(*state->prepared, *state->choices));
    }
  };
  res.set_chunked_content_provider("text/event-stream", std::move(provider),
                                   std::move(releaser));
}

} // namespace strata::runtime::serve
