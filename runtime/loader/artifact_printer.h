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
#include <string_view>

#include "runtime/loader/artifact.h"
#include "runtime/loader/size_expr.h"

namespace strata::runtime {

/// The text form of `artifact`, ending in a newline.
std::string printArtifact(const Artifact &artifact);

/// The sizes `spec` names ("num_tokens=2048,num_requests=4": SizeSymbol
/// names and values, the others 0); INVALID_ARGUMENT on an unknown name or
/// a value that is not a number.
StatusOr<RuntimeSizes> parseRuntimeSizes(std::string_view spec);

/// Every GPU kernel's launch at `sizes`, one line per kernel: "target T
/// kernel 'K' grid [x, y, z] shared B", the grid and the dynamic shared
/// bytes evaluated as the runtime does (each grid dimension at least 1).
StatusOr<std::string> printLaunchesAt(const Artifact &artifact,
                                      const RuntimeSizes &sizes);

/// The bytes of binary 0 of `artifact`'s target named `target` (`cpu`,
/// `gfx942`, `gfx950`, `sm_90`); NOT_FOUND naming the targets it has.
StatusOr<std::string_view> targetBinary(const Artifact &artifact,
                                        std::string_view target);

/// strata-dump: `strata-dump <file.strata>` prints the artifact to stdout and
/// returns 0; `strata-dump <file.strata> --binary <target> <out-file>`
/// writes that target's kernel binary (a .so, hsaco or cubin, for
/// llvm-objdump and llvm-readobj) to out-file. On a usage error, an invalid
/// file, an unknown target or a failed write it prints "error: <message>"
/// (or the usage) to stderr and returns 1.
int runDumpTool(int argc, char **argv);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_ARTIFACT_PRINTER_H
