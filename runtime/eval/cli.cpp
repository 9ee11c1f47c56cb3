//===- cli.cpp - strata-eval command line ----------------------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/eval/cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "runtime/eval/eval_client.h"

namespace strata::runtime::eval {

static const char *kUsage =
    "usage: strata-eval gsm8k --url URL --data FILE [options]\n"
    "       strata-eval gsm8k-gold --data FILE   (check extraction on gold answers)\n"
    "  --shots K          few-shot count (default 5)\n"
    "  --shots-data FILE  few-shot pool (default: train.jsonl beside --data)\n"
    "  --seed S           shot selection seed (default 1234)\n"
    "  --passes N         passes over the questions (default 1; 2 exercises prefix caching)\n"
    "  --limit N          first N questions only\n"
    "  --concurrency N    requests in flight (default 8)\n"
    "  --max-tokens N     generation budget (default 512)\n"
    "  --completions      raw /v1/completions instead of chat multi-turn\n"
    "  --model NAME       model field (default: first of /v1/models)\n"
    "  --timeout SECONDS  per request (default 600)\n"
    "  --output FILE      per-question results as JSON Lines\n";

static bool parseUnsigned(const char *s, unsigned long long &out) {
  char *end = nullptr;
  if (!s || !*s || *s == '-')
    return false;
  out = std::strtoull(s, &end, 10);
  return end && *end == '\0';
}

/// `strata-eval gsm8k-gold --data FILE`: applies both filters to every gold
/// answer of a GSM8K file and scores them against the gold; a data file (or
/// an extraction change) that does not recover every answer fails.
static int runGoldCheck(int argc, char **argv) {
  if (argc != 4 || std::string(argv[2]) != "--data") {
    fmt::print(stderr, "usage: strata-eval gsm8k-gold --data FILE\n");
    return 2;
  }
  auto rows = loadGsm8kJsonl(argv[3]);
  if (!rows.ok()) {
    fmt::print(stderr, "strata-eval: {}\n", rows.status().toString());
    return 1;
  }
  size_t strict = 0, flexible = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string &answer = (*rows)[i].answer;
    bool s = exactMatch(strictMatch(answer), answer);
    bool f = exactMatch(flexibleExtract(answer), answer);
    strict += s;
    flexible += f;
    if (!s || !f)
      fmt::print("row {}: not recovered by{}{}\n", i + 1, s ? "" : " strict-match",
                 f ? "" : " flexible-extract");
  }
  fmt::print("strict-match: {} of {} gold answers recovered\n", strict,
             rows->size());
  fmt::print("flexible-extract: {} of {} gold answers recovered\n", flexible,
             rows->size());
  return strict == rows->size() && flexible == rows->size() ? 0 : 1;
}

int runEvalCli(int argc, char **argv) {
  if (argc >= 2 && std::string(argv[1]) == "gsm8k-gold")
    return runGoldCheck(argc, argv);
  if (argc < 2 || std::string(argv[1]) != "gsm8k") {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  EvalOptions o;
  std::string output;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    auto number = [&](unsigned long long &out) {
      const char *v = value();
      if (!parseUnsigned(v, out)) {
        fmt::print(stderr, "strata-eval: {} expects a non-negative integer\n",
                   flag);
        return false;
      }
      return true;
    };
    unsigned long long n = 0;
    if (flag == "--url" || flag == "--data" || flag == "--shots-data" ||
        flag == "--model" || flag == "--output" || flag == "--timeout") {
      const char *v = value();
      if (!v) {
        fmt::print(stderr, "strata-eval: {} expects a value\n", flag);
        return 2;
      }
      if (flag == "--url")
        o.url = v;
      else if (flag == "--data")
        o.dataPath = v;
      else if (flag == "--shots-data")
        o.shotsPath = v;
      else if (flag == "--model")
        o.model = v;
      else if (flag == "--output")
        output = v;
      else
        o.timeoutSeconds = std::atof(v);
    } else if (flag == "--shots") {
      if (!number(n)) return 2;
      o.shots = n;
    } else if (flag == "--seed") {
      if (!number(n)) return 2;
      o.seed = n;
    } else if (flag == "--passes") {
      if (!number(n)) return 2;
      o.passes = static_cast<int>(n);
    } else if (flag == "--limit") {
      if (!number(n)) return 2;
      o.limit = n;
    } else if (flag == "--concurrency") {
      if (!number(n)) return 2;
      o.concurrency = static_cast<int>(n);
    } else if (flag == "--max-tokens") {
      if (!number(n)) return 2;
      o.maxTokens = static_cast<int>(n);
    } else if (flag == "--completions") {
      o.chat = false;
    } else {
      fmt::print(stderr, "strata-eval: unknown flag '{}'\n{}", flag, kUsage);
      return 2;
    }
  }
  if (o.url.empty() || o.dataPath.empty()) {
    fmt::print(stderr, "strata-eval: --url and --data are required\n{}", kUsage);
    return 2;
  }
  StatusOr<EvalReport> report = runGsm8kEval(o);
  if (!report.ok()) {
    fmt::print(stderr, "strata-eval: {}\n", report.status().toString());
    return 1;
  }
  fmt::print("{}", formatEvalReport(*report));
  if (!output.empty()) {
    std::ofstream out(output);
    out << evalResultsJsonl(*report);
    if (!out) {
      fmt::print(stderr, "strata-eval: cannot write '{}'\n", output);
      return 1;
    }
  }
  return 0;
}

} // namespace strata::runtime::eval
