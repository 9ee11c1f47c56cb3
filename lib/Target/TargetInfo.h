//===- TargetInfo.h - what shared lowering may ask about a target -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The one interface behind which target differences sit (style.md rule 5).
// Shared lowering (lib/Conversion, lib/Pipelines) asks these questions and
// never compares chip names. Implementations: lib/Target/CPU (ROCDL and
// NVVM follow the same shape).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_TARGETINFO_H
#define STRATA_LIB_TARGET_TARGETINFO_H

#include <cstdint>
#include <memory>

#include "llvm/ADT/StringRef.h"

namespace mlir::strata {

class TargetInfo {
public:
  virtual ~TargetInfo() = default;

  /// Target name as used in pipeline options and artifacts ("cpu", ...).
  virtual llvm::StringRef getName() const = 0;
  /// The chip or CPU baseline kernels are compiled for.
  virtual llvm::StringRef getChip() const = 0;
  /// True when bf16 <-> f32 conversions must be expanded into integer
  /// arithmetic before LLVM lowering (no native conversion instruction and
  /// no libcall the kernels may rely on).
  virtual bool needsBF16Expansion() const = 0;
  /// True when kernels run on the host through the packed memref-descriptor
  /// ABI (no launch geometry).
  virtual bool isHost() const = 0;
  /// Preferred vector width in bits for elementwise code.
  virtual int64_t getVectorWidthBits() const = 0;
};

/// The TargetInfo of target `name` ("cpu"); null for an unknown target.
std::unique_ptr<TargetInfo> createTargetInfo(llvm::StringRef name);

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_TARGETINFO_H
