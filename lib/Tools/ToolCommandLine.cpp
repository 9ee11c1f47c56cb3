//===- ToolCommandLine.cpp - --help and --version of compiler tools -------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Tools/ToolCommandLine.h"

#include "lib/InitAll.h"
#include "runtime/base/version.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;
using namespace mlir::strata;
namespace cl = llvm::cl;

void mlir::strata::setStrataVersionPrinter(llvm::StringRef toolName) {
  static std::string name;
  name = toolName.str();
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << ::strata::runtime::versionText(name) << "  LLVM version "
       << LLVM_VERSION_STRING << " (MLIR from the same release)\n";
  });
}

void mlir::strata::hideUnrelatedOptions(
    llvm::ArrayRef<const cl::OptionCategory *> categories) {
  auto &options = cl::getRegisteredOptions();
  // LLVM's generic options (--help, --help-hidden, --version, ...) share the
  // category of --help; they stay, as cl::HideUnrelatedOptions keeps them.
  llvm::SmallVector<const cl::OptionCategory *> kept(categories);
  if (auto help = options.find("help"); help != options.end())
    kept.append(help->second->Categories.begin(),
                help->second->Categories.end());
  for (auto &entry : options) {
    cl::Option *option = entry.second;
    bool related = llvm::any_of(option->Categories, [&](auto *category) {
      return llvm::is_contained(kept, category);
    });
    if (!related && option->getOptionHiddenFlag() == cl::NotHidden)
      option->setHiddenFlag(cl::Hidden);
  }
}

int mlir::strata::optMain(int argc, char **argv) {
  registerAllPasses();
  registerStrataPasses();
  DialectRegistry registry;
  registerStrataDialects(registry);
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllGPUToLLVMIRTranslations(registry);

  // The options MlirOptMainConfig registers (the pass pipeline, the input
  // splitting and diagnostic checking) are strata-opt's own; the asm
  // printer, context, pass manager and timing options MLIR adds, and every
  // LLVM backend option, are hidden from --help.
  static cl::OptionCategory optCategory("Driver options");
  llvm::DenseSet<cl::Option *> before;
  for (auto &entry : cl::getRegisteredOptions())
    before.insert(entry.second);
  MlirOptMainConfig::registerCLOptions(registry);
  for (auto &entry : cl::getRegisteredOptions())
    if (!before.contains(entry.second))
      entry.second->addCategory(optCategory);
  std::string helpHeader =
      registerCLIOptions("strata optimizer driver", registry);
  hideUnrelatedOptions({&optCategory});
  setStrataVersionPrinter("strata-opt");
  auto [inputFilename, outputFilename] =
      parseCLIOptions(argc, argv, helpHeader);
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
