//===- KernelToGPU.h - names shared with the artifact emitter ---*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// convert-kernels-to-gpu (Passes.td) records each kernel's grid and global
// scratch need in attributes the artifact emitter reads back; the block size
// is the kernel's known_block_size.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H
#define STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H

#include <cstdint>

#include "llvm/ADT/StringRef.h"

namespace mlir::strata {

/// On each gpu.func made by convert-kernels-to-gpu: an array of 3
/// DenseI64ArrayAttr, one per grid dimension x/y/z: [-1, n] for n blocks,
/// [a, d] for extent d of kernel argument a, [a, d, cap] for that extent but
/// at most cap blocks (cap 0: no cap), [a, d, cap, fa, fd, floor] for that
/// extent while extent fd of argument fa is at least floor (the kernel
/// works only in steps of that size; below, one block in every dimension).
inline constexpr llvm::StringLiteral kGpuGridAttrName = "strata.grid";

/// On a gpu.func whose scratch did not fit private memory: the bytes each
/// block needs from the global scratch buffer (the kernel's last argument,
/// `memref<?xi8>`), as a postfix program of DenseI64ArrayAttr entries, each
/// `[ScratchOp, operands...]`. The artifact emitter turns it into a size
/// expression of the dispatch's bindings.
inline constexpr llvm::StringLiteral kGpuScratchAttrName = "strata.scratch";

/// Opcodes of the kGpuScratchAttrName program (on a stack of sizes).
enum class ScratchOp : int64_t {
  /// [0, c]: push the constant c >= 0.
  Constant = 0,
  /// [1, a, d]: push extent d of kernel argument a.
  Extent = 1,
  /// [2]: pop b, pop a, push a + b.
  Add = 2,
  /// [3]: pop b, pop a, push a * b.
  Mul = 3,
  /// [4]: pop b, pop a, push max(a, b).
  Max = 4,
  /// [5, c]: pop a, push a rounded up to a multiple of c > 0.
  AlignUp = 5,
  /// [6]: pop b, pop a, push 1 if a < b, else 0.
  Less = 6,
};

/// On a gpu.func with K split over the grid (LLMToGPU's GridSplitK): the
/// i32 arrival counters it takes in its argument before the scratch one,
/// which the artifact binds to a plan buffer of kind `counters` (zero when
/// allocated; each dispatch leaves it zero).
inline constexpr llvm::StringLiteral kGpuCountersAttrName = "strata.counters";

/// Alignment in bytes of each scratch allocation inside a block's slice
/// (and so of the slice size).
inline constexpr int64_t kGpuScratchAlignment = 64;

/// On a gpu.func that keeps one thread per block although the pass was
/// given a chip: why the threads of a block could not share its rows.
inline constexpr llvm::StringLiteral kSingleThreadAttrName =
    "strata.single_thread";

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_KERNELTOGPU_KERNELTOGPU_H
