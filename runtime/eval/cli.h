//===- cli.h - strata-eval command line ------------------------------------===//
//
// Part of strata. Flag parsing and output of strata-eval, kept out of the
// tool's main so it is testable.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EVAL_CLI_H
#define STRATA_RUNTIME_EVAL_CLI_H

namespace strata::runtime::eval {

/// Runs strata-eval with the given arguments; returns the process exit code
/// (0 success, 1 evaluation error, 2 usage error).
int runEvalCli(int argc, char **argv);

} // namespace strata::runtime::eval

#endif // STRATA_RUNTIME_EVAL_CLI_H
