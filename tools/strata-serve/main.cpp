//===- main.cpp - strata-serve ----------------------------------*- C++ -*-===//
//
// Part of strata. `strata-serve --artifact FILE --checkpoint DIR --tokenizer
// FILE [options]` (--help lists them; vLLM's flag spellings are accepted):
// the OpenAI-compatible server. Logic lives in runtime/serve/.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/cli.h"

int main(int argc, char **argv) {
  return strata::runtime::serve::runServeCli(argc, argv);
}
