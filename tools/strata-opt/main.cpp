//===- main.cpp - strata-opt ------------------------------------*- C++ -*-===//
//
// Part of strata. mlir-opt with the strata dialects and passes registered;
// drives the lit tests on every lowering.
//
//===----------------------------------------------------------------------===//

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "lib/InitAll.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::strata::registerStrataPasses();

  mlir::DialectRegistry registry;
  mlir::strata::registerStrataDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "strata optimizer driver\n", registry));
}
