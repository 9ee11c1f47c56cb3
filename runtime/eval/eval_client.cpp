//===- eval_client.cpp - strata-eval: GSM8K against an OpenAI server -------===//
//
// Part of strata. HTTP through cpp-httplib's client (Debian
// libcpp-httplib-dev), JSON through nlohmann-json.
//
//===----------------------------------------------------------------------===//

#include "runtime/eval/eval_client.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace strata::runtime::eval {

using nlohmann::json;

//===----------------------------------------------------------------------===//
// /metrics
//===----------------------------------------------------------------------===//

static constexpr const char *kPrefixQueried =
    "strata_prefix_cache_queried_tokens_total";
static constexpr const char *kPrefixHit = "strata_prefix_cache_hit_tokens_total";
static constexpr const char *kMtpDraft = "strata_mtp_draft_tokens_total";
static constexpr const char *kMtpAccepted = "strata_mtp_accepted_tokens_total";
static constexpr const char *kMtpDraftByPos =
    "strata_mtp_draft_tokens_by_position_total";
static constexpr const char *kMtpAcceptedByPos =
    "strata_mtp_accepted_tokens_by_position_total";

StatusOr<ServerCounters> parseServerCounters(const std::string &text) {
  ServerCounters c;
  std::istringstream in(text);
  std::string line;
  size_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#')
      continue;
    size_t nameEnd = line.find_first_of("{ ");
    if (nameEnd == std::string::npos)
      continue;
    std::string name = line.substr(0, nameEnd);
    std::string labels;
    size_t valueBegin = nameEnd;
    if (line[nameEnd] == '{') {
      size_t close = line.find('}', nameEnd);
      if (close == std::string::npos)
        return invalidArgument("metrics line {}: unterminated label set",
                               lineNo);
      labels = line.substr(nameEnd + 1, close - nameEnd - 1);
      valueBegin = close + 1;
    }
    bool wanted = name == kPrefixQueried || name == kPrefixHit ||
                  name == kMtpDraft || name == kMtpAccepted ||
                  name == kMtpDraftByPos || name == kMtpAcceptedByPos;
    if (!wanted)
      continue;
    std::istringstream vs(line.substr(valueBegin));
    double value;
    if (!(vs >> value))
      return invalidArgument("metrics line {}: bad value for {}", lineNo, name);
    if (name == kPrefixQueried)
      c.prefixQueriedTokens = value;
    else if (name == kPrefixHit)
      c.prefixHitTokens = value;
    else if (name == kMtpDraft)
      c.mtpDraftTokens = value;
    else if (name == kMtpAccepted)
      c.mtpAcceptedTokens = value;
    else {
      size_t p = labels.find("position=\"");
      if (p == std::string::npos)
        return invalidArgument("metrics line {}: {} without a position label",
                               lineNo, name);
      int position = std::atoi(labels.c_str() + p + 10);
      if (position <= 0)
        return invalidArgument("metrics line {}: bad position label", lineNo);
      (name == kMtpDraftByPos ? c.mtpDraftByPosition
                              : c.mtpAcceptedByPosition)[position] = value;
    }
  }
  return c;
}

ServerCounters counterDelta(const ServerCounters &a, const ServerCounters &b) {
  auto d = [](const std::optional<double> &x, const std::optional<double> &y)
      -> std::optional<double> {
    if (x && y)
      return *y - *x;
    return std::nullopt;
  };
  ServerCounters r;
  r.prefixQueriedTokens = d(a.prefixQueriedTokens, b.prefixQueriedTokens);
  r.prefixHitTokens = d(a.prefixHitTokens, b.prefixHitTokens);
  r.mtpDraftTokens = d(a.mtpDraftTokens, b.mtpDraftTokens);
  r.mtpAcceptedTokens = d(a.mtpAcceptedTokens, b.mtpAcceptedTokens);
  for (auto &[pos, v] : b.mtpDraftByPosition)
    r.mtpDraftByPosition[pos] =
        v - (a.mtpDraftByPosition.count(pos) ? a.mtpDraftByPosition.at(pos) : 0);
  for (auto &[pos, v] : b.mtpAcceptedByPosition)
    r.mtpAcceptedByPosition[pos] =
        v - (a.mtpAcceptedByPosition.count(pos) ? a.mtpAcceptedByPosition.at(pos)
                                                : 0);
  return r;
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

namespace {

std::unique_ptr<httplib::Client> makeClient(const EvalOptions &o) {
  auto client = std::make_unique<httplib::Client>(o.url);
  auto secs = static_cast<time_t>(o.timeoutSeconds);
  client->set_connection_timeout(10, 0);
  client->set_read_timeout(secs, 0);
  client->set_write_timeout(secs, 0);
  return client;
}

StatusOr<std::string> httpGet(const EvalOptions &o, const std::string &path) {
  auto client = makeClient(o);
  auto res = client->Get(path.c_str());
  if (!res)
    return unavailable("GET {}{} failed: {}", o.url, path,
                       httplib::to_string(res.error()));
  if (res->status != 200)
    return unavailable("GET {}{} answered HTTP {}", o.url, path, res->status);
  return res->body;
}

StatusOr<std::string> firstModel(const EvalOptions &o) {
  STRATA_ASSIGN_OR_RETURN(std::string body, httpGet(o, "/v1/models"));
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() ||
      j["data"].empty() || !j["data"][0].contains("id") ||
      !j["data"][0]["id"].is_string())
    return invalidArgument("{}/v1/models: no model listed", o.url);
  return j["data"][0]["id"].get<std::string>();
}

/// One generation; returns the text or an error string in `error`.
std::string generate(const EvalOptions &o, const std::string &model,
                     const std::vector<ChatMessage> &messages,
                     const std::string &prompt, std::string &error) {
  json req;
  req["model"] = model;
  req["max_tokens"] = o.maxTokens;
  req["temperature"] = 0;
  req["stop"] = gsm8kStopSequences();
  std::string path;
  if (o.chat) {
    json msgs = json::array();
    for (const ChatMessage &m : messages)
      msgs.push_back({{"role", m.role}, {"content", m.content}});
    req["messages"] = msgs;
    path = "/v1/chat/completions";
  } else {
    req["prompt"] = prompt;
    path = "/v1/completions";
  }
  auto client = makeClient(o);
  auto res = client->Post(path.c_str(), req.dump(), "application/json");
  if (!res) {
    error = fmt::format("POST {} failed: {}", path,
                        httplib::to_string(res.error()));
    return "";
  }
  json j = json::parse(res->body, nullptr, false);
  if (res->status != 200) {
    error = fmt::format("POST {} answered HTTP {}: {}", path, res->status,
                        res->body.substr(0, 200));
    return "";
  }
  if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty()) {
    error = fmt::format("POST {}: response without choices", path);
    return "";
  }
  const json &c = j["choices"][0];
  if (o.chat && c.contains("message") && c["message"].contains("content") &&
      c["message"]["content"].is_string())
    return c["message"]["content"].get<std::string>();
  if (!o.chat && c.contains("text") && c["text"].is_string())
    return c["text"].get<std::string>();
  error = fmt::format("POST {}: choice without text", path);
  return "";
}

std::optional<ServerCounters> readCounters(const EvalOptions &o) {
  auto body = httpGet(o, "/metrics");
  if (!body.ok())
    return std::nullopt;
  auto c = parseServerCounters(*body);
  if (!c.ok())
    return std::nullopt;
  return *c;
}

} // namespace

StatusOr<EvalReport> runGsm8kEval(const EvalOptions &options) {
  EvalReport report;
  report.options = options;
  EvalOptions &o = report.options;
  if (o.url.empty())
    return invalidArgument("--url is required");
  if (o.passes < 1)
    return invalidArgument("--passes must be >= 1, got {}", o.passes);
  if (o.concurrency < 1)
    return invalidArgument("--concurrency must be >= 1, got {}", o.concurrency);
  STRATA_ASSIGN_OR_RETURN(std::vector<Gsm8kExample> test,
                          loadGsm8kJsonl(o.dataPath));
  if (o.shotsPath.empty()) {
    auto sibling = std::filesystem::path(o.dataPath).parent_path() / "train.jsonl";
    o.shotsPath = std::filesystem::exists(sibling) ? sibling.string() : o.dataPath;
  }
  std::vector<Gsm8kExample> pool;
  if (o.shots > 0) {
    STRATA_ASSIGN_OR_RETURN(pool, loadGsm8kJsonl(o.shotsPath));
  }
  if (o.limit && o.limit < test.size())
    test.resize(o.limit);
  if (o.model.empty()) {
    STRATA_ASSIGN_OR_RETURN(report.model, firstModel(o));
  } else {
    report.model = o.model;
  }

  for (int pass = 0; pass < o.passes; ++pass) {
    PassReport pr;
    pr.results.resize(test.size());
    std::optional<ServerCounters> before = readCounters(o);
    auto start = std::chrono::steady_clock::now();
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < test.size(); i = next++) {
        QuestionResult &r = pr.results[i];
        r.index = i;
        std::vector<const Gsm8kExample *> shots;
        bool sameFile = o.shotsPath == o.dataPath;
        for (size_t id : chooseShots(pool.size(), o.shots, o.seed, i)) {
          if (sameFile && id == i)
            continue; // never show the test item as its own shot
          r.shotIds.push_back(id);
          shots.push_back(&pool[id]);
        }
        r.generation = generate(o, report.model, renderFewShotChat(shots, test[i]),
                                renderFewShotCompletion(shots, test[i]), r.error);
        r.strict = strictMatch(r.generation);
        r.flexible = flexibleExtract(r.generation);
        r.strictCorrect = r.error.empty() && exactMatch(r.strict, test[i].answer);
        r.flexibleCorrect =
            r.error.empty() && exactMatch(r.flexible, test[i].answer);
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < o.concurrency; ++t)
      threads.emplace_back(worker);
    for (std::thread &t : threads)
      t.join();
    pr.seconds = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    size_t strict = 0, flex = 0;
    for (const QuestionResult &r : pr.results) {
      strict += r.strictCorrect;
      flex += r.flexibleCorrect;
      pr.errors += !r.error.empty();
    }
    pr.strictAccuracy = test.empty() ? 0 : double(strict) / test.size();
    pr.flexibleAccuracy = test.empty() ? 0 : double(flex) / test.size();
    std::optional<ServerCounters> after = readCounters(o);
    if (before && after)
      pr.counters = counterDelta(*before, *after);
    if (pr.errors == test.size())
      return unavailable("pass {}: every request failed, first error: {}",
                         pass + 1, pr.results.front().error);
    report.passes.push_back(std::move(pr));
  }
  return report;
}

std::string formatEvalReport(const EvalReport &report) {
  const EvalOptions &o = report.options;
  std::string out = fmt::format(
      "gsm8k: model {}, {} questions, {}-shot {}, seed {}, data {}\n",
      report.model,
      report.passes.empty() ? 0 : report.passes.front().results.size(), o.shots,
      o.chat ? "chat multi-turn" : "completions", o.seed, o.dataPath);
  out += "| pass | flexible-extract | strict-match | errors | prefix hit tokens "
         "| mtp acceptance | per position | seconds |\n";
  out += "|---|---|---|---|---|---|---|---|\n";
  auto na = [](const std::optional<double> &v) {
    return v ? fmt::format("{:.0f}", *v) : std::string("n/a");
  };
  for (size_t p = 0; p < report.passes.size(); ++p) {
    const PassReport &pr = report.passes[p];
    std::string hits = "n/a", acc = "n/a", perPos = "n/a";
    if (pr.counters) {
      const ServerCounters &c = *pr.counters;
      hits = fmt::format("{} of {}", na(c.prefixHitTokens),
                         na(c.prefixQueriedTokens));
      if (c.mtpDraftTokens && *c.mtpDraftTokens > 0 && c.mtpAcceptedTokens)
        acc = fmt::format("{:.4f}", *c.mtpAcceptedTokens / *c.mtpDraftTokens);
      if (!c.mtpDraftByPosition.empty()) {
        perPos.clear();
        for (auto &[pos, drafts] : c.mtpDraftByPosition) {
          double a = c.mtpAcceptedByPosition.count(pos)
                         ? c.mtpAcceptedByPosition.at(pos)
                         : 0;
          perPos += fmt::format("{}{}:{:.4f}", perPos.empty() ? "" : " ", pos,
                                drafts > 0 ? a / drafts : 0.0);
        }
      }
    }
    out += fmt::format("| {} | {:.4f} | {:.4f} | {} | {} | {} | {} | {:.1f} |\n",
                       p + 1, pr.flexibleAccuracy, pr.strictAccuracy, pr.errors,
                       hits, acc, perPos, pr.seconds);
  }
  return out;
}

std::string evalResultsJsonl(const EvalReport &report) {
  std::string out;
  for (size_t p = 0; p < report.passes.size(); ++p)
    for (const QuestionResult &r : report.passes[p].results) {
      json j;
      j["pass"] = p + 1;
      j["index"] = r.index;
      j["shots"] = r.shotIds;
      j["generation"] = r.generation;
      j["strict"] = r.strict ? json(*r.strict) : json(nullptr);
      j["flexible"] = r.flexible ? json(*r.flexible) : json(nullptr);
      j["strict_correct"] = r.strictCorrect;
      j["flexible_correct"] = r.flexibleCorrect;
      if (!r.error.empty())
        j["error"] = r.error;
      out += j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
  return out;
}

} // namespace strata::runtime::eval
