//===- rank_flags.cpp - the runtime tools' rank flags ---------------------===//
//
// Part of strata. See rank_flags.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/rank_flags.h"

#include <cstdlib>
#include <tuple>

#include "runtime/base/flag_values.h"
#include "runtime/executor/rank_launcher.h"

namespace strata::runtime {

namespace {

Status applyRankEnvironment(RankRunOptions &options) {
  if (const char *rank = std::getenv("STRATA_RANK"); rank && options.rank < 0) {
    STRATA_ASSIGN_OR_RETURN(options.rank, parseIntFlag("STRATA_RANK", rank));
  }
  if (const char *size = std::getenv("STRATA_WORLD_SIZE");
      size && options.world_size == 0) {
    STRATA_ASSIGN_OR_RETURN(options.world_size,
                            parseIntFlag("STRATA_WORLD_SIZE", size));
  }
  if (const char *store = std::getenv("STRATA_STORE");
      store && options.store.empty())
    options.store = store;
  return okStatus();
}

/// The launcher's part: every rank on one host, or this node's share of the
/// ranks of --nnodes hosts meeting at --master-addr:--master-port.
Status launchNodeRanks(const RankRunOptions &options,
                       const std::vector<std::string> &args, int world_size) {
  if (options.nnodes == 1)
    return launchRanks(args, world_size);
  if (world_size % options.nnodes != 0)
    return invalidArgument("{} ranks do not split evenly over --nnodes {}",
                           world_size, options.nnodes);
  int local = world_size / static_cast<int>(options.nnodes);
  RankLaunch launch;
  launch.first_rank = static_cast<int>(options.node_rank) * local;
  launch.count = local;
  launch.world_size = world_size;
  launch.store = fmt::format("tcp:{}:{}", options.master_addr,
                             options.master_port);
  return launchRanks(withoutNodeFlags(args), launch);
}

} // namespace

void declareRankFlags(CLI::App &app, RankRunOptions &o, RankFlags &f) {
  app.add_option("--tensor-parallel-size", f.tensor_parallel,
                 "ranks the artifact must be compiled for along T (checked)")
      ->type_name("T");
  app.add_option("--expert-parallel-size", f.expert_parallel,
                 "ranks the artifact must be compiled for along E (checked)")
      ->type_name("E");
  declareRankProcessFlags(app, o, f);
}

void declareRankProcessFlags(CLI::App &app, RankRunOptions &o, RankFlags &f) {
  app.add_option("--rank", f.rank,
                 "this process's rank (default: start every rank)")
      ->type_name("R");
  app.add_option("--world-size", f.world_size, "ranks in all (checked)")
      ->type_name("N");
  app.add_option("--store", o.store,
                 "where the ranks meet: file:DIR or tcp:HOST:PORT")
      ->type_name("STORE");
  app.add_option("--collective-timeout-ms", f.collective_timeout_ms,
                 "a collective's timeout (default: the communicator's)")
      ->type_name("MS");
  app.add_option("--collectives", f.collectives,
                 "auto (GPU: NCCL / RCCL; CPU: Gloo), gloo (on a GPU staged "
                 "through host memory: ranks may share a GPU) or nccl")
      ->type_name("LIB");
  app.add_option("--nnodes", f.nnodes,
                 "hosts the ranks run on (default 1); each host's launcher "
                 "starts its share")
      ->type_name("N");
  app.add_option("--node-rank", f.node_rank,
                 "this host's index among --nnodes (default 0)")
      ->type_name("K");
  app.add_option("--master-addr", o.master_addr,
                 "with --nnodes: node 0's address, where rank 0 serves the "
                 "store")
      ->type_name("HOST");
  app.add_option("--master-port", f.master_port,
                 "with --nnodes: the store's port (default 29500)")
      ->type_name("PORT");
}

Status finishRankFlags(RankRunOptions &options, const RankFlags &f) {
  for (const auto &[flag, text, field, least] :
       {std::tuple{"--tensor-parallel-size", &f.tensor_parallel,
                   &options.tensor_parallel, 1},
        std::tuple{"--expert-parallel-size", &f.expert_parallel,
                   &options.expert_parallel, 1},
        std::tuple{"--rank", &f.rank, &options.rank, 0},
        std::tuple{"--world-size", &f.world_size, &options.world_size, 1},
        std::tuple{"--collective-timeout-ms", &f.collective_timeout_ms,
                   &options.collective_timeout_ms, 1},
        std::tuple{"--nnodes", &f.nnodes, &options.nnodes, 1},
        std::tuple{"--node-rank", &f.node_rank, &options.node_rank, 0},
        std::tuple{"--master-port", &f.master_port, &options.master_port,
                   1}}) {
    if (text->empty())
      continue;
    STRATA_ASSIGN_OR_RETURN(int64_t n, parseIntFlag(flag, *text));
    if (n < least)
      return invalidArgument("{} must be >= {}, got {}", flag, least, n);
    *field = n;
  }
  if (!f.collectives.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.collectives,
                            parseCollectiveBackend(f.collectives));
  }
  if (options.master_port > 65535)
    return invalidArgument("--master-port must be <= 65535, got {}",
                           options.master_port);
  if (options.node_rank >= options.nnodes)
    return invalidArgument("--node-rank {} must be below --nnodes {}",
                           options.node_rank, options.nnodes);
  if (options.nnodes > 1 && options.master_addr.empty())
    return invalidArgument("--nnodes {} needs --master-addr (node 0's "
                           "address)",
                           options.nnodes);
  if (options.nnodes > 1 && (!f.rank.empty() || !options.store.empty()))
    return invalidArgument("--nnodes starts this node's ranks itself: it "
                           "takes neither --rank nor --store");
  return applyRankEnvironment(options);
}

Status checkRankSizes(const RankRunOptions &options, const Artifact &artifact) {
  const artifact::ParallelLayout *layout = artifact.def().parallel();
  uint32_t tp = layout ? layout->tensor_parallel_size() : 1;
  uint32_t ep = layout ? layout->expert_parallel_size() : 1;
  if ((options.tensor_parallel && options.tensor_parallel != tp) ||
      (options.expert_parallel && options.expert_parallel != ep))
    return invalidArgument("--tensor-parallel-size {} --expert-parallel-size "
                           "{}: the artifact is compiled for {} x {} ranks",
                           options.tensor_parallel ? options.tensor_parallel
                                                   : tp,
                           options.expert_parallel ? options.expert_parallel
                                                   : ep,
                           tp, ep);
  if (options.world_size && options.world_size != int64_t(tp) * ep)
    return invalidArgument("--world-size {}: the artifact is compiled for {} "
                           "ranks ({} x {})",
                           options.world_size, int64_t(tp) * ep, tp, ep);
  if (tp * ep == 1 && options.rank > 0)
    return invalidArgument("--rank {}: the artifact runs on one rank",
                           options.rank);
  return okStatus();
}

StatusOr<RankGroupsOptions> rankGroupsOptions(const RankRunOptions &options,
                                              const Artifact &artifact,
                                              std::unique_ptr<Store> &store) {
  if (options.store.empty())
    return invalidArgument("--rank {} needs --store file:DIR or "
                           "tcp:HOST:PORT (or STRATA_STORE)",
                           options.rank);
  const artifact::ParallelLayout &layout = *artifact.def().parallel();
  RankGroupsOptions ranks;
  ranks.rank = static_cast<int>(options.rank);
  ranks.tensor_parallel_size = layout.tensor_parallel_size();
  ranks.expert_parallel_size = layout.expert_parallel_size();
  ranks.timeout = std::chrono::milliseconds(options.collective_timeout_ms);
  ranks.backend = options.collectives;
  STRATA_ASSIGN_OR_RETURN(store, openRankStore(options.store, ranks.rank));
  ranks.store = store.get();
  return ranks;
}

StatusOr<RankRole> resolveRankRole(const RankRunOptions &options,
                                   const Artifact &artifact,
                                   const std::vector<std::string> &args) {
  STRATA_RETURN_IF_ERROR(checkRankSizes(options, artifact));
  RankRole role;
  if (artifact.numRanks() == 1)
    return role;
  if (options.rank < 0) {
    role.launcher = true;
    role.launched = launchNodeRanks(options, args,
                                    static_cast<int>(artifact.numRanks()));
    return role;
  }
  STRATA_ASSIGN_OR_RETURN(role.ranks,
                          rankGroupsOptions(options, artifact, role.store));
  return role;
}

StatusOr<RankRole> resolveRankRole(const RankRunOptions &options,
                                   const std::string &artifact_path,
                                   const std::vector<std::string> &args) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Artifact> artifact,
                          Artifact::fromFile(artifact_path));
  return resolveRankRole(options, *artifact, args);
}

} // namespace strata::runtime
