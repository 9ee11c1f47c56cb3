//===- mtp_bench.h - time one MTP speculative step --------------*- C++ -*-===//
//
// Part of strata. runMtpBench times what the scheduler runs for one
// speculative iteration of B requests with k drafts each (docs/Scheduler.md
// "MTP"), phase by phase, as unobserved steps (decode, verify and draft steps
// replay captured graphs after the warm-up, as when serving):
//
//   chain     k - 1 draft passes of one row a request (draft j from j - 1;
//             mtp_chain steps reusing step 0's selection when the artifact
//             has them, else mtp_draft steps)
//   save      every request's state copied to its scratch slot (before
//             verify; the slots are consecutive: one copy per state pool)
//   verify    one target step of k + 1 tokens a request, every row's greedy
//             token and the hidden rows copied back
//   draft 0   the draft pass over the committed rows: k + 1 rows a request
//             when every draft was accepted, 1 when the first was rejected
//   restore   a rejection: the saved state copied back
//   re-run    a rejection: the accepted tokens re-run (1: a decode step)
//   verify with draft 0
//             the verification and the draft pass over all of its rows in
//             one graph (ModelExecutor::runWithDraft; how the scheduler runs
//             greedy verifications), with per-token KDA states
//
// next to the decode step of the same batch. When the target plans keep
// per-token KDA states (the verification keeps the state after each
// position in a slot of its own), there is no save, restore or re-run, as
// in the scheduler. A speculative step costs chain + save + verify +
// draft 0 when all drafts are accepted, and chain + save + verify + restore
// + re-run + draft 0 (1 row) when the first is rejected (the absent phases
// counting 0), or chain + verify with draft 0 in the scheduler's greedy
// form. Token values are synthetic; the steps' costs do not depend on them.
//
// Thread-safety: plain functions; one benchmark at a time per device.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_MTP_BENCH_H
#define STRATA_RUNTIME_BENCH_MTP_BENCH_H

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/bench/step_bench.h"

namespace strata::runtime {

struct MtpBenchOptions {
  /// Artifact, checkpoint, target, requests (B), context (the position of
  /// the verified tokens) and repeat; tokens and step are ignored.
  StepBenchOptions base;
  /// Drafts per request, 1..kMaxMtpDraftTokens. Default 3.
  int64_t draft_tokens = 3;
};

/// One phase's wall time (mean over the repeats).
struct MtpPhase {
  std::string name;
  double seconds = 0;
};

struct MtpBenchReport {
  std::string device, target;
  int64_t requests = 0, context = 0, draft_tokens = 0, repeat = 0;
  /// The decode step of the same batch at the same context.
  double decode_seconds = 0;
  /// chain (all k - 1 passes), chain in one step (k >= 3), save, verify,
  /// draft 0 (k + 1 rows), restore, re-run, draft 0 (1 row), verify with
  /// draft 0, verify with draft 0 and chain (k >= 2 with an mtp_chain
  /// plan), in that order.
  std::vector<MtpPhase> phases;
  /// The speculative step when every draft is accepted, and when the first
  /// is rejected; with the draft's step 0 in the verify's graph, as the
  /// scheduler runs greedy requests (the verify with draft 0 and chain, else
  /// the chain (in one step) + verify with draft 0; 0 when the artifact
  /// cannot).
  double accepted_seconds = 0, rejected_seconds = 0, with_draft_seconds = 0;
  /// Whether the target plans keep per-token KDA states (no save,
  /// restore and re-run phases: ModelExecutor::keepsTokenStates).
  bool token_states = false;
  /// Model steps of the timed rounds, and how many replayed a graph.
  uint64_t timed_steps = 0, graph_replays = 0;
};

/// Runs the benchmark (see the file comment) once per batch size of
/// `batches` (empty: options.base.requests) on one executor sized for the
/// largest. INVALID_ARGUMENT for bad options, NOT_FOUND when the artifact
/// has no mtp_draft or mtp_verify plan.
StatusOr<std::vector<MtpBenchReport>>
runMtpBench(const MtpBenchOptions &options,
            const std::vector<int64_t> &batches = {});

/// The report as markdown: a header line, the phases, both speculative
/// steps and their ratio to the decode step.
std::string formatMtpMarkdown(const MtpBenchReport &report);

/// The reports as JSON (an array).
std::string formatMtpJson(const std::vector<MtpBenchReport> &reports);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_MTP_BENCH_H
