//===- cli.cpp - strata-bench-serve command line ---------------------------===//
//
// Part of strata. Flags through CLI11 (Debian libcli11-dev, header-only)
// held by runtime/base/command_line.h, which catches its exceptions. Order:
// flags, tokenizer, server (GET /v1/models), dataset, runs, reports. The
// reports are written whatever happened, so an unreachable server or a
// failing run still leaves a result file saying so.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/base/command_line.h"
#include "runtime/bench_serve/dataset.h"
#include "runtime/bench_serve/report.h"
#include "runtime/bench_serve/runner.h"

namespace strata::runtime::bench_serve {

namespace {

/// Output tokens of a warm-up request at most.
constexpr int64_t kWarmupOutputTokens = 16;

struct Flags {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = "/v1/completions";
  std::string model, tokenizer;
  DatasetOptions dataset;
  size_t num_prompts = 1000;
  std::string request_rate = "inf";
  size_t max_concurrency = 0;
  std::vector<size_t> sweep;
  size_t prompts_per_concurrency = 0;
  size_t warmups = 1;
  bool ignore_eos = false;
  double temperature = 0;
  uint64_t seed = 0;
  double timeout = 600;
  double progress = 1;
  std::string json_path, sweep_out, title;
  bool detailed = false;
};

Status writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  if (!out)
    return unavailable("cannot write '{}'", path);
  out << text;
  out.close();
  if (!out)
    return unavailable("writing '{}' failed", path);
  return okStatus();
}

int fail(const Status &status) {
  fmt::print(stderr, "strata-bench-serve: error: {}\n", status.message());
  return 1;
}

} // namespace

int runBenchServeCli(int argc, char **argv) {
  Flags f;
  CommandLine cl(
      "strata-bench-serve",
      "usage: strata-bench-serve [--base-url URL] [--endpoint PATH] "
      "[--model NAME]\n"
      "                          --dataset-name random|sharegpt|gsm8k "
      "[--dataset-path F]\n"
      "                          [--tokenizer T] [--num-prompts N] "
      "[--request-rate R|inf]\n"
      "                          [--max-concurrency C | --sweep-concurrency "
      "1,8,32 ...]\n"
      "                          [--json F] [--sweep-out PREFIX] ...\n",
      "The serving load generator for any OpenAI-compatible server, with\n"
      "vLLM's benchmark spellings. docs/BenchServe.md.");
  CLI::App &app = cl.app();
  app.add_option("--base-url", f.base_url,
                 "server base URL (default http://127.0.0.1:8000)");
  app.add_option("--endpoint", f.endpoint, "API path (default /v1/completions)")
      ->check(CLI::IsMember({"/v1/completions", "/v1/chat/completions"}));
  app.add_option("--model", f.model,
                 "model field of the requests (default: the first of "
                 "/v1/models)");
  app.add_option("--tokenizer", f.tokenizer,
                 "tokenizer.json (required for random and sharegpt)");
  app.add_option("--dataset-name", f.dataset.name, "random, sharegpt or gsm8k")
      ->check(CLI::IsMember({"random", "sharegpt", "gsm8k"}));
  app.add_option("--dataset-path", f.dataset.path,
                 "ShareGPT JSON or GSM8K test JSONL");
  app.add_option("--num-prompts", f.num_prompts,
                 "requests per run (default 1000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--random-input-len", f.dataset.random_input_len,
                 "random: prompt tokens (default 1024)");
  app.add_option("--random-output-len", f.dataset.random_output_len,
                 "random: output tokens (default 128)");
  app.add_option("--random-range-ratio", f.dataset.random_range_ratio,
                 "random: lengths uniform in [L(1-r), L(1+r)] (default 0)");
  app.add_option("--sharegpt-output-len", f.dataset.sharegpt_output_len,
                 "sharegpt: output tokens instead of the reply's length");
  app.add_option("--gsm8k-output-len", f.dataset.gsm8k_output_len,
                 "gsm8k: output tokens (default 256)");
  app.add_option("--request-rate", f.request_rate,
                 "requests per second, Poisson arrivals, or inf (default)");
  app.add_option("--max-concurrency", f.max_concurrency,
                 "most requests in flight (default: no limit)");
  app.add_option("--sweep-concurrency", f.sweep,
                 "runs at each of these concurrencies, e.g. 1,8,32,64 "
                 "(a table and a plot)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--prompts-per-concurrency", f.prompts_per_concurrency,
                 "sweep: K x concurrency requests per run instead of "
                 "--num-prompts");
  app.add_option("--warmup-requests", f.warmups,
                 "unmeasured requests (at most 16 output tokens) before the "
                 "first run (default 1)");
  app.add_flag("--ignore-eos", f.ignore_eos,
               "send ignore_eos: outputs of exactly the asked length");
  app.add_option("--temperature", f.temperature, "default 0 (greedy)");
  app.add_option("--seed", f.seed, "dataset and arrival seed (default 0)");
  f.dataset.seed = 0;
  app.add_option("--request-timeout", f.timeout,
                 "seconds one request may take in all (default 600)")
      ->check(CLI::PositiveNumber);
  app.add_option("--progress-interval", f.progress,
                 "seconds between progress lines on stderr (0: none; "
                 "default 1)");
  app.add_option("--json", f.json_path, "write the result(s) as JSON");
  app.add_flag("--save-detailed", f.detailed,
               "JSON: every request's timings too");
  app.add_option("--sweep-out", f.sweep_out,
                 "sweep: write PREFIX.md (table) and PREFIX.svg (plot)");
  app.add_option("--title", f.title, "title of the table and the plot");
  if (std::optional<int> code = cl.parse(argc, argv, std::cout, std::cerr))
    return *code;

  double rate = std::numeric_limits<double>::infinity();
  if (f.request_rate != "inf") {
    char *end = nullptr;
    rate = std::strtod(f.request_rate.c_str(), &end);
    if (f.request_rate.empty() || !end || *end || !(rate > 0) ||
        !std::isfinite(rate)) {
      fmt::print(stderr, "strata-bench-serve: error: --request-rate expects a "
                         "positive number or inf, got \"{}\"\n",
                 f.request_rate);
      return 2;
    }
  }
  if (!f.sweep.empty() && f.max_concurrency) {
    fmt::print(stderr, "strata-bench-serve: error: give --max-concurrency or "
                       "--sweep-concurrency, not both\n");
    return 2;
  }
  if (!f.sweep_out.empty() && f.sweep.empty()) {
    fmt::print(stderr,
               "strata-bench-serve: error: --sweep-out needs --sweep-concurrency\n");
    return 2;
  }
  if ((f.dataset.name == "sharegpt" || f.dataset.name == "gsm8k") &&
      f.dataset.path.empty()) {
    fmt::print(stderr, "strata-bench-serve: error: the {} dataset needs "
                       "--dataset-path\n",
               f.dataset.name);
    return 2;
  }

  // The runs: one, or one per concurrency of the sweep, each with prompts
  // of its own (no prefix-cache hits between runs); the warm-ups, with
  // prompts of their own too, go before the first.
  std::vector<size_t> levels =
      f.sweep.empty() ? std::vector<size_t>{f.max_concurrency} : f.sweep;
  std::vector<size_t> counts;
  size_t total = 0;
  for (size_t c : levels) {
    size_t n = f.prompts_per_concurrency && c ? f.prompts_per_concurrency * c
                                              : f.num_prompts;
    counts.push_back(n);
    total += n;
  }
  total += f.warmups;
  const std::string dataset_label =
      f.dataset.name == "random"
          ? fmt::format("random (input {}, output {}, range ratio {:g})",
                        f.dataset.random_input_len,
                        f.dataset.random_output_len,
                        f.dataset.random_range_ratio)
          : fmt::format("{} ({})", f.dataset.name, f.dataset.path);
  const std::string title =
      f.title.empty() ? fmt::format("{} at {}", dataset_label, f.base_url)
                      : f.title;

  std::vector<SweepPoint> points;
  Status error;
  auto writeReports = [&]() -> Status {
    if (!f.json_path.empty()) {
      nlohmann::json j;
      if (f.sweep.empty() && points.size() == 1) {
        j = runJson(points[0].label, points[0].result, f.detailed);
      } else {
        j["title"] = title;
        j["runs"] = nlohmann::json::array();
        for (const SweepPoint &p : points)
          j["runs"].push_back(runJson(p.label, p.result, f.detailed));
      }
      if (!error.ok())
        j["error"] = std::string(error.message());
      STRATA_RETURN_IF_ERROR(writeFile(f.json_path, j.dump(2) + "\n"));
    }
    if (!f.sweep_out.empty()) {
      STRATA_RETURN_IF_ERROR(
          writeFile(f.sweep_out + ".md", sweepMarkdown(points, title)));
      STRATA_RETURN_IF_ERROR(
          writeFile(f.sweep_out + ".svg", sweepSvg(points, title)));
    }
    return okStatus();
  };
  auto finish = [&]() -> int {
    Status written = writeReports();
    if (!written.ok())
      fail(written);
    if (!error.ok())
      fail(error);
    bool all_ok = error.ok() && written.ok();
    for (const SweepPoint &p : points)
      all_ok &= p.result.metrics.failed == 0 && p.result.error.ok();
    return all_ok ? 0 : 1;
  };

  std::unique_ptr<tokenizer::Tokenizer> tok;
  if (!f.tokenizer.empty()) {
    auto loaded = tokenizer::Tokenizer::fromFile(f.tokenizer);
    if (!loaded.ok()) {
      error = loaded.status();
      return finish();
    }
    tok = std::move(*loaded);
  }
  RunOptions run;
  run.base_url = f.base_url;
  run.endpoint = f.endpoint;
  run.request_rate = rate;
  run.ignore_eos = f.ignore_eos;
  run.temperature = f.temperature;
  run.request_timeout = f.timeout;
  run.seed = f.seed;
  run.progress_interval = f.progress;
  run.model = f.model;
  if (run.model.empty()) {
    StatusOr<std::string> model = resolveModel(f.base_url, f.timeout);
    if (!model.ok()) {
      error = model.status();
      return finish();
    }
    run.model = *model;
  }
  f.dataset.num_prompts = total;
  f.dataset.seed = f.seed;
  f.dataset.random_as_text = f.endpoint == "/v1/chat/completions";
  StatusOr<std::vector<BenchPrompt>> prompts = loadDataset(f.dataset, tok.get());
  if (!prompts.ok()) {
    error = prompts.status();
    return finish();
  }

  size_t offset = 0;
  for (size_t i = 0; i < levels.size(); ++i) {
    const size_t c = levels[i];
    run.max_concurrency = c;
    run.label = f.sweep.empty() ? "" : fmt::format("c={}", c);
    // Warm-ups (first run only) take the first prompts, with at most
    // kWarmupOutputTokens output tokens: they only have to wake the server.
    std::vector<BenchPrompt> warmups;
    if (i == 0) {
      warmups.assign(prompts->begin(), prompts->begin() + f.warmups);
      for (BenchPrompt &p : warmups)
        p.output_tokens = std::min<int64_t>(p.output_tokens, kWarmupOutputTokens);
      offset = f.warmups;
    }
    auto first = prompts->begin() + offset;
    std::vector<BenchPrompt> measured(first, first + counts[i]);
    offset += counts[i];
    StatusOr<RunResult> result = runBenchmark(run, measured, warmups);
    if (!result.ok()) {
      error = result.status();
      break;
    }
    SweepPoint point;
    point.label = RunLabel{f.base_url, f.endpoint, run.model, dataset_label,
                           counts[i], rate, c, f.ignore_eos};
    point.result = std::move(*result);
    fmt::print("{}", formatRun(point.label, point.result));
    std::fflush(stdout);
    const bool stopped = !point.result.error.ok();
    if (stopped)
      error = point.result.error;
    points.push_back(std::move(point));
    // The reports so far, after every run: a sweep cut short (a kill, a
    // time limit) keeps the runs it finished.
    if (i + 1 < levels.size() && !stopped) {
      Status written = writeReports();
      if (!written.ok())
        fail(written);
    }
    if (stopped)
      break;
  }
  if (!f.sweep.empty() && !points.empty())
    fmt::print("\n{}", sweepMarkdown(points, title));
  return finish();
}

} // namespace strata::runtime::bench_serve
