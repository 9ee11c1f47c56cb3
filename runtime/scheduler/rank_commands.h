//===- rank_commands.h - what rank 0 tells the other ranks ------*- C++ -*-===//
//
// Part of strata. One scheduler (rank 0) drives every rank of a sharded
// artifact (docs/Parallel.md "One scheduler, many ranks"): each call that
// changes the model's state — a step, a slot reset or copy, the caches'
// allocation — is sent to the other ranks as a RankCommand before rank 0
// runs it, plus keep-alives while idle and a stop at the end. encode /
// decode give the bytes that travel (little-endian, sizes checked on
// decode: a truncated or malformed command is INVALID_ARGUMENT, never a
// read past the end).
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_RANK_COMMANDS_H
#define STRATA_RUNTIME_SCHEDULER_RANK_COMMANDS_H

#include <cstdint>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/executor/model_executor.h"

namespace strata::runtime {

enum class RankCommandKind : uint8_t {
  kStep = 1,           ///< ModelExecutor::run(step, requests, outputs), or
                       ///< runWithDraft when `with_draft`, runChain when
                       ///< chain_passes > 1
  kResetSlot = 2,      ///< resetSlot(slot)
  kCopySlot = 3,       ///< copySlots(slot, dst_slot, slot_count, pools)
  kAllocateCaches = 4, ///< allocateCaches(kv_pages, state_slots)
  kKeepAlive = 5,      ///< nothing: rank 0 is alive and idle
  kStop = 6,           ///< leave the follower loop
};

struct RankCommand {
  RankCommandKind kind = RankCommandKind::kKeepAlive;
  /// kStep.
  artifact::StepKind step = artifact::StepKind::decode;
  std::vector<StepRequest> requests;
  StepOutputs outputs;
  /// kStep: the draft's step 0 follows over every row (runWithDraft).
  bool with_draft = false;
  /// kStep: chained draft passes (runChain when > 1).
  uint32_t chain_passes = 1;
  /// kResetSlot, kCopySlot (source).
  int32_t slot = 0;
  /// kCopySlot.
  int32_t dst_slot = 0, slot_count = 1;
  StatePools pools = StatePools::all;
  /// kAllocateCaches.
  uint64_t kv_pages = 0;
  uint32_t state_slots = 0;
};

std::vector<uint8_t> encodeRankCommand(const RankCommand &command);
StatusOr<RankCommand> decodeRankCommand(const std::vector<uint8_t> &bytes);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_RANK_COMMANDS_H
