//===- WriteGpuBinaries.cpp - dump gpu.binary objects to files ------------===//
//
// Part of strata, under the Apache License v2.0.
//
// --strata-write-gpu-binaries: writes the bytes of every #gpu.object to a
// file named after its gpu.binary, chip and format. Leaves the IR alone.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "lib/Target/Passes.h"

#define DEBUG_TYPE "strata-write-gpu-binaries"

namespace mlir::strata {
#define GEN_PASS_DEF_WRITEGPUBINARIESPASS
#include "lib/Target/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

/// File extension of an object: by target kind and compilation format.
static StringRef getExtension(bool rocdl, gpu::CompilationTarget format) {
  switch (format) {
  case gpu::CompilationTarget::Offload:
    return "bc";
  case gpu::CompilationTarget::Assembly:
    return rocdl ? "s" : "ptx";
  case gpu::CompilationTarget::Binary:
    return rocdl ? "hsaco" : "cubin";
  case gpu::CompilationTarget::Fatbin:
    return "fatbin";
  }
  return "bin";
}

namespace {

// --strata-write-gpu-binaries
struct WriteGpuBinariesPass
    : mlir::strata::impl::WriteGpuBinariesPassBase<WriteGpuBinariesPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](gpu::BinaryOp binary) {
      for (Attribute attr : binary.getObjects()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        if (!object)
          continue;
        StringRef chip = "unknown";
        bool rocdl = false;
        if (auto target = dyn_cast<ROCDL::ROCDLTargetAttr>(object.getTarget())) {
          chip = target.getChip();
          rocdl = true;
        } else if (auto target =
                       dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget())) {
          chip = target.getChip();
        }
        SmallString<128> path(dir);
        llvm::sys::path::append(
            path, (binary.getSymName() + "." + chip + "." +
                   getExtension(rocdl, object.getFormat()))
                      .str());
        std::error_code error;
        llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_None);
        if (error) {
          binary.emitError() << "cannot write gpu object to '" << path
                             << "': " << error.message();
          return signalPassFailure();
        }
        os << object.getObject().getValue();
      }
    });
  }
};

} // namespace
