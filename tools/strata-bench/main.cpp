//===- main.cpp - strata-bench: per-kernel timing of one plan step --------===//
//
// Part of strata. All logic is in runtime/bench/bench_tool.cpp.
//
//===----------------------------------------------------------------------===//

#include <iostream>
#include <string>
#include <vector>

#include "runtime/bench/bench_tool.h"

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return strata::runtime::runBenchTool(args, std::cout, std::cerr);
}
