//===- TargetInfo.cpp - target lookup by name -----------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// createTargetInfo maps a pipeline `target` option to its implementation;
// the only place that lists target names.
//
//===----------------------------------------------------------------------===//

#include "lib/Target/TargetInfo.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include "lib/Target/CPU/CpuTargetInfo.h"
#include "lib/Target/NVVM/NvvmTargetInfo.h"
#include "lib/Target/ROCDL/RocdlTargetInfo.h"

using namespace mlir;
using namespace mlir::strata;

double mlir::strata::getFp8Max(MatrixElement element) {
  return element == MatrixElement::F8E4M3FNUZ ? 240.0 : 448.0;
}

LogicalResult TargetInfo::buildBinaryPipeline(OpPassManager &,
                                              const BinaryOptions &) const {
  return failure();
}

std::unique_ptr<TargetInfo> mlir::strata::createTargetInfo(StringRef name) {
  if (name == "cpu")
    return std::make_unique<CpuTargetInfo>();
  if (std::unique_ptr<TargetInfo> rocdl = createRocdlTargetInfo(name))
    return rocdl;
  return createNvvmTargetInfo(name);
}

StringRef mlir::strata::getKnownTargetNames() {
  return "cpu, gfx942, gfx950, sm_90, sm_90a";
}

std::unique_ptr<TargetInfo> mlir::strata::createGpuTargetInfo(Operation *anchor,
                                                              StringRef chip) {
  std::unique_ptr<TargetInfo> target = createTargetInfo(chip);
  if (target && !target->isHost())
    return target;
  anchor->emitError() << "unknown GPU chip '" << chip << "' (expected one of "
                      << getKnownTargetNames().drop_front(5) << ")";
  return nullptr;
}
