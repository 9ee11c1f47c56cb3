//===- run_tool.h - the strata-run command line -----------------*- C++ -*-===//
//
// Part of strata. strata-run loads an artifact and a checkpoint, prefills one
// or more prompts (in chunks of --chunk tokens, all requests of a chunk round
// in one step), then decodes greedily with every request in one decode step,
// and prints the generated ids (and text with --tokenizer) and timing.
// docs/Run.md documents the flags and the --dump-logits file layout.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_RUN_TOOL_H
#define STRATA_RUNTIME_EXECUTOR_RUN_TOOL_H

#include <ostream>
#include <string>
#include <vector>

namespace strata::runtime {

/// Runs strata-run with `args` (without argv[0]); returns the exit code.
int runRunTool(const std::vector<std::string> &args, std::ostream &out,
               std::ostream &err);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_RUN_TOOL_H
