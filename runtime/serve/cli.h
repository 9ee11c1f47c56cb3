//===- cli.h - strata-serve command line ------------------------------------===//
//
// Part of strata. Flag parsing and start-up of strata-serve, kept out of the
// tool's main so it is testable.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_CLI_H
#define STRATA_RUNTIME_SERVE_CLI_H

namespace strata::runtime::serve {

/// Runs strata-serve with the given arguments; returns the process exit code
/// (0 after a clean stop, 1 start-up error, 2 usage error). Serves until
/// SIGINT or SIGTERM.
int runServeCli(int argc, char **argv);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_CLI_H
