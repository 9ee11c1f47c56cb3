//===- main.cpp - strata-opt ------------------------------------*- C++ -*-===//
//
// Part of strata. mlir-opt with the strata dialects and passes registered;
// drives the lit tests on every lowering. All logic lives in lib/Tools.
//
//===----------------------------------------------------------------------===//

#include "lib/Tools/ToolCommandLine.h"

int main(int argc, char **argv) { return mlir::strata::optMain(argc, argv); }
