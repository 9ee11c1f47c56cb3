//===- ToolCommandLine.h - --help and --version of compilers ----*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// strata-compile and strata-opt link all of LLVM and MLIR, whose static
// cl::opt options (--aarch64-neon-syntax, --amdgpu-..., --mlir-print-...)
// would fill their --help. These helpers give a tool's own options a
// category listed first and hide the rest from --help (cl::Hidden, not
// cl::ReallyHidden: --help-hidden still lists them and they still parse),
// and make --version print the strata version and git commit
// (runtime/base/version.h) with the LLVM version.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TOOLS_TOOLCOMMANDLINE_H
#define STRATA_LIB_TOOLS_TOOLCOMMANDLINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace mlir::strata {

/// Makes `--version` print
///   <toolName> (strata) <version>
///     git commit <commit>
///     LLVM version <llvm version> (MLIR from the same release)
void setStrataVersionPrinter(llvm::StringRef toolName);

/// Hides from --help every registered option that is in none of
/// `categories` (LLVM's generic options -- help, version -- stay): the
/// options are only cl::Hidden, so --help-hidden lists them all.
void hideUnrelatedOptions(
    llvm::ArrayRef<const llvm::cl::OptionCategory *> categories);

/// The main of strata-opt: MlirOptMain with the strata dialects and passes
/// registered, the driver's own options (pass pipeline, --split-input-file,
/// --verify-diagnostics, ...) in a "Driver options" category (listed before
/// LLVM's "Generic Options") and the rest of LLVM's and MLIR's options hidden
/// from --help.
int optMain(int argc, char **argv);

} // namespace mlir::strata

#endif // STRATA_LIB_TOOLS_TOOLCOMMANDLINE_H
