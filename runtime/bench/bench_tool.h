//===- bench_tool.h - the strata-bench command line -------------*- C++ -*-===//
//
// Part of strata. strata-bench times one step of an artifact's plan per
// kernel against a device-to-device copy baseline (step_bench.h) and prints
// a markdown table (and JSON with --json). docs/Bench.md documents it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_BENCH_TOOL_H
#define STRATA_RUNTIME_BENCH_BENCH_TOOL_H

#include <ostream>
#include <string>
#include <vector>

namespace strata::runtime {

/// Runs strata-bench with `args` (without argv[0]); returns the exit code.
int runBenchTool(const std::vector<std::string> &args, std::ostream &out,
                 std::ostream &err);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_BENCH_TOOL_H
