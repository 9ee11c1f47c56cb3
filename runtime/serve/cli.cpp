//===- cli.cpp - strata-serve command line ----------------------------------===//
//
// Part of strata. Start-up order: flags, tokenizer, artifact (validated by
// runtime/loader; it gives the context length and the end-of-sequence id),
// checkpoint folder, engine (model_engine.h), server. Serves until SIGINT or
// SIGTERM, then stops cleanly (Server::stop).
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/cli.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include <fmt/format.h>
#include <pthread.h>

#include "runtime/checkpoint/weight_source.h"
#include "runtime/loader/artifact.h"
#include "runtime/serve/memory_sizing.h"
#include "runtime/serve/model_engine.h"
#include "runtime/serve/server.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::serve {

static const char *kUsage =
    "usage: strata-serve --artifact FILE --checkpoint DIR --tokenizer FILE "
    "[options]\n"
    "  --artifact FILE     compiled model (strata-compile output)\n"
    "  --checkpoint DIR    weights: config.json and *.safetensors, or\n"
    "                      procedural:CONFIG.json (docs/ProceduralWeights.md,\n"
    "                      generated at start-up, nothing on disk)\n"
    "  --tokenizer FILE    Hugging Face tokenizer.json\n"
    "  --host ADDR         listen address (default 127.0.0.1)\n"
    "  --port P            listen port (default 8000; 0 picks a free one)\n"
    "  --max-queue N       generation requests admitted at once (default "
    "64 on the\n"
    "                      CPU, 1024 on GPU targets); more get 503\n"
    "  --model NAME        model id in /v1/models (default strata)\n"
    "  --gpu-memory-utilization F  share of the device's total memory to use\n"
    "                      (0 < F <= 1): the caches get what the weights and\n"
    "                      the step buffers leave of it (default 0.9 on GPU\n"
    "                      targets; the log line says what was sized)\n"
    "  --kv-memory-mb M    cache memory budget instead (default on the CPU:\n"
    "                      256): KV blocks are what is left after the\n"
    "                      per-request states\n"
    "  --kv-blocks N       KV blocks, overriding --kv-memory-mb\n"
    "  --max-requests N    requests running at once (default 8 on the CPU,\n"
    "                      256 on GPU targets)\n"
    "  --max-step-tokens N tokens per engine step (default 256 on the CPU,\n"
    "                      2048 on GPU targets)\n"
    "  --chunk N           longest prefill chunk of one request (default:\n"
    "                      --max-step-tokens)\n"
    "  --prefix-cache on|off  prefix reuse (default on)\n"
    "  --decode-graphs on|off  replay decode steps from captured graphs\n"
    "                      (default on)\n"
    "  --checkpoint-interval N  KDA snapshot interval in tokens for prefix\n"
    "                      reuse (a multiple of the page size; default 16 pages)\n"
    "  --snapshot-slots N  KDA state snapshots kept for prefix reuse (default\n"
    "                      2 per running request)\n"
    "  --target T          artifact target to run: cpu (default), sm_90 (CUDA),\n"
    "                      gfx942 / gfx950 (HIP)\n"
    "  --mtp K             MTP speculative decoding with K = 0..3 draft tokens\n"
    "                      (default 0)\n";

static bool parseUnsigned(const std::string &s, unsigned long long max,
                          unsigned long long &out) {
  char *end = nullptr;
  if (s.empty() || s[0] == '-')
    return false;
  out = std::strtoull(s.c_str(), &end, 10);
  return end && *end == '\0' && out <= max;
}

static int fail(const Status &status) {
  fmt::print(stderr, "strata-serve: error: {}\n", status.message());
  return 1;
}

int runServeCli(int argc, char **argv) {
  // SIGINT/SIGTERM are blocked here, before any thread starts (threads
  // inherit the mask), and taken with sigwait() below for a clean stop().
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string artifact_path, checkpoint_dir, tokenizer_path;
  ModelEngineOptions engine_options;
  ServerOptions options;
  options.port = 8000;
  // Flags given explicitly (GPU targets change the defaults of the others).
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "strata-serve: error: {} needs a value\n{}", flag,
                 kUsage);
      return 2;
    }
    std::string value = argv[++i];
    given.insert(flag);
    unsigned long long n = 0;
    if (flag == "--artifact") {
      artifact_path = value;
    } else if (flag == "--checkpoint") {
      checkpoint_dir = value;
    } else if (flag == "--tokenizer") {
      tokenizer_path = value;
    } else if (flag == "--host") {
      options.host = value;
    } else if (flag == "--model") {
      options.model_id = value;
    } else if (flag == "--port") {
      if (!parseUnsigned(value, 65535, n)) {
        fmt::print(stderr,
                   "strata-serve: error: --port expects 0..65535, got \"{}\"\n",
                   value);
        return 2;
      }
      options.port = static_cast<int>(n);
    } else if (flag == "--kv-memory-mb" || flag == "--kv-blocks" ||
               flag == "--max-requests" || flag == "--max-step-tokens" ||
               flag == "--chunk" || flag == "--checkpoint-interval" ||
               flag == "--snapshot-slots" || flag == "--mtp") {
      unsigned long long limit = flag == "--mtp" ? 3 : (1ull << 40);
      bool positive = flag == "--kv-memory-mb" || flag == "--kv-blocks" ||
                      flag == "--max-requests";
      if (!parseUnsigned(value, limit, n) || (positive && n == 0)) {
        fmt::print(stderr,
                   "strata-serve: error: {} expects {} integer up to {}, got "
                   "\"{}\"\n",
                   flag, positive ? "a positive" : "a non-negative", limit,
                   value);
        return 2;
      }
      if (flag == "--kv-memory-mb")
        engine_options.kv_memory_bytes = n << 20;
      else if (flag == "--kv-blocks")
        engine_options.kv_blocks = n;
      else if (flag == "--max-requests")
        engine_options.max_requests = static_cast<uint32_t>(n);
      else if (flag == "--max-step-tokens")
        engine_options.max_step_tokens = static_cast<size_t>(n);
      else if (flag == "--chunk")
        engine_options.max_chunk_tokens = static_cast<size_t>(n);
      else if (flag == "--checkpoint-interval")
        engine_options.checkpoint_interval_tokens = n;
      else if (flag == "--snapshot-slots")
        engine_options.snapshot_slots = static_cast<uint32_t>(n);
      else
        engine_options.mtp_draft_tokens = static_cast<uint32_t>(n);
    } else if (flag == "--target") {
      engine_options.target = value;
    } else if (flag == "--gpu-memory-utilization") {
      char *end = nullptr;
      double f = std::strtod(value.c_str(), &end);
      if (value.empty() || !end || *end != '\0' || !(f > 0.0 && f <= 1.0)) {
        fmt::print(stderr,
                   "strata-serve: error: --gpu-memory-utilization expects a "
                   "number in (0, 1], got \"{}\"\n",
                   value);
        return 2;
      }
      engine_options.gpu_memory_utilization = f;
    } else if (flag == "--prefix-cache" || flag == "--decode-graphs") {
      if (value != "on" && value != "off") {
        fmt::print(stderr,
                   "strata-serve: error: {} expects on or off, got \"{}\"\n",
                   flag, value);
        return 2;
      }
      (flag == "--prefix-cache" ? engine_options.prefix_cache
                                : engine_options.decode_graphs) = value == "on";
    } else if (flag == "--max-queue") {
      if (!parseUnsigned(value, 1u << 20, n) || n == 0) {
        fmt::print(stderr,
                   "strata-serve: error: --max-queue expects a positive "
                   "integer, got \"{}\"\n",
                   value);
        return 2;
      }
      options.max_queue = static_cast<size_t>(n);
    } else {
      fmt::print(stderr, "strata-serve: error: unknown flag {}\n{}", flag,
                 kUsage);
      return 2;
    }
  }
  if (given.count("--gpu-memory-utilization") &&
      (given.count("--kv-memory-mb") || given.count("--kv-blocks"))) {
    fmt::print(stderr, "strata-serve: error: --gpu-memory-utilization sizes "
                       "the caches; it cannot be combined with --kv-memory-mb "
                       "or --kv-blocks\n");
    return 2;
  }
  // GPU targets: serving-sized defaults (vLLM's are 0.9 and 256 sequences).
  if (engine_options.target != "cpu") {
    if (!given.count("--kv-memory-mb") && !given.count("--kv-blocks") &&
        !given.count("--gpu-memory-utilization"))
      engine_options.gpu_memory_utilization = kDefaultGpuMemoryUtilization;
    if (!given.count("--max-requests"))
      engine_options.max_requests = 256;
    if (!given.count("--max-step-tokens"))
      engine_options.max_step_tokens = 2048;
    if (!given.count("--max-queue"))
      options.max_queue = 1024;
  }
  for (auto [flag, value] : {std::pair{"--artifact", &artifact_path},
                             std::pair{"--checkpoint", &checkpoint_dir},
                             std::pair{"--tokenizer", &tokenizer_path}})
    if (value->empty()) {
      fmt::print(stderr, "strata-serve: error: {} is required\n{}", flag,
                 kUsage);
      return 2;
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
  const artifact::ModelConfig *config = model->def().model();
  if (!config || config->max_position_embeddings() == 0)
    return fail(invalidArgument("{}: artifact has no max_position_embeddings",
                                artifact_path));
  options.max_context_tokens =
      static_cast<int64_t>(config->max_position_embeddings());
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
  auto engine = createModelEngine(engine_options);
  if (!engine.ok())
    return fail(engine.status());

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
  fmt::print("strata-serve: signal {}, stopping\n", signal_number);
  (*server)->stop();
  return 0;
}

} // namespace strata::runtime::serve
