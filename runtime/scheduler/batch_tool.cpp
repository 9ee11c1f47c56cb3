//===- batch_tool.cpp - the strata-batch command line ---------------------===//
//
// Part of strata. See batch_tool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/batch_tool.h"

#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "runtime/base/flag_values.h"
#include "runtime/scheduler/engine.h"

namespace strata::runtime {

namespace {

constexpr const char *kUsage =
    "usage: strata-batch --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                    (--prompt-ids IDS | --prompts FILE)...\n"
    "                    [--max-tokens N] [--max-requests N] [--blocks N]\n"
    "                    [--step-tokens N] [--chunk N] [--prefix-cache]\n"
    "                    [--checkpoint-interval N] [--snapshot-slots N]\n"
    "                    [--mtp K] [--passes N] [--cancel I:N] [--queue N]\n"
    "                    [--metrics]\n"
    "  Submits every prompt (comma-separated token ids; a --prompts file has\n"
    "  one per line, '#' starts a comment) to the engine at once, greedy, and\n"
    "  prints each request's generated ids, then the engine counters. Each\n"
    "  pass resubmits all prompts once the previous pass finished.\n"
    "  --cancel I:N cancels prompt I once it has N tokens. docs/Scheduler.md.\n";

struct BatchOptions {
  std::string artifact, checkpoint;
  std::vector<std::vector<int32_t>> prompts;
  int64_t max_tokens = 16, passes = 1, cancel_index = -1, cancel_after = 0;
  SchedulerOptions scheduler;
  bool metrics = false;
};

StatusOr<BatchOptions> parseArgs(const std::vector<std::string> &args) {
  BatchOptions o;
  o.scheduler.max_requests = 4;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &flag = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size())
        return invalidArgument("{} needs a value", flag);
      return args[++i];
    };
    auto number = [&](int64_t min) -> StatusOr<int64_t> {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      STRATA_ASSIGN_OR_RETURN(int64_t n, parseIntFlag(flag, text));
      if (n < min)
        return invalidArgument("{} must be >= {}, got {}", flag, min, n);
      return n;
    };
    if (flag == "--artifact") {
      STRATA_ASSIGN_OR_RETURN(o.artifact, value());
    } else if (flag == "--checkpoint") {
      STRATA_ASSIGN_OR_RETURN(o.checkpoint, value());
    } else if (flag == "--prompt-ids") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      STRATA_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parseTokenIdsFlag(flag, text, /*trim_spaces=*/true));
      o.prompts.push_back(std::move(ids));
    } else if (flag == "--prompts") {
      STRATA_ASSIGN_OR_RETURN(std::string path, value());
      std::ifstream file(path);
      if (!file)
        return notFound("--prompts: cannot open '{}'", path);
      std::string line;
      for (int line_no = 1; std::getline(file, line); ++line_no) {
        line = line.substr(0, line.find('#'));
        if (line.find_first_not_of(" \t\r") == std::string::npos)
          continue;
        StatusOr<std::vector<int32_t>> ids = parseTokenIdsFlag(flag, line, /*trim_spaces=*/true);
        if (!ids.ok())
          return ids.status().withContext(
              fmt::format("{} line {}", path, line_no));
        o.prompts.push_back(std::move(*ids));
      }
    } else if (flag == "--max-tokens") {
      STRATA_ASSIGN_OR_RETURN(o.max_tokens, number(1));
    } else if (flag == "--max-requests") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.max_requests = uint32_t(n);
    } else if (flag == "--blocks") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.num_blocks = uint64_t(n);
    } else if (flag == "--step-tokens") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.max_step_tokens = size_t(n);
    } else if (flag == "--chunk") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.max_chunk_tokens = size_t(n);
    } else if (flag == "--prefix-cache") {
      o.scheduler.enable_prefix_cache = true;
    } else if (flag == "--checkpoint-interval") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.checkpoint_interval_tokens = uint64_t(n);
    } else if (flag == "--snapshot-slots") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.num_snapshot_slots = uint32_t(n);
    } else if (flag == "--mtp") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(0));
      o.scheduler.mtp_draft_tokens = uint32_t(n);
    } else if (flag == "--passes") {
      STRATA_ASSIGN_OR_RETURN(o.passes, number(1));
    } else if (flag == "--queue") {
      STRATA_ASSIGN_OR_RETURN(int64_t n, number(1));
      o.scheduler.max_queued = size_t(n);
    } else if (flag == "--cancel") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      size_t colon = text.find(':');
      if (colon == std::string::npos)
        return invalidArgument("--cancel: expected I:N, got '{}'", text);
      STRATA_ASSIGN_OR_RETURN(o.cancel_index,
                              parseIntFlag(flag, text.substr(0, colon)));
      STRATA_ASSIGN_OR_RETURN(o.cancel_after,
                              parseIntFlag(flag, text.substr(colon + 1)));
    } else if (flag == "--metrics") {
      o.metrics = true;
    } else {
      return invalidArgument("unknown flag '{}'", flag);
    }
  }
  if (o.artifact.empty() || o.checkpoint.empty())
    return invalidArgument("--artifact and --checkpoint are required");
  if (o.prompts.empty())
    return invalidArgument("no prompt: give --prompt-ids or --prompts");
  if (o.cancel_index >= int64_t(o.prompts.size()))
    return invalidArgument("--cancel: prompt {} of {}", o.cancel_index,
                           o.prompts.size());
  return o;
}

/// What one request produced.
struct Result {
  uint64_t id = 0;
  std::vector<int32_t> tokens;
  bool done = false;
  FinishReason reason = FinishReason::kNone;
  Status status;
  uint64_t cached = 0;
};

Status run(BatchOptions &o, std::ostream &out) {
  if (o.scheduler.num_blocks == 0) {
    // Enough for every prompt at once, unless --blocks asks for less.
    STRATA_ASSIGN_OR_RETURN(CacheGeometry g, readArtifactGeometry(o.artifact));
    uint64_t blocks = 0;
    for (const auto &p : o.prompts)
      blocks += (p.size() + o.max_tokens + 4 + g.page_size_tokens) /
                g.page_size_tokens;
    o.scheduler.num_blocks = blocks;
  }
  EngineOptions engine_options;
  engine_options.artifact_path = o.artifact;
  engine_options.checkpoint_dir = o.checkpoint;
  engine_options.scheduler = o.scheduler;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                          Engine::create(engine_options));
  for (int64_t pass = 0; pass < o.passes; ++pass) {
    std::mutex mutex;
    std::vector<Result> results(o.prompts.size());
    SamplingParams params;
    params.max_tokens = o.max_tokens;
    for (size_t i = 0; i < o.prompts.size(); ++i) {
      Engine *e = engine.get();
      bool cancel_me = int64_t(i) == o.cancel_index;
      int64_t cancel_after = o.cancel_after;
      StatusOr<uint64_t> id = engine->submit(
          o.prompts[i], params,
          [&, i, e, cancel_me, cancel_after](const RequestOutput &output) {
            bool cancel_now = false;
            {
              std::lock_guard<std::mutex> lock(mutex);
              Result &r = results[i];
              size_t before = r.tokens.size();
              r.tokens.insert(r.tokens.end(), output.tokens.begin(),
                              output.tokens.end());
              r.cached = output.cached_tokens;
              if (output.finished) {
                r.done = true;
                r.reason = output.finish_reason;
                r.status = output.status;
              }
              cancel_now = cancel_me && !output.finished &&
                           int64_t(before) < cancel_after &&
                           int64_t(r.tokens.size()) >= cancel_after;
            }
            if (cancel_now)
              (void)e->cancel(output.id);
          });
      if (!id.ok())
        return id.status().withContext(fmt::format("prompt {}", i));
      std::lock_guard<std::mutex> lock(mutex);
      results[i].id = *id;
    }
    engine->waitIdle();
    STRATA_RETURN_IF_ERROR(engine->lastError());
    uint64_t cached = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      const Result &r = results[i];
      cached += r.cached;
      if (!r.status.ok()) {
        if (r.status.code() == StatusCode::kCancelled) {
          out << fmt::format("cancelled {}: after {} tokens\n", i,
                             r.tokens.size());
          continue;
        }
        return r.status.withContext(fmt::format("prompt {}", i));
      }
      out << "request " << i << ":";
      for (int32_t t : r.tokens)
        out << ' ' << t;
      out << " (" << finishReasonName(r.reason) << ")\n";
    }
    SchedulerStats s = engine->stats();
    out << fmt::format(
        "pass {}: cached_tokens {} prefix_hit_tokens {} "
        "prefix_queried_tokens {} used_blocks {} of {} preemptions {} "
        "rollbacks {} mtp_accepted {} of {} steps {}\n",
        pass, cached, s.kv.prefix_hit_tokens, s.kv.prefix_queried_tokens,
        s.kv.used_blocks, s.kv.num_blocks, s.preemptions, s.verify_rollbacks,
        s.mtp.accepted_tokens, s.mtp.draft_tokens, s.steps);
  }
  if (o.metrics)
    out << engine->metricsText();
  return okStatus();
}

} // namespace

int runBatchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    (args.empty() ? err : out) << kUsage;
    return args.empty() ? 2 : 0;
  }
  StatusOr<BatchOptions> options = parseArgs(args);
  if (!options.ok()) {
    err << "strata-batch: " << options.status().message() << "\n" << kUsage;
    return 2;
  }
  Status status = run(*options, out);
  if (!status.ok()) {
    err << "strata-batch: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace strata::runtime
