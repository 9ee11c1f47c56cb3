//===- LaunchGridAttr.h - a builder's grid on its gpu.func ------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// build-strategy-kernels records the grid each matrix-unit builder chose
// (LaunchGrid.h) on the gpu.func it built, so that the GPU kernel compiler
// (lib/Driver) reads it back from the IR and IR-level tests can check it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRIDATTR_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRIDATTR_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "lib/Conversion/LLMToGPU/LaunchGrid.h"

namespace mlir::strata {

/// On a gpu.func built by a matrix-unit strategy: its grid, an array of three
/// DenseI64ArrayAttr (x, y, z), each [argument, dim, blocks, divisor,
/// multiplier, addend, cap, floor, floorArgument, floorDim,
/// addendAtMostExtent, stepMultiplier] followed by one (maxSize, divisor,
/// blocks) triple per form (GpuGridDim's fields in that order).
inline constexpr llvm::StringLiteral kMatrixGridAttrName = "strata.matrix_grid";
/// `grid` as a kMatrixGridAttrName value.
ArrayAttr encodeGrid(Builder &builder, const GpuGrid &grid);
/// The grid of a kMatrixGridAttrName value; failure when malformed.
FailureOr<GpuGrid> decodeGrid(ArrayAttr attr);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRIDATTR_H
