//===- eval_client.h - strata-eval: GSM8K against an OpenAI server ---------===//
//
// Part of strata. A client of any OpenAI-compatible server (strata-serve or
// another engine) that runs the GSM8K protocol of gsm8k.h: renders chat
// few-shot prompts as multi-turn messages (or raw completions), generates
// greedily, applies strict-match and flexible-extract, and reports accuracy,
// per-question results, and the prefix-cache and MTP counters the server
// exposes on /metrics (read before and after each pass). See docs/Eval.md.
//
// runGsm8kEval blocks; it runs `concurrency` requests at a time on its own
// threads. No state is shared between calls.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EVAL_EVAL_CLIENT_H
#define STRATA_RUNTIME_EVAL_EVAL_CLIENT_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/eval/gsm8k.h"

namespace strata::runtime::eval {

/// Options of one evaluation; zero/empty fields take the documented default.
struct EvalOptions {
  std::string url;          // server base URL, e.g. http://127.0.0.1:8000
  std::string model;        // "model" field of requests; default: first of /v1/models
  std::string dataPath;     // test split (JSONL)
  std::string shotsPath;    // few-shot pool (JSONL); default: dataPath's train.jsonl sibling, else dataPath
  size_t shots = 5;         // few-shot count
  uint64_t seed = 1234;     // shot selection seed (recorded in the report)
  int passes = 1;           // passes over the same questions (2 exercises prefix caching)
  size_t limit = 0;         // first N questions only; 0 = all
  int concurrency = 8;      // requests in flight
  int maxTokens = 512;      // generation budget per question
  bool chat = true;         // chat few-shot multi-turn; false: raw /v1/completions
  double timeoutSeconds = 600; // per request
};

/// Counters read from the server's Prometheus /metrics; absent ones are nullopt.
struct ServerCounters {
  std::optional<double> prefixQueriedTokens;
  std::optional<double> prefixHitTokens;
  std::optional<double> mtpDraftTokens;
  std::optional<double> mtpAcceptedTokens;
  std::map<int, double> mtpDraftByPosition;    // position (1-based) -> drafts
  std::map<int, double> mtpAcceptedByPosition; // position (1-based) -> accepted
};

/// Parses Prometheus text exposition for the counters above (names in
/// docs/Eval.md). Unknown lines are ignored; malformed numbers are errors.
StatusOr<ServerCounters> parseServerCounters(const std::string &metricsText);

/// Difference b - a of every counter present in both.
ServerCounters counterDelta(const ServerCounters &a, const ServerCounters &b);

struct QuestionResult {
  size_t index = 0;
  std::vector<size_t> shotIds;
  std::string generation;
  std::optional<std::string> strict, flexible;
  bool strictCorrect = false, flexibleCorrect = false;
  std::string error; // transport or server error, if any (scored wrong)
};

struct PassReport {
  std::vector<QuestionResult> results;
  double strictAccuracy = 0, flexibleAccuracy = 0;
  size_t errors = 0;
  std::optional<ServerCounters> counters; // delta over the pass, when /metrics answers
  double seconds = 0;
};

struct EvalReport {
  EvalOptions options;
  std::string model;
  std::vector<PassReport> passes;
};

/// Runs the evaluation. Transport errors of single requests are recorded per
/// question; an unreachable server or bad data is an error of the call.
StatusOr<EvalReport> runGsm8kEval(const EvalOptions &options);

/// Human-readable table: pass, accuracy (both filters), errors, prefix hits,
/// MTP acceptance overall and per position.
std::string formatEvalReport(const EvalReport &report);

/// Per-question results as JSON Lines (one object per question and pass).
std::string evalResultsJsonl(const EvalReport &report);

} // namespace strata::runtime::eval

#endif // STRATA_RUNTIME_EVAL_EVAL_CLIENT_H
