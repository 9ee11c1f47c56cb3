//===- memory_sizing.cpp - caches sized from the device's free memory -----===//
//
// Part of strata. See memory_sizing.h. Every state slot the executor
// allocates (running, snapshot, MTP scratch) holds one tail ring per
// indexer layer and one KDA state per KDA layer; a KV block one page of
// every paged layer.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/memory_sizing.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace strata::runtime::serve {

std::string formatBytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t(1) << 30))
    return fmt::format("{:.1f} GiB", b / double(uint64_t(1) << 30));
  if (bytes >= (uint64_t(1) << 20))
    return fmt::format("{:.1f} MiB", b / double(uint64_t(1) << 20));
  if (bytes >= (uint64_t(1) << 10))
    return fmt::format("{:.1f} KiB", b / double(uint64_t(1) << 10));
  return fmt::format("{} B", bytes);
}

StatusOr<MemorySizing> sizeCachesFromMemory(const MemorySizingInput &in) {
  if (!(in.utilization > 0.0 && in.utilization <= 1.0))
    return invalidArgument("--gpu-memory-utilization must be in (0, 1], got {}",
                           in.utilization);
  const MemoryInfo &m = in.memory;
  const CacheGeometry &g = in.geometry;
  const SchedulerOptions &o = in.scheduler;
  const uint64_t usable = static_cast<uint64_t>(
      std::floor(in.utilization * static_cast<double>(m.total_bytes)));
  const uint64_t in_use = m.total_bytes > m.free_bytes
                              ? m.total_bytes - m.free_bytes
                              : 0;
  const uint64_t slot_bytes = g.ringBytesPerSlot() + g.kdaBytesPerSlot();
  // MTP k: k scratch slots per request (the states a verification keeps
  // per position).
  const uint32_t running = o.max_requests * (1 + o.mtp_draft_tokens);

  MemorySizing s;
  s.state_slots = running;
  s.state_bytes = uint64_t(running) * slot_bytes;
  const uint64_t taken = in_use + in.step_reserve_bytes;
  auto tooSmall = [&](std::string_view what) {
    return resourceExhausted(
        "--gpu-memory-utilization {:g} of {} leaves {} for the caches "
        "({} in use after the weights, {} step reserve): {} (raise "
        "--gpu-memory-utilization or lower --max-requests)",
        in.utilization, formatBytes(m.total_bytes),
        usable > taken ? formatBytes(usable - taken) : "nothing",
        formatBytes(in_use), formatBytes(in.step_reserve_bytes), what);
  };
  if (usable <= taken)
    return tooSmall("no room at all");
  s.budget_bytes = usable - taken;
  if (g.blockBytes() == 0)
    return invalidArgument("artifact cache layout has no KV block bytes");
  if (s.budget_bytes < s.state_bytes + g.blockBytes())
    return tooSmall(fmt::format("{} state slots of {} and one KV block of {} "
                                "need {}",
                                running, formatBytes(slot_bytes),
                                formatBytes(g.blockBytes()),
                                formatBytes(s.state_bytes + g.blockBytes())));
  uint64_t left = s.budget_bytes - s.state_bytes;

  std::string snapshot_note;
  if (o.enable_prefix_cache && g.hasKda()) {
    if (o.num_snapshot_slots) {
      s.snapshot_slots = o.num_snapshot_slots;
      snapshot_note = "--snapshot-slots";
    } else {
      const uint64_t wanted = 2 * uint64_t(o.max_requests);
      const uint64_t cap = static_cast<uint64_t>(
          kSnapshotShare * static_cast<double>(left)) / slot_bytes;
      s.snapshot_slots =
          static_cast<uint32_t>(std::max<uint64_t>(1, std::min(wanted, cap)));
      snapshot_note =
          s.snapshot_slots == wanted
              ? "2 per running request"
              : fmt::format("{:.0f} % of the rest; 2 per running request "
                            "would be {}",
                            kSnapshotShare * 100, wanted);
    }
    s.snapshot_bytes = uint64_t(s.snapshot_slots) * slot_bytes;
    if (left < s.snapshot_bytes + g.blockBytes())
      return tooSmall(fmt::format("{} snapshot slots of {} need {}",
                                  s.snapshot_slots, formatBytes(slot_bytes),
                                  formatBytes(s.snapshot_bytes)));
    left -= s.snapshot_bytes;
  } else {
    snapshot_note = o.enable_prefix_cache ? "the model has no KDA layers"
                                          : "prefix cache off";
  }
  s.num_blocks = left / g.blockBytes();
  s.block_bytes = s.num_blocks * g.blockBytes();
  const uint64_t tokens = s.num_blocks * g.page_size_tokens;
  s.log = fmt::format(
      "memory: {}: {} total, --gpu-memory-utilization {:g} = {}; in use "
      "with the weights loaded {} (weights {}); step reserve {} ({}); caches "
      "{}: {} state slots ({} running{}) x {} = {}, {} KDA snapshots ({}) x "
      "{} = {}, {} KV blocks x {} = {} ({} tokens, {} per running request)",
      in.device, formatBytes(m.total_bytes), in.utilization,
      formatBytes(usable), formatBytes(in_use), formatBytes(in.weight_bytes),
      formatBytes(in.step_reserve_bytes), in.step_reserve_note,
      formatBytes(s.budget_bytes), s.state_slots, o.max_requests,
      o.mtp_draft_tokens > 0
          ? fmt::format(" + {} x as many MTP verify scratch",
                        o.mtp_draft_tokens)
          : std::string(),
      formatBytes(slot_bytes), formatBytes(s.state_bytes), s.snapshot_slots,
      snapshot_note, formatBytes(slot_bytes), formatBytes(s.snapshot_bytes),
      s.num_blocks, formatBytes(g.blockBytes()), formatBytes(s.block_bytes),
      tokens, tokens / std::max<uint64_t>(o.max_requests, 1));
  return s;
}

} // namespace strata::runtime::serve
