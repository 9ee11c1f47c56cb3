//===- artifact_printer.h - stable text form of an artifact -----*- C++ -*-===//
//
// Part of strata. Prints a validated artifact (header, model, targets with
// binaries, kernels and their argument ABI, plans with dispatches and
// bindings, cache layout, weight manifest, debug info) in a stable,
// line-oriented text form that tests FileCheck and people diff. Used by
// tools/strata-dump.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_ARTIFACT_PRINTER_H
#define STRATA_RUNTIME_LOADER_ARTIFACT_PRINTER_H

#include <string>

#include "runtime/loader/artifact.h"

namespace strata::runtime {

/// The text form of `artifact`, ending in a newline.
std::string printArtifact(const Artifact &artifact);

/// strata-dump: `strata-dump <file.strata>` prints the artifact to stdout and
/// returns 0; on a usage error or an invalid file prints "error: <message>"
/// to stderr and returns 1.
int runDumpTool(int argc, char **argv);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_ARTIFACT_PRINTER_H
