//===- rank_groups.h - one rank's communicators of a parallel layout -*- C++ -*-===//
//
// Part of strata. A process of a tensor- and expert-parallel run (T x E
// ranks, docs/Parallel.md) joins the three groups of its rank r: `tp` (the T
// ranks of its expert coordinate r / T), `ep` (the E ranks of its tensor
// coordinate r % T) and `world` (all T * E), each a communicator with its
// own key prefix in the shared store (`strata/tp<e>`, `strata/ep<t>`,
// `strata/world`); a group of one rank has none. The communicators are
// Gloo on the CPU device; on a GPU NCCL (CUDA) or RCCL (HIP) by default, or
// Gloo staged through pinned host buffers (`CollectiveBackend::kGloo`: ranks
// sharing one GPU, which NCCL refuses, or no vendor library). RankGroups
// runs the plan's collective dispatches (Program's CollectiveRunner):
//
//   all_reduce  the communicator's sum, send -> recv;
//   all_gather  along dimension d of send: the communicator gathers whole
//               sends rank-major, so for d > 0 (the logits' vocabulary) the
//               parts are gathered into a staging buffer and each is moved
//               into its columns by one strided copy (Stream::copyBuffer2D):
//               one collective and T copies, whatever the rows.
//
// The staging buffer is kept from step to step (a captured step's graph
// holds its address) and grows, outside capture, when a step needs more;
// the buffers it outgrew stay allocated for the graphs that use them. Steps
// run one at a time, so one buffer serves every plan and graph.
//
// In a group of one rank both are a copy.
//
// Ownership: borrows the store and the device (both must outlive it).
// Thread-safety: one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_RANK_GROUPS_H
#define STRATA_RUNTIME_EXECUTOR_RANK_GROUPS_H

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collectives/communicator.h"
#include "runtime/loader/program.h"

namespace strata::runtime {

/// Which library runs a GPU rank's collectives.
enum class CollectiveBackend : uint8_t {
  kAuto = 0, ///< NCCL / RCCL on a GPU, Gloo on the CPU.
  kGloo = 1, ///< Gloo (on a GPU: staged through pinned host buffers).
  kNccl = 2, ///< NCCL / RCCL; an error on the CPU device.
};

/// "auto", "gloo" or "nccl" (the flag's spellings); INVALID_ARGUMENT else.
StatusOr<CollectiveBackend> parseCollectiveBackend(std::string_view name);

/// Where one rank of a run finds the others.
struct RankGroupsOptions {
  /// This process's rank in [0, T * E).
  int rank = 0;
  /// The artifact's tensor- and expert-parallel sizes (>= 1).
  uint32_t tensor_parallel_size = 1;
  uint32_t expert_parallel_size = 1;
  /// Rendezvous store shared by all ranks (not owned). Required when there
  /// is more than one rank.
  Store *store = nullptr;
  /// Longest a collective may take before it fails naming the ranks at
  /// fault. Default (0): the communicator's (60 s).
  std::chrono::milliseconds timeout{0};
  /// The communicators' library. Default: NCCL / RCCL on a GPU.
  CollectiveBackend backend = CollectiveBackend::kAuto;
};

class RankGroups : public CollectiveRunner {
public:
  /// Joins the groups of `options.rank` (blocks until every member of each
  /// group has joined, at most the timeout). INVALID_ARGUMENT for a rank
  /// outside [0, T * E) or a missing store.
  static StatusOr<std::unique_ptr<RankGroups>>
  create(const RankGroupsOptions &options, Device &device);

  int rank() const { return options_.rank; }
  int worldSize() const {
    return static_cast<int>(options_.tensor_parallel_size *
                            options_.expert_parallel_size);
  }
  /// The rank's coordinate in `group`: r % T, r / T or r.
  uint32_t coordinate(artifact::RankGroup group) const;
  /// The number of ranks in `group`: T, E or T * E.
  uint32_t size(artifact::RankGroup group) const;

  /// Whether the collectives can be captured into a graph (NCCL / RCCL:
  /// yes; Gloo runs on the calling thread: no). True without communicators.
  bool capturable() const;

  /// Sets the SizeSymbols tp_rank, ep_rank and world_rank of `sizes`.
  void setCoordinates(RuntimeSizes &sizes) const;

  Status run(const artifact::Collective &collective, const DispatchArg &send,
             const DispatchArg &recv, Stream &stream) override;

private:
  RankGroups(const RankGroupsOptions &options, Device &device)
      : options_(options), device_(device) {}
  StatusOr<std::unique_ptr<Communicator>> join(artifact::RankGroup group);
  Status allGather(Communicator *communicator, uint32_t parts,
                   const artifact::Collective &collective,
                   const DispatchArg &send, const DispatchArg &recv,
                   Stream &stream);
  /// The all-gather staging buffer, at least `bytes` (grown unless
  /// `stream` captures: FAILED_PRECONDITION then).
  StatusOr<Buffer *> gatherStaging(uint64_t bytes, Stream &stream);

  RankGroupsOptions options_;
  Device &device_;
  /// By artifact::RankGroup; null for a group of one rank.
  std::unique_ptr<Communicator> groups_[3];
  bool capturable_ = true;
  /// All-gather staging buffers, the last the current one.
  std::vector<std::unique_ptr<Buffer>> staging_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_RANK_GROUPS_H
