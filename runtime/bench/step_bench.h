//===- step_bench.h - time one plan step per kernel -------------*- C++ -*-===//
//
// Part of strata. runStepBench loads an artifact and a checkpoint through
// ModelExecutor, runs one step of a plan (prefill or decode) over synthetic
// requests — B requests, each with N new tokens at positions [C, C + N),
// every request with its own run of KV pages and its own state slot, as
// strata-run lays them out — once as a warm-up and then R times with every
// dispatch timed alone (Program::run's DispatchObserver: device events on GPU
// backends, steady_clock on the CPU), and aggregates the timings by kernel
// name. The same run measures a device-to-device copy of a large buffer as
// the achievable-bandwidth baseline. docs/Bench.md describes the report.
//
// Thread-safety: plain functions; one benchmark at a time per device.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_STEP_BENCH_H
#define STRATA_RUNTIME_BENCH_STEP_BENCH_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/progress.h"
#include "runtime/base/status.h"
#include "runtime/bench/roofline.h"
#include "runtime/executor/rank_groups.h"
#include "runtime/loader/program.h"

namespace strata::runtime {

/// The achievable HBM bandwidth of one H200 (bytes/s, read + write), from
/// shared/docs/performance.md §1.1 ("Use ≈4.1 TB/s ... as achievable
/// ceilings"; a device copy measured 4.29 TB/s there).
inline constexpr double kH200BandwidthCeiling = 4.1e12;

struct StepBenchOptions {
  /// Artifact file and checkpoint directory. Required.
  std::string artifact, checkpoint;
  /// Artifact target and device: cpu or sm_90 (also gfx942/gfx950).
  std::string target = "cpu";
  /// prefill or decode. Default decode.
  std::string step = "decode";
  /// New tokens per request (decode: 1). Default 1.
  int64_t tokens = 1;
  /// Requests in the step. Default 1.
  int64_t requests = 1;
  /// Position of every request's first new token. Default 0.
  int64_t context = 0;
  /// Timed steps after the warm-up. Default 10.
  int64_t repeat = 10;
  /// Bytes of the baseline copy; 0: 1 GiB on GPU targets, 256 MiB on the CPU.
  uint64_t copy_bytes = 0;
  /// The GEMM rate the roofline holds compute to (FLOP/s), measured by the
  /// caller in the same run (a large GEMM of the activation dtype); 0: the
  /// roofline is the memory floor alone.
  double gemm_flops_per_second = 0;
  /// What each timed step copies back: by default what a greedy serving
  /// step needs, the greedy tokens alone (--copy-logits adds the logits and
  /// hidden rows, as a sampling or MTP step copies them).
  bool copy_logits = false;
  /// Shows the weight upload when set (ExecutorOptions::progress); not
  /// owned. Default: none.
  ProgressReporter *progress = nullptr;
  /// This process's rank of a sharded artifact (ExecutorOptions::ranks);
  /// every rank runs the same steps. Default: one rank.
  std::optional<RankGroupsOptions> ranks;
  /// ExecutorOptions::dependent_launches (steps replayed from graphs:
  /// --step mtp). Default off.
  bool dependent_launches = false;
};

/// One kernel name's dispatches, per step.
struct KernelStats {
  std::string name;
  /// Dispatches of this kernel in one step.
  uint64_t dispatches = 0;
  /// Seconds per step (mean over the repeats).
  double seconds = 0;
  /// Fraction of the step's summed dispatch time.
  double share = 0;
  /// Bound bytes per dispatch (mean over the kernel's dispatches).
  double bytes_per_dispatch = 0;
  /// Bound bytes over time.
  double bytes_per_second = 0;
  /// Extents of each buffer argument of the kernel's first dispatch in the
  /// step (scalars: empty), e.g. a linear's [M, K], [N, K], [M, N].
  std::vector<std::vector<int64_t>> arg_shapes;
};

struct StepBenchReport {
  std::string device, target, step;
  int64_t tokens = 0, requests = 0, context = 0, repeat = 0;
  /// Dispatches in one step.
  uint64_t dispatches = 0;
  /// Sum of every dispatch's time, per step (mean over the repeats).
  double dispatch_seconds = 0;
  /// Dispatches per step timed on a held stream (DispatchTiming::held): the
  /// kernel's device time alone; the others' times include their launch.
  uint64_t held_dispatches = 0;
  /// Wall time of an unobserved ModelExecutor::run (mean over the repeats):
  /// the dispatches back to back plus plan buffer allocation and the input
  /// and output copies.
  double step_wall_seconds = 0;
  /// Whether the timed steps copied the logits and hidden rows back
  /// (StepBenchOptions::copy_logits) or only the greedy tokens.
  bool copy_logits = false;
  /// The baseline copy: bytes copied, seconds (mean), and bytes/s counting
  /// the read and the write (2 × bytes / seconds).
  uint64_t copy_bytes = 0;
  double copy_seconds = 0, copy_bytes_per_second = 0;
  /// The published bandwidth ceiling of the device, 0 when none is known
  /// (the CPU).
  double ceiling_bytes_per_second = 0;
  /// By time per step, largest first.
  std::vector<KernelStats> kernels;
  /// What the step must move and compute (routing read back from the
  /// moe_select dispatches of the first observed step), the GEMM rate it
  /// was held to, the floor max(bytes / copy rate, FLOPs / GEMM rate) and
  /// the wall time over it.
  StepRoofline roofline;
  double gemm_flops_per_second = 0;
  double floor_seconds = 0;
  double floor_ratio = 0;
};

class ModelExecutor;

/// The executor runStepBench would create for `options`, sized for
/// `max_requests` requests reaching position `max_end` (every request a
/// disjoint run of pages and its own state slot): what a series of
/// benchmarks (runStepBenchOn) shares.
StatusOr<std::unique_ptr<ModelExecutor>>
createBenchExecutor(const StepBenchOptions &options, int64_t max_requests,
                    int64_t max_end);

/// Runs the benchmark on an executor of createBenchExecutor whose sizes
/// cover `options`.
StatusOr<StepBenchReport> runStepBenchOn(ModelExecutor &executor,
                                         const StepBenchOptions &options);

/// Aggregates the timings of `repeat` observed steps by kernel name
/// (`kernel_names` by kernel index); fills dispatches, seconds, share,
/// bytes_per_dispatch and bytes_per_second. INVALID_ARGUMENT when a timing
/// names an unknown kernel or repeat is not positive.
StatusOr<std::vector<KernelStats>>
aggregateTimings(const std::vector<DispatchTiming> &timings,
                 const std::vector<std::string> &kernel_names,
                 int64_t repeat);

/// Runs the benchmark (see the file comment).
StatusOr<StepBenchReport> runStepBench(const StepBenchOptions &options);

/// The report as a markdown table with a header line and a footer.
std::string formatMarkdown(const StepBenchReport &report);

/// The report's roofline line (bytes, FLOPs, floor, wall / floor).
std::string formatRoofline(const StepBenchReport &report);

/// The report as JSON.
std::string formatJson(const StepBenchReport &report);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_STEP_BENCH_H
