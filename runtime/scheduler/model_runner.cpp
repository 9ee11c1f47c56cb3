//===- model_runner.cpp - what the scheduler needs from a model -----------===//
//
// Part of strata. See model_runner.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/model_runner.h"

#include "runtime/loader/artifact.h"

namespace strata::runtime {

StatusOr<CacheGeometry> readArtifactGeometry(const std::string &artifact_path) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Artifact> artifact,
                          Artifact::fromFile(artifact_path));
  return CacheGeometry::fromLayout(*artifact->def().cache_layout());
}

StatusOr<std::unique_ptr<ExecutorRunner>>
ExecutorRunner::create(const ExecutorRunnerOptions &options) {
  ExecutorOptions executor_options;
  executor_options.kv_pages = options.kv_pages;
  executor_options.state_slots = options.state_slots;
  executor_options.target = options.target;
  executor_options.step_graphs = options.step_graphs;
  executor_options.dependent_launches = options.dependent_launches;
  executor_options.defer_caches = options.defer_caches;
  executor_options.progress = options.progress;
  executor_options.ranks = options.ranks;
  std::unique_ptr<ExecutorRunner> runner(new ExecutorRunner());
  STRATA_ASSIGN_OR_RETURN(runner->executor_,
                          ModelExecutor::create(options.artifact_path,
                                                options.checkpoint_dir,
                                                executor_options));
  STRATA_ASSIGN_OR_RETURN(
      runner->geometry_,
      CacheGeometry::fromLayout(
          *runner->executor_->artifact().def().cache_layout()));
  return runner;
}

size_t ExecutorRunner::vocabSize() const {
  return executor_->model().vocab_size();
}

uint64_t ExecutorRunner::maxPositions() const {
  return executor_->model().max_position_embeddings();
}

bool ExecutorRunner::hasDraft() const {
  return executor_->hasStep(artifact::StepKind::mtp_draft);
}

bool ExecutorRunner::hasDraftChain() const {
  return executor_->hasStep(artifact::StepKind::mtp_chain);
}

bool ExecutorRunner::runsChainedDrafts() const {
  artifact::StepKind chain = hasDraftChain() ? artifact::StepKind::mtp_chain
                                             : artifact::StepKind::mtp_draft;
  return executor_->checkChainedStep(chain).ok();
}

bool ExecutorRunner::runsDraftChainWithTarget() const {
  return runsWithDraft() && hasDraftChain() &&
         executor_->checkChainedStep(artifact::StepKind::mtp_chain).ok();
}

bool ExecutorRunner::runsWithDraft() const {
  return executor_->checkDraftedStep(artifact::StepKind::decode).ok() &&
         executor_->checkDraftedStep(artifact::StepKind::mtp_verify).ok();
}

} // namespace strata::runtime
