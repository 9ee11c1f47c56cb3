//===- checkpoint_tool.cpp - command line of strata-write-checkpoint ------===//
//
// Part of strata. See checkpoint_tool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/checkpoint_tool.h"

#include "runtime/checkpoint/checkpoint_writer.h"
#include "runtime/checkpoint/glm5_manifest.h"
#include "runtime/checkpoint/safetensors.h"

#include "runtime/base/command_line.h"
#include "runtime/base/progress.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {
namespace {

constexpr const char *kUsage =
    "usage: strata-write-checkpoint --config C.json --out DIR "
    "[--max-shard-bytes N] [--only-layers L,...] [--threads N] [--quiet]\n"
    "       strata-write-checkpoint --check DIR [--only-layers L,...] "
    "[--strict]\n"
    "       strata-write-checkpoint --print DIR --tensor NAME --indices "
    "I,...\n"
    "       strata-write-checkpoint --config C.json --summary "
    "[--only-layers L,...]\n";

constexpr const char *kDescription =
    "Writes a procedural GLM-5.3-Flash checkpoint of a config (--out), checks\n"
    "a checkpoint against the tensor manifest (--check), prints elements of\n"
    "one tensor (--print) or sums up what --out would write (--summary).\n"
    "docs/ProceduralWeights.md, docs/Checkpoint.md.";

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
  bool quiet = false;
};

/// The flags as typed; numbers stay text for the messages of parseUnsigned.
struct Flags {
  std::string max_shard_bytes, threads, only_layers, indices;
};

void declareFlags(CommandLine &cl, Args &args, Flags &f) {
  CLI::App &app = cl.app();
  app.add_option("--config", args.config, "the model's config.json")
      ->type_name("C.json");
  app.add_option("--out", args.out, "write a procedural checkpoint here")
      ->type_name("DIR");
  app.add_option("--check", args.check,
                 "validate this checkpoint against the manifest")
      ->type_name("DIR");
  app.add_option("--print", args.print, "print elements of one tensor")
      ->type_name("DIR");
  app.add_option("--tensor", args.tensor, "--print: the tensor")
      ->type_name("NAME");
  app.add_option("--indices", f.indices, "--print: flat element indices")
      ->type_name("I,...");
  app.add_flag("--summary", args.summary,
               "tensors and bytes --out would write, without writing");
  app.add_option("--max-shard-bytes", f.max_shard_bytes,
                 "shard size limit in tensor bytes")
      ->type_name("N");
  app.add_option("--only-layers", f.only_layers,
                 "only these decoder layers (and the non-layer tensors)")
      ->type_name("L,...");
  app.add_option("--threads", f.threads,
                 "generator threads (default: the machine's)")
      ->type_name("N");
  app.add_flag("--strict", args.strict,
               "--check: tensors the manifest does not list are errors");
  app.add_flag("-q,--quiet", args.quiet, "no progress lines on stderr");
}

Status finishArgs(const Flags &f, Args &args) {
  if (!f.max_shard_bytes.empty()) {
    STRATA_ASSIGN_OR_RETURN(
        args.max_shard_bytes,
        parseUnsigned("--max-shard-bytes", f.max_shard_bytes));
    if (args.max_shard_bytes == 0)
      return invalidArgument("--max-shard-bytes must be positive");
  }
  if (!f.threads.empty()) {
    STRATA_ASSIGN_OR_RETURN(args.threads,
                            parseUnsigned("--threads", f.threads));
    if (args.threads == 0 || args.threads > 1024)
      return invalidArgument("--threads must be in [1, 1024], got {}",
                             args.threads);
  }
  if (!f.only_layers.empty()) {
    STRATA_ASSIGN_OR_RETURN(auto layers,
                            parseList("--only-layers", f.only_layers));
    args.only_layers = std::move(layers);
  }
  if (!f.indices.empty()) {
    STRATA_ASSIGN_OR_RETURN(args.indices, parseList("--indices", f.indices));
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

Status run(const Flags &flags, Args &args, std::FILE *out) {
  STRATA_RETURN_IF_ERROR(finishArgs(flags, args));
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
  ProgressReporter progress({"strata-write-checkpoint", stderr, args.quiet});
  options.progress = &progress;
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
  CommandLine cl("strata-write-checkpoint", kUsage, kDescription);
  Args args;
  Flags flags;
  declareFlags(cl, args, flags);
  std::ostringstream out_text, err_text;
  std::optional<int> code = cl.parse(argc, argv, out_text, err_text);
  std::fputs(out_text.str().c_str(), out);
  std::fputs(err_text.str().c_str(), err);
  if (code)
    return *code;
  Status status = run(flags, args, out);
  if (status.ok())
    return 0;
  std::fprintf(err, "strata-write-checkpoint: error: %.*s\n",
               static_cast<int>(status.message().size()),
               status.message().data());
  return 1;
}

} // namespace strata::runtime
