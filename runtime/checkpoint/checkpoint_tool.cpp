//===- checkpoint_tool.cpp - command line of strata-write-checkpoint ------===//
//
// Part of strata. See checkpoint_tool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/checkpoint_tool.h"

#include "runtime/checkpoint/checkpoint_writer.h"
#include "runtime/checkpoint/glm5_manifest.h"
#include "runtime/checkpoint/safetensors.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {
namespace {

constexpr const char *kUsage =
    "usage: strata-write-checkpoint --config C.json --out DIR "
    "[--max-shard-bytes N] [--only-layers L,...] [--threads N]\n"
    "       strata-write-checkpoint --check DIR [--only-layers L,...] "
    "[--strict]\n"
    "       strata-write-checkpoint --print DIR --tensor NAME --indices "
    "I,...\n"
    "       strata-write-checkpoint --config C.json --summary "
    "[--only-layers L,...]\n";

StatusOr<uint64_t> parseUnsigned(std::string_view flag, const std::string &s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    return invalidArgument("{} expects a non-negative integer, got '{}'", flag,
                           s);
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  if (errno == ERANGE)
    return invalidArgument("{} value '{}' is out of range", flag, s);
  return static_cast<uint64_t>(v);
}

StatusOr<std::vector<int64_t>> parseList(std::string_view flag,
                                         const std::string &s) {
  std::vector<int64_t> values;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos
                                                   : comma - start);
    STRATA_ASSIGN_OR_RETURN(uint64_t v, parseUnsigned(flag, item));
    values.push_back(static_cast<int64_t>(v));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return values;
}

struct Args {
  std::string config, out, check, print, tensor;
  uint64_t max_shard_bytes = 0;
  uint64_t threads = 0;
  std::optional<std::vector<int64_t>> only_layers;
  std::vector<int64_t> indices;
  bool strict = false;
  bool summary = false;
};

Status parseArgs(int argc, char **argv, Args &args) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--strict" || flag == "--summary") {
      (flag == "--strict" ? args.strict : args.summary) = true;
      continue;
    }
    if (i + 1 >= argc)
      return invalidArgument("{} needs a value", flag);
    std::string value = argv[++i];
    if (flag == "--config")
      args.config = value;
    else if (flag == "--out")
      args.out = value;
    else if (flag == "--check")
      args.check = value;
    else if (flag == "--print")
      args.print = value;
    else if (flag == "--tensor")
      args.tensor = value;
    else if (flag == "--max-shard-bytes") {
      STRATA_ASSIGN_OR_RETURN(args.max_shard_bytes, parseUnsigned(flag, value));
      if (args.max_shard_bytes == 0)
        return invalidArgument("--max-shard-bytes must be positive");
    } else if (flag == "--threads") {
      STRATA_ASSIGN_OR_RETURN(args.threads, parseUnsigned(flag, value));
      if (args.threads == 0 || args.threads > 1024)
        return invalidArgument("--threads must be in [1, 1024], got {}",
                               args.threads);
    } else if (flag == "--only-layers") {
      STRATA_ASSIGN_OR_RETURN(auto layers, parseList(flag, value));
      args.only_layers = std::move(layers);
    } else if (flag == "--indices") {
      STRATA_ASSIGN_OR_RETURN(args.indices, parseList(flag, value));
    } else
      return invalidArgument("unknown option '{}'", flag);
  }
  int modes = !args.out.empty() + !args.check.empty() + !args.print.empty() +
              args.summary;
  if (modes != 1)
    return invalidArgument(
        "give exactly one of --out, --check, --print, --summary");
  if (args.summary && args.config.empty())
    return invalidArgument("--summary needs --config");
  return okStatus();
}

Status runCheck(const Args &args, std::FILE *out) {
  STRATA_ASSIGN_OR_RETURN(Glm5TextConfig config,
                          loadGlm5Config(args.check + "/config.json"));
  ManifestOptions manifest_options;
  manifest_options.only_layers = args.only_layers;
  STRATA_ASSIGN_OR_RETURN(auto manifest,
                          glm5TensorManifest(config, manifest_options));
  STRATA_ASSIGN_OR_RETURN(auto checkpoint, Checkpoint::open(args.check));
  ValidateOptions validate_options;
  validate_options.reject_unlisted = args.strict;
  STRATA_RETURN_IF_ERROR(
      validateCheckpoint(*checkpoint, manifest, validate_options));
  // Every FP8 weight must also pair with a well-shaped scale.
  for (const TensorSpec &spec : manifest)
    if (spec.dtype == DType::kF8E4M3) {
      STRATA_ASSIGN_OR_RETURN(
          Fp8Weight w, checkpoint->fp8Weight(spec.name, spec.shape[0],
                                             spec.shape[1]));
      (void)w;
    }
  std::fprintf(out,
               "checkpoint %s: %zu tensors in %zu files, %llu tensor bytes, "
               "%s, matches the manifest (%zu tensors)\n",
               args.check.c_str(), checkpoint->numTensors(),
               checkpoint->files().size(),
               static_cast<unsigned long long>(checkpoint->totalTensorBytes()),
               config.isFp8() ? "fp8" : "bf16", manifest.size());
  return okStatus();
}

Status runPrint(const Args &args, std::FILE *out) {
  if (args.tensor.empty() || args.indices.empty())
    return invalidArgument("--print needs --tensor and --indices");
  STRATA_ASSIGN_OR_RETURN(auto checkpoint, Checkpoint::open(args.print));
  STRATA_ASSIGN_OR_RETURN(TensorView view, checkpoint->tensor(args.tensor));
  STRATA_ASSIGN_OR_RETURN(std::vector<float> values, toF32(view));
  for (int64_t i : args.indices) {
    if (i >= static_cast<int64_t>(values.size()))
      return outOfRange("index {} is out of range for tensor '{}' with {} "
                        "elements",
                        i, args.tensor, values.size());
    std::fprintf(out, "%s[%lld] = %.9g\n", args.tensor.c_str(),
                 static_cast<long long>(i), static_cast<double>(values[i]));
  }
  return okStatus();
}

// What --out would write (tensors, bytes by dtype), without writing: the
// size of a config's checkpoint, or of its procedural weights in memory.
Status runSummary(const Args &args, std::FILE *out) {
  STRATA_ASSIGN_OR_RETURN(Glm5TextConfig config, loadGlm5Config(args.config));
  ManifestOptions manifest_options;
  manifest_options.only_layers = args.only_layers;
  STRATA_ASSIGN_OR_RETURN(std::vector<TensorSpec> manifest,
                          glm5TensorManifest(config, manifest_options));
  std::map<DType, std::pair<std::size_t, uint64_t>> by_dtype;
  uint64_t total = 0;
  for (const TensorSpec &spec : manifest) {
    const uint64_t bytes = tensorBytes(spec);
    total += bytes;
    by_dtype[spec.dtype].first += 1;
    by_dtype[spec.dtype].second += bytes;
  }
  std::fprintf(out, "config %s: %d layers + %d MTP, %zu tensors, %llu tensor "
                    "bytes (%.1f GB, %.1f GiB)\n",
               args.config.c_str(), static_cast<int>(config.num_hidden_layers),
               static_cast<int>(config.num_nextn_predict_layers),
               manifest.size(), static_cast<unsigned long long>(total),
               static_cast<double>(total) / 1e9,
               static_cast<double>(total) / double(uint64_t(1) << 30));
  for (const auto &[dtype, entry] : by_dtype)
    std::fprintf(out, "  %s: %zu tensors, %llu bytes\n",
                 std::string(dtypeName(dtype)).c_str(), entry.first,
                 static_cast<unsigned long long>(entry.second));
  return okStatus();
}

Status run(int argc, char **argv, std::FILE *out) {
  Args args;
  STRATA_RETURN_IF_ERROR(parseArgs(argc, argv, args));
  if (args.summary)
    return runSummary(args, out);
  if (!args.check.empty())
    return runCheck(args, out);
  if (!args.print.empty())
    return runPrint(args, out);
  WriteCheckpointOptions options;
  options.config_path = args.config;
  options.out_dir = args.out;
  options.max_shard_bytes = args.max_shard_bytes;
  options.manifest.only_layers = args.only_layers;
  options.threads = static_cast<unsigned>(args.threads);
  STRATA_ASSIGN_OR_RETURN(WriteCheckpointSummary summary,
                          writeProceduralCheckpoint(options));
  std::fprintf(out, "wrote %zu tensors in %zu shards, %llu tensor bytes, to %s\n",
               summary.num_tensors, summary.num_shards,
               static_cast<unsigned long long>(summary.total_bytes),
               args.out.c_str());
  return okStatus();
}

} // namespace

int runWriteCheckpointTool(int argc, char **argv, std::FILE *out,
                           std::FILE *err) {
  if (argc <= 1) {
    std::fputs(kUsage, err);
    return 1;
  }
  Status status = run(argc, argv, out);
  if (status.ok())
    return 0;
  std::fprintf(err, "strata-write-checkpoint: error: %.*s\n",
               static_cast<int>(status.message().size()),
               status.message().data());
  return 1;
}

} // namespace strata::runtime
