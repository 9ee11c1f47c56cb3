//===- cli.cpp - strata-serve command line ----------------------------------===//
//
// Part of strata. Flags through CLI11 (Debian libcli11-dev, header-only; its
// parse errors are exceptions, caught here and nowhere else). strata's own
// flag names are the documented ones; vLLM's spellings of the same settings
// (`vllm serve`) are accepted as aliases so a vLLM command line works
// (docs/Serving.md has the table). Start-up order: flags, tokenizer,
// artifact (validated by runtime/loader; it gives the context length and the
// end-of-sequence ids), checkpoint folder, engine (model_engine.h), server.
// Serves until SIGINT or SIGTERM, then drains (--shutdown-timeout) and stops
// (Server::drain, Server::stop).
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/cli.h"

#include "runtime/base/version.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pthread.h>

#include "runtime/base/progress.h"
#include "runtime/checkpoint/weight_source.h"
#include "runtime/executor/rank_flags.h"
#include "runtime/scheduler/engine.h"
#include "runtime/loader/artifact.h"
#include "runtime/serve/compiled_settings.h"
#include "runtime/serve/memory_sizing.h"
#include "runtime/serve/model_engine.h"
#include "runtime/serve/server.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::serve {


static int fail(const Status &status) {
  fmt::print(stderr, "strata-serve: error: {}\n", status.message());
  return 1;
}

static int usageError(const std::string &message) {
  fmt::print(stderr,
             "strata-serve: error: {}\nRun with --help for more information.\n",
             message);
  return 2;
}

StatusOr<uint32_t> parseSpeculativeConfig(const std::string &text) {
  nlohmann::json j =
      nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalidArgument("--speculative-config expects a JSON object, got "
                           "'{}'",
                           text);
  uint32_t k = 1;
  bool has_method = false;
  for (auto &[key, value] : j.items()) {
    if (key == "method") {
      if (!value.is_string() || value != "mtp")
        return invalidArgument("--speculative-config: only method \"mtp\" is "
                               "supported, got {}",
                               value.dump());
      has_method = true;
    } else if (key == "num_speculative_tokens") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > 3)
        return invalidArgument("--speculative-config: num_speculative_tokens "
                               "must be an integer in 1..3, got {}",
                               value.dump());
      k = static_cast<uint32_t>(value.get<int64_t>());
    } else {
      return invalidArgument("--speculative-config: unknown field \"{}\"", key);
    }
  }
  if (!has_method)
    return invalidArgument("--speculative-config: \"method\": \"mtp\" is "
                           "required");
  return k;
}

int runServeCli(int argc, char **argv) {
  std::string artifact_path, checkpoint_dir, tokenizer_path;
  ModelEngineOptions engine_options;
  ServerOptions options;
  options.port = 8000;
  options.host = "127.0.0.1";
  uint64_t kv_memory_mb = 256, kv_blocks = 0, max_queue = 64;
  uint64_t max_model_len = 0;
  std::string prefix_cache = "on", step_graphs = "on", speculative_config;
  std::string dependent_launches = "off", mtp_draft_with_target = "on";
  std::string mtp_chain_in_one_step = "on", mtp_chain_with_target = "on";
  uint32_t mtp = 0;
  bool quiet = false;
  CompiledSettingFlags compiled;

  CLI::App app{"strata-serve: the OpenAI-compatible server (docs/Serving.md). "
               "vLLM's flag spellings are accepted where they mean the same "
               "setting.",
               "strata-serve"};
  // The shared text of every tool: version and configure-time git commit.
  std::string version = versionText("strata-serve");
  version.pop_back(); // CLI11 ends the line itself
  app.set_version_flag("--version", version);
  app.get_formatter()->column_width(36);
  app.add_option("--artifact", artifact_path,
                 "compiled model (strata-compile output; required)");
  app.add_option("--checkpoint", checkpoint_dir,
                 "weights: config.json and *.safetensors, or "
                 "procedural:CONFIG.json (docs/ProceduralWeights.md; "
                 "required)");
  app.add_option("--tokenizer", tokenizer_path,
                 "Hugging Face tokenizer.json (required)");
  app.add_option("--host", options.host, "listen address (default 127.0.0.1)");
  app.add_option("--port", options.port,
                 "listen port (default 8000; 0 picks a free one)")
      ->check(CLI::Range(0, 65535));
  auto *queue_opt =
      app.add_option("--max-queue", max_queue,
                     "generation requests admitted at once (default 64 on the "
                     "CPU, 1024 on GPU targets); more get 503")
          ->check(CLI::Range(uint64_t(1), uint64_t(1) << 20));
  app.add_option("--model,--served-model-name", options.model_id,
                 "model id in /v1/models and responses (default strata)");
  app.add_option("--max-model-len", max_model_len,
                 "context length, prompt plus output (default: the model's, "
                 "at most 131072); at most the model's")
      ->check(CLI::PositiveNumber);
  auto *util_opt =
      app.add_option("--gpu-memory-utilization",
                     engine_options.gpu_memory_utilization,
                     "share of the device's memory to use (0 < F <= 1; "
                     "default 0.9 on GPU targets): the caches get what the "
                     "weights and the step buffers leave")
          ->check(CLI::Validator(
              [](std::string &value) -> std::string {
                char *end = nullptr;
                double f = std::strtod(value.c_str(), &end);
                if (value.empty() || *end != '\0' || !(f > 0.0 && f <= 1.0))
                  return "expects a number in (0, 1], got \"" + value + "\"";
                return "";
              },
              "(0, 1]"));
  auto *kv_mb_opt =
      app.add_option("--kv-memory-mb", kv_memory_mb,
                     "cache memory budget instead (default 256 on the CPU)")
          ->check(CLI::PositiveNumber);
  auto *kv_blocks_opt =
      app.add_option("--kv-blocks", kv_blocks,
                     "KV blocks, overriding --kv-memory-mb")
          ->check(CLI::PositiveNumber);
  auto *requests_opt =
      app.add_option("--max-requests,--max-num-seqs",
                     engine_options.max_requests,
                     "requests running at once (default 8 on the CPU, 256 on "
                     "GPU targets)")
          ->check(CLI::PositiveNumber);
  auto *step_opt =
      app.add_option("--max-step-tokens,--max-num-batched-tokens",
                     engine_options.max_step_tokens,
                     "tokens per engine step (default 256 on the CPU; on GPU "
                     "targets vLLM's: 8192 on devices of 70 GiB or more, "
                     "else 2048)");
  app.add_option("--chunk", engine_options.max_chunk_tokens,
                 "longest prefill chunk of one request (default: "
                 "--max-step-tokens)");
  auto *prefix_opt =
      app.add_option("--prefix-cache", prefix_cache,
                     "prefix reuse on|off (default on)")
          ->check(CLI::IsMember({"on", "off"}));
  bool enable_prefix_caching = true;
  auto *enable_prefix =
      app.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching",
                   enable_prefix_caching,
                   "vLLM's spelling of --prefix-cache on / off")
          ->excludes(prefix_opt);
  app.add_option("--step-graphs,--decode-graphs", step_graphs,
                 "replay decode and MTP verify / draft steps from captured "
                 "graphs on|off (default on)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--dependent-launches", dependent_launches,
                 "NVIDIA: the graph-replayed steps' kernels as programmatic "
                 "dependent launches on|off (default off; faster for small "
                 "models at low concurrency, docs/GPULowering.md)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--checkpoint-interval",
                 engine_options.checkpoint_interval_tokens,
                 "KDA snapshot interval in tokens for prefix reuse (a "
                 "multiple of the page size; default 16 pages)");
  app.add_option("--snapshot-slots", engine_options.snapshot_slots,
                 "KDA state snapshots kept for prefix reuse (default 2 per "
                 "running request)");
  app.add_option("--target", engine_options.target,
                 "artifact target to run: cpu (default), sm_90 / sm_90a "
                 "(CUDA), gfx942 / gfx950 (HIP)");
  auto *mtp_opt = app.add_option("--mtp", mtp,
                                 "MTP speculative decoding with K = 0..3 "
                                 "draft tokens (default 0)")
                      ->check(CLI::Range(0, 3));
  app.add_option("--mtp-draft-with-target", mtp_draft_with_target,
                 "with --mtp: run the draft's first pass in the same graph "
                 "as greedy decode / verify steps on|off (default on; off: a "
                 "step of its own, docs/Scheduler.md)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--mtp-chain-in-one-step", mtp_chain_in_one_step,
                 "with --mtp 3: run the draft chain's passes as one step, "
                 "each fed by the last on the device, on|off (default on; "
                 "off: a step per pass, docs/Scheduler.md)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--mtp-chain-with-target", mtp_chain_with_target,
                 "with --mtp 2 or 3: run the draft chain after the draft's "
                 "first pass in the verify's graph, one candidate chain per "
                 "verified row, on|off (default on; docs/Scheduler.md)")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_option("--speculative-config", speculative_config,
                 "vLLM's spelling of --mtp: "
                 "'{\"method\":\"mtp\",\"num_speculative_tokens\":K}'")
      ->excludes(mtp_opt);
  app.add_option("--api-key", options.api_key,
                 "require 'Authorization: Bearer KEY' on /v1/* (default: "
                 "none)");
  app.add_option("--allowed-origins", options.allowed_origins,
                 "CORS: origins allowed to call the server from a browser, "
                 "comma-separated or repeated (\"*\": any; default none)")
      ->delimiter(',');
  std::string reasoning_parser = "glm45";
  app.add_option("--reasoning-parser", reasoning_parser,
                 "glm45 (default): chat answers put the text between <think> "
                 "and </think> in reasoning_content; none: all in content")
      ->check(CLI::IsMember({"glm45", "none"}));
  std::string tool_call_parser = "glm45";
  app.add_option("--tool-call-parser", tool_call_parser,
                 "glm45 / glm47 (default; the same parser reads both forms): "
                 "chat answers with tools get tool_calls; none: tools are "
                 "rendered but calls stay in content")
      ->check(CLI::IsMember({"glm45", "glm47", "none"}));
  app.add_flag("--enable-auto-tool-choice",
               "accepted for vLLM command lines: tool_choice auto is always "
               "on when --tool-call-parser is not none");
  bool enforce_eager = false;
  app.add_flag("--enforce-eager", enforce_eager,
               "vLLM's spelling of --decode-graphs off");
  double shutdown_timeout = 30;
  app.add_option("--shutdown-timeout", shutdown_timeout,
                 "seconds SIGTERM / SIGINT waits for requests in flight "
                 "(new ones get 503, /health 503) before cancelling the rest "
                 "(default 30; 0: cancel at once)")
      ->check(CLI::Range(0.0, 86400.0));
  bool request_log = true;
  app.add_flag("--enable-log-requests,!--disable-log-requests", request_log,
               "one log line per finished generation request with its "
               "X-Request-Id (default on)");
  app.add_option("--dtype", compiled.dtype,
                 "checked against the artifact's activation type: auto, "
                 "bfloat16, float32; compiled in (strata-compile "
                 "--activation-type)");
  app.add_option("--kv-cache-dtype", compiled.kv_cache_dtype,
                 "checked against the artifact's KV cache: auto, bfloat16, "
                 "fp8 (fp8_e4m3), float32; compiled in (strata-compile "
                 "--kv-cache-dtype)");
  app.add_option("--tensor-parallel-size", compiled.tensor_parallel_size,
                 "checked against the artifact's tensor-parallel size (vLLM's "
                 "-tp too); compiled in (strata-compile "
                 "--tensor-parallel-size)");
  RankRunOptions rank_options;
  RankFlags rank_flags;
  declareRankProcessFlags(app, rank_options, rank_flags);
  app.add_flag("-q,--quiet", quiet,
               "no progress lines on stderr (the weight upload)");
  util_opt->excludes(kv_mb_opt)->excludes(kv_blocks_opt);

  // Unknown arguments are collected rather than thrown, so they are
  // reported before missing required flags.
  app.allow_extras();
  // vLLM's two-letter short flag -tp, which CLI11 cannot declare.
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::vector<std::string> command_line = args;
  for (std::string &arg : args)
    if (arg == "-tp")
      arg = "--tensor-parallel-size";
  std::reverse(args.begin(), args.end()); // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return usageError(e.what());
  }
  if (!app.remaining().empty())
    return usageError(fmt::format("unknown argument {}", app.remaining()[0]));
  engine_options.mtp_draft_tokens = mtp;
  if (!speculative_config.empty()) {
    StatusOr<uint32_t> k = parseSpeculativeConfig(speculative_config);
    if (!k.ok())
      return usageError(std::string(k.status().message()));
    engine_options.mtp_draft_tokens = *k;
  }
  for (auto [flag, value] : {std::pair{"--artifact", &artifact_path},
                             std::pair{"--checkpoint", &checkpoint_dir},
                             std::pair{"--tokenizer", &tokenizer_path}})
    if (value->empty())
      return usageError(fmt::format("{} is required", flag));

  if (Status ranks = finishRankFlags(rank_options, rank_flags); !ranks.ok())
    return usageError(std::string(ranks.message()));

  // SIGINT/SIGTERM are blocked here, before any thread starts (threads
  // inherit the mask), and taken with sigwait() below for a clean stop().
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  engine_options.kv_memory_bytes = kv_memory_mb << 20;
  engine_options.kv_blocks = kv_blocks;
  options.max_queue = static_cast<size_t>(max_queue);
  engine_options.step_graphs = step_graphs == "on" && !enforce_eager;
  engine_options.dependent_launches = dependent_launches == "on";
  engine_options.mtp_draft_with_target = mtp_draft_with_target == "on";
  engine_options.mtp_chain_in_one_step = mtp_chain_in_one_step == "on";
  engine_options.mtp_chain_with_target = mtp_chain_with_target == "on";
  engine_options.prefix_cache =
      enable_prefix->count() ? enable_prefix_caching : prefix_cache == "on";
  // GPU targets: serving-sized defaults (vLLM's are 0.9 and 256 sequences).
  if (engine_options.target != "cpu") {
    if (!kv_mb_opt->count() && !kv_blocks_opt->count() && !util_opt->count())
      engine_options.gpu_memory_utilization = kDefaultGpuMemoryUtilization;
    if (!requests_opt->count())
      engine_options.max_requests = 256;
    if (!step_opt->count()) {
      engine_options.max_step_tokens = kSmallDeviceStepTokens;
      engine_options.step_tokens_from_device = true;
    }
    if (!queue_opt->count())
      options.max_queue = 1024;
  }

  auto tokenizer = tokenizer::Tokenizer::fromFile(tokenizer_path);
  if (!tokenizer.ok())
    return fail(tokenizer.status());
  auto artifact = Artifact::fromFile(artifact_path);
  if (!artifact.ok())
    return fail(artifact.status());
  if (checkpoint_dir.rfind(kProceduralWeightsPrefix, 0) != 0 &&
      !std::filesystem::is_directory(checkpoint_dir))
    return fail(notFound("checkpoint folder {} does not exist",
                         checkpoint_dir));

  std::shared_ptr<const Artifact> model(std::move(*artifact));
  Status settings = checkCompiledSettings(*model, compiled);
  if (!settings.ok())
    return fail(settings);
  // A sharded artifact: start every rank (and wait), or be one of them;
  // rank 0 serves, the others follow its engine. The signals are unblocked
  // meanwhile (no thread runs yet): the launcher forwards them to the ranks.
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  StatusOr<RankRole> role =
      resolveRankRole(rank_options, *model, command_line);
  if (!role.ok())
    return fail(role.status());
  if (role->launcher)
    return role->launched.ok() ? 0 : fail(role->launched);
  if (role->ranks && role->ranks->rank != 0) {
    EngineOptions follower;
    follower.artifact_path = artifact_path;
    follower.checkpoint_dir = checkpoint_dir;
    follower.target = engine_options.target;
    follower.step_graphs = step_graphs == "on" && !enforce_eager;
    follower.dependent_launches = dependent_launches == "on";
    follower.ranks = role->ranks;
    // A follower stops when rank 0 says so (after draining) or fails; the
    // launcher forwards SIGINT / SIGTERM to every rank, and rank 0 drains.
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
    Status followed = runEngineFollower(follower);
    return followed.ok() ? 0 : fail(followed);
  }
  engine_options.ranks = role->ranks;
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const artifact::ModelConfig *config = model->def().model();
  if (!config || config->max_position_embeddings() == 0)
    return fail(invalidArgument("{}: artifact has no max_position_embeddings",
                                artifact_path));
  const auto model_context =
      static_cast<int64_t>(config->max_position_embeddings());
  if (max_model_len > static_cast<uint64_t>(model_context))
    return fail(invalidArgument("--max-model-len {} exceeds the model's "
                                "context of {} tokens",
                                max_model_len, model_context));
  options.max_context_tokens =
      max_model_len ? static_cast<int64_t>(max_model_len)
                    : std::min<int64_t>(model_context, kDefaultMaxModelLen);
  // Every end-of-sequence id stops generation (GLM ends turns with
  // <|user|> as well as <|endoftext|>).
  if (config->eos_token_ids() && config->eos_token_ids()->size() > 0) {
    for (int64_t id : *config->eos_token_ids())
      options.stop_token_ids.push_back(static_cast<int32_t>(id));
  } else if (config->eos_token_id() >= 0) {
    options.stop_token_ids.push_back(
        static_cast<int32_t>(config->eos_token_id()));
  }
  // /v1/completions prompts get what GLM's tokenizer post-processor adds.
  if ((*tokenizer)->tokenToId("[gMASK]") && (*tokenizer)->tokenToId("<sop>"))
    options.completion_prefix = "[gMASK]<sop>";

  engine_options.artifact = model;
  engine_options.artifact_path = artifact_path;
  engine_options.checkpoint_dir = checkpoint_dir;
  engine_options.max_queue = options.max_queue;
  engine_options.log = [](const std::string &line) {
    fmt::print("strata-serve: {}\n", line);
    std::fflush(stdout);
  };
  // The weight upload's progress on stderr (stdout carries the port line
  // clients wait for).
  ProgressReporter progress({"strata-serve", stderr, quiet});
  engine_options.progress = &progress;
  auto engine = createModelEngine(engine_options);
  if (!engine.ok())
    return fail(engine.status());

  if (request_log)
    options.log = engine_options.log;
  options.reasoning_parser = reasoning_parser == "glm45";
  options.tool_parser = tool_call_parser != "none";
  auto server = Server::create(std::move(options), std::move(*engine),
                               std::move(*tokenizer));
  if (!server.ok())
    return fail(server.status());
  Status started = (*server)->start();
  if (!started.ok())
    return fail(started);
  fmt::print("strata-serve: listening on port {}\n", (*server)->port());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  fmt::print("strata-serve: signal {}, draining (up to {} s)\n",
             signal_number, shutdown_timeout);
  std::fflush(stdout);
  bool drained = (*server)->drain(std::chrono::milliseconds(
      static_cast<int64_t>(shutdown_timeout * 1000)));
  // The engine's statistics are those of its last step, taken just after
  // it delivered the final events: give that snapshot a moment to land.
  EngineStats stats = (*server)->engine().stats();
  for (int ms = 0; ms < 2000 && drained &&
                   (stats.running_requests > 0 || stats.kv_blocks_in_use > 0);
       ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stats = (*server)->engine().stats();
  }
  fmt::print("strata-serve: {}, stopping ({} kv blocks in use)\n",
             drained ? "every request finished"
                     : "shutdown timeout reached, cancelling the rest",
             stats.kv_blocks_in_use);
  std::fflush(stdout);
  (*server)->stop();
  return 0;
}

} // namespace strata::runtime::serve
