//===- runner.cpp - send a serving benchmark's requests --------------------===//
//
// Part of strata. See runner.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/runner.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::bench_serve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::unique_ptr<httplib::Client> makeClient(const std::string &url,
                                            double timeout) {
  auto client = std::make_unique<httplib::Client>(url);
  const auto secs = static_cast<time_t>(std::ceil(std::max(timeout, 1.0)));
  client->set_connection_timeout(std::min<time_t>(secs, 10), 0);
  client->set_read_timeout(secs, 0);
  client->set_write_timeout(secs, 0);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  return client;
}

// What httplib's error names mean, for messages.
std::string transportError(httplib::Error error) {
  const std::string name = httplib::to_string(error);
  switch (error) {
  case httplib::Error::Connection:
    return name + " (could not connect)";
  case httplib::Error::Read:
    return name + " (the connection closed or a read failed)";
  case httplib::Error::Write:
    return name + " (a write failed)";
  case httplib::Error::ConnectionTimeout:
    return name + " (connecting timed out)";
  default:
    return name;
  }
}

// A server's error body ({"error": {"message"}}) as one line.
std::string serverMessage(const std::string &body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string())
    return j["error"]["message"].get<std::string>();
  std::string line = body.substr(0, 200);
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  return line;
}

// Sends one request and times it. `run_start` is the run's time origin.
RequestRecord sendOne(httplib::Client &client, const RunOptions &o,
                      const BenchPrompt &prompt, Clock::time_point run_start) {
  RequestRecord r;
  r.expected_output_tokens = prompt.output_tokens;
  r.prompt_tokens = prompt.prompt_tokens;
  const Clock::time_point t0 = Clock::now();
  r.start = seconds(t0 - run_start);
  SseParser sse;
  std::string error_body;
  int status = 0;
  bool past_deadline = false;
  httplib::Request req;
  req.method = "POST";
  req.path = o.endpoint;
  req.body = requestBody(o, prompt);
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response &res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char *data, size_t size, uint64_t,
                             uint64_t) {
    const double now = seconds(Clock::now() - t0);
    if (now > o.request_timeout) {
      past_deadline = true;
      return false;
    }
    if (status != 200) {
      error_body.append(data, size);
      return error_body.size() < (1u << 16);
    }
    return sse.feed(std::string_view(data, size), now);
  };
  httplib::Result res = client.send(req);
  r.e2e = seconds(Clock::now() - t0);
  if (past_deadline) {
    r.error = fmt::format("no complete answer within --request-timeout {} s",
                          o.request_timeout);
  } else if (!sse.error().empty()) {
    r.error = "stream: " + sse.error();
  } else if (!res) {
    r.error = fmt::format("POST {}{} failed: {}", o.base_url, o.endpoint,
                          transportError(res.error()));
  } else if (status != 200) {
    r.error = fmt::format("HTTP {}: {}", status, serverMessage(error_body));
  } else if (!sse.done()) {
    r.error = "the stream ended without [DONE]";
  }
  const std::vector<double> &times = sse.textTimes();
  if (!times.empty()) {
    r.ttft = times.front();
    for (size_t i = 1; i < times.size(); ++i)
      r.itl.push_back(times[i] - times[i - 1]);
  }
  if (sse.promptTokens() >= 0)
    r.prompt_tokens = sse.promptTokens();
  r.output_tokens = sse.completionTokens() >= 0
                        ? sse.completionTokens()
                        : static_cast<int64_t>(sse.textChunks());
  r.ok = r.error.empty();
  return r;
}

} // namespace

//===----------------------------------------------------------------------===//
// Server-sent events
//===----------------------------------------------------------------------===//

bool SseParser::feed(std::string_view data, double now) {
  if (!error_.empty())
    return false;
  buffer_.append(data);
  for (;;) {
    // Events end with a blank line ("\n\n"; "\r\n\r\n" is normalized).
    size_t end = buffer_.find("\n\n");
    size_t crlf = buffer_.find("\r\n\r\n");
    size_t skip = 2;
    if (crlf != std::string::npos && (end == std::string::npos || crlf < end)) {
      end = crlf;
      skip = 4;
    }
    if (end == std::string::npos)
      break;
    std::string block = buffer_.substr(0, end);
    buffer_.erase(0, end + skip);
    std::string payload;
    size_t pos = 0;
    while (pos <= block.size()) {
      size_t nl = block.find('\n', pos);
      std::string line = block.substr(
          pos, nl == std::string::npos ? std::string::npos : nl - pos);
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.rfind("data:", 0) == 0) {
        std::string_view value = std::string_view(line).substr(5);
        if (!value.empty() && value.front() == ' ')
          value.remove_prefix(1);
        if (!payload.empty())
          payload += '\n';
        payload.append(value);
      }
      // Comments (": keep-alive") and other fields are ignored.
      if (nl == std::string::npos)
        break;
      pos = nl + 1;
    }
    if (!payload.empty())
      event(payload, now);
    if (!error_.empty())
      return false;
  }
  return true;
}

void SseParser::event(std::string_view payload, double now) {
  if (payload == "[DONE]") {
    done_ = true;
    return;
  }
  json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error_ = fmt::format("event is not a JSON object: {}",
                         payload.substr(0, 120));
    return;
  }
  if (j.contains("error")) {
    const json &e = j["error"];
    error_ = e.is_object() && e.contains("message") && e["message"].is_string()
                 ? "server error event: " + e["message"].get<std::string>()
                 : "server error event";
    return;
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json &u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
      prompt_tokens_ = u["prompt_tokens"].get<int64_t>();
    if (u.contains("completion_tokens") &&
        u["completion_tokens"].is_number_integer())
      completion_tokens_ = u["completion_tokens"].get<int64_t>();
  }
  if (!j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty())
    return;
  const json &c = j["choices"][0];
  std::string text;
  if (c.contains("text") && c["text"].is_string())
    text = c["text"].get<std::string>();
  else if (c.contains("delta") && c["delta"].is_object() &&
           c["delta"].contains("content") && c["delta"]["content"].is_string())
    text = c["delta"]["content"].get<std::string>();
  if (!text.empty())
    text_times_.push_back(now);
}

//===----------------------------------------------------------------------===//
// Server metrics
//===----------------------------------------------------------------------===//

std::map<std::string, double> parseServerMetrics(const std::string &text) {
  static const char *const kNames[] = {
      "strata_prompt_tokens_total",        "strata_generation_tokens_total",
      "strata_step_time_seconds_sum",      "strata_step_time_seconds_count",
      "strata_mtp_draft_tokens_total",     "strata_mtp_accepted_tokens_total",
      "strata_mtp_draft_tokens_by_position_total",
      "strata_mtp_accepted_tokens_by_position_total",
      "strata_verify_rollbacks_total", "strata_graph_replays_total"};
  std::map<std::string, double> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line =
        text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty() || line[0] == '#')
      continue;
    size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos)
      continue;
    std::string name = line.substr(0, name_end);
    bool wanted = false;
    for (const char *n : kNames)
      wanted |= name == n;
    if (!wanted)
      continue;
    size_t value_begin = line.find(' ', line.find('}') == std::string::npos
                                           ? name_end
                                           : line.find('}'));
    if (value_begin == std::string::npos)
      continue;
    char *end = nullptr;
    const double value = std::strtod(line.c_str() + value_begin, &end);
    if (end == line.c_str() + value_begin)
      continue;
    // Series by draft position or step kind keep their label
    // (name{position="k"}, name{step="s"}); others are summed.
    const bool keeps_label = name.find("_by_position_") != std::string::npos ||
                             name == "strata_graph_replays_total";
    if (keeps_label && line[name_end] == '{') {
      const size_t close = line.find('}');
      if (close == std::string::npos || close > value_begin)
        continue;
      name += line.substr(name_end, close - name_end + 1);
    }
    out[name] += value;
  }
  return out;
}

namespace {

// The server's counters now; empty when /metrics does not answer.
std::map<std::string, double> readServerMetrics(const RunOptions &o) {
  auto client = makeClient(o.base_url, 10);
  httplib::Result res = client->Get("/metrics");
  if (!res || res->status != 200)
    return {};
  return parseServerMetrics(res->body);
}

} // namespace

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

std::string requestBody(const RunOptions &o, const BenchPrompt &p) {
  json body = {{"model", o.model},
               {"max_tokens", p.output_tokens},
               {"temperature", o.temperature},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.endpoint.find("chat") != std::string::npos)
    body["messages"] = json::array({{{"role", "user"}, {"content", p.text}}});
  else if (p.ids)
    body["prompt"] = *p.ids;
  else
    body["prompt"] = p.text;
  if (o.ignore_eos)
    body["ignore_eos"] = true;
  return body.dump();
}

StatusOr<std::string> resolveModel(const std::string &base_url,
                                   double timeout_seconds) {
  auto client = makeClient(base_url, std::min(timeout_seconds, 30.0));
  httplib::Result res = client->Get("/v1/models");
  if (!res)
    return unavailable("cannot reach the server at {}: GET /v1/models failed: "
                       "{}",
                       base_url, transportError(res.error()));
  if (res->status != 200)
    return unavailable("GET {}/v1/models answered HTTP {}: {}", base_url,
                       res->status, serverMessage(res->body));
  json j = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() &&
      !j["data"].empty() && j["data"][0].is_object() &&
      j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    return j["data"][0]["id"].get<std::string>();
  return unavailable("GET {}/v1/models: no model id in the answer", base_url);
}

StatusOr<RunResult> runBenchmark(const RunOptions &o,
                                 const std::vector<BenchPrompt> &prompts,
                                 const std::vector<BenchPrompt> &warmups) {
  if (o.base_url.empty() || o.model.empty())
    return invalidArgument("runBenchmark: base_url and model are required");
  if (!(o.request_rate > 0))
    return invalidArgument("--request-rate must be positive or inf, got {}",
                           o.request_rate);
  if (!(o.request_timeout > 0))
    return invalidArgument("--request-timeout must be positive, got {}",
                           o.request_timeout);
  if (prompts.empty())
    return invalidArgument("no prompts");
  const std::string prefix =
      o.label.empty() ? "strata-bench-serve: " : "strata-bench-serve: [" + o.label + "] ";
  RunResult result;

  // Warm-up: not measured; a failure stops here.
  if (!warmups.empty()) {
    const size_t n = warmups.size();
    std::vector<RequestRecord> warm(n);
    std::vector<std::thread> threads;
    const size_t width = o.max_concurrency ? std::min(n, o.max_concurrency) : n;
    std::atomic<size_t> next{0};
    const Clock::time_point start = Clock::now();
    for (size_t t = 0; t < width; ++t)
      threads.emplace_back([&] {
        auto client = makeClient(o.base_url, o.request_timeout);
        for (size_t i = next++; i < n; i = next++)
          warm[i] = sendOne(*client, o, warmups[i], start);
      });
    for (std::thread &t : threads)
      t.join();
    for (size_t i = 0; i < n; ++i)
      if (!warm[i].ok) {
        result.error = unavailable("warm-up request {} of {} failed: {}",
                                   i + 1, n, warm[i].error);
        result.records.push_back(warm[i]);
        result.metrics = computeMetrics(result.records, 0);
        return result;
      }
    if (o.progress_interval > 0)
      fmt::print(stderr, "{}warm-up: {} request(s) done in {:.2f} s\n", prefix,
                 n, seconds(Clock::now() - start));
  }

  // Arrival times: Poisson at request_rate, or all at once.
  std::vector<double> arrivals(prompts.size(), 0.0);
  if (std::isfinite(o.request_rate)) {
    std::mt19937_64 rng(o.seed);
    std::exponential_distribution<double> gap(o.request_rate);
    double t = 0;
    for (size_t i = 0; i < arrivals.size(); ++i) {
      arrivals[i] = t;
      t += gap(rng);
    }
  }

  const std::map<std::string, double> metrics_before = readServerMetrics(o);
  result.records.resize(prompts.size());
  const size_t workers =
      o.max_concurrency ? std::min(o.max_concurrency, prompts.size())
                        : prompts.size();
  std::atomic<size_t> next{0}, done{0}, failed{0}, in_flight{0};
  std::atomic<int64_t> output_tokens{0};
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  const Clock::time_point start = Clock::now();

  std::thread progress;
  if (o.progress_interval > 0)
    progress = std::thread([&] {
      std::unique_lock<std::mutex> lock(mutex);
      const auto interval = std::chrono::duration<double>(o.progress_interval);
      while (!finished_cv.wait_for(lock, interval, [&] { return finished; })) {
        const double elapsed = seconds(Clock::now() - start);
        fmt::print(stderr,
                   "{}{}/{} done ({} failed), {} in flight, {:.1f} s, {:.1f} "
                   "output tok/s\n",
                   prefix, done.load(), prompts.size(), failed.load(),
                   in_flight.load(), elapsed,
                   elapsed > 0 ? double(output_tokens.load()) / elapsed : 0.0);
      }
    });

  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      auto client = makeClient(o.base_url, o.request_timeout);
      for (size_t i = next++; i < prompts.size(); i = next++) {
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(arrivals[i])));
        ++in_flight;
        RequestRecord r = sendOne(*client, o, prompts[i], start);
        --in_flight;
        if (r.ok)
          output_tokens += r.output_tokens;
        else
          ++failed;
        ++done;
        result.records[i] = std::move(r);
      }
    });
  for (std::thread &t : threads)
    t.join();
  // The run ends when its last request does.
  double end = 0;
  for (const RequestRecord &r : result.records)
    end = std::max(end, r.start + r.e2e);
  result.duration = end;
  {
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
  }
  finished_cv.notify_all();
  if (progress.joinable())
    progress.join();
  result.metrics = computeMetrics(result.records, result.duration);
  if (!metrics_before.empty())
    for (const auto &[name, value] : readServerMetrics(o))
      result.server_metrics[name] =
          value - (metrics_before.count(name) ? metrics_before.at(name) : 0);
  if (o.progress_interval > 0)
    fmt::print(stderr, "{}{}/{} done ({} failed) in {:.2f} s\n", prefix,
               done.load(), prompts.size(), failed.load(), result.duration);
  return result;
}

} // namespace strata::runtime::bench_serve
