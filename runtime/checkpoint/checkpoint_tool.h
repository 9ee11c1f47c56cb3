//===- checkpoint_tool.h - command line of strata-write-checkpoint --------===//
//
// Part of strata. The logic behind tools/strata-write-checkpoint:
//
//   strata-write-checkpoint --config C.json --out DIR
//       [--max-shard-bytes N] [--only-layers 0,3,...]
//     writes a procedural checkpoint (docs/ProceduralWeights.md).
//   strata-write-checkpoint --check DIR [--only-layers ...] [--strict]
//     loads DIR (index + shards), reads DIR/config.json and validates the
//     checkpoint against the GLM-5.3-Flash manifest.
//   strata-write-checkpoint --print DIR --tensor NAME --indices I,J,...
//     prints elements of one tensor converted to fp32 (FP8 codes decoded,
//     not scaled), one "NAME[I] = V" line each, V with 9 significant digits.
//
// Output goes to `out`, errors to `err` as "strata-write-checkpoint: error:
// <message>". Thread-safety: not reentrant on the same streams.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_TOOL_H
#define STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_TOOL_H

#include <cstdio>

namespace strata::runtime {

/// Runs the tool; returns the process exit code (0 on success, 1 on error).
int runWriteCheckpointTool(int argc, char **argv, std::FILE *out,
                           std::FILE *err);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_TOOL_H
