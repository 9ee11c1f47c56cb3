//===- main.cpp - strata-dump: print a strata artifact --------------------===//
//
// Part of strata. `strata-dump <file.strata>` validates the artifact and
// prints it in the stable text form of runtime/loader/artifact_printer.h.
// A runtime tool: it never links LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/artifact_printer.h"

int main(int argc, char **argv) {
  return strata::runtime::runDumpTool(argc, argv);
}
