//===- rank_flags.h - the runtime tools' rank flags -------------*- C++ -*-===//
//
// Part of strata. The flags with which strata-run and strata-bench run a
// sharded artifact as one process per rank (docs/Parallel.md "One process
// per rank"): --tensor-parallel-size / --expert-parallel-size / --world-size
// (checked against the artifact), --rank, --store, --collective-timeout-ms
// and --collectives, with STRATA_RANK / STRATA_WORLD_SIZE / STRATA_STORE
// where the flags are absent. Without --rank a tool starts every rank itself
// (rank_launcher.h).
//
// Thread-safety: pure functions but for the environment read.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_RANK_FLAGS_H
#define STRATA_RUNTIME_EXECUTOR_RANK_FLAGS_H

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/executor/rank_groups.h"
#include "runtime/loader/artifact.h"

namespace strata::runtime {

/// The rank flags' values.
struct RankRunOptions {
  /// The sizes asked for (0: the artifact's), this process's rank (-1:
  /// start every rank), the world size asked for (0: T * E).
  int64_t tensor_parallel = 0, expert_parallel = 0, rank = -1, world_size = 0;
  /// Where the ranks meet: file:DIR or tcp:HOST:PORT.
  std::string store;
  /// A collective's timeout (0: the communicator's).
  int64_t collective_timeout_ms = 0;
  /// The communicators' library.
  CollectiveBackend collectives = CollectiveBackend::kAuto;
  /// Several hosts (torchrun's flags): the launcher on node `node_rank` of
  /// `nnodes` starts ranks [node_rank * L, (node_rank + 1) * L), L = world /
  /// nnodes, meeting at the TCP store master_addr:master_port (served by
  /// rank 0, on node 0).
  int64_t nnodes = 1, node_rank = 0, master_port = kDefaultMasterPort;
  std::string master_addr;
  /// torchrun's default --master-port.
  static constexpr int64_t kDefaultMasterPort = 29500;
};

/// The flags as typed (numbers stay text so that parseIntFlag reports bad
/// values the way every runtime tool does).
struct RankFlags {
  std::string tensor_parallel, expert_parallel, rank, world_size,
      collective_timeout_ms, collectives, nnodes, node_rank, master_port;
};

/// Adds the rank flags to `app`.
void declareRankFlags(CLI::App &app, RankRunOptions &options,
                      RankFlags &flags);
/// The same without the sizes (--rank, --world-size, --store,
/// --collective-timeout-ms, --collectives), for a tool that declares
/// --tensor-parallel-size itself.
void declareRankProcessFlags(CLI::App &app, RankRunOptions &options,
                             RankFlags &flags);

/// The flags' numbers (each >= 1, --rank and --node-rank >= 0, a port in
/// 1..65535) and library, then the environment; --node-rank below --nnodes,
/// --master-addr with --nnodes > 1, and no --rank / --store with it.
Status finishRankFlags(RankRunOptions &options, const RankFlags &flags);

/// Checks the sizes asked for against the artifact's parallel layout (and
/// that a one-rank artifact runs as rank 0).
Status checkRankSizes(const RankRunOptions &options, const Artifact &artifact);

/// This process's part of a run of a sharded `artifact` (checked sizes, a
/// rank): the executor's rank options, the store opened into `store`.
StatusOr<RankGroupsOptions> rankGroupsOptions(const RankRunOptions &options,
                                              const Artifact &artifact,
                                              std::unique_ptr<Store> &store);

/// What a process of a tool does with a (possibly sharded) artifact.
struct RankRole {
  /// The launcher: every rank was started (launchRanks with `args`) and
  /// has exited; `launched` holds the outcome.
  bool launcher = false;
  Status launched;
  /// One rank of a sharded artifact: its options (the store they use is
  /// `store`). Empty for a one-rank artifact.
  std::optional<RankGroupsOptions> ranks;
  std::unique_ptr<Store> store;
};

/// The role of this process with `artifact` (checkRankSizes first): a
/// one-rank artifact runs here; a sharded one without --rank starts every
/// rank (with --nnodes, this node's ranks) and waits for them; with --rank
/// this process is that rank.
StatusOr<RankRole> resolveRankRole(const RankRunOptions &options,
                                   const Artifact &artifact,
                                   const std::vector<std::string> &args);
/// The same for the artifact file at `artifact_path`, read here.
StatusOr<RankRole> resolveRankRole(const RankRunOptions &options,
                                   const std::string &artifact_path,
                                   const std::vector<std::string> &args);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_RANK_FLAGS_H
