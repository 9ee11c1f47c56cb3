//===- bench_tool.cpp - the strata-bench command line ---------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_tool.h"

#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "runtime/base/flag_values.h"
#include "runtime/bench/step_bench.h"

namespace strata::runtime {

namespace {

constexpr const char *kUsage =
    "usage: strata-bench --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                    [--target cpu|sm_90] [--step prefill|decode]\n"
    "                    [--tokens N] [--requests B] [--context C]\n"
    "                    [--repeat R] [--copy-mib M] [--json out.json]\n"
    "  Runs one step of the plan over B synthetic requests of N new tokens\n"
    "  at position C (defaults: decode, N 1, C 128; prefill, N 128, C 0;\n"
    "  B 1; R 10) R times after a warm-up, timing every dispatch, and\n"
    "  reports per kernel: dispatches, time, share, bound bytes and bytes/s\n"
    "  against a device-to-device copy of M MiB (default: 1024 on GPUs,\n"
    "  256 on the CPU). docs/Bench.md.\n";

struct ToolOptions {
  StepBenchOptions bench;
  std::string json;
};

StatusOr<ToolOptions> parseArgs(const std::vector<std::string> &args) {
  ToolOptions options;
  std::optional<int64_t> tokens, context;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &flag = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size())
        return invalidArgument("{} needs a value", flag);
      return args[++i];
    };
    auto integer = [&]() -> StatusOr<int64_t> {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      return parseIntFlag(flag, text);
    };
    if (flag == "--artifact") {
      STRATA_ASSIGN_OR_RETURN(options.bench.artifact, value());
    } else if (flag == "--checkpoint") {
      STRATA_ASSIGN_OR_RETURN(options.bench.checkpoint, value());
    } else if (flag == "--target") {
      STRATA_ASSIGN_OR_RETURN(options.bench.target, value());
    } else if (flag == "--step") {
      STRATA_ASSIGN_OR_RETURN(options.bench.step, value());
      if (options.bench.step != "prefill" && options.bench.step != "decode")
        return invalidArgument("--step: '{}' is not prefill or decode",
                               options.bench.step);
    } else if (flag == "--tokens") {
      STRATA_ASSIGN_OR_RETURN(tokens, integer());
    } else if (flag == "--requests") {
      STRATA_ASSIGN_OR_RETURN(options.bench.requests, integer());
    } else if (flag == "--context") {
      STRATA_ASSIGN_OR_RETURN(context, integer());
    } else if (flag == "--repeat") {
      STRATA_ASSIGN_OR_RETURN(options.bench.repeat, integer());
    } else if (flag == "--copy-mib") {
      STRATA_ASSIGN_OR_RETURN(int64_t mib, integer());
      if (mib <= 0 || mib > (int64_t(1) << 20))
        return invalidArgument("--copy-mib: {} is not in [1, 1048576]", mib);
      options.bench.copy_bytes = static_cast<uint64_t>(mib) << 20;
    } else if (flag == "--json") {
      STRATA_ASSIGN_OR_RETURN(options.json, value());
    } else if (flag == "--help" || flag == "-h") {
      return cancelled("help");
    } else {
      return invalidArgument("unknown flag '{}'", flag);
    }
  }
  if (options.bench.artifact.empty() || options.bench.checkpoint.empty())
    return invalidArgument("--artifact and --checkpoint are required");
  bool decode = options.bench.step == "decode";
  options.bench.tokens = tokens.value_or(decode ? 1 : 128);
  options.bench.context = context.value_or(decode ? 128 : 0);
  return options;
}

} // namespace

int runBenchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err) {
  StatusOr<ToolOptions> options = parseArgs(args);
  if (!options.ok()) {
    if (options.status().code() == StatusCode::kCancelled) {
      out << kUsage;
      return 0;
    }
    err << "strata-bench: " << options.status().message() << "\n" << kUsage;
    return 2;
  }
  StatusOr<StepBenchReport> report = runStepBench(options->bench);
  if (!report.ok()) {
    err << "strata-bench: " << report.status().message() << "\n";
    return 1;
  }
  out << formatMarkdown(*report);
  if (!options->json.empty()) {
    std::ofstream file(options->json);
    file << formatJson(*report);
    if (!file.flush()) {
      err << "strata-bench: cannot write '" << options->json << "'\n";
      return 1;
    }
  }
  return 0;
}

} // namespace strata::runtime
