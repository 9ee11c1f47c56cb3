//===- batch_tool.h - the strata-batch command line --------------*- C++ -*-===//
//
// Part of strata. strata-batch submits a set of prompts (token ids) to the
// Engine at once and prints each request's generated ids and the engine's
// counters: the continuous-batching engine exercised without a server. Its
// options select batching (max requests, step and chunk tokens), the KV pool
// size (preemption), prefix caching, MTP, repeated passes over the same
// prompts (prefix hits) and cancellation. docs/Scheduler.md.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SCHEDULER_BATCH_TOOL_H
#define STRATA_RUNTIME_SCHEDULER_BATCH_TOOL_H

#include <ostream>
#include <string>
#include <vector>

namespace strata::runtime {

/// Runs strata-batch with `args` (without argv[0]); returns the exit code.
int runBatchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_SCHEDULER_BATCH_TOOL_H
