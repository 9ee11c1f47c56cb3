//===- cli.h - strata-bench-serve command line -----------------------------===//
//
// Part of strata. Flags (CLI11) of strata-bench-serve, the serving load
// generator: dataset, arrivals, concurrency (or a concurrency sweep),
// reports. See docs/BenchServe.md.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_SERVE_CLI_H
#define STRATA_RUNTIME_BENCH_SERVE_CLI_H

namespace strata::runtime::bench_serve {

/// Runs strata-bench-serve: 0 when every request succeeded, 1 when a request
/// failed or the run stopped early (the reports are written either way), 2
/// for bad flags.
int runBenchServeCli(int argc, char **argv);

} // namespace strata::runtime::bench_serve

#endif // STRATA_RUNTIME_BENCH_SERVE_CLI_H
