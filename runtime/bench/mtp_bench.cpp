//===- mtp_bench.cpp - time one MTP speculative step ----------------------===//
//
// Part of strata. See mtp_bench.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/mtp_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/executor/model_executor.h"
#include "runtime/schemas/mtp_draft_limit.h"

namespace strata::runtime {

using artifact::StepKind;

namespace {

using Clock = std::chrono::steady_clock;

/// Warm-up rounds: a shape seen in the first is captured in the second.
constexpr int kWarmupRounds = 2;

Status checkMtpOptions(const MtpBenchOptions &options) {
  const StepBenchOptions &b = options.base;
  if (options.draft_tokens < 1 || options.draft_tokens > kMaxMtpDraftTokens)
    return invalidArgument("--mtp: {} drafts, expected 1 to {}",
                           options.draft_tokens, kMaxMtpDraftTokens);
  if (b.requests <= 0 || b.context < 0 || b.repeat <= 0)
    return invalidArgument("--requests ({}) and --repeat ({}) must be "
                           "positive and --context ({}) not negative",
                           b.requests, b.repeat, b.context);
  if (b.requests > INT32_MAX / 2 ||
      b.context + options.draft_tokens + 1 > INT32_MAX)
    return outOfRange("--requests {} or --context {} does not fit the i32 "
                      "plan inputs",
                      b.requests, b.context);
  return okStatus();
}

/// The requests of one phase: `rows` tokens each from position `start`,
/// request r on pages [r * pages, (r + 1) * pages) and slot r; a draft
/// step's also `rows` zero hidden rows of `hidden_row_bytes` (0: none).
class PhaseRequests {
public:
  PhaseRequests(int64_t requests, uint64_t pages, uint64_t vocab)
      : requests_(requests), pages_(pages), vocab_(vocab) {}

  std::vector<StepRequest> make(int64_t start, int64_t rows,
                                size_t hidden_row_bytes = 0) const {
    std::vector<StepRequest> out(requests_);
    for (int64_t r = 0; r < requests_; ++r) {
      StepRequest &request = out[r];
      for (int64_t t = 0; t < rows; ++t)
        request.tokens.push_back(int32_t(
            (uint64_t(r) * 131 + uint64_t(start + t) * 17 + 1) % vocab_));
      request.start_position = start;
      for (uint64_t p = 0; p < pages_; ++p)
        request.block_table.push_back(int32_t(uint64_t(r) * pages_ + p));
      request.slot = int32_t(r);
      request.hidden.assign(size_t(rows) * hidden_row_bytes, 0);
    }
    return out;
  }

private:
  int64_t requests_;
  uint64_t pages_, vocab_;
};

/// Seconds `work` takes.
StatusOr<double> timed(const std::function<Status()> &work) {
  Clock::time_point start = Clock::now();
  STRATA_RETURN_IF_ERROR(work());
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

namespace {

/// One batch size's benchmark on an executor of at least (k + 1) x B slots.
StatusOr<MtpBenchReport> runMtpBenchOn(ModelExecutor *executor,
                                       const MtpBenchOptions &options) {
  const StepBenchOptions &b = options.base;
  const int64_t k = options.draft_tokens, requests = b.requests;
  const uint64_t page = std::max<uint64_t>(executor->pageSizeTokens(), 1);
  const uint64_t pages = (uint64_t(b.context + k + 1) + page - 1) / page;
  PhaseRequests phase(requests, pages, executor->model().vocab_size());
  for (int64_t r = 0; r < (k + 1) * requests; ++r)
    STRATA_RETURN_IF_ERROR(executor->resetSlot(int32_t(r)));

  const StepOutputs greedy_and_hidden{/*logits=*/false, /*hidden=*/true};
  // As the scheduler does: with per-token KDA states the verification keeps
  // position j's state in slot j * B + slot and nothing is saved, restored
  // or re-run; otherwise the state is saved before and restored after a
  // rejection, and the accepted tokens re-run.
  const bool token_states = executor->keepsTokenStates();
  std::vector<StepRequest> verify = phase.make(b.context, k + 1);
  for (StepRequest &request : verify) {
    request.all_logits = true;
    if (!token_states)
      continue;
    for (int64_t j = 0; j <= k; ++j)
      request.state_token_slots.push_back(int32_t(j * requests) +
                                          request.slot);
    request.state_dst_slot = request.state_token_slots.back();
  }
  // The hidden row size, from one untimed verify step.
  STRATA_ASSIGN_OR_RETURN(
      StepResult first,
      executor->run(StepKind::mtp_verify, verify, nullptr, greedy_and_hidden));
  const size_t row_bytes = first.hidden_row_bytes;
  // The chain's passes reuse step 0's selection (mtp_chain, the last row
  // step 0 kept) when the artifact has them, as the scheduler does.
  const StepKind chain_step = executor->hasStep(StepKind::mtp_chain)
                                  ? StepKind::mtp_chain
                                  : StepKind::mtp_draft;
  std::vector<std::vector<StepRequest>> chain;
  for (int64_t j = 1; j < k; ++j) {
    chain.push_back(phase.make(b.context + j - 1, 1, row_bytes));
    for (StepRequest &request : chain.back())
      request.shared_selection_row = int32_t(kSharedSelectionRows) - 1;
  }
  std::vector<StepRequest> draft_all =
      phase.make(b.context, k + 1, row_bytes);
  std::vector<StepRequest> draft_one =
      phase.make(b.context, 1, row_bytes);
  std::vector<StepRequest> decode = phase.make(b.context, 1);

  auto run = [&](StepKind step, const std::vector<StepRequest> &requests_of) {
    return [&, step] {
      return executor->run(step, requests_of, nullptr, greedy_and_hidden)
          .status();
    };
  };
  // Like the scheduler: the live slots 0..B-1 to the scratch slots B..2B-1
  // in one run of slots (and back, every draft rejected).
  auto copySlots = [&](bool save) {
    return [&, save] {
      int32_t live = 0, scratch = int32_t(requests), n = int32_t(requests);
      return save ? executor->copySlots(live, scratch, n)
                  : executor->copySlots(scratch, live, n);
    };
  };
  // The verification with the draft's step 0 over all of its rows in the
  // same device work (the scheduler's way for greedy requests).
  const bool with_draft =
      token_states && executor->checkDraftedStep(StepKind::mtp_verify).ok();
  auto verifyWithDraft = [&] {
    StepOutputs draft_outputs{/*logits=*/false, /*hidden=*/k > 1};
    return executor
        ->runWithDraft(StepKind::mtp_verify, verify,
                       StepOutputs{/*logits=*/false, /*hidden=*/false},
                       draft_outputs)
        .status();
  };
  auto chainPasses = [&] {
    for (const std::vector<StepRequest> &pass : chain)
      STRATA_RETURN_IF_ERROR(run(chain_step, pass)());
    return okStatus();
  };
  // k >= 3: the chain's passes as one step, each fed by the last on the
  // device (the scheduler's way when the executor can).
  const bool one_step_chain =
      k >= 3 && executor->checkChainedStep(chain_step).ok();
  auto chainInOneStep = [&] {
    return executor
        ->runChain(chain_step, chain.front(), size_t(k - 1),
                   StepOutputs{/*logits=*/false, /*hidden=*/false})
        .status();
  };
  // The verification, its draft's step 0 and the candidate chains after it
  // (one per verified row) in one graph: the scheduler's whole greedy
  // iteration when the artifact has mtp_chain (chain_with_target).
  const bool chain_with_verify =
      with_draft && k >= 2 && executor->hasStep(StepKind::mtp_chain) &&
      executor->checkChainedStep(StepKind::mtp_chain).ok();
  DraftChain candidates;
  if (chain_with_verify)
    candidates = candidateDraftChains(verify, size_t(k - 1), page);
  auto verifyWithChain = [&] {
    return executor
        ->runWithDraftChain(StepKind::mtp_verify, verify,
                            StepOutputs{/*logits=*/false, /*hidden=*/false},
                            StepOutputs{/*logits=*/false, /*hidden=*/false},
                            candidates)
        .status();
  };
  std::vector<std::pair<std::string, std::function<Status()>>> phases = {
      {"chain", chainPasses},
      {"chain in one step", chainInOneStep},
      {"save", copySlots(true)},
      {"verify", run(StepKind::mtp_verify, verify)},
      {"draft 0", run(StepKind::mtp_draft, draft_all)},
      {"restore", copySlots(false)},
      {"re-run", run(StepKind::decode, decode)},
      {"draft 0 (1 row)", run(StepKind::mtp_draft, draft_one)},
      {"verify with draft 0", verifyWithDraft},
      {"verify with draft 0 and chain", verifyWithChain},
      {"decode", run(StepKind::decode, decode)}};
  if (!chain_with_verify)
    phases.erase(phases.end() - 2);
  if (!with_draft)
    phases.erase(phases.end() - 2);
  if (!one_step_chain)
    phases.erase(phases.begin() + 1);
  if (token_states)
    phases.erase(std::remove_if(phases.begin(), phases.end(),
                                [](const auto &phase) {
                                  return phase.first == "save" ||
                                         phase.first == "restore" ||
                                         phase.first == "re-run";
                                }),
                 phases.end());
  std::vector<double> sums(phases.size(), 0.0);
  auto replays = [&] {
    const StepGraphCounts &counts = executor->graphCounts();
    return std::accumulate(counts.replays.begin(), counts.replays.end(),
                           uint64_t(0)) +
           std::accumulate(counts.drafted_replays.begin(),
                           counts.drafted_replays.end(), uint64_t(0)) +
           counts.chained_replays;
  };
  uint64_t replays_before = 0;
  for (int64_t round = -kWarmupRounds; round < b.repeat; ++round) {
    if (round == 0)
      replays_before = replays();
    for (size_t p = 0; p < phases.size(); ++p) {
      STRATA_ASSIGN_OR_RETURN(double seconds, timed(phases[p].second));
      if (round >= 0)
        sums[p] += seconds;
    }
  }

  MtpBenchReport report;
  report.device = executor->device().description();
  report.target = b.target;
  report.requests = requests;
  report.context = b.context;
  report.draft_tokens = k;
  report.repeat = b.repeat;
  report.token_states = token_states;
  auto mean = [&](const std::string &name) {
    for (size_t p = 0; p < phases.size(); ++p)
      if (phases[p].first == name)
        return sums[p] / double(b.repeat);
    return 0.0; // save, restore and re-run with per-token states
  };
  for (size_t p = 0; p + 1 < phases.size(); ++p)
    report.phases.push_back({phases[p].first, mean(phases[p].first)});
  report.decode_seconds = mean("decode");
  const double common = mean("chain") + mean("save") + mean("verify");
  report.accepted_seconds = common + mean("draft 0");
  report.rejected_seconds = common + mean("restore") + mean("re-run") +
                            mean("draft 0 (1 row)");
  if (chain_with_verify)
    report.with_draft_seconds = mean("verify with draft 0 and chain");
  else if (with_draft)
    report.with_draft_seconds =
        mean(one_step_chain ? "chain in one step" : "chain") +
        mean("verify with draft 0");
  // Model steps per round: the chain's k - 1, the chain in one step (one
  // graph), verify, two draft 0 passes, the re-run (without per-token
  // states), the verify with draft 0 (one graph) and the decode step.
  report.timed_steps =
      uint64_t(b.repeat) *
      uint64_t(k - 1 + (one_step_chain ? 1 : 0) + (token_states ? 4 : 5) +
               (with_draft ? 1 : 0) + (chain_with_verify ? 1 : 0));
  report.graph_replays = replays() - replays_before;
  return report;
}

} // namespace

StatusOr<std::vector<MtpBenchReport>>
runMtpBench(const MtpBenchOptions &options,
            const std::vector<int64_t> &batches) {
  std::vector<MtpBenchReport> reports;
  std::vector<int64_t> sizes =
      batches.empty() ? std::vector<int64_t>{options.base.requests} : batches;
  MtpBenchOptions largest = options;
  largest.base.requests = *std::max_element(sizes.begin(), sizes.end());
  STRATA_RETURN_IF_ERROR(checkMtpOptions(largest));
  const StepBenchOptions &b = largest.base;
  // k + 1 banks of B slots: the states a verification keeps per position
  // (the second bank: the states saved before it).
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<ModelExecutor> executor,
      createBenchExecutor(b, (options.draft_tokens + 1) * b.requests,
                          b.context + options.draft_tokens + 1));
  for (StepKind step : {StepKind::mtp_draft, StepKind::mtp_verify})
    if (!executor->hasStep(step))
      return notFound("the artifact has no {} plan for target {}",
                      artifact::EnumNameStepKind(step), b.target);
  for (int64_t size : sizes) {
    MtpBenchOptions one = options;
    one.base.requests = size;
    STRATA_RETURN_IF_ERROR(checkMtpOptions(one));
    STRATA_ASSIGN_OR_RETURN(MtpBenchReport report,
                            runMtpBenchOn(executor.get(), one));
    reports.push_back(std::move(report));
  }
  return reports;
}

/// Whether `report`'s greedy step ran the candidate chains in the verify's
/// graph.
static bool chainWithVerify(const MtpBenchReport &report) {
  for (const auto &phase : report.phases)
    if (phase.name == "verify with draft 0 and chain")
      return true;
  return false;
}

std::string formatMtpMarkdown(const MtpBenchReport &report) {
  std::string out = fmt::format(
      "strata-bench: MTP speculative step on {} ({}): {} request(s), {} "
      "drafts, verified at position {}, mean of {} steps after a warm-up\n\n",
      report.target, report.device, report.requests, report.draft_tokens,
      report.context, report.repeat);
  out += report.token_states
             ? "KDA state: kept after every verified position (nothing "
               "saved, restored or re-run)\n\n"
             : "KDA state: saved to scratch slots before the verification, "
               "restored and the accepted tokens re-run after a "
               "rejection\n\n";
  out += "| phase | wall (us) |\n|---|---:|\n";
  for (const MtpPhase &phase : report.phases)
    out += fmt::format("| {} | {:.1f} |\n", phase.name, phase.seconds * 1e6);
  auto ratio = [&](double seconds) {
    return report.decode_seconds > 0 ? seconds / report.decode_seconds : 0.0;
  };
  out += fmt::format(
      "\ndecode step (B = {}): {:.1f} us\n"
      "speculative step, every draft accepted: {:.1f} us ({:.2f}x the "
      "decode step, {} tokens a request)\n"
      "speculative step, first draft rejected: {:.1f} us ({:.2f}x the decode "
      "step, 1 token a request)\n"
      "{}"
      "graphs: {} of the {} timed model steps replayed a captured graph\n",
      report.requests, report.decode_seconds * 1e6,
      report.accepted_seconds * 1e6, ratio(report.accepted_seconds),
      report.draft_tokens + 1, report.rejected_seconds * 1e6,
      ratio(report.rejected_seconds),
      report.with_draft_seconds > 0
          ? fmt::format("speculative step, draft 0{} with the verify: {:.1f} "
                        "us ({:.2f}x the decode step)\n",
                        chainWithVerify(report) ? " and the chain" : "",
                        report.with_draft_seconds * 1e6,
                        ratio(report.with_draft_seconds))
          : std::string(),
      report.graph_replays, report.timed_steps);
  return out;
}

namespace {
nlohmann::ordered_json mtpJson(const MtpBenchReport &report) {
  nlohmann::ordered_json j;
  j["step"] = "mtp";
  j["device"] = report.device;
  j["target"] = report.target;
  j["requests"] = report.requests;
  j["context"] = report.context;
  j["draft_tokens"] = report.draft_tokens;
  j["repeat"] = report.repeat;
  j["token_states"] = report.token_states;
  j["decode_seconds"] = report.decode_seconds;
  for (const MtpPhase &phase : report.phases)
    j["phases"].push_back({{"name", phase.name}, {"seconds", phase.seconds}});
  j["accepted_seconds"] = report.accepted_seconds;
  j["rejected_seconds"] = report.rejected_seconds;
  j["with_draft_seconds"] = report.with_draft_seconds;
  j["timed_steps"] = report.timed_steps;
  j["graph_replays"] = report.graph_replays;
  return j;
}
} // namespace

std::string formatMtpJson(const std::vector<MtpBenchReport> &reports) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const MtpBenchReport &report : reports)
    j.push_back(mtpJson(report));
  return j.dump(2) + "\n";
}

} // namespace strata::runtime
