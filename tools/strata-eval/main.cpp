//===- main.cpp - strata-eval -----------------------------------*- C++ -*-===//
//
// Part of strata. `strata-eval gsm8k --url URL --data FILE [--shots K]
// [--passes N] ...`: the GSM8K protocol against any OpenAI-compatible
// server. Logic lives in runtime/eval/.
//
//===----------------------------------------------------------------------===//

#include "runtime/eval/cli.h"

int main(int argc, char **argv) {
  return strata::runtime::eval::runEvalCli(argc, argv);
}
