//===- main.cpp - strata-tokenize -----------------------------------------===//
//
// Part of strata. Encodes, decodes and checks golden encodings with the
// runtime tokenizer; all logic is in runtime/tokenizer/tokenizer_tool.cpp.
//
//===----------------------------------------------------------------------===//

#include <iostream>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer_tool.h"

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return strata::runtime::tokenizer::runTokenizerTool(args, std::cin, std::cout,
                                                      std::cerr);
}
