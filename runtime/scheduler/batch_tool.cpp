//===- batch_tool.cpp - the strata-batch command line ---------------------===//
//
// Part of strata. See batch_tool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/batch_tool.h"

#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "runtime/base/command_line.h"
#include "runtime/base/flag_values.h"
#include "runtime/executor/rank_flags.h"
#include "runtime/scheduler/engine.h"

namespace strata::runtime {

using artifact::StepKind;

namespace {

constexpr const char *kUsage =
    "usage: strata-batch --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                    (--prompt-ids IDS | --prompts FILE)...\n"
    "                    [--max-tokens N] [--max-requests N] [--blocks N]\n"
    "                    [--step-tokens N] [--chunk N] [--prefix-cache]\n"
    "                    [--checkpoint-interval N] [--snapshot-slots N]\n"
    "                    [--mtp K] [--mtp-draft-with-target on|off]\n"
    "                    [--mtp-chain-in-one-step on|off]\n"
    "                    [--mtp-chain-with-target on|off]\n"
    "                    [--passes N] [--cancel I:N] [--queue N]\n"
    "                    [--metrics] [--step-graphs on|off]\n"
    "                    [--rank R --world-size N --store STORE]\n"
    "                    [--collectives auto|gloo|nccl]\n";

constexpr const char *kDescription =
    "Submits every prompt (comma-separated token ids; a --prompts file has\n"
    "one per line, '#' starts a comment) to the engine at once, greedy, and\n"
    "prints each request's generated ids, then the engine counters. Each\n"
    "pass resubmits all prompts once the previous pass finished.\n"
    "--cancel I:N cancels prompt I once it has N tokens. A sharded artifact\n"
    "runs one process per rank (started here without --rank): rank 0's\n"
    "scheduler drives them all and prints. docs/Scheduler.md.";

struct BatchOptions {
  std::string artifact, checkpoint;
  std::vector<std::vector<int32_t>> prompts;
  int64_t max_tokens = 16, passes = 1, cancel_index = -1, cancel_after = 0;
  SchedulerOptions scheduler;
  bool metrics = false;
  bool step_graphs = true;
  /// Tensor/expert parallelism (rank_flags.h) and the command line, which
  /// the launcher gives every rank.
  RankRunOptions ranks;
  std::vector<std::string> args;
};

/// Integer flags as typed (parsed with parseIntFlag for the shared
/// messages) and their lower bounds.
struct IntFlag {
  const char *name, *description;
  int64_t min;
  std::string text;
};

struct BatchFlags {
  RankFlags ranks;
  std::vector<std::string> prompt_ids, prompt_files;
  std::string cancel, step_graphs = "on", draft_with_target = "on";
  std::string chain_in_one_step = "on", chain_with_target = "on";
  std::vector<IntFlag> ints = {
      {"--max-tokens", "tokens to generate per request (default 16)", 1, ""},
      {"--max-requests", "requests running at once (default 4)", 1, ""},
      {"--blocks", "KV blocks (default: enough for every prompt)", 1, ""},
      {"--step-tokens", "tokens per engine step", 1, ""},
      {"--chunk", "prefill chunk in tokens", 1, ""},
      {"--checkpoint-interval", "prefix-cache snapshot interval (tokens)", 1,
       ""},
      {"--snapshot-slots", "prefix-cache state snapshot slots", 1, ""},
      {"--mtp", "MTP draft tokens per step (default 0)", 0, ""},
      {"--passes", "passes over the prompts (default 1)", 1, ""},
      {"--queue", "most queued requests", 1, ""}};
};

void declareFlags(CommandLine &cl, BatchOptions &o, BatchFlags &f) {
  CLI::App &app = cl.app();
  app.add_option("--artifact", o.artifact, "the .strata artifact")
      ->type_name("A");
  app.add_option("--checkpoint", o.checkpoint,
                 "checkpoint folder, or procedural:CONFIG.json")
      ->type_name("DIR");
  cl.addRepeated("--prompt-ids", f.prompt_ids,
                 "one prompt: comma-separated token ids (repeatable)")
      ->type_name("IDS");
  cl.addRepeated("--prompts", f.prompt_files,
                 "a file of prompts, one per line ('#' comments)")
      ->type_name("FILE");
  for (IntFlag &flag : f.ints)
    app.add_option(flag.name, flag.text, flag.description)->type_name("N");
  app.add_flag("--prefix-cache", o.scheduler.enable_prefix_cache,
               "reuse cached prefixes across requests");
  app.add_option("--cancel", f.cancel, "cancel prompt I once it has N tokens")
      ->type_name("I:N");
  app.add_flag("--metrics", o.metrics, "print the engine's metrics at the end");
  app.add_option("--step-graphs", f.step_graphs,
                 "replay decode and MTP verify / draft steps from captured "
                 "graphs (default on)")
      ->type_name("on|off");
  app.add_option("--mtp-draft-with-target", f.draft_with_target,
                 "with --mtp: the draft's first pass in the same graph as "
                 "greedy decode / verify steps (default on)")
      ->type_name("on|off");
  app.add_option("--mtp-chain-in-one-step", f.chain_in_one_step,
                 "with --mtp 3: the draft chain's passes as one step, each "
                 "fed by the last on the device (default on)")
      ->type_name("on|off");
  app.add_option("--mtp-chain-with-target", f.chain_with_target,
                 "with --mtp 2 or 3: the draft chain after the draft's first "
                 "pass, in the same graph, one candidate per verified row "
                 "(default on)")
      ->type_name("on|off");
  declareRankFlags(app, o.ranks, f.ranks);
}

StatusOr<BatchOptions> finishOptions(const CommandLine &cl, BatchOptions o,
                                     const BatchFlags &f) {
  o.scheduler.max_requests = 4;
  STRATA_ASSIGN_OR_RETURN(o.step_graphs,
                          parseOnOffFlag("--step-graphs", f.step_graphs));
  STRATA_ASSIGN_OR_RETURN(
      o.scheduler.draft_with_target,
      parseOnOffFlag("--mtp-draft-with-target", f.draft_with_target));
  STRATA_ASSIGN_OR_RETURN(
      o.scheduler.chain_in_one_step,
      parseOnOffFlag("--mtp-chain-in-one-step", f.chain_in_one_step));
  STRATA_ASSIGN_OR_RETURN(
      o.scheduler.chain_with_target,
      parseOnOffFlag("--mtp-chain-with-target", f.chain_with_target));
  for (const auto &[flag, text] :
       cl.valuesInOrder({"--prompt-ids", "--prompts"})) {
    if (flag == "--prompt-ids") {
      STRATA_ASSIGN_OR_RETURN(
          std::vector<int32_t> ids,
          parseTokenIdsFlag(flag, text, /*trim_spaces=*/true));
      o.prompts.push_back(std::move(ids));
      continue;
    }
    std::ifstream file(text);
    if (!file)
      return notFound("--prompts: cannot open '{}'", text);
    std::string line;
    for (int line_no = 1; std::getline(file, line); ++line_no) {
      line = line.substr(0, line.find('#'));
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        continue;
      StatusOr<std::vector<int32_t>> ids =
          parseTokenIdsFlag(flag, line, /*trim_spaces=*/true);
      if (!ids.ok())
        return ids.status().withContext(
            fmt::format("{} line {}", text, line_no));
      o.prompts.push_back(std::move(*ids));
    }
  }
  for (const IntFlag &flag : f.ints) {
    if (flag.text.empty())
      continue;
    STRATA_ASSIGN_OR_RETURN(int64_t n, parseIntFlag(flag.name, flag.text));
    if (n < flag.min)
      return invalidArgument("{} must be >= {}, got {}", flag.name, flag.min,
                             n);
    std::string_view name = flag.name;
    if (name == "--max-tokens")
      o.max_tokens = n;
    else if (name == "--max-requests")
      o.scheduler.max_requests = uint32_t(n);
    else if (name == "--blocks")
      o.scheduler.num_blocks = uint64_t(n);
    else if (name == "--step-tokens")
      o.scheduler.max_step_tokens = size_t(n);
    else if (name == "--chunk")
      o.scheduler.max_chunk_tokens = size_t(n);
    else if (name == "--checkpoint-interval")
      o.scheduler.checkpoint_interval_tokens = uint64_t(n);
    else if (name == "--snapshot-slots")
      o.scheduler.num_snapshot_slots = uint32_t(n);
    else if (name == "--mtp")
      o.scheduler.mtp_draft_tokens = uint32_t(n);
    else if (name == "--passes")
      o.passes = n;
    else if (name == "--queue")
      o.scheduler.max_queued = size_t(n);
  }
  if (!f.cancel.empty()) {
    const std::string &text = f.cancel;
    size_t colon = text.find(':');
    if (colon == std::string::npos)
      return invalidArgument("--cancel: expected I:N, got '{}'", text);
    STRATA_ASSIGN_OR_RETURN(o.cancel_index,
                            parseIntFlag("--cancel", text.substr(0, colon)));
    STRATA_ASSIGN_OR_RETURN(o.cancel_after,
                            parseIntFlag("--cancel", text.substr(colon + 1)));
  }
  STRATA_RETURN_IF_ERROR(finishRankFlags(o.ranks, f.ranks));
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
  engine_options.step_graphs = o.step_graphs;
  // A sharded artifact: start every rank, or be one; rank 0 schedules.
  STRATA_ASSIGN_OR_RETURN(RankRole role,
                          resolveRankRole(o.ranks, o.artifact, o.args));
  if (role.launcher)
    return role.launched;
  engine_options.ranks = role.ranks;
  if (role.ranks && role.ranks->rank != 0)
    return runEngineFollower(engine_options);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                          Engine::create(engine_options));
  for (int64_t pass = 0; pass < o.passes; ++pass) {
    std::mutex mutex;
    std::vector<Result> results(o.prompts.size());
    SamplingParams params;
    params.max_tokens = o.max_tokens;
    // All prompts of a pass arrive together (submitAll), so the steps the
    // engine takes do not depend on how fast this thread submits.
    std::vector<Engine::Request> requests;
    for (size_t i = 0; i < o.prompts.size(); ++i) {
      Engine *e = engine.get();
      bool cancel_me = int64_t(i) == o.cancel_index;
      int64_t cancel_after = o.cancel_after;
      requests.push_back(
          {o.prompts[i], params,
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
           }});
    }
    {
      // Held while submitting: a callback finding its id unset cannot race.
      std::lock_guard<std::mutex> lock(mutex);
      STRATA_ASSIGN_OR_RETURN(std::vector<uint64_t> ids,
                              engine->submitAll(std::move(requests)));
      for (size_t i = 0; i < ids.size(); ++i)
        results[i].id = ids[i];
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
    out << "graphs:";
    for (StepKind kind : kGraphSteps)
      out << fmt::format(" {} {} captured {} replays",
                         artifact::EnumNameStepKind(kind),
                         s.graphs.captures[size_t(kind)],
                         s.graphs.replays[size_t(kind)]);
    // Decode and verify steps captured with the draft's first pass.
    for (StepKind kind : {StepKind::decode, StepKind::mtp_verify})
      out << fmt::format(" {}+draft {} captured {} replays",
                         artifact::EnumNameStepKind(kind),
                         s.graphs.drafted_captures[size_t(kind)],
                         s.graphs.drafted_replays[size_t(kind)]);
    // Draft chains of several passes in one graph.
    out << fmt::format(" mtp_chain*passes {} captured {} replays",
                       s.graphs.chained_captures, s.graphs.chained_replays);
    out << "\n";
  }
  if (o.metrics)
    out << engine->metricsText();
  return okStatus();
}

} // namespace

int runBatchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err) {
  CommandLine cl("strata-batch", kUsage, kDescription);
  BatchOptions parsed;
  BatchFlags flags;
  declareFlags(cl, parsed, flags);
  if (std::optional<int> code = cl.parse(args, out, err))
    return *code;
  StatusOr<BatchOptions> options = finishOptions(cl, parsed, flags);
  if (!options.ok())
    return cl.usageError(err, options.status().message());
  options->args = args;
  Status status = run(*options, out);
  if (!status.ok()) {
    err << "strata-batch: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace strata::runtime
