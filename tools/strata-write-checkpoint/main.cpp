//===- main.cpp - strata-write-checkpoint ---------------------------------===//
//
// Part of strata. Writes procedural GLM-5.3-Flash checkpoints and checks
// checkpoints against the tensor manifest; all logic lives in
// runtime/checkpoint/checkpoint_tool.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/checkpoint_tool.h"

#include <cstdio>

int main(int argc, char **argv) {
  return strata::runtime::runWriteCheckpointTool(argc, argv, stdout, stderr);
}
