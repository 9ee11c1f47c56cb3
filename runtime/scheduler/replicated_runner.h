//===- replicated_runner.h - one scheduler for every rank -------*- C++ -*-===//
//
// Part of strata. A sharded artifact runs as one process per rank, and every
// rank must run every step (the collectives need all). strata-batch and
// strata-serve keep one scheduler, on rank 0: its ModelRunner is a
// ReplicatedRunner, which sends each call that changes the model's state (a
// step, a slot reset or copy, the caches' allocation; rank_commands.h) to
// the other ranks before running it on its own executor. Each other rank
// runs runRankFollower, which repeats the commands on its executor until
// rank 0 says stop. The commands travel over a control communicator of all
// ranks (Gloo, key prefix `strata/control`, host memory): a broadcast of
// the length, then of the bytes, through one reused pinned buffer.
//
// Failures: a follower that hears nothing for the collectives' timeout
// fails naming rank 0 (an idle rank 0 sends a keep-alive every quarter of
// it, from the engine thread: ModelRunner::keepAlive); a dead follower makes
// rank 0's next broadcast or collective fail naming it.
//
// Ownership: the runner owns the executor runner and the communicator.
// Thread-safety: one thread at a time (the engine thread).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_REPLICATED_RUNNER_H
#define STRATA_RUNTIME_SCHEDULER_REPLICATED_RUNNER_H

#include <chrono>
#include <memory>

#include "runtime/collectives/communicator.h"
#include "runtime/executor/rank_groups.h"
#include "runtime/scheduler/model_runner.h"
#include "runtime/scheduler/rank_commands.h"

namespace strata::runtime {

/// The control communicator of `ranks` (every rank calls it, after its
/// executor joined its groups): Gloo over all T * E ranks.
StatusOr<std::unique_ptr<Communicator>>
createControlCommunicator(const RankGroupsOptions &ranks);

/// The commands' transport (replicated_runner.cpp).
class ControlChannel;

class ReplicatedRunner : public ModelRunner {
public:
  /// `runner` is rank 0's own; `control` connects every rank;
  /// `keep_alive`: the idle interval between keep-alives.
  ReplicatedRunner(std::unique_ptr<ExecutorRunner> runner,
                   std::unique_ptr<Communicator> control,
                   std::chrono::milliseconds keep_alive);
  /// Tells the followers to stop (errors ignored: they fail on their own).
  ~ReplicatedRunner() override;

  size_t vocabSize() const override { return runner_->vocabSize(); }
  uint64_t maxPositions() const override { return runner_->maxPositions(); }
  const CacheGeometry &geometry() const override {
    return runner_->geometry();
  }
  bool hasDraft() const override { return runner_->hasDraft(); }
  bool hasDraftChain() const override { return runner_->hasDraftChain(); }
  Status resetSlot(int32_t slot) override;
  Status copySlots(int32_t src, int32_t dst, int32_t count,
                   StatePools pools) override;
  bool keepsTokenStates() const override { return runner_->keepsTokenStates(); }
  StatusOr<StepResult> run(artifact::StepKind step,
                           const std::vector<StepRequest> &requests,
                           const StepOutputs &outputs) override;
  bool runsWithDraft() const override { return runner_->runsWithDraft(); }
  bool keepsTargetHidden() const override {
    return runner_->keepsTargetHidden();
  }
  StatusOr<DraftedStepResult>
  runWithDraft(artifact::StepKind step, const std::vector<StepRequest> &requests,
               const StepOutputs &outputs,
               const StepOutputs &draft_outputs) override;
  std::chrono::milliseconds keepAliveInterval() const override {
    return keep_alive_;
  }
  Status keepAlive() override;
  bool runsChainedDrafts() const override {
    return runner_->runsChainedDrafts();
  }
  StatusOr<std::vector<StepResult>>
  runChain(artifact::StepKind step, const std::vector<StepRequest> &requests,
           size_t passes, const StepOutputs &outputs) override;
  StepGraphCounts graphCounts() const override {
    return runner_->graphCounts();
  }

  /// ModelExecutor::allocateCaches on every rank.
  Status allocateCaches(uint64_t kv_pages, uint32_t state_slots);
  ModelExecutor &executor() { return runner_->executor(); }

private:
  Status send(const RankCommand &command);

  std::unique_ptr<ExecutorRunner> runner_;
  std::unique_ptr<Communicator> control_;
  std::unique_ptr<ControlChannel> channel_;
  std::chrono::milliseconds keep_alive_;
};

/// A follower rank's loop: receives rank 0's commands and runs them on
/// `executor` until kStop (OK) or an error (the command's or the control
/// communicator's, e.g. rank 0 gone).
Status runRankFollower(ModelExecutor &executor, Communicator &control);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_REPLICATED_RUNNER_H
