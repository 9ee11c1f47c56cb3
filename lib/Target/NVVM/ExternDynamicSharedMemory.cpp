//===- ExternDynamicSharedMemory.cpp - dynamic shared memory as extern ----===//
//
// Part of strata, under the Apache License v2.0.
//
// --strata-extern-dynamic-shared-memory: the zero-sized workgroup arrays
// that convert-gpu-to-nvvm makes for gpu.dynamic_shared_memory become
// external declarations (`.extern .shared .b8 name[]` in PTX), so the
// dynamic arena starts after the kernel's static workgroup buffers instead
// of overlapping them, aligned as the target asks (sm_90a: 1024 bytes; the
// swizzled layouts that wgmma reads repeat every 512 bytes of shared
// address, and the staged tiles place them at multiples of 512 from the
// arena's start; lib/Target/Passes.td).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "lib/Target/Passes.h"

namespace mlir::strata {
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDMEMORYPASS
#include "lib/Target/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {
/// LLVM's address space of workgroup (shared) memory on NVPTX and AMDGPU.
constexpr unsigned kWorkgroupAddressSpace = 3;

struct ExternDynamicSharedMemoryPass
    : mlir::strata::impl::ExternDynamicSharedMemoryPassBase<ExternDynamicSharedMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().walk([&](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (global.getAddrSpace() != kWorkgroupAddressSpace || !array ||
          array.getNumElements() != 0 || global.getValueOrNull())
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(uint64_t(alignment));
    });
  }
};
} // namespace
