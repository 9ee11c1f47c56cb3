//===- bench_tool.cpp - the strata-bench command line ---------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_tool.h"

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "runtime/base/command_line.h"
#include "runtime/base/flag_values.h"
#include "runtime/base/progress.h"
#include "runtime/bench/bench_matrix.h"
#include "runtime/bench/bench_plot.h"
#include "runtime/bench/mtp_bench.h"
#include "runtime/bench/step_bench.h"
#include "runtime/executor/rank_flags.h"

namespace strata::runtime {

namespace {

constexpr const char *kUsage =
    "usage: strata-bench --artifact A --checkpoint DIR|procedural:CONFIG.json\n"
    "                    [--target cpu|sm_90|sm_90a] [--step prefill|decode|mtp]\n"
    "                    [--tokens N] [--requests B] [--context C]\n"
    "                    [--mtp K [--batches LIST]] [--dependent-launches on|off]\n"
    "                    [--repeat R] [--copy-mib M] [--copy-logits]\n"
    "                    [--json out.json] [--plot out.svg] [--quiet]\n"
    "                    [--rank R --world-size N --store STORE]\n"
    "                    [--collectives auto|gloo|nccl]\n"
    "       strata-bench --matrix --artifact A --checkpoint DIR [--target T]\n"
    "                    [--batches 1,8,32,128] [--contexts 128,4096]\n"
    "                    [--prefill 1x2048,4x2048,1x8192] [--repeat R]\n"
    "                    [--gemm-tflops F] [--copy-mib M] [--copy-logits]\n"
    "                    [--json out.json] [--plot out.svg] [--quiet]\n"
    "       strata-bench --from-json report.json --plot out.svg\n";

constexpr const char *kDescription =
    "Runs one step of the plan over B synthetic requests of N new tokens at\n"
    "position C (defaults: decode, N 1, C 128; prefill, N 128, C 0; B 1;\n"
    "R 10) R times after a warm-up, timing every dispatch, and reports per\n"
    "kernel: dispatches, time, share, bound bytes and bytes/s against a\n"
    "device-to-device copy of M MiB (default: 1024 on GPUs, 256 on the CPU).\n"
    "A timed step copies back the greedy tokens only (a greedy serving\n"
    "step); --copy-logits adds the logits and hidden rows.\n"
    "--step mtp times one MTP speculative step of B requests with K drafts\n"
    "each (default 3) phase by phase (draft chain, verify of K + 1 tokens,\n"
    "draft over the committed rows; the state save, restore and re-run of\n"
    "artifacts without per-token KDA states) as graph replays, next to the\n"
    "decode step of the same batch (--batches LIST: each batch size on one\n"
    "executor); on NVIDIA their kernels are programmatic dependent launches\n"
    "unless --dependent-launches off.\n"
    "--matrix runs decode at every batch size x context and prefill at every\n"
    "REQUESTSxTOKENS shape on one executor (R timed steps per case: default\n"
    "5 decode, 2 prefill) and prints a summary of wall time, summed dispatch\n"
    "time and the roofline (floor = max(bytes / copy rate, FLOPs / F\n"
    "TFLOP/s), wall / floor) followed by each case's kernel table. --plot\n"
    "draws the kernels and steps on a roofline chart (and, for a matrix,\n"
    "decode time per batch size); --from-json redraws a saved --json report.\n"
    "A sharded artifact runs as one process per rank (started here without\n"
    "--rank, like strata-run); rank 0 reports, its collectives as rows.\n"
    "docs/Bench.md.";

struct ToolOptions {
  StepBenchOptions bench;
  std::string json, plot, from_json;
  bool matrix = false;
  MatrixOptions matrix_options;
  bool repeat_given = false;
  bool quiet = false;
  /// --step mtp: drafts per request, and the batch sizes (--batches; empty:
  /// --requests).
  int64_t draft_tokens = 3;
  std::vector<int64_t> mtp_batches;
  /// Tensor/expert parallelism (rank_flags.h).
  RankRunOptions ranks;
};

/// The flags as typed; numbers and lists stay text so that the shared
/// parsers report bad values the way every runtime tool does.
struct BenchFlags {
  std::string tokens, requests, context, repeat, copy_mib, batches, contexts,
      prefill, gemm_tflops, mtp, dependent_launches = "on";
  RankFlags ranks;
};

void declareFlags(CommandLine &cl, ToolOptions &o, BenchFlags &f) {
  CLI::App &app = cl.app();
  app.add_option("--artifact", o.bench.artifact, "the .strata artifact")
      ->type_name("A");
  app.add_option("--checkpoint", o.bench.checkpoint,
                 "checkpoint folder, or procedural:CONFIG.json")
      ->type_name("DIR");
  app.add_option("--target", o.bench.target,
                 "cpu (default), sm_90, sm_90a, gfx942 or gfx950")
      ->type_name("T");
  app.add_option("--step", o.bench.step, "prefill, decode (default) or mtp")
      ->type_name("S");
  app.add_option("--tokens", f.tokens, "new tokens per request")
      ->type_name("N");
  app.add_option("--requests", f.requests, "requests in the step (default 1)")
      ->type_name("B");
  app.add_option("--context", f.context,
                 "position of every request's first new token")
      ->type_name("C");
  app.add_option("--mtp", f.mtp,
                 "--step mtp: drafts per request, 1 to 3 (default 3)")
      ->type_name("K");
  app.add_option("--repeat", f.repeat, "timed steps after the warm-up")
      ->type_name("R");
  app.add_option("--dependent-launches", f.dependent_launches,
                 "on (default) or off: graph replays' kernels as programmatic "
                 "dependent launches (NVIDIA)")
      ->type_name("on|off");
  app.add_option("--copy-mib", f.copy_mib,
                 "MiB of the device-to-device copy baseline")
      ->type_name("M");
  app.add_flag("--copy-logits", o.bench.copy_logits,
               "timed steps copy back the logits and hidden rows too (default: "
               "the greedy tokens only, a greedy serving step)");
  app.add_flag("--matrix", o.matrix,
               "decode at every batch x context, prefill at every shape");
  app.add_option("--batches", f.batches,
                 "matrix and --step mtp: decode batch sizes (default "
                 "1,8,32,128)")
      ->type_name("LIST");
  app.add_option("--contexts", f.contexts,
                 "matrix: decode contexts (default 128,4096)")
      ->type_name("LIST");
  app.add_option("--prefill", f.prefill,
                 "matrix: prefill REQUESTSxTOKENS shapes "
                 "(default 1x2048,4x2048,1x8192)")
      ->type_name("LIST");
  app.add_option("--gemm-tflops", f.gemm_tflops,
                 "GEMM rate of the roofline's compute floor (TFLOP/s)")
      ->type_name("F");
  app.add_option("--json", o.json, "also write the report as JSON")
      ->type_name("out.json");
  app.add_option("--plot", o.plot,
                 "also draw the roofline (and decode time per batch) as SVG")
      ->type_name("out.svg");
  app.add_option("--from-json", o.from_json,
                 "draw --plot from a saved --json report instead of running")
      ->type_name("report.json");
  declareRankFlags(app, o.ranks, f.ranks);
  app.add_flag("-q,--quiet", o.quiet, "no progress lines on stderr");
}

StatusOr<ToolOptions> finishOptions(ToolOptions options, const BenchFlags &f) {
  std::optional<int64_t> tokens, context;
  STRATA_RETURN_IF_ERROR(finishRankFlags(options.ranks, f.ranks));
  const std::string &step = options.bench.step;
  if (step != "prefill" && step != "decode" && step != "mtp")
    return invalidArgument("--step: '{}' is not prefill, decode or mtp", step);
  if (f.dependent_launches != "on" && f.dependent_launches != "off")
    return invalidArgument("--dependent-launches: '{}' is not on or off",
                           f.dependent_launches);
  options.bench.dependent_launches = f.dependent_launches == "on";
  if (!f.mtp.empty()) {
    if (step != "mtp")
      return invalidArgument("--mtp is for --step mtp");
    STRATA_ASSIGN_OR_RETURN(options.draft_tokens, parseIntFlag("--mtp", f.mtp));
  }
  if (!f.tokens.empty()) {
    STRATA_ASSIGN_OR_RETURN(tokens, parseIntFlag("--tokens", f.tokens));
  }
  if (!f.requests.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.bench.requests,
                            parseIntFlag("--requests", f.requests));
  }
  if (!f.context.empty()) {
    STRATA_ASSIGN_OR_RETURN(context, parseIntFlag("--context", f.context));
  }
  if (!f.repeat.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.bench.repeat,
                            parseIntFlag("--repeat", f.repeat));
    options.repeat_given = true;
  }
  if (!f.copy_mib.empty()) {
    STRATA_ASSIGN_OR_RETURN(int64_t mib,
                            parseIntFlag("--copy-mib", f.copy_mib));
    if (mib <= 0 || mib > (int64_t(1) << 20))
      return invalidArgument("--copy-mib: {} is not in [1, 1048576]", mib);
    options.bench.copy_bytes = static_cast<uint64_t>(mib) << 20;
  }
  if (!f.batches.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.matrix_options.decode_batches,
                            parsePositiveList("--batches", f.batches));
  }
  if (!f.contexts.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.matrix_options.decode_contexts,
                            parsePositiveList("--contexts", f.contexts));
  }
  if (!f.prefill.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.matrix_options.prefill,
                            parsePrefillList("--prefill", f.prefill));
  }
  if (!f.gemm_tflops.empty()) {
    const std::string &text = f.gemm_tflops;
    char *end = nullptr;
    double tflops = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !(tflops > 0) || tflops > 1e6)
      return invalidArgument("--gemm-tflops: '{}' is not a rate in "
                             "(0, 1e6] TFLOP/s",
                             text);
    options.bench.gemm_flops_per_second = tflops * 1e12;
  }
  if (!options.from_json.empty()) {
    if (options.plot.empty())
      return invalidArgument("--from-json needs --plot");
    return options;
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
  if (step == "mtp" && (tokens || !options.plot.empty() ||
                        options.bench.copy_logits))
    return invalidArgument("--step mtp takes neither --tokens, --plot nor "
                           "--copy-logits");
  if (step == "mtp" && !f.batches.empty()) {
    if (!f.requests.empty())
      return invalidArgument("--step mtp takes --requests or --batches, not "
                             "both");
    options.mtp_batches = options.matrix_options.decode_batches;
  }
  bool decode = options.bench.step != "prefill";
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

/// --from-json: the plot of a saved report.
int replot(const ToolOptions &options, std::ostream &err) {
  std::ifstream file(options.from_json);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) {
    err << "strata-bench: cannot read '" << options.from_json << "'\n";
    return 1;
  }
  StatusOr<std::vector<StepBenchReport>> reports = parseBenchJson(text.str());
  Status written = reports.ok()
                       ? writeFile(options.plot, benchPlotSvg(*reports))
                       : reports.status().withContext(options.from_json);
  if (!written.ok()) {
    err << "strata-bench: " << written.message() << "\n";
    return 1;
  }
  return 0;
}

int runMatrix(const ToolOptions &options, std::ostream &out,
              std::ostream &err) {
  ProgressReporter progress({"strata-bench", stderr, options.quiet});
  MatrixOptions matrix = options.matrix_options;
  matrix.base.progress = &progress;
  auto onCase = [&](size_t i, size_t n, const std::string &label) {
    progress.note(fmt::format("case {} of {}: {}", i + 1, n, label));
  };
  StatusOr<std::vector<StepBenchReport>> reports =
      runBenchMatrix(matrix, onCase);
  progress.finish();
  if (!reports.ok()) {
    err << "strata-bench: " << reports.status().message() << "\n";
    return 1;
  }
  out << formatMatrixMarkdown(*reports);
  Status written = okStatus();
  if (!options.json.empty())
    written = writeFile(options.json, formatMatrixJson(*reports));
  if (written.ok() && !options.plot.empty())
    written = writeFile(options.plot, benchPlotSvg(*reports));
  if (!written.ok()) {
    err << "strata-bench: " << written.message() << "\n";
    return 1;
  }
  return 0;
}

int runMtp(const ToolOptions &options, std::ostream &out, std::ostream &err) {
  ProgressReporter progress({"strata-bench", stderr, options.quiet});
  MtpBenchOptions mtp;
  mtp.base = options.bench;
  mtp.base.progress = &progress;
  mtp.draft_tokens = options.draft_tokens;
  StatusOr<std::vector<MtpBenchReport>> reports =
      runMtpBench(mtp, options.mtp_batches);
  progress.finish();
  Status written = reports.status();
  if (written.ok()) {
    for (size_t i = 0; i < reports->size(); ++i)
      out << (i ? "\n" : "") << formatMtpMarkdown((*reports)[i]);
    if (!options.json.empty())
      written = writeFile(options.json, formatMtpJson(*reports));
  }
  if (!written.ok()) {
    err << "strata-bench: " << written.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace

int runBenchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err) {
  CommandLine cl("strata-bench", kUsage, kDescription);
  ToolOptions parsed;
  BenchFlags flags;
  declareFlags(cl, parsed, flags);
  if (std::optional<int> code = cl.parse(args, out, err))
    return *code;
  StatusOr<ToolOptions> options = finishOptions(parsed, flags);
  if (!options.ok())
    return cl.usageError(err, options.status().message());
  if (!options->from_json.empty())
    return replot(*options, err);
  // A sharded artifact: every rank benchmarks the same steps (the
  // collectives need all); rank 0 reports, the others write nothing.
  StatusOr<RankRole> role =
      resolveRankRole(options->ranks, options->bench.artifact, args);
  Status launched = !role.ok()          ? role.status()
                    : role->launcher ? role->launched
                                      : okStatus();
  if (!launched.ok()) {
    err << "strata-bench: " << launched.message() << "\n";
    return 1;
  }
  if (role->launcher)
    return 0;
  options->bench.ranks = role->ranks;
  options->matrix_options.base.ranks = role->ranks;
  std::ostringstream discarded;
  bool reports = !options->bench.ranks || options->bench.ranks->rank == 0;
  if (!reports) {
    options->json.clear();
    options->plot.clear();
  }
  std::ostream &report_out = reports ? out : discarded;
  if (options->matrix)
    return runMatrix(*options, report_out, err);
  if (options->bench.step == "mtp")
    return runMtp(*options, report_out, err);
  ProgressReporter progress({"strata-bench", stderr, options->quiet});
  options->bench.progress = &progress;
  StatusOr<StepBenchReport> report = runStepBench(options->bench);
  progress.finish();
  if (!report.ok()) {
    err << "strata-bench: " << report.status().message() << "\n";
    return 1;
  }
  report_out << formatMarkdown(*report);
  Status written = okStatus();
  if (!options->json.empty())
    written = writeFile(options->json, formatJson(*report));
  if (written.ok() && !options->plot.empty())
    written = writeFile(options->plot, benchPlotSvg({*report}));
  if (!written.ok()) {
    err << "strata-bench: " << written.message() << "\n";
    return 1;
  }
  return 0;
}

} // namespace strata::runtime
