//===- memory_sizing.h - caches sized from the device's free memory -------===//
//
// Part of strata. strata-serve's `--gpu-memory-utilization F` (vLLM's
// flag): the process may use F of the device's total memory. Once the
// weights are on the device, what is left of that share, less a reserve for
// the step buffers, is split between the caches:
//
//   budget    = F x total - (total - free now) - step reserve
//   states    = running requests (x (k + 1) with MTP k: the states a
//               verification keeps per position),
//               each one tail ring per indexer layer + one KDA state
//   snapshots = prefix-cache KDA snapshots: --snapshot-slots when given,
//               else 2 per running request, at most a quarter of what the
//               budget leaves after the states
//   blocks    = the rest, in KV blocks (one page of every MLA latent and
//               index layer)
//
// "total - free now" counts everything already on the device: the weights,
// the runtime's context, other processes. The step reserve is the plan
// buffers of the largest step the scheduler can form (prefill of
// max_step_tokens, decode / MTP verify of max_requests) at `reserve_context`
// tokens, once per captured decode graph kept. The result carries one log
// line naming every number and why.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_MEMORY_SIZING_H
#define STRATA_RUNTIME_SERVE_MEMORY_SIZING_H

#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/device/device.h"
#include "runtime/kv_cache/cache_geometry.h"
#include "runtime/scheduler/scheduler.h"

namespace strata::runtime::serve {

/// strata-serve's default --gpu-memory-utilization on GPU targets.
inline constexpr double kDefaultGpuMemoryUtilization = 0.9;
/// vLLM's API-server default of tokens per step on GPUs
/// (EngineArgs.get_batch_defaults): 8192 on devices of at least 70 GiB
/// (H100, H200, MI300X, MI355X), 2048 on smaller ones. On the H200 the
/// 12-layer slice's prefill of 4 x 2048 tokens in one step takes 65 ms
/// against 4 x 22 ms in steps of 2048 (the weights read once).
inline constexpr uint64_t kLargeDeviceBytes = uint64_t(70) << 30;
inline constexpr uint64_t kLargeDeviceStepTokens = 8192;
inline constexpr uint64_t kSmallDeviceStepTokens = 2048;
/// The default --max-step-tokens for a device of `total_bytes`.
inline uint64_t defaultMaxStepTokens(uint64_t total_bytes) {
  return total_bytes >= kLargeDeviceBytes ? kLargeDeviceStepTokens
                                          : kSmallDeviceStepTokens;
}

/// Snapshots take at most this share of the budget left after the states
/// unless --snapshot-slots says otherwise.
inline constexpr double kSnapshotShare = 0.25;

/// What the sizing starts from.
struct MemorySizingInput {
  /// The device's memory with the weights loaded and no cache allocated.
  MemoryInfo memory;
  /// The device, for the log line.
  std::string device;
  /// Share of total memory the process may use, in (0, 1].
  double utilization = kDefaultGpuMemoryUtilization;
  /// Bytes of the weights on the device (for the log line; already in use).
  uint64_t weight_bytes = 0;
  /// Bytes kept free for step buffers.
  uint64_t step_reserve_bytes = 0;
  /// What the reserve covers, for the log line.
  std::string step_reserve_note;
  /// The artifact's cache geometry.
  CacheGeometry geometry;
  /// max_requests, mtp_draft_tokens, enable_prefix_cache and
  /// num_snapshot_slots (0: chosen here) are read.
  SchedulerOptions scheduler;
};

/// What was sized.
struct MemorySizing {
  uint64_t budget_bytes = 0;
  /// Per-request state slots (running + MTP scratch) and their bytes.
  uint32_t state_slots = 0;
  uint64_t state_bytes = 0;
  /// Prefix-cache snapshot slots and their bytes.
  uint32_t snapshot_slots = 0;
  uint64_t snapshot_bytes = 0;
  /// KV blocks and their bytes.
  uint64_t num_blocks = 0;
  uint64_t block_bytes = 0;
  /// One line: what was sized and why.
  std::string log;
};

/// Splits the budget (see the file comment). RESOURCE_EXHAUSTED when the
/// states and one KV block do not fit, naming every number;
/// INVALID_ARGUMENT for a utilization outside (0, 1].
StatusOr<MemorySizing> sizeCachesFromMemory(const MemorySizingInput &input);

/// "1.5 GiB", "37.8 MiB", "512 B".
std::string formatBytes(uint64_t bytes);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_MEMORY_SIZING_H
