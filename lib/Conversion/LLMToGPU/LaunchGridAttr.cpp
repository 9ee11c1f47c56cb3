//===- LaunchGridAttr.cpp - a builder's grid as a gpu.func attribute ------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToGPU/LaunchGridAttr.h"

using namespace mlir;
using namespace mlir::strata;

/// The fixed fields of one dimension before its forms.
static constexpr size_t kDimFields = 12;

ArrayAttr mlir::strata::encodeGrid(Builder &builder, const GpuGrid &grid) {
  SmallVector<Attribute> dims;
  for (const GpuGridDim &d : grid) {
    SmallVector<int64_t> fields = {d.argument,
                                   d.dim,
                                   d.blocks,
                                   d.divisor,
                                   d.multiplier,
                                   d.addend,
                                   d.cap,
                                   d.floor,
                                   d.floorArgument,
                                   d.floorDim,
                                   d.addendAtMostExtent ? 1 : 0,
                                   d.stepMultiplier};
    for (const GpuGridForm &form : d.forms)
      fields.append({form.maxSize, form.divisor, form.blocks});
    dims.push_back(builder.getDenseI64ArrayAttr(fields));
  }
  return builder.getArrayAttr(dims);
}

FailureOr<GpuGrid> mlir::strata::decodeGrid(ArrayAttr attr) {
  if (!attr || attr.size() != 3)
    return failure();
  GpuGrid grid;
  for (auto [d, entry] : llvm::zip_equal(grid, attr)) {
    auto array = dyn_cast<DenseI64ArrayAttr>(entry);
    if (!array || array.size() < static_cast<int64_t>(kDimFields) ||
        (array.size() - kDimFields) % 3)
      return failure();
    ArrayRef<int64_t> f = array.asArrayRef();
    d.argument = f[0];
    d.dim = f[1];
    d.blocks = f[2];
    d.divisor = f[3];
    d.multiplier = f[4];
    d.addend = f[5];
    d.cap = f[6];
    d.floor = f[7];
    d.floorArgument = f[8];
    d.floorDim = f[9];
    d.addendAtMostExtent = f[10] != 0;
    d.stepMultiplier = f[11];
    for (size_t i = kDimFields; i < f.size(); i += 3)
      d.forms.push_back({f[i], f[i + 1], f[i + 2]});
  }
  return grid;
}
