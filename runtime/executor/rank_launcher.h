//===- rank_launcher.h - start and join the processes of a run ---*- C++ -*-===//
//
// Part of strata. A sharded artifact runs as one process per rank
// (docs/Parallel.md "One process per rank"). The tools start them two ways:
//
//  * launcher: `strata-run --tensor-parallel-size T ...` without --rank
//    starts T * E copies of itself (launchRanks) with `--rank r --store
//    file:DIR` (a fresh folder), waits for all and fails when one fails,
//    stopping the others;
//  * one rank: `--rank r --world-size N --store tcp:HOST:PORT|file:DIR`
//    (or STRATA_RANK / STRATA_WORLD_SIZE / STRATA_STORE), as a cluster
//    scheduler starts them; rank 0 serves a TCP store (openRankStore).
//
// Rank 0 writes the tool's output (and its dumps); the other ranks' standard
// output is discarded by the launcher, their errors are not.
//
// Thread-safety: launchRanks forks; call it from a single-threaded process.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_RANK_LAUNCHER_H
#define STRATA_RUNTIME_EXECUTOR_RANK_LAUNCHER_H

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/collectives/store.h"

namespace strata::runtime {

/// Opens the rendezvous store `spec` for `rank`: `file:DIR` (a folder shared
/// by the ranks) or `tcp:HOST:PORT` (rank 0 serves it). INVALID_ARGUMENT for
/// another form.
StatusOr<std::unique_ptr<Store>> openRankStore(const std::string &spec,
                                               int rank);

/// Runs `world_size` processes of this program (/proc/self/exe) with `args`
/// followed by `--rank r --store file:DIR`, DIR a fresh temporary folder
/// (removed after). Returns once every rank has exited: OK when all exit
/// with status 0; otherwise, as soon as one fails, the others get SIGTERM
/// and the error names the first failed rank and its status.
Status launchRanks(const std::vector<std::string> &args, int world_size);

/// One host's share of a run over several hosts: ranks
/// [first_rank, first_rank + count) of world_size, meeting at `store`
/// (tcp:HOST:PORT, served by rank 0).
struct RankLaunch {
  int first_rank = 0, count = 0, world_size = 0;
  std::string store;
};

/// Runs `launch.count` processes of this program with `args` followed by
/// `--rank r --store STORE`, then waits as the form above does.
Status launchRanks(const std::vector<std::string> &args,
                   const RankLaunch &launch);

/// `args` without the node flags (--nnodes, --node-rank, --master-addr,
/// --master-port, as `--flag value` or `--flag=value`), which a rank
/// started with --rank must not see.
std::vector<std::string> withoutNodeFlags(const std::vector<std::string> &args);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_RANK_LAUNCHER_H
