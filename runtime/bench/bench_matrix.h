//===- bench_matrix.h - strata-bench over a matrix of steps -----*- C++ -*-===//
//
// Part of strata. A matrix run benchmarks one artifact at every step shape
// that matters for serving: decode at each batch size B and context C, and
// prefill of each B x N shape, on one executor sized for the largest case
// (weights are loaded once). Each case is a full runStepBenchOn report
// (per-kernel times, wall, roofline); the summary table lists per case the
// wall time, the summed dispatch time, the bytes and FLOPs the step must
// move and compute, the floor and wall / floor. docs/Bench.md "Matrix runs".
//
// Thread-safety: plain functions; one matrix at a time per device.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_BENCH_MATRIX_H
#define STRATA_RUNTIME_BENCH_BENCH_MATRIX_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/bench/step_bench.h"

namespace strata::runtime {

/// One prefill shape: `requests` requests of `tokens` new tokens at
/// position 0.
struct PrefillShape {
  int64_t requests = 1, tokens = 1;
};

struct MatrixOptions {
  /// Artifact, checkpoint, target, copy size and GEMM rate of every case
  /// (step, tokens, requests, context and repeat are set per case).
  StepBenchOptions base;
  /// Decode batch sizes and contexts (every pair is a case).
  std::vector<int64_t> decode_batches = {1, 8, 32, 128};
  std::vector<int64_t> decode_contexts = {128, 4096};
  /// Prefill shapes.
  std::vector<PrefillShape> prefill = {{1, 2048}, {4, 2048}, {1, 8192}};
  /// Timed steps per decode case and per prefill case.
  int64_t decode_repeat = 5, prefill_repeat = 2;
};

/// "1,8,32" as positive integers (INVALID_ARGUMENT naming `flag` else).
StatusOr<std::vector<int64_t>> parsePositiveList(std::string_view flag,
                                                 std::string_view text);
/// "1x2048,4x2048" as prefill shapes.
StatusOr<std::vector<PrefillShape>> parsePrefillList(std::string_view flag,
                                                     std::string_view text);

/// Runs every case in order (decode by context then batch, then prefill),
/// calling `progress(i, n, label)` before case i of n.
StatusOr<std::vector<StepBenchReport>>
runBenchMatrix(const MatrixOptions &options,
               const std::function<void(size_t, size_t, const std::string &)>
                   &progress);

/// The summary table of a matrix run (one row per case) followed by each
/// case's per-kernel table.
std::string formatMatrixMarkdown(const std::vector<StepBenchReport> &reports);

/// {"cases": [formatJson of each case]}.
std::string formatMatrixJson(const std::vector<StepBenchReport> &reports);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_BENCH_MATRIX_H
