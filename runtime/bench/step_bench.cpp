//===- step_bench.cpp - time one plan step per kernel ---------------------===//
//
// Part of strata. See step_bench.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/step_bench.h"

#include <algorithm>
#include <chrono>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/executor/model_executor.h"

namespace strata::runtime {

using artifact::StepKind;

StatusOr<std::vector<KernelStats>>
aggregateTimings(const std::vector<DispatchTiming> &timings,
                 const std::vector<std::string> &kernel_names,
                 int64_t repeat) {
  if (repeat <= 0)
    return invalidArgument("repeat must be positive, got {}", repeat);
  struct Sum {
    uint64_t dispatches = 0;
    double seconds = 0, bytes = 0;
  };
  std::map<std::string, Sum> by_name;
  double total = 0;
  for (const DispatchTiming &t : timings) {
    if (t.collective.empty() && t.kernel_index >= kernel_names.size())
      return invalidArgument("dispatch {} names kernel {}, the target has {}",
                             t.dispatch_index, t.kernel_index,
                             kernel_names.size());
    Sum &sum = by_name[t.collective.empty() ? kernel_names[t.kernel_index]
                                            : t.collective];
    ++sum.dispatches;
    sum.seconds += t.seconds;
    sum.bytes += static_cast<double>(t.bound_bytes);
    total += t.seconds;
  }
  std::vector<KernelStats> stats;
  for (const auto &[name, sum] : by_name) {
    KernelStats k;
    k.name = name;
    k.dispatches = sum.dispatches / static_cast<uint64_t>(repeat);
    k.seconds = sum.seconds / static_cast<double>(repeat);
    k.share = total > 0 ? sum.seconds / total : 0;
    k.bytes_per_dispatch = sum.bytes / static_cast<double>(sum.dispatches);
    k.bytes_per_second = sum.seconds > 0 ? sum.bytes / sum.seconds : 0;
    stats.push_back(std::move(k));
  }
  std::sort(stats.begin(), stats.end(),
            [](const KernelStats &a, const KernelStats &b) {
              return a.seconds != b.seconds ? a.seconds > b.seconds
                                            : a.name < b.name;
            });
  return stats;
}

namespace {

using Clock = std::chrono::steady_clock;

/// Times a device-to-device copy of `bytes` on `device`'s default stream
/// with events: one warm-up, then the mean of `repeat` copies.
StatusOr<double> timeCopy(Device &device, uint64_t bytes, int64_t repeat) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> src,
                          device.allocate(bytes, 0));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> dst,
                          device.allocate(bytes, 0));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Event> before, device.createEvent());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Event> after, device.createEvent());
  Stream &stream = device.defaultStream();
  double total = 0;
  for (int64_t r = -1; r < repeat; ++r) {
    STRATA_RETURN_IF_ERROR(stream.recordEvent(*before));
    STRATA_RETURN_IF_ERROR(stream.copyBuffer(*src, 0, *dst, 0, bytes));
    STRATA_RETURN_IF_ERROR(stream.recordEvent(*after));
    STRATA_ASSIGN_OR_RETURN(float millis,
                            device.elapsedMillis(*before, *after));
    if (r >= 0)
      total += static_cast<double>(millis) * 1e-3;
  }
  return total / static_cast<double>(repeat);
}

Status resetSlots(ModelExecutor &executor, int64_t requests) {
  for (int64_t r = 0; r < requests; ++r)
    STRATA_RETURN_IF_ERROR(executor.resetSlot(static_cast<int32_t>(r)));
  return okStatus();
}

} // namespace

namespace {

StatusOr<StepKind> parseBenchStep(const std::string &name) {
  if (name == "prefill")
    return StepKind::prefill;
  if (name == "decode")
    return StepKind::decode;
  return invalidArgument("--step: '{}' is not prefill or decode", name);
}

Status checkBenchOptions(const StepBenchOptions &options, StepKind step) {
  if (options.tokens <= 0 || options.requests <= 0 || options.context < 0 ||
      options.repeat <= 0)
    return invalidArgument("--tokens ({}), --requests ({}) and --repeat ({}) "
                           "must be positive and --context ({}) not negative",
                           options.tokens, options.requests, options.repeat,
                           options.context);
  if (step == StepKind::decode && options.tokens != 1)
    return invalidArgument("--step decode runs one token per request, got "
                           "--tokens {}",
                           options.tokens);
  if (options.requests > INT32_MAX ||
      options.context + options.tokens > INT32_MAX)
    return outOfRange("--requests {} or --context {} + --tokens {} does not "
                      "fit the i32 plan inputs",
                      options.requests, options.context, options.tokens);
  return okStatus();
}

uint64_t pagesFor(uint64_t page, int64_t end) {
  return (static_cast<uint64_t>(end) + page - 1) / page;
}

/// The routed experts each moe_select dispatch of an observed step chose:
/// the distinct values of its first rank-2 i32 output, read back after the
/// dispatch (in plan order, i.e. one entry per MoE layer).
class RoutingReader {
public:
  RoutingReader(Device &device, const artifact::TargetDef &target)
      : device_(device), target_(target) {}

  void observe(const DispatchTiming &t) {
    if (!status_.ok() || !t.args || !t.collective.empty())
      return;
    const artifact::Kernel *kernel = target_.kernels()->Get(t.kernel_index);
    if (kernel->name()->string_view().rfind("moe_select", 0) != 0)
      return;
    for (size_t a = 0; a < t.args->size(); ++a) {
      const DispatchArg &arg = (*t.args)[a];
      if (!arg.buffer || arg.shape.size() != 2 ||
          kernel->args()->Get(a)->dtype() != artifact::DType::i32)
        continue;
      std::vector<int32_t> chosen(
          static_cast<size_t>(arg.shape[0] * arg.shape[1]));
      status_ = device_.copyFromDevice(*arg.buffer, arg.offset_bytes,
                                       chosen.data(), chosen.size() * 4);
      if (status_.ok())
        distinct_.push_back(countDistinctExperts(chosen));
      return;
    }
  }
  const Status &status() const { return status_; }
  const std::vector<uint64_t> &distinct() const { return distinct_; }

private:
  Device &device_;
  const artifact::TargetDef &target_;
  Status status_;
  std::vector<uint64_t> distinct_;
};

} // namespace

StatusOr<std::unique_ptr<ModelExecutor>>
createBenchExecutor(const StepBenchOptions &options, int64_t max_requests,
                    int64_t max_end) {
  // Like strata-run: a disjoint run of pages per request, one slot each.
  // The page size is known only once the artifact is open: load it here
  // and hand it to the executor.
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Artifact> artifact,
                          Artifact::fromFile(options.artifact));
  uint64_t page = artifact->def().cache_layout()->page_size_tokens();
  if (page == 0)
    page = 1;
  // Checked here too (the executor checks it per step) so that no cache is
  // sized for positions the model cannot reach.
  uint64_t max_positions = artifact->def().model()->max_position_embeddings();
  if (static_cast<uint64_t>(max_end) > max_positions)
    return outOfRange("position {} goes beyond the model's {} positions",
                      max_end, max_positions);
  uint64_t kv_pages = pagesFor(page, max_end) * max_requests;
  if (kv_pages > static_cast<uint64_t>(INT32_MAX))
    return outOfRange("page ids up to {} do not fit the i32 block table",
                      kv_pages - 1);
  ExecutorOptions executor_options;
  executor_options.kv_pages = kv_pages;
  executor_options.state_slots = static_cast<uint32_t>(max_requests);
  executor_options.target = options.target;
  executor_options.progress = options.progress;
  executor_options.ranks = options.ranks;
  executor_options.dependent_launches = options.dependent_launches;
  return ModelExecutor::create(std::move(artifact), options.checkpoint,
                               executor_options);
}

StatusOr<StepBenchReport> runStepBench(const StepBenchOptions &options) {
  STRATA_ASSIGN_OR_RETURN(StepKind step, parseBenchStep(options.step));
  STRATA_RETURN_IF_ERROR(checkBenchOptions(options, step));
  StatusOr<std::unique_ptr<ModelExecutor>> executor = createBenchExecutor(
      options, options.requests, options.context + options.tokens);
  if (!executor.ok() && executor.status().code() == StatusCode::kOutOfRange)
    return executor.status().withContext(fmt::format(
        "--context {} + --tokens {}", options.context, options.tokens));
  if (!executor.ok())
    return executor.status();
  return runStepBenchOn(**executor, options);
}

StatusOr<StepBenchReport> runStepBenchOn(ModelExecutor &executor,
                                         const StepBenchOptions &options) {
  STRATA_ASSIGN_OR_RETURN(StepKind step, parseBenchStep(options.step));
  STRATA_RETURN_IF_ERROR(checkBenchOptions(options, step));
  if (!executor.hasStep(step))
    return notFound("the artifact has no {} plan for target {}", options.step,
                    options.target);
  uint64_t page = std::max<uint64_t>(executor.pageSizeTokens(), 1);
  uint64_t pages_per_request =
      pagesFor(page, options.context + options.tokens);
  if (pages_per_request * options.requests > executor.kvPages() ||
      static_cast<uint64_t>(options.requests) > executor.stateSlots())
    return outOfRange("{} requests of {} pages need more than the executor's "
                      "{} pages and {} slots",
                      options.requests, pages_per_request, executor.kvPages(),
                      executor.stateSlots());

  uint64_t vocab = executor.model().vocab_size();
  std::vector<StepRequest> requests(options.requests);
  for (int64_t r = 0; r < options.requests; ++r) {
    StepRequest &request = requests[r];
    for (int64_t t = 0; t < options.tokens; ++t)
      request.tokens.push_back(
          static_cast<int32_t>((uint64_t(r) * 131 + uint64_t(t) * 17 + 1) %
                               vocab));
    request.start_position = options.context;
    for (uint64_t p = 0; p < pages_per_request; ++p)
      request.block_table.push_back(
          static_cast<int32_t>(uint64_t(r) * pages_per_request + p));
    request.slot = static_cast<int32_t>(r);
  }

  // Warm-up (first-launch costs, page faults; a decode shape seen twice is
  // captured as a graph, so the second warm-up step captures it), then the
  // unobserved steps for the wall time (decode: graph replays), then the
  // observed steps. Slots are reset before each step (untimed) so that
  // every step starts from the same state.
  int warmups = step == StepKind::decode ? 2 : 1;
  StepOutputs outputs{options.copy_logits, options.copy_logits};
  for (int w = 0; w < warmups; ++w) {
    STRATA_RETURN_IF_ERROR(resetSlots(executor, options.requests));
    STRATA_RETURN_IF_ERROR(
        executor.run(step, requests, nullptr, outputs).status());
  }
  double wall = 0;
  for (int64_t r = 0; r < options.repeat; ++r) {
    STRATA_RETURN_IF_ERROR(resetSlots(executor, options.requests));
    Clock::time_point start = Clock::now();
    STRATA_RETURN_IF_ERROR(
        executor.run(step, requests, nullptr, outputs).status());
    wall += std::chrono::duration<double>(Clock::now() - start).count();
  }
  const artifact::TargetDef &target = executor.target();
  std::vector<DispatchTiming> timings;
  RoutingReader routing(executor.device(), target);
  std::map<size_t, std::vector<std::vector<int64_t>>> shapes_by_kernel;
  for (int64_t r = 0; r < options.repeat; ++r) {
    DispatchObserver observer = [&](const DispatchTiming &t) {
      timings.push_back(t);
      timings.back().args = nullptr;
      if (r != 0 || !t.args || !t.collective.empty())
        return;
      routing.observe(t);
      if (!shapes_by_kernel.count(t.kernel_index)) {
        std::vector<std::vector<int64_t>> &shapes =
            shapes_by_kernel[t.kernel_index];
        for (const DispatchArg &arg : *t.args)
          shapes.push_back(arg.buffer ? arg.shape : std::vector<int64_t>{});
      }
    };
    STRATA_RETURN_IF_ERROR(resetSlots(executor, options.requests));
    STRATA_RETURN_IF_ERROR(
        executor.run(step, requests, &observer, outputs).status());
  }
  STRATA_RETURN_IF_ERROR(routing.status());

  std::vector<std::string> names;
  for (const artifact::Kernel *kernel : *target.kernels())
    names.push_back(kernel->name()->str());

  StepBenchReport report;
  report.device = executor.device().description();
  report.target = options.target;
  report.step = options.step;
  report.tokens = options.tokens;
  report.requests = options.requests;
  report.context = options.context;
  report.repeat = options.repeat;
  report.dispatches = timings.size() / static_cast<uint64_t>(options.repeat);
  for (const DispatchTiming &t : timings) {
    report.dispatch_seconds += t.seconds;
    report.held_dispatches += t.held ? 1 : 0;
  }
  report.dispatch_seconds /= static_cast<double>(options.repeat);
  report.held_dispatches /= static_cast<uint64_t>(options.repeat);
  report.step_wall_seconds = wall / static_cast<double>(options.repeat);
  report.copy_logits = options.copy_logits;
  STRATA_ASSIGN_OR_RETURN(report.kernels,
                          aggregateTimings(timings, names, options.repeat));
  for (KernelStats &k : report.kernels)
    for (const auto &[index, shapes] : shapes_by_kernel)
      if (names[index] == k.name) {
        k.arg_shapes = shapes;
        break;
      }

  bool gpu = target.target() != artifact::TargetKind::cpu;
  report.copy_bytes = options.copy_bytes
                          ? options.copy_bytes
                          : (gpu ? (uint64_t(1) << 30) : (uint64_t(256) << 20));
  STRATA_ASSIGN_OR_RETURN(
      report.copy_seconds,
      timeCopy(executor.device(), report.copy_bytes, options.repeat));
  report.copy_bytes_per_second =
      report.copy_seconds > 0
          ? 2.0 * static_cast<double>(report.copy_bytes) / report.copy_seconds
          : 0;
  if (target.target() == artifact::TargetKind::sm_90 ||
      target.target() == artifact::TargetKind::sm_90a)
    report.ceiling_bytes_per_second = kH200BandwidthCeiling;

  StepShape shape;
  shape.step = step;
  shape.requests = options.requests;
  shape.tokens = options.tokens;
  shape.context = options.context;
  shape.logits_rows = options.requests;
  STRATA_ASSIGN_OR_RETURN(report.roofline,
                          computeStepRoofline(executor.artifact(), target,
                                              shape, routing.distinct()));
  report.gemm_flops_per_second = options.gemm_flops_per_second;
  report.floor_seconds = report.roofline.floorSeconds(
      report.copy_bytes_per_second, report.gemm_flops_per_second);
  report.floor_ratio = report.floor_seconds > 0
                           ? report.step_wall_seconds / report.floor_seconds
                           : 0;
  return report;
}

namespace {

std::string formatBytes(double bytes) {
  if (bytes >= 1e9)
    return fmt::format("{:.2f} GB", bytes * 1e-9);
  if (bytes >= 1e6)
    return fmt::format("{:.2f} MB", bytes * 1e-6);
  if (bytes >= 1e3)
    return fmt::format("{:.1f} kB", bytes * 1e-3);
  return fmt::format("{:.0f} B", bytes);
}

std::string formatRatio(double value, double reference) {
  if (reference <= 0)
    return "-";
  return fmt::format("{:.2f}%", 100.0 * value / reference);
}

} // namespace

std::string formatMarkdown(const StepBenchReport &report) {
  bool ceiling = report.ceiling_bytes_per_second > 0;
  std::string out = fmt::format(
      "strata-bench: {} step on {} ({}): {} request(s) x {} token(s) at "
      "position {}, {} dispatches, mean of {} steps after a warm-up\n\n",
      report.step, report.target, report.device, report.requests,
      report.tokens, report.context, report.dispatches, report.repeat);
  out += "| kernel | dispatches | time/step (us) | share | bytes/dispatch | "
         "GB/s | of copy |";
  out += ceiling ? " of ceiling |\n" : "\n";
  out += "|---|---:|---:|---:|---:|---:|---:|";
  out += ceiling ? "---:|\n" : "\n";
  double total_bytes = 0;
  for (const KernelStats &k : report.kernels) {
    total_bytes += k.bytes_per_dispatch * static_cast<double>(k.dispatches);
    out += fmt::format("| {} | {} | {:.1f} | {:.1f}% | {} | {:.2f} | {} |",
                       k.name, k.dispatches, k.seconds * 1e6, 100.0 * k.share,
                       formatBytes(k.bytes_per_dispatch),
                       k.bytes_per_second * 1e-9,
                       formatRatio(k.bytes_per_second,
                                   report.copy_bytes_per_second));
    out += ceiling ? fmt::format(" {} |\n",
                                 formatRatio(k.bytes_per_second,
                                             report.ceiling_bytes_per_second))
                   : "\n";
  }
  double total_rate =
      report.dispatch_seconds > 0 ? total_bytes / report.dispatch_seconds : 0;
  out += fmt::format("| **total** | {} | {:.1f} | 100.0% | {} | {:.2f} | {} |",
                     report.dispatches, report.dispatch_seconds * 1e6,
                     formatBytes(total_bytes / std::max<double>(
                                                   1, report.dispatches)),
                     total_rate * 1e-9,
                     formatRatio(total_rate, report.copy_bytes_per_second));
  out += ceiling ? fmt::format(" {} |\n",
                               formatRatio(total_rate,
                                           report.ceiling_bytes_per_second))
                 : "\n";
  out += fmt::format(
      "\nbytes/dispatch: bound buffer regions (reads + writes, upper bound).\n"
      "copy baseline: {:.0f} MiB device-to-device, {:.1f} us, {:.2f} GB/s "
      "(read + write).\n",
      static_cast<double>(report.copy_bytes) / (1 << 20),
      report.copy_seconds * 1e6, report.copy_bytes_per_second * 1e-9);
  if (ceiling)
    out += fmt::format("ceiling: {:.2f} TB/s (shared/docs/performance.md).\n",
                       report.ceiling_bytes_per_second * 1e-12);
  if (report.held_dispatches == report.dispatches)
    out += "dispatch times: the device's, the stream held until each launch "
           "was queued.\n";
  else
    out += fmt::format("dispatch times: {} of {} timed without a stream "
                       "hold (each includes its launch).\n",
                       report.dispatches - report.held_dispatches,
                       report.dispatches);
  out += fmt::format(
      "step: {:.1f} us summed over dispatches timed alone; {:.1f} us wall "
      "per unobserved step (with plan buffer allocation, the input copies "
      "and the copy back of {}).\n",
      report.dispatch_seconds * 1e6, report.step_wall_seconds * 1e6,
      report.copy_logits ? "the logits and hidden rows"
                         : "the greedy tokens");
  out += formatRoofline(report);
  return out;
}

std::string formatRoofline(const StepBenchReport &report) {
  const StepRoofline &r = report.roofline;
  std::string out = fmt::format(
      "roofline: {} must move (weights {}, routed experts {} = {:.1f} of "
      "each MoE layer's experts ({}), KV and state {}) and {:.3f} TFLOP; ",
      formatBytes(r.bytes()), formatBytes(r.weight_bytes),
      formatBytes(r.expert_bytes), r.experts_per_layer,
      r.routing_read_back ? "routing read back" : "uniform expectation",
      formatBytes(r.state_bytes), r.flops * 1e-12);
  if (report.gemm_flops_per_second > 0)
    out += fmt::format("GEMM rate {:.1f} TFLOP/s; ",
                       report.gemm_flops_per_second * 1e-12);
  else
    out += "no GEMM rate given (memory floor only); ";
  out += fmt::format("floor {:.1f} us, wall / floor {:.2f}x.\n",
                     report.floor_seconds * 1e6, report.floor_ratio);
  return out;
}

std::string formatJson(const StepBenchReport &report) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelStats &k : report.kernels)
    kernels.push_back({{"name", k.name},
                       {"dispatches", k.dispatches},
                       {"seconds", k.seconds},
                       {"share", k.share},
                       {"bytes_per_dispatch", k.bytes_per_dispatch},
                       {"bytes_per_second", k.bytes_per_second},
                       {"arg_shapes", k.arg_shapes}});
  nlohmann::json json = {
      {"device", report.device},
      {"target", report.target},
      {"step", report.step},
      {"tokens", report.tokens},
      {"requests", report.requests},
      {"context", report.context},
      {"repeat", report.repeat},
      {"dispatches", report.dispatches},
      {"dispatch_seconds", report.dispatch_seconds},
      {"held_dispatches", report.held_dispatches},
      {"step_wall_seconds", report.step_wall_seconds},
      {"copy_logits", report.copy_logits},
      {"copy_bytes", report.copy_bytes},
      {"copy_seconds", report.copy_seconds},
      {"copy_bytes_per_second", report.copy_bytes_per_second},
      {"ceiling_bytes_per_second", report.ceiling_bytes_per_second},
      {"roofline",
       {{"weight_bytes", report.roofline.weight_bytes},
        {"expert_bytes", report.roofline.expert_bytes},
        {"state_bytes", report.roofline.state_bytes},
        {"bytes", report.roofline.bytes()},
        {"flops", report.roofline.flops},
        {"moe_layers", report.roofline.moe_layers},
        {"experts_per_layer", report.roofline.experts_per_layer},
        {"routing_read_back", report.roofline.routing_read_back},
        {"gemm_flops_per_second", report.gemm_flops_per_second},
        {"floor_seconds", report.floor_seconds},
        {"wall_over_floor", report.floor_ratio}}},
      {"kernels", kernels}};
  return json.dump(2) + "\n";
}

} // namespace strata::runtime
