//===- KernelToGPU.h - names shared with the artifact emitter ---*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// convert-kernels-to-gpu (Passes.td) records each kernel's grid in an
// attribute the artifact emitter reads back; the block size is the kernel's
// known_block_size.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H
#define STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H

#include "llvm/ADT/StringRef.h"

namespace mlir::strata {

/// On each gpu.func made by convert-kernels-to-gpu: an array of 3
/// DenseI64ArrayAttr, one per grid dimension x/y/z: [-1, n] for n blocks,
/// [a, d] for extent d of kernel argument a.
inline constexpr llvm::StringLiteral kGpuGridAttrName = "strata.grid";

/// On a gpu.func that keeps one thread per block although the pass was
/// given a chip: why the threads of a block could not share its rows.
inline constexpr llvm::StringLiteral kSingleThreadAttrName =
    "strata.single_thread";

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H
