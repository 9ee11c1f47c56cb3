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
                   &options.collective_timeout_ms, 1}}) {
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
    role.launched = launchRanks(args, static_cast<int>(artifact.numRanks()));
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
