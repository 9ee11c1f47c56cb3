//===- main.cpp - strata-bench-serve ----------------------------*- C++ -*-===//
//
// Part of strata. `strata-bench-serve --base-url URL --dataset-name random
// --tokenizer T --num-prompts N [--max-concurrency C | --sweep-concurrency
// 1,8,32] ...`: the serving load generator (docs/BenchServe.md). Logic lives
// in runtime/bench_serve/.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench_serve/cli.h"

int main(int argc, char **argv) {
  return strata::runtime::bench_serve::runBenchServeCli(argc, argv);
}
