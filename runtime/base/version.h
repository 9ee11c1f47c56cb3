//===- version.h - the strata version every tool reports --------*- C++ -*-===//
//
// Part of strata. The version of the project and the git commit it was
// configured from (CMake writes both into version.cpp at configure time;
// "unknown" outside a git checkout). Shared by the runtime tools and the
// compiler tools, which add the LLVM version to their --version text.
//
// Thread-safety: constants only.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BASE_VERSION_H
#define STRATA_RUNTIME_BASE_VERSION_H

#include <string>
#include <string_view>

namespace strata::runtime {

/// The project version, e.g. "0.1.0".
std::string_view strataVersion();

/// The abbreviated git commit of the configured source tree, or "unknown".
std::string_view strataGitCommit();

/// What `<tool> --version` prints (two lines, each ending in '\n'):
///   <tool> (strata) <version>
///     git commit <commit>
std::string versionText(std::string_view tool);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BASE_VERSION_H
