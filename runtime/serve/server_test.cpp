//===- server_test.cpp - the HTTP server end to end, in process -----------===//
//
// Part of strata. Starts a Server on an ephemeral port over the test echo
// engine (test_engine.h: token i = prompt[i % n]) and the byte-level test
// tokenizer (one token per byte, so an echo decodes to the prompt text), and
// talks to it with httplib's client or, to hang up mid-stream, a raw socket.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "runtime/serve/test_engine.h"

namespace strata::runtime::serve {
namespace {

using nlohmann::json;
using testing::TestEngine;
using testing::TestEngineOptions;

struct Harness {
  TestEngine *engine = nullptr; // owned by the server
  std::unique_ptr<Server> server;

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_read_timeout(20, 0);
    return c;
  }
};

ServerOptions defaultOptions() {
  ServerOptions o;
  o.model_id = "test-model";
  o.max_context_tokens = 64;
  o.stop_token_ids = {testing::kTestEndOfText};
  o.heartbeat_ms = 100;
  return o;
}

Harness start(ServerOptions options = defaultOptions(),
              TestEngineOptions engine_options = {}) {
  Harness h;
  auto engine = std::make_unique<TestEngine>(engine_options);
  h.engine = engine.get();
  auto tok = tokenizer::Tokenizer::fromJson(testing::testTokenizerJson());
  EXPECT_TRUE(tok.ok());
  auto server = Server::create(options, std::move(engine), std::move(*tok));
  EXPECT_TRUE(server.ok()) << server.status().toString();
  h.server = std::move(*server);
  Status s = h.server->start();
  EXPECT_TRUE(s.ok()) << s.toString();
  return h;
}

json post(const Harness &h, const std::string &path, const json &body,
          int expected_status) {
  auto res = h.client().Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(res);
  if (!res)
    return {};
  EXPECT_EQ(res->status, expected_status) << res->body;
  json j = json::parse(res->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << res->body;
  return j;
}

/// The data payloads of an SSE body; checks the framing on the way.
std::vector<std::string> sseData(const std::string &body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated event: " << body.substr(pos);
    if (end == std::string::npos)
      break;
    std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    if (event[0] == ':')
      continue; // heartbeat comment
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    EXPECT_EQ(event.find('\n'), std::string::npos) << event;
    out.push_back(event.substr(6));
  }
  return out;
}

/// A raw HTTP/1.1 connection, to hang up mid-response.
class RawClient {
public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        ::connect(fd_, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { hangUp(); }
  bool send(const std::string &path, const std::string &body) {
    std::string req = "POST " + path +
                      " HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                      "application/json\r\nConnection: close\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
    return connected_ &&
           ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) ==
               ssize_t(req.size());
  }
  /// Reads until `needle` appears `count` times or the peer closes.
  std::string readUntil(const std::string &needle, int count) {
    std::string got;
    char buf[4096];
    for (;;) {
      int seen = 0;
      for (size_t p = got.find(needle); p != std::string::npos;
           p = got.find(needle, p + 1))
        ++seen;
      if (seen >= count)
        return got;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0)
        return got;
      got.append(buf, size_t(n));
    }
  }
  void hangUp() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_ = -1;
  bool connected_ = false;
};

// Tests /health, /v1/models and /metrics.
TEST(ServeServer, InfoRoutes) {
  Harness h = start();
  auto health = h.client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  auto models = h.client().Get("/v1/models");
  ASSERT_TRUE(models);
  json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "test-model");
  EXPECT_EQ(m["data"][0]["max_model_len"], 64);
  auto metrics = h.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"),
            "text/plain; version=0.0.4");
  EXPECT_NE(metrics->body.find("strata_http_requests_total{endpoint=\"/health\","
                               "status=\"200\"} 1\n"),
            std::string::npos);
}

// Tests that an unknown route or method is a 404 with an OpenAI error body.
TEST(ServeServer, UnknownRoute) {
  Harness h = start();
  auto res = h.client().Get("/v1/engines");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  json e = json::parse(res->body)["error"];
  EXPECT_EQ(e["message"], "unknown route: GET /v1/engines");
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["code"], "not_found");
  auto wrong_method = h.client().Get("/v1/completions");
  ASSERT_TRUE(wrong_method);
  EXPECT_EQ(wrong_method->status, 404);
  EXPECT_NE(h.server->metricsText().find(
                "strata_http_requests_total{endpoint=\"other\",status=\"404\"} 1\n"),
            std::string::npos);
}

// Tests non-streaming completions: echo text, finish_reason length, usage.
TEST(ServeServer, Completion) {
  Harness h = start();
  json r = post(h, "/v1/completions",
                {{"model", "test-model"}, {"prompt", "hello"}, {"max_tokens", 8},
                 {"temperature", 0}},
                200);
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "test-model");
  EXPECT_EQ(r["choices"][0]["text"], "hellohel");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"], json({{"prompt_tokens", 5}, {"completion_tokens", 8},
                              {"total_tokens", 13},
                              {"prompt_tokens_details", {{"cached_tokens", 0}}}}));
  // Without max_tokens: 16 for completions (OpenAI's and vLLM's default),
  // the rest of the 64-token context for chat (vLLM's).
  json sixteen = post(h, "/v1/completions", {{"prompt", "abcd"}}, 200);
  EXPECT_EQ(sixteen["usage"]["completion_tokens"], 16);
  json rest = post(h, "/v1/chat/completions",
                   {{"messages", {{{"role", "user"}, {"content", "abcd"}}}}},
                   200);
  EXPECT_EQ(rest["usage"]["prompt_tokens"].get<int>() +
                rest["usage"]["completion_tokens"].get<int>(),
            64);
}

// Tests the two ways to stop: a stop token (not in the text) and a stop
// string (cut, the request cancelled in the engine).
TEST(ServeServer, CompletionStops) {
  Harness h = start();
  json eos = post(h, "/v1/completions",
                  {{"prompt", {104, 105, testing::kTestEndOfText}},
                   {"max_tokens", 10}},
                  200);
  EXPECT_EQ(eos["choices"][0]["text"], "hi");
  EXPECT_EQ(eos["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(eos["usage"]["completion_tokens"], 3);
  // ignore_eos: the end-of-sequence id no longer stops; max_tokens does.
  json ignored = post(h, "/v1/completions",
                      {{"prompt", {104, 105, testing::kTestEndOfText}},
                       {"max_tokens", 10},
                       {"ignore_eos", true}},
                      200);
  EXPECT_EQ(ignored["choices"][0]["text"], "hihihih"); // h i eos x 3, h
  EXPECT_EQ(ignored["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ignored["usage"]["completion_tokens"], 10);
  // min_tokens beyond what the 64-token context leaves (no max_tokens).
  json too_many = post(h, "/v1/completions", {{"prompt", "abcd"}, {"min_tokens", 17}},
                       400);
  EXPECT_EQ(too_many["error"]["message"],
            "min_tokens 17 exceeds the 16 tokens max_tokens (or the context) "
            "leaves");
  EXPECT_EQ(too_many["error"]["param"], "min_tokens");
  json stop = post(h, "/v1/completions",
                   {{"prompt", "abcabc"}, {"max_tokens", 40}, {"stop", {"ca"}}},
                   200);
  EXPECT_EQ(stop["choices"][0]["text"], "ab");
  EXPECT_EQ(stop["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(stop["usage"]["completion_tokens"], 4);
  EXPECT_TRUE(h.engine->waitForCancel(h.engine->lastId(),
                                      std::chrono::seconds(2)));
}

// Tests non-streaming chat: the GLM template renders the prompt; the echo
// shows it (special tokens skipped).
TEST(ServeServer, ChatCompletion) {
  Harness h = start();
  json messages = {{{"role", "user"}, {"content", "hi"}}};
  json r = post(h, "/v1/chat/completions",
                {{"messages", messages}, {"max_tokens", 7}}, 200);
  tokenizer::ChatMessage user;
  user.role = "user";
  user.content = "hi";
  auto rendered = tokenizer::renderGlmChat({user}, [] {
    tokenizer::GlmChatOptions o;
    o.add_generation_prompt = true;
    return o;
  }());
  ASSERT_TRUE(rendered.ok());
  // [gMASK]<sop><|user|>\nhi<|assistant|> = 3 specials + 3 bytes + 1 special.
  EXPECT_EQ(*rendered, "[gMASK]<sop><|user|>\nhi<|assistant|>");
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "\nhi");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(r["usage"]["completion_tokens"], 7);
}

// Tests streaming completions: SSE framing, deltas that add up to the
// non-streaming text, finish_reason on the last chunk, usage chunk, [DONE].
TEST(ServeServer, StreamingCompletion) {
  Harness h = start();
  json body = {{"prompt", "hello"}, {"max_tokens", 8}, {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  auto res = h.client().Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> data = sseData(res->body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 2 < data.size(); ++i) {
    json c = json::parse(data[i]);
    EXPECT_EQ(c["object"], "text_completion");
    text += c["choices"][0]["text"].get<std::string>();
    bool last = i + 3 == data.size();
    EXPECT_EQ(c["choices"][0]["finish_reason"].is_null(), !last);
    if (last)
      EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  }
  EXPECT_EQ(text, "hellohel");
  json usage = json::parse(data[data.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 13);
}

// Tests streaming chat: the role in the first delta, content deltas, a stop
// string ending the stream.
TEST(ServeServer, StreamingChat) {
  Harness h = start();
  json body = {{"messages", {{{"role", "user"}, {"content", "abcde"}}}},
               {"max_tokens", 30}, {"stream", true}, {"stop", "cd"}};
  auto res =
      h.client().Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::vector<std::string> data = sseData(res->body);
  ASSERT_GE(data.size(), 3u);
  EXPECT_EQ(data.back(), "[DONE]");
  json first = json::parse(data[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 1 < data.size(); ++i) {
    json d = json::parse(data[i])["choices"][0]["delta"];
    if (d.contains("content"))
      text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, "\nab");
  EXPECT_EQ(json::parse(data[data.size() - 2])["choices"][0]["finish_reason"],
            "stop");
}

// Tests the 400s the HTTP layer adds to the parser's: context length, token
// ids outside the vocabulary, the error shape; and 404 for another model.
TEST(ServeServer, BadRequests) {
  Harness h = start();
  json bad = post(h, "/v1/completions", json("not an object"), 400);
  EXPECT_EQ(bad["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(bad["error"]["param"].is_null());
  auto malformed =
      h.client().Post("/v1/completions", "{\"prompt\": ", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(json::parse(malformed->body)["error"]["message"],
            "request body is not valid JSON");
  json n0 = post(h, "/v1/completions", {{"prompt", "x"}, {"n", 0}}, 400);
  EXPECT_EQ(n0["error"]["param"], "n");
  json empty = post(h, "/v1/chat/completions", {{"messages", json::array()}}, 400);
  EXPECT_EQ(empty["error"]["message"], "messages: must not be empty");
  json long_prompt =
      post(h, "/v1/completions", {{"prompt", std::string(64, 'a')}}, 400);
  EXPECT_EQ(long_prompt["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(long_prompt["error"]["param"], "prompt");
  EXPECT_EQ(long_prompt["error"]["message"],
            "this model's context is 64 tokens, but the prompt is 64 tokens (at "
            "least one token must be left to generate)");
  json long_chat = post(
      h, "/v1/chat/completions",
      {{"messages", {{{"role", "user"}, {"content", std::string(60, 'a')}}}}},
      400);
  EXPECT_EQ(long_chat["error"]["param"], "messages");
  json budget = post(h, "/v1/completions",
                     {{"prompt", "abcd"}, {"max_tokens", 61}}, 400);
  EXPECT_EQ(budget["error"]["param"], "max_tokens");
  EXPECT_EQ(budget["error"]["message"],
            "this model's context is 64 tokens, but 4 prompt tokens plus "
            "max_tokens 61 ask for 65");
  json vocab = post(h, "/v1/completions", {{"prompt", {1, 99999}}}, 400);
  EXPECT_EQ(vocab["error"]["param"], "prompt[1]");
  json model = post(h, "/v1/completions",
                    {{"prompt", "x"}, {"model", "gpt-4"}}, 404);
  EXPECT_EQ(model["error"]["code"], "model_not_found");
  EXPECT_EQ(model["error"]["param"], "model");
  // Nothing reached the engine.
  EXPECT_EQ(h.engine->lastId(), 0u);
  EXPECT_NE(h.server->metricsText().find(
                "strata_http_requests_total{endpoint=\"/v1/completions\","
                "status=\"400\"} 6\n"),
            std::string::npos);
}

// Tests the body size limit: 413 with an OpenAI error body.
TEST(ServeServer, BodyTooLarge) {
  ServerOptions o = defaultOptions();
  o.max_body_bytes = 1024;
  Harness h = start(o);
  json r = post(h, "/v1/completions", {{"prompt", std::string(2000, 'a')}}, 413);
  EXPECT_EQ(r["error"]["message"], "request body larger than 1024 bytes");
  EXPECT_EQ(r["error"]["code"], "payload_too_large");
}

// Tests 503 when the server's admission queue is full, and when the engine
// refuses work.
TEST(ServeServer, QueueFull) {
  ServerOptions o = defaultOptions();
  o.max_queue = 2;
  TestEngineOptions eo;
  eo.step_delay = std::chrono::milliseconds(20);
  Harness h = start(o, eo);
  std::vector<std::thread> busy;
  for (int i = 0; i < 2; ++i)
    busy.emplace_back([&] {
      post(h, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 25}}, 200);
    });
  for (int i = 0; i < 200 && h.engine->lastId() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  json r = post(h, "/v1/completions", {{"prompt", "x"}}, 503);
  EXPECT_EQ(r["error"]["type"], "server_error");
  EXPECT_EQ(r["error"]["code"], "server_busy");
  EXPECT_EQ(r["error"]["message"],
            "server busy: 2 of 2 request slots in use, 1 needed, retry later");
  for (std::thread &t : busy)
    t.join();
  // Slots come back once the engine finishes.
  post(h, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}, 200);

  TestEngineOptions small;
  small.max_running = 1;
  small.max_waiting = 1;
  small.step_delay = std::chrono::milliseconds(20);
  Harness e = start(defaultOptions(), small);
  std::vector<std::thread> fill;
  for (int i = 0; i < 2; ++i) {
    fill.emplace_back([&] {
      post(e, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 25}}, 200);
    });
    for (int k = 0; k < 200 && e.engine->lastId() < RequestId(i + 1); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // Let the engine move the first request from waiting to running.
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  json refused = post(e, "/v1/completions", {{"prompt", "x"}}, 503);
  EXPECT_EQ(refused["error"]["message"], "engine queue full: 1 of 1 waiting");
  for (std::thread &t : fill)
    t.join();
}

// Tests that a client hanging up mid-stream gets its request cancelled in
// the engine within a bounded time.
TEST(ServeServer, DisconnectCancels) {
  ServerOptions o = defaultOptions();
  o.max_context_tokens = 100000;
  TestEngineOptions eo;
  eo.step_delay = std::chrono::milliseconds(10);
  Harness h = start(o, eo);
  RawClient raw(h.server->port());
  ASSERT_TRUE(raw.send("/v1/completions",
                       json({{"prompt", "hello"}, {"max_tokens", 50000},
                             {"stream", true}})
                           .dump()));
  std::string got = raw.readUntil("data: ", 3);
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  RequestId id = h.engine->lastId();
  ASSERT_EQ(id, 1u);
  auto hung_up = std::chrono::steady_clock::now();
  raw.hangUp();
  EXPECT_TRUE(h.engine->waitForCancel(id, std::chrono::seconds(2)));
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - hung_up)
                       .count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_TRUE(h.engine->waitIdle(std::chrono::seconds(2)));
  EXPECT_NE(h.server->metricsText().find("strata_cancelled_requests_total 1\n"),
            std::string::npos);
}

// Tests that a non-streaming client hanging up gets its request cancelled
// too (the server peeks at its socket).
TEST(ServeServer, NonStreamingDisconnectCancels) {
  ServerOptions o = defaultOptions();
  o.max_context_tokens = 100000;
  TestEngineOptions eo;
  eo.step_delay = std::chrono::milliseconds(10);
  Harness h = start(o, eo);
  RawClient raw(h.server->port());
  ASSERT_TRUE(raw.send("/v1/completions",
                       json({{"prompt", "hello"}, {"max_tokens", 50000}})
                           .dump()));
  for (int i = 0; i < 200 && h.engine->lastId() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(h.engine->lastId(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  raw.hangUp();
  EXPECT_TRUE(h.engine->waitForCancel(1, std::chrono::seconds(2)));
  EXPECT_TRUE(h.engine->waitIdle(std::chrono::seconds(2)));
  EXPECT_NE(h.server->metricsText().find("strata_cancelled_requests_total 1\n"),
            std::string::npos);
  // A client that stays gets its answer.
  json r = post(h, "/v1/completions", {{"prompt", "ab"}, {"max_tokens", 30}},
                200);
  EXPECT_EQ(r["usage"]["completion_tokens"], 30);
}

// Tests that a stream waiting in the engine's queue (no tokens yet) is
// cancelled too: heartbeats notice the hang-up.
TEST(ServeServer, DisconnectWhileQueuedCancels) {
  ServerOptions o = defaultOptions();
  o.max_context_tokens = 100000;
  TestEngineOptions eo;
  eo.max_running = 1;
  eo.step_delay = std::chrono::milliseconds(10);
  Harness h = start(o, eo);
  std::thread blocker([&] {
    post(h, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 100}}, 200);
  });
  for (int i = 0; i < 200 && h.engine->lastId() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RawClient raw(h.server->port());
  ASSERT_TRUE(raw.send("/v1/completions",
                       json({{"prompt", "hello"}, {"stream", true}}).dump()));
  std::string got = raw.readUntil(": keep-alive", 1);
  EXPECT_NE(got.find(": keep-alive"), std::string::npos) << got;
  raw.hangUp();
  EXPECT_TRUE(h.engine->waitForCancel(2, std::chrono::seconds(2)));
  blocker.join();
}

// Tests 64 concurrent clients, a quarter of them hanging up mid-stream, more
// than the queue admits: every request is answered (complete and correct) or
// refused with 503, hung-up ones are cancelled, and the server stays up with
// nothing left in flight.
TEST(ServeServer, ConcurrentLoad) {
  ServerOptions o = defaultOptions();
  o.max_queue = 40;
  TestEngineOptions eo;
  eo.step_delay = std::chrono::milliseconds(2);
  eo.tokens_per_step = 2;
  Harness h = start(o, eo);
  constexpr int kClients = 64;
  std::atomic<int> ok{0}, refused{0}, hung_up{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      std::string prompt = "client" + std::to_string(i) + " ";
      bool stream = i % 2 == 1;
      json body = {{"prompt", prompt}, {"max_tokens", 30}, {"stream", stream}};
      if (i % 4 == 3) {
        RawClient raw(h.server->port());
        if (!raw.send("/v1/completions", body.dump())) {
          ADD_FAILURE() << "client " << i << ": cannot send";
          ++wrong;
          return;
        }
        std::string got = raw.readUntil("\n\n", 2);
        if (got.find(" 503 ") != std::string::npos)
          ++refused;
        else
          ++hung_up;
        return;
      }
      auto res =
          h.client().Post("/v1/completions", body.dump(), "application/json");
      if (!res) {
        ADD_FAILURE() << "client " << i << ": " << httplib::to_string(res.error());
        ++wrong;
        return;
      }
      if (res->status == 503) {
        ++refused;
        return;
      }
      std::string expected;
      for (int k = 0; k < 30; ++k)
        expected += prompt[k % prompt.size()];
      std::string text;
      if (stream) {
        std::vector<std::string> data = sseData(res->body);
        for (size_t k = 0; k + 1 < data.size(); ++k)
          text += json::parse(data[k])["choices"][0]["text"].get<std::string>();
      } else {
        text = json::parse(res->body)["choices"][0]["text"];
      }
      if (res->status == 200 && text == expected) {
        ++ok;
      } else {
        ADD_FAILURE() << "client " << i << ": " << res->status << " " << res->body;
        ++wrong;
      }
    });
  for (std::thread &t : clients)
    t.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(ok + refused + hung_up, kClients);
  EXPECT_GT(ok, 0);
  EXPECT_TRUE(h.engine->waitIdle(std::chrono::seconds(5)));
  auto health = h.client().Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  std::string metrics = h.server->metricsText();
  EXPECT_NE(metrics.find("strata_requests_in_flight 0\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("strata_running_requests 0\n"), std::string::npos);
  // Every admitted request reached the engine; MTP counters moved.
  EXPECT_EQ(h.engine->lastId(), RequestId(kClients - refused));
  EXPECT_NE(metrics.find("strata_mtp_draft_tokens_by_position_total{position=\"1\"}"),
            std::string::npos);
}

// Tests engine errors: a refused submit (INVALID_ARGUMENT) is a 400, a
// failure during generation a 500 (non-streaming) or an error event before
// [DONE] (streaming).
TEST(ServeServer, EngineErrors) {
  TestEngineOptions eo;
  eo.reject_token = 'R';
  eo.error_token = 'E';
  Harness h = start(defaultOptions(), eo);
  json rejected = post(h, "/v1/completions", {{"prompt", "xR"}}, 400);
  EXPECT_EQ(rejected["error"]["message"], "prompt holds rejected token 82");
  EXPECT_EQ(rejected["error"]["type"], "invalid_request_error");
  json failed = post(h, "/v1/completions", {{"prompt", "xE"}}, 500);
  EXPECT_EQ(failed["error"]["type"], "server_error");
  EXPECT_EQ(failed["error"]["code"], "engine_error");
  EXPECT_EQ(failed["error"]["message"],
            "generation failed: test engine failure after 1 tokens");
  auto res = h.client().Post(
      "/v1/completions",
      json({{"prompt", "xE"}, {"stream", true}}).dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  std::vector<std::string> data = sseData(res->body);
  ASSERT_EQ(data.size(), 3u);
  EXPECT_EQ(json::parse(data[0])["choices"][0]["text"], "x");
  EXPECT_EQ(json::parse(data[1])["error"]["message"],
            "generation failed: test engine failure after 1 tokens");
  EXPECT_EQ(data[2], "[DONE]");
}

// Tests that completion_prefix goes before /v1/completions prompts (and not
// before token-id prompts or chat).
TEST(ServeServer, CompletionPrefix) {
  ServerOptions o = defaultOptions();
  o.completion_prefix = "[gMASK]<sop>";
  Harness h = start(o);
  json r = post(h, "/v1/completions", {{"prompt", "hi"}, {"max_tokens", 4}}, 200);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 4);
  // The echo starts with the two special tokens, skipped in the text.
  EXPECT_EQ(r["choices"][0]["text"], "hi");
  json ids = post(h, "/v1/completions", {{"prompt", {104, 105}}, {"max_tokens", 2}},
                  200);
  EXPECT_EQ(ids["usage"]["prompt_tokens"], 2);
}

// Tests stop(): a request in flight is cancelled and the server stops.
TEST(ServeServer, StopCancelsInFlight) {
  ServerOptions o = defaultOptions();
  o.max_context_tokens = 100000;
  TestEngineOptions eo;
  eo.step_delay = std::chrono::milliseconds(10);
  Harness h = start(o, eo);
  std::thread client([&] {
    auto res = h.client().Post(
        "/v1/completions",
        json({{"prompt", "x"}, {"max_tokens", 50000}}).dump(),
        "application/json");
    if (res)
      EXPECT_EQ(res->status, 503);
  });
  for (int i = 0; i < 200 && h.engine->lastId() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto t0 = std::chrono::steady_clock::now();
  h.server->stop();
  client.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                .count(),
            3.0);
  EXPECT_EQ(h.engine->cancelledCount(), 1u);
}

// Tests create()'s option checks.
TEST(ServeServer, CreateErrors) {
  auto tok = []() -> std::unique_ptr<const tokenizer::Tokenizer> {
    return std::move(tokenizer::Tokenizer::fromJson(testing::testTokenizerJson()))
        .value();
  };
  ServerOptions o = defaultOptions();
  o.max_context_tokens = 0;
  auto r = Server::create(o, std::make_unique<TestEngine>(), tok());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "max_context_tokens must be positive, got 0");
  o = defaultOptions();
  o.port = 70000;
  r = Server::create(o, std::make_unique<TestEngine>(), tok());
  EXPECT_EQ(r.status().message(), "port must be in [0, 65535], got 70000");
  r = Server::create(defaultOptions(), nullptr, tok());
  EXPECT_EQ(r.status().message(), "server needs an engine");
}

// Tests that a taken port is an UNAVAILABLE error of start().
TEST(ServeServer, PortInUse) {
  Harness a = start();
  ServerOptions o = defaultOptions();
  o.port = a.server->port();
  auto tok = tokenizer::Tokenizer::fromJson(testing::testTokenizerJson());
  auto b = Server::create(o, std::make_unique<TestEngine>(), std::move(*tok));
  ASSERT_TRUE(b.ok());
  Status s = (*b)->start();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), fmt::format("cannot bind 127.0.0.1:{}", o.port));
}

} // namespace
} // namespace strata::runtime::serve
