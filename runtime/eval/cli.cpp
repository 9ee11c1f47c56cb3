//===- cli.cpp - strata-eval command line ----------------------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/eval/cli.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "runtime/base/command_line.h"

#include "runtime/eval/eval_client.h"

namespace strata::runtime::eval {

static const char *kUsage =
    "usage: strata-eval gsm8k --url URL --data FILE [options]\n"
    "       strata-eval gsm8k-gold --data FILE   (check extraction on gold "
    "answers)\n";

static const char *kDescription =
    "Runs the GSM8K protocol (few-shot, strict-match and flexible-extract)\n"
    "against any OpenAI-compatible server. `strata-eval gsm8k --help` lists\n"
    "its options. docs/Eval.md.";

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
static int runGoldCheck(const std::string &data) {
  auto rows = loadGsm8kJsonl(data);
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
  CommandLine cl("strata-eval", kUsage, kDescription);
  CLI::App &app = cl.app();
  EvalOptions o;
  std::string output, timeout;
  // Counts stay text: parseUnsigned gives the tool's own message.
  std::vector<std::pair<std::string, std::string>> counts = {
      {"--shots", ""}, {"--seed", ""},        {"--passes", ""},
      {"--limit", ""}, {"--concurrency", ""}, {"--max-tokens", ""}};
  const char *count_help[] = {
      "few-shot count (default 5)",
      "shot selection seed (default 1234)",
      "passes over the questions (default 1; 2 exercises prefix caching)",
      "first N questions only",
      "requests in flight (default 8)",
      "generation budget (default 512)"};
  CLI::App *gsm8k = app.add_subcommand("gsm8k", "score a server on GSM8K");
  gsm8k->add_option("--url", o.url, "server base URL")->type_name("URL");
  gsm8k->add_option("--data", o.dataPath, "GSM8K test JSONL")
      ->type_name("FILE");
  gsm8k
      ->add_option("--shots-data", o.shotsPath,
                   "few-shot pool (default: train.jsonl beside --data)")
      ->type_name("FILE");
  for (size_t i = 0; i < counts.size(); ++i)
    gsm8k->add_option(counts[i].first, counts[i].second, count_help[i])
        ->type_name(i == 1   ? "S"
                    : i == 0 ? "K"
                             : "N");
  bool completions = false;
  gsm8k->add_flag("--completions", completions,
                  "raw /v1/completions instead of chat multi-turn");
  gsm8k
      ->add_option("--model", o.model,
                   "model field (default: first of /v1/models)")
      ->type_name("NAME");
  gsm8k->add_option("--timeout", timeout, "per request (default 600)")
      ->type_name("SECONDS");
  gsm8k->add_option("--output", output, "per-question results as JSON Lines")
      ->type_name("FILE");
  std::string gold_data;
  CLI::App *gold = app.add_subcommand(
      "gsm8k-gold", "check answer extraction on a file's gold answers");
  gold->add_option("--data", gold_data, "GSM8K JSONL")->type_name("FILE");

  if (std::optional<int> code = cl.parse(argc, argv, std::cout, std::cerr))
    return *code;
  if (gold->parsed()) {
    if (gold_data.empty()) {
      fmt::print(stderr, "usage: strata-eval gsm8k-gold --data FILE\n");
      return 2;
    }
    return runGoldCheck(gold_data);
  }
  if (!gsm8k->parsed()) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  for (const auto &[flag, text] : counts) {
    unsigned long long n = 0;
    if (text.empty())
      continue;
    if (!parseUnsigned(text.c_str(), n)) {
      fmt::print(stderr, "strata-eval: {} expects a non-negative integer\n",
                 flag);
      return 2;
    }
    if (flag == "--shots")
      o.shots = n;
    else if (flag == "--seed")
      o.seed = n;
    else if (flag == "--passes")
      o.passes = static_cast<int>(n);
    else if (flag == "--limit")
      o.limit = n;
    else if (flag == "--concurrency")
      o.concurrency = static_cast<int>(n);
    else
      o.maxTokens = static_cast<int>(n);
  }
  if (!timeout.empty())
    o.timeoutSeconds = std::atof(timeout.c_str());
  o.chat = !completions;
  if (o.url.empty() || o.dataPath.empty()) {
    fmt::print(stderr, "strata-eval: --url and --data are required\n{}",
               kUsage);
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
