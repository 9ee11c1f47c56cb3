//===- main.cpp - strata-compile --------------------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Compiles a model DSL file with a config.json to a named phase
// (--compile-to=ast|llm|...). All logic lives in lib/Driver.
//
//===----------------------------------------------------------------------===//

#include "lib/Driver/Driver.h"

int main(int argc, char **argv) {
  return mlir::strata::compileMain(argc, argv);
}
