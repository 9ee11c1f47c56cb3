//===- bench_matrix.cpp - strata-bench over a matrix of steps -------------===//
//
// Part of strata. See bench_matrix.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/bench_matrix.h"

#include <algorithm>

#include <fmt/format.h>

#include "runtime/base/flag_values.h"
#include "runtime/executor/model_executor.h"

namespace strata::runtime {

namespace {

std::vector<std::string_view> splitCommas(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos)
      return parts;
    start = comma + 1;
  }
}

/// The cases of `options` in run order.
std::vector<StepBenchOptions> matrixCases(const MatrixOptions &options) {
  std::vector<StepBenchOptions> cases;
  for (int64_t context : options.decode_contexts)
    for (int64_t batch : options.decode_batches) {
      StepBenchOptions c = options.base;
      c.step = "decode";
      c.tokens = 1;
      c.requests = batch;
      c.context = context;
      c.repeat = options.decode_repeat;
      cases.push_back(c);
    }
  for (const PrefillShape &p : options.prefill) {
    StepBenchOptions c = options.base;
    c.step = "prefill";
    c.tokens = p.tokens;
    c.requests = p.requests;
    c.context = 0;
    c.repeat = options.prefill_repeat;
    cases.push_back(c);
  }
  return cases;
}

std::string caseLabel(const StepBenchOptions &c) {
  if (c.step == "decode")
    return fmt::format("decode B={} ctx {}", c.requests, c.context);
  return fmt::format("prefill {} x {}", c.requests, c.tokens);
}

} // namespace

StatusOr<std::vector<int64_t>> parsePositiveList(std::string_view flag,
                                                 std::string_view text) {
  std::vector<int64_t> values;
  for (std::string_view part : splitCommas(text)) {
    STRATA_ASSIGN_OR_RETURN(int64_t v, parseIntFlag(flag, part));
    if (v <= 0)
      return invalidArgument("{}: {} is not positive", flag, v);
    values.push_back(v);
  }
  return values;
}

StatusOr<std::vector<PrefillShape>> parsePrefillList(std::string_view flag,
                                                     std::string_view text) {
  std::vector<PrefillShape> shapes;
  for (std::string_view part : splitCommas(text)) {
    size_t x = part.find('x');
    if (x == std::string_view::npos)
      return invalidArgument("{}: '{}' is not REQUESTSxTOKENS", flag, part);
    PrefillShape shape;
    STRATA_ASSIGN_OR_RETURN(shape.requests,
                            parseIntFlag(flag, part.substr(0, x)));
    STRATA_ASSIGN_OR_RETURN(shape.tokens, parseIntFlag(flag, part.substr(x + 1)));
    if (shape.requests <= 0 || shape.tokens <= 0)
      return invalidArgument("{}: '{}' needs positive requests and tokens",
                             flag, part);
    shapes.push_back(shape);
  }
  return shapes;
}

StatusOr<std::vector<StepBenchReport>>
runBenchMatrix(const MatrixOptions &options,
               const std::function<void(size_t, size_t, const std::string &)>
                   &progress) {
  std::vector<StepBenchOptions> cases = matrixCases(options);
  if (cases.empty())
    return invalidArgument("the matrix has no cases");
  int64_t max_requests = 0, max_end = 0;
  for (const StepBenchOptions &c : cases) {
    max_requests = std::max(max_requests, c.requests);
    max_end = std::max(max_end, c.context + c.tokens);
  }
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ModelExecutor> executor,
      createBenchExecutor(options.base, max_requests, max_end));
  std::vector<StepBenchReport> reports;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (progress)
      progress(i, cases.size(), caseLabel(cases[i]));
    StatusOr<StepBenchReport> report = runStepBenchOn(*executor, cases[i]);
    if (!report.ok())
      return report.status().withContext(caseLabel(cases[i]));
    reports.push_back(std::move(*report));
  }
  return reports;
}

std::string formatMatrixMarkdown(const std::vector<StepBenchReport> &reports) {
  if (reports.empty())
    return "";
  const StepBenchReport &first = reports.front();
  std::string out = fmt::format(
      "strata-bench matrix on {} ({}); copy rate {:.0f} GB/s (read + write, "
      "same run), GEMM rate {}.\n\n",
      first.target, first.device, first.copy_bytes_per_second * 1e-9,
      first.gemm_flops_per_second > 0
          ? fmt::format("{:.1f} TFLOP/s", first.gemm_flops_per_second * 1e-12)
          : std::string("not given (memory floor only)"));
  out += "| step | B | tokens | ctx | wall (ms) | summed (ms) | dispatches | "
         "weights (GB) | experts (GB) | experts/layer | KV+state (GB) | "
         "TFLOP | floor (ms) | wall / floor |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
         "---:|\n";
  for (const StepBenchReport &r : reports) {
    const StepRoofline &f = r.roofline;
    out += fmt::format(
        "| {} | {} | {} | {} | {:.3f} | {:.3f} | {} | {:.3f} | {:.3f} | "
        "{:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.2f}x |\n",
        r.step, r.requests, r.tokens, r.context, r.step_wall_seconds * 1e3,
        r.dispatch_seconds * 1e3, r.dispatches, f.weight_bytes * 1e-9,
        f.expert_bytes * 1e-9, f.experts_per_layer, f.state_bytes * 1e-9,
        f.flops * 1e-12, r.floor_seconds * 1e3, r.floor_ratio);
  }
  out += fmt::format(
      "\nwall: an unobserved step (decode: replayed from its captured "
      "graph) copying back {}; summed",
      reports.empty() || !reports.front().copy_logits
          ? "the greedy tokens"
          : "the logits and hidden rows");
  out += ": every dispatch timed alone; floor: max(bytes / "
         "copy rate, FLOPs / GEMM rate); experts/layer: distinct routed "
         "experts per MoE layer, read back from the step's routing.\n";
  for (const StepBenchReport &r : reports)
    out += "\n" + formatMarkdown(r);
  return out;
}

std::string formatMatrixJson(const std::vector<StepBenchReport> &reports) {
  std::string out = "{\"cases\": [\n";
  for (size_t i = 0; i < reports.size(); ++i) {
    std::string one = formatJson(reports[i]);
    while (!one.empty() && one.back() == '\n')
      one.pop_back();
    out += one + (i + 1 < reports.size() ? ",\n" : "\n");
  }
  return out + "]}\n";
}

} // namespace strata::runtime
