//===- cli.h - strata-serve command line ------------------------------------===//
//
// Part of strata. Flag parsing and start-up of strata-serve, kept out of the
// tool's main so it is testable.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_CLI_H
#define STRATA_RUNTIME_SERVE_CLI_H

#include <cstdint>
#include <string>

#include "runtime/base/status.h"

namespace strata::runtime::serve {

/// Context length (prompt plus output) served when --max-model-len is not
/// given and the model's own is longer: a request may still ask for up to
/// this many tokens, but the default no longer lets one request run to the
/// model's full 1M-token window.
inline constexpr int64_t kDefaultMaxModelLen = 131072;

/// The MTP draft count of vLLM's --speculative-config JSON: exactly
/// {"method": "mtp", "num_speculative_tokens": K} with K in 1..3 (K defaults
/// to 1). INVALID_ARGUMENT naming the field otherwise.
StatusOr<uint32_t> parseSpeculativeConfig(const std::string &text);

/// Runs strata-serve with the given arguments; returns the process exit code
/// (0 after a clean stop, 1 start-up error, 2 usage error). Serves until
/// SIGINT or SIGTERM.
int runServeCli(int argc, char **argv);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_CLI_H
