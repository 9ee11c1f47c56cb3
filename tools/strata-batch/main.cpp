//===- main.cpp - strata-batch: prompts through the batching engine -------===//
//
// Part of strata. All logic is in runtime/scheduler/batch_tool.cpp.
//
//===----------------------------------------------------------------------===//

#include <iostream>
#include <string>
#include <vector>

#include "runtime/scheduler/batch_tool.h"

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return strata::runtime::runBatchTool(args, std::cout, std::cerr);
}
