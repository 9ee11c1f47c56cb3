//===- replicated_runner.cpp - one scheduler for every rank ---------------===//
//
// Part of strata. See replicated_runner.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/replicated_runner.h"

#include <algorithm>
#include <cstring>

#include "runtime/collectives/gloo_communicator.h"

namespace strata::runtime {

/// Bytes from rank 0 to every rank: a broadcast of the length, then of the
/// bytes, through one pinned host buffer of the device that grows as needed
/// (allocating one per command cost a pinned allocation per step).
class ControlChannel {
public:
  ControlChannel(Communicator &control, Device &host)
      : control_(control), host_(host) {}

  /// Rank 0's side.
  Status send(const RankCommand &command) {
    std::vector<uint8_t> bytes = encodeRankCommand(command);
    uint64_t size = bytes.size();
    STRATA_RETURN_IF_ERROR(
        broadcast(reinterpret_cast<uint8_t *>(&size), sizeof(size)));
    return broadcast(bytes.data(), size);
  }
  /// A follower's side.
  StatusOr<RankCommand> receive() {
    uint64_t size = 0;
    STRATA_RETURN_IF_ERROR(
        broadcast(reinterpret_cast<uint8_t *>(&size), sizeof(size)));
    std::vector<uint8_t> bytes(size);
    STRATA_RETURN_IF_ERROR(broadcast(bytes.data(), size));
    return decodeRankCommand(bytes);
  }

private:
  /// `size` bytes at `data`: read on rank 0, written on the others.
  Status broadcast(uint8_t *data, uint64_t size) {
    if (size == 0)
      return okStatus();
    if (!staging_ || staging_->size() < size) {
      staging_.reset();
      STRATA_ASSIGN_OR_RETURN(staging_, host_.allocateHost(std::max<uint64_t>(
                                            size, 4096)));
    }
    auto *bytes = static_cast<uint8_t *>(staging_->hostPointer());
    if (control_.rank() == 0)
      std::memcpy(bytes, data, size);
    STRATA_RETURN_IF_ERROR(control_.broadcast({staging_.get(), 0},
                                              {staging_.get(), 0}, size,
                                              DataType::kU8, 0,
                                              host_.defaultStream()));
    STRATA_RETURN_IF_ERROR(control_.synchronize(host_.defaultStream()));
    if (control_.rank() != 0)
      std::memcpy(data, bytes, size);
    return okStatus();
  }

  Communicator &control_;
  Device &host_;
  std::unique_ptr<Buffer> staging_;
};


StatusOr<std::unique_ptr<Communicator>>
createControlCommunicator(const RankGroupsOptions &ranks) {
  GlooCommunicatorOptions gloo;
  gloo.group.store = ranks.store;
  gloo.group.rank = ranks.rank;
  gloo.group.size = static_cast<int>(ranks.tensor_parallel_size *
                                     ranks.expert_parallel_size);
  gloo.group.prefix = "strata/control";
  gloo.group.timeout = ranks.timeout;
  StatusOr<std::unique_ptr<Communicator>> control =
      createGlooCommunicator(gloo);
  if (!control.ok())
    return control.status().withContext(
        fmt::format("rank {}: joining the control group", ranks.rank));
  return control;
}

ReplicatedRunner::ReplicatedRunner(std::unique_ptr<ExecutorRunner> runner,
                                   std::unique_ptr<Communicator> control,
                                   std::chrono::milliseconds keep_alive)
    : runner_(std::move(runner)), control_(std::move(control)),
      channel_(std::make_unique<ControlChannel>(*control_,
                                                runner_->executor().device())),
      keep_alive_(keep_alive) {}

ReplicatedRunner::~ReplicatedRunner() {
  RankCommand stop;
  stop.kind = RankCommandKind::kStop;
  (void)send(stop);
}

Status ReplicatedRunner::send(const RankCommand &command) {
  Status status = channel_->send(command);
  return status.ok() ? status
                     : status.withContext("sending a command to the ranks");
}

Status ReplicatedRunner::resetSlot(int32_t slot) {
  RankCommand command;
  command.kind = RankCommandKind::kResetSlot;
  command.slot = slot;
  STRATA_RETURN_IF_ERROR(send(command));
  return runner_->resetSlot(slot);
}

Status ReplicatedRunner::copySlots(int32_t src, int32_t dst, int32_t count,
                                   StatePools pools) {
  RankCommand command;
  command.kind = RankCommandKind::kCopySlot;
  command.slot = src;
  command.dst_slot = dst;
  command.slot_count = count;
  command.pools = pools;
  STRATA_RETURN_IF_ERROR(send(command));
  return runner_->copySlots(src, dst, count, pools);
}

/// The command that makes the other ranks run a step (with the draft's step
/// 0 over every row when `with_draft`; `passes` chained draft passes).
static RankCommand stepCommand(artifact::StepKind step,
                               const std::vector<StepRequest> &requests,
                               const StepOutputs &outputs, bool with_draft,
                               uint32_t passes = 1) {
  RankCommand command;
  command.kind = RankCommandKind::kStep;
  command.step = step;
  command.requests = requests;
  command.outputs = outputs;
  command.with_draft = with_draft;
  command.chain_passes = passes;
  return command;
}

StatusOr<StepResult>
ReplicatedRunner::run(artifact::StepKind step,
                      const std::vector<StepRequest> &requests,
                      const StepOutputs &outputs) {
  STRATA_RETURN_IF_ERROR(
      send(stepCommand(step, requests, outputs, /*with_draft=*/false)));
  return runner_->run(step, requests, outputs);
}

StatusOr<DraftedStepResult>
ReplicatedRunner::runWithDraft(artifact::StepKind step,
                               const std::vector<StepRequest> &requests,
                               const StepOutputs &outputs,
                               const StepOutputs &draft_outputs) {
  STRATA_RETURN_IF_ERROR(
      send(stepCommand(step, requests, outputs, /*with_draft=*/true)));
  return runner_->runWithDraft(step, requests, outputs, draft_outputs);
}

StatusOr<std::vector<StepResult>>
ReplicatedRunner::runChain(artifact::StepKind step,
                           const std::vector<StepRequest> &requests,
                           size_t passes, const StepOutputs &outputs) {
  STRATA_RETURN_IF_ERROR(
      send(stepCommand(step, requests, outputs,
                       /*with_draft=*/false, uint32_t(passes))));
  return runner_->runChain(step, requests, passes, outputs);
}

Status ReplicatedRunner::keepAlive() {
  RankCommand command;
  command.kind = RankCommandKind::kKeepAlive;
  return send(command);
}

Status ReplicatedRunner::allocateCaches(uint64_t kv_pages,
                                        uint32_t state_slots) {
  RankCommand command;
  command.kind = RankCommandKind::kAllocateCaches;
  command.kv_pages = kv_pages;
  command.state_slots = state_slots;
  STRATA_RETURN_IF_ERROR(send(command));
  return runner_->executor().allocateCaches(kv_pages, state_slots);
}

Status runRankFollower(ModelExecutor &executor, Communicator &control) {
  ControlChannel channel(control, executor.device());
  for (;;) {
    StatusOr<RankCommand> command = channel.receive();
    if (!command.ok())
      return command.status().withContext(
          fmt::format("rank {}: waiting for rank 0's next command",
                      control.rank()));
    Status status = okStatus();
    switch (command->kind) {
    case RankCommandKind::kStep: {
      // Followers copy back nothing but what every step returns.
      StepOutputs none;
      none.logits = false;
      none.hidden = false;
      // Each rank keeps its own hidden output for its draft steps.
      none.keep_hidden = command->outputs.keep_hidden;
      if (command->chain_passes > 1)
        status = executor
                     .runChain(command->step, command->requests,
                               command->chain_passes, none)
                     .status();
      else if (command->with_draft)
        status =
            executor.runWithDraft(command->step, command->requests, none, none)
                .status();
      else
        status = executor.run(command->step, command->requests, nullptr, none)
                     .status();
      break;
    }
    case RankCommandKind::kResetSlot:
      status = executor.resetSlot(command->slot);
      break;
    case RankCommandKind::kCopySlot:
      status = executor.copySlots(command->slot, command->dst_slot,
                                  command->slot_count, command->pools);
      break;
    case RankCommandKind::kAllocateCaches:
      status = executor.allocateCaches(command->kv_pages,
                                       command->state_slots);
      break;
    case RankCommandKind::kKeepAlive:
      break;
    case RankCommandKind::kStop:
      return okStatus();
    }
    if (!status.ok())
      return status.withContext(
          fmt::format("rank {}: running rank 0's command", control.rank()));
  }
}

} // namespace strata::runtime
