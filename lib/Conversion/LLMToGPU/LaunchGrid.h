//===- LaunchGrid.h - a GPU kernel's grid over its arguments ----*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The launch grid of a GPU kernel as a function of its dispatch's argument
// extents: what each matrix-unit kernel builder (LinearKernel.h) states for
// the kernel it builds, what convert-kernels-to-gpu's `strata.grid` becomes
// for the generic kernels, and what the artifact emitter turns into a size
// expression per dispatch (ArtifactEmitter.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRID_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRID_H

#include <array>
#include <cstdint>
#include <vector>

namespace mlir::strata {

/// One form of a kernel that branches on the step's size (a decode form, the
/// plain row tiles, the staged ones): for steps of at most `maxSize` (the
/// previous form's maxSize excluded; -1: every larger step) the dimension
/// is ceil(extent * multiplier / divisor) when it follows an argument, else
/// `blocks`.
struct GpuGridForm {
  int64_t maxSize = -1;
  int64_t divisor = 1;
  int64_t blocks = 1;
};

/// One grid dimension: `blocks` blocks when `argument` < 0, else
/// ceil(extent `dim` of kernel argument `argument` / `divisor`) (resolved
/// per dispatch binding; at least 1).
struct GpuGridDim {
  int64_t argument = -1;
  int64_t dim = 0;
  int64_t blocks = 1;
  /// With an argument: ceil(extent * multiplier / divisor) + addend blocks;
  /// with `cap` > 0 at most cap, and one block in every dimension when that
  /// is past cap (the kernel works only up to cap rows); with `floor` > 0
  /// one block in every dimension while extent * multiplier is below floor
  /// (the kernel works only from floor rows on).
  int64_t divisor = 1;
  int64_t multiplier = 1;
  int64_t addend = 0;
  int64_t cap = 0;
  int64_t floor = 0;
  /// With `floor`: the argument and dimension whose extent it bounds (-1:
  /// `argument`'s extent times multiplier).
  int64_t floorArgument = -1;
  int64_t floorDim = 0;
  /// The addend is at most extent * multiplier (min(addend, extent *
  /// multiplier) blocks are added): grouped experts have at most one partial
  /// tile per routed slot.
  bool addendAtMostExtent = false;
  /// The kernel's forms by step size, smallest steps first (empty: one
  /// form, the fields above): each replaces `divisor` (or `blocks`) for its
  /// steps, so no block is launched for another form's tiles. The step's
  /// size is argument 0's extent 0 times stepMultiplier.
  std::vector<GpuGridForm> forms = {};
  int64_t stepMultiplier = 1;
};

/// x, y, z.
using GpuGrid = std::array<GpuGridDim, 3>;

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_LAUNCHGRID_H
