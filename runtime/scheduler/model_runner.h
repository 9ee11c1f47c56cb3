//===- model_runner.h - what the scheduler needs from a model ---*- C++ -*-===//
//
// Part of strata. ModelRunner is the narrow interface the Scheduler drives:
// run one step (runtime/executor's StepRequest / StepResult), reset or copy a
// state slot, and the few facts about the model the scheduler plans with
// (vocabulary, positions, cache geometry, whether an MTP draft plan exists).
// ExecutorRunner implements it over a ModelExecutor; the scheduler's unit
// tests implement it with a small deterministic fake model.
//
// Ownership: an ExecutorRunner owns its ModelExecutor. Thread-safety: one
// thread at a time (the engine thread).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_MODEL_RUNNER_H
#define STRATA_RUNTIME_SCHEDULER_MODEL_RUNNER_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/executor/model_executor.h"
#include "runtime/kv_cache/cache_geometry.h"

namespace strata::runtime {

class ModelRunner {
public:
  virtual ~ModelRunner() = default;

  /// Entries per logits row.
  virtual size_t vocabSize() const = 0;
  /// Positions the model supports (max_position_embeddings).
  virtual uint64_t maxPositions() const = 0;
  /// Cache sizes (page size, bytes per block and per state slot).
  virtual const CacheGeometry &geometry() const = 0;
  /// Whether an mtp_draft step exists.
  virtual bool hasDraft() const = 0;
  /// Whether an mtp_chain step exists (the draft chain's steps reusing step
  /// 0's selection, index_share_for_mtp_iteration).
  virtual bool hasDraftChain() const { return false; }

  /// Zeroes state slot `slot` (KDA state and tail rings).
  virtual Status resetSlot(int32_t slot) = 0;
  /// Copies the `count` state slots from `src` on onto those from `dst` on,
  /// the pools of `pools` (ModelExecutor::copySlots).
  virtual Status copySlots(int32_t src, int32_t dst, int32_t count,
                           StatePools pools = StatePools::all) = 0;
  /// Whether target steps keep the KDA state after every token of a short
  /// request (StepRequest::state_token_slots).
  virtual bool keepsTokenStates() const { return false; }
  /// Copies state slot `src` into `dst`.
  Status copySlot(int32_t src, int32_t dst) { return copySlots(src, dst, 1); }
  /// Runs one step and copies back what `outputs` asks for
  /// (ModelExecutor::run).
  virtual StatusOr<StepResult> run(artifact::StepKind step,
                                   const std::vector<StepRequest> &requests,
                                   const StepOutputs &outputs) = 0;
  /// Whether runWithDraft works for decode and verify steps.
  virtual bool runsWithDraft() const { return false; }
  /// Whether a target step can keep its hidden output on the device for the
  /// draft steps after it (StepOutputs::keep_hidden,
  /// StepRequest::target_hidden_row).
  virtual bool keepsTargetHidden() const { return false; }
  /// Runs `step` and the MTP draft's step 0 over every row of it in one go
  /// (ModelExecutor::runWithDraft).
  virtual StatusOr<DraftedStepResult>
  runWithDraft(artifact::StepKind step, const std::vector<StepRequest> &requests,
               const StepOutputs &outputs, const StepOutputs &draft_outputs) {
    return unimplemented("this model runner cannot run a step with its draft");
  }
  /// Whether runWithDraftChain works for decode and verify steps (a draft
  /// chain that reuses step 0's selection: mtp_chain).
  virtual bool runsDraftChainWithTarget() const { return false; }
  /// runWithDraft, then `chain`'s passes after the draft in the same device
  /// work (ModelExecutor::runWithDraftChain).
  virtual StatusOr<DraftedStepResult>
  runWithDraftChain(artifact::StepKind step,
                    const std::vector<StepRequest> &requests,
                    const StepOutputs &outputs,
                    const StepOutputs &draft_outputs, const DraftChain &chain) {
    return unimplemented("this model runner cannot run a draft chain with "
                         "its step");
  }
  /// Whether runChain works for the draft chain's step (the mtp_chain
  /// step, else mtp_draft).
  virtual bool runsChainedDrafts() const { return false; }
  /// Runs `passes` passes of the draft chain in one go, each pass's ids and
  /// hidden rows the previous pass's greedy tokens and hidden output
  /// (ModelExecutor::runChain); results in pass order.
  virtual StatusOr<std::vector<StepResult>>
  runChain(artifact::StepKind step, const std::vector<StepRequest> &requests,
           size_t passes, const StepOutputs &outputs) {
    return unimplemented("this model runner cannot chain draft passes");
  }
  /// How long the engine may stay idle before calling keepAlive (0: never).
  virtual std::chrono::milliseconds keepAliveInterval() const {
    return std::chrono::milliseconds(0);
  }
  /// Called by an idle engine every keepAliveInterval (a ReplicatedRunner
  /// tells the other ranks that rank 0 is alive).
  virtual Status keepAlive() { return okStatus(); }
  /// Steps captured into graphs and replayed so far (none by default).
  virtual StepGraphCounts graphCounts() const { return {}; }
};

/// Where the executor finds the model and how many pages and slots it
/// allocates.
struct ExecutorRunnerOptions {
  /// Compiled artifact and checkpoint directory. Required.
  std::string artifact_path, checkpoint_dir;
  /// KV pages per paged pool (= KV blocks). Required (> 0).
  uint64_t kv_pages = 0;
  /// Slots per state pool. Required (> 0).
  uint32_t state_slots = 0;
  /// Artifact target to run (ExecutorOptions::target): cpu, sm_90, ...
  std::string target = "cpu";
  /// Decode and MTP steps replayed from captured graphs (ExecutorOptions).
  bool step_graphs = true;
  /// Kernels of graph-replayed steps as programmatic dependent launches
  /// (ExecutorOptions::dependent_launches). Default off.
  bool dependent_launches = false;
  /// Caches allocated later through executor().allocateCaches
  /// (ExecutorOptions::defer_caches); kv_pages and state_slots may be 0.
  bool defer_caches = false;
  /// Shows the weight upload (ExecutorOptions::progress); not owned, must
  /// outlive create(). Default: none.
  ProgressReporter *progress = nullptr;
  /// This process's rank of a sharded artifact (ExecutorOptions::ranks).
  std::optional<RankGroupsOptions> ranks;
};

/// Reads the cache geometry of an artifact file without loading the model
/// (to size the pools before the executor allocates them).
StatusOr<CacheGeometry> readArtifactGeometry(const std::string &artifact_path);

/// ModelRunner over a ModelExecutor (any target the artifact holds).
class ExecutorRunner : public ModelRunner {
public:
  static StatusOr<std::unique_ptr<ExecutorRunner>>
  create(const ExecutorRunnerOptions &options);

  size_t vocabSize() const override;
  uint64_t maxPositions() const override;
  const CacheGeometry &geometry() const override { return geometry_; }
  bool hasDraft() const override;
  bool hasDraftChain() const override;
  Status resetSlot(int32_t slot) override {
    return executor_->resetSlot(slot);
  }
  Status copySlots(int32_t src, int32_t dst, int32_t count,
                   StatePools pools) override {
    return executor_->copySlots(src, dst, count, pools);
  }
  bool keepsTokenStates() const override {
    return executor_->keepsTokenStates();
  }
  StatusOr<StepResult> run(artifact::StepKind step,
                           const std::vector<StepRequest> &requests,
                           const StepOutputs &outputs) override {
    return executor_->run(step, requests, nullptr, outputs);
  }
  bool runsWithDraft() const override;
  bool keepsTargetHidden() const override { return true; }
  StatusOr<DraftedStepResult>
  runWithDraft(artifact::StepKind step, const std::vector<StepRequest> &requests,
               const StepOutputs &outputs,
               const StepOutputs &draft_outputs) override {
    return executor_->runWithDraft(step, requests, outputs, draft_outputs);
  }
  bool runsChainedDrafts() const override;
  bool runsDraftChainWithTarget() const override;
  StatusOr<DraftedStepResult> runWithDraftChain(
      artifact::StepKind step, const std::vector<StepRequest> &requests,
      const StepOutputs &outputs, const StepOutputs &draft_outputs,
      const DraftChain &chain) override {
    return executor_->runWithDraftChain(step, requests, outputs, draft_outputs,
                                        chain);
  }
  StatusOr<std::vector<StepResult>>
  runChain(artifact::StepKind step, const std::vector<StepRequest> &requests,
           size_t passes, const StepOutputs &outputs) override {
    return executor_->runChain(step, requests, passes, outputs);
  }
  StepGraphCounts graphCounts() const override {
    return executor_->graphCounts();
  }
  ModelExecutor &executor() { return *executor_; }

private:
  ExecutorRunner() = default;
  std::unique_ptr<ModelExecutor> executor_;
  CacheGeometry geometry_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_MODEL_RUNNER_H
