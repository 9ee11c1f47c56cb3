//===- bench_tool.cpp - the strata-bench command line ---------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_tool.h"

#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "runtime/base/flag_values.h"
#include "runtime/bench/bench_matrix.h"
#include "runtime/bench/step_bench.h"

namespace strata::runtime {

namespace {

constexpr const char *kUsage =
    "usage: strata-bench --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                    [--target cpu|sm_90] [--step prefill|decode]\n"
    "                    [--tokens N] [--requests B] [--context C]\n"
    "                    [--repeat R] [--copy-mib M] [--copy-logits]\n"
    "                    [--json out.json]\n"
    "  Runs one step of the plan over B synthetic requests of N new tokens\n"
    "  at position C (defaults: decode, N 1, C 128; prefill, N 128, C 0;\n"
    "  B 1; R 10) R times after a warm-up, timing every dispatch, and\n"
    "  reports per kernel: dispatches, time, share, bound bytes and bytes/s\n"
    "  against a device-to-device copy of M MiB (default: 1024 on GPUs,\n"
    "  256 on the CPU). A timed step copies back the greedy tokens only\n"
    "  (a greedy serving step); --copy-logits adds the logits and hidden\n"
    "  rows. docs/Bench.md.\n"
    "\n"
    "       strata-bench --matrix --artifact A --checkpoint DIR [--target T]\n"
    "                    [--batches 1,8,32,128] [--contexts 128,4096]\n"
    "                    [--prefill 1x2048,4x2048,1x8192] [--repeat R]\n"
    "                    [--gemm-tflops F] [--copy-mib M] [--copy-logits]\n"
    "                    [--json out.json]\n"
    "  Runs decode at every batch size x context and prefill at every\n"
    "  REQUESTSxTOKENS shape on one executor (R timed steps per case:\n"
    "  default 5 decode, 2 prefill) and prints a summary of wall time,\n"
    "  summed dispatch time and the roofline (bytes and FLOPs the step must\n"
    "  move, floor = max(bytes / copy rate, FLOPs / F TFLOP/s), wall /\n"
    "  floor) followed by each case's kernel table.\n";

struct ToolOptions {
  StepBenchOptions bench;
  std::string json;
  bool matrix = false;
  MatrixOptions matrix_options;
  bool repeat_given = false;
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
      options.repeat_given = true;
    } else if (flag == "--copy-mib") {
      STRATA_ASSIGN_OR_RETURN(int64_t mib, integer());
      if (mib <= 0 || mib > (int64_t(1) << 20))
        return invalidArgument("--copy-mib: {} is not in [1, 1048576]", mib);
      options.bench.copy_bytes = static_cast<uint64_t>(mib) << 20;
    } else if (flag == "--copy-logits") {
      options.bench.copy_logits = true;
    } else if (flag == "--matrix") {
      options.matrix = true;
    } else if (flag == "--batches") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      STRATA_ASSIGN_OR_RETURN(options.matrix_options.decode_batches,
                              parsePositiveList(flag, text));
    } else if (flag == "--contexts") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      STRATA_ASSIGN_OR_RETURN(options.matrix_options.decode_contexts,
                              parsePositiveList(flag, text));
    } else if (flag == "--prefill") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      STRATA_ASSIGN_OR_RETURN(options.matrix_options.prefill,
                              parsePrefillList(flag, text));
    } else if (flag == "--gemm-tflops") {
      STRATA_ASSIGN_OR_RETURN(std::string text, value());
      char *end = nullptr;
      double tflops = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(tflops > 0) || tflops > 1e6)
        return invalidArgument("--gemm-tflops: '{}' is not a rate in "
                               "(0, 1e6] TFLOP/s",
                               text);
      options.bench.gemm_flops_per_second = tflops * 1e12;
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
  if (options.matrix) {
    if (tokens || context || options.bench.requests != 1 ||
        options.bench.step != "decode")
      return invalidArgument("--matrix takes --batches, --contexts and "
                             "--prefill instead of --step, --tokens, "
                             "--requests and --context");
    if (options.repeat_given) {
      if (options.bench.repeat <= 0)
        return invalidArgument("--repeat must be positive, got {}",
                               options.bench.repeat);
      options.matrix_options.decode_repeat = options.bench.repeat;
      options.matrix_options.prefill_repeat = options.bench.repeat;
    }
    options.matrix_options.base = options.bench;
    return options;
  }
  bool decode = options.bench.step == "decode";
  options.bench.tokens = tokens.value_or(decode ? 1 : 128);
  options.bench.context = context.value_or(decode ? 128 : 0);
  return options;
}

Status writeFile(const std::string &path, const std::string &text) {
  std::ofstream file(path);
  file << text;
  if (!file.flush())
    return unavailable("cannot write '{}'", path);
  return okStatus();
}

int runMatrix(const ToolOptions &options, std::ostream &out,
              std::ostream &err) {
  auto progress = [&](size_t i, size_t n, const std::string &label) {
    err << fmt::format("strata-bench: case {} of {}: {}\n", i + 1, n, label);
  };
  StatusOr<std::vector<StepBenchReport>> reports =
      runBenchMatrix(options.matrix_options, progress);
  if (!reports.ok()) {
    err << "strata-bench: " << reports.status().message() << "\n";
    return 1;
  }
  out << formatMatrixMarkdown(*reports);
  if (!options.json.empty()) {
    Status written = writeFile(options.json, formatMatrixJson(*reports));
    if (!written.ok()) {
      err << "strata-bench: " << written.message() << "\n";
      return 1;
    }
  }
  return 0;
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
  if (options->matrix)
    return runMatrix(*options, out, err);
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
