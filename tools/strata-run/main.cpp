//===- main.cpp - strata-run: generate from an artifact and a checkpoint --===//
//
// Part of strata. All logic is in runtime/executor/run_tool.cpp.
//
//===----------------------------------------------------------------------===//

#include <iostream>
#include <string>
#include <vector>

#include "runtime/executor/run_tool.h"

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return strata::runtime::runRunTool(args, std::cout, std::cerr);
}
