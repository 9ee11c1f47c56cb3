//===- TargetInfo.h - what shared lowering may ask about a target -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The one interface behind which target differences sit (style.md rule 5).
// Shared lowering (lib/Conversion, lib/Pipelines) asks these questions and
// never compares chip names. Implementations: lib/Target/CPU (the host),
// lib/Target/ROCDL (gfx942, gfx950) and lib/Target/NVVM (sm_90, sm_90a).
//
// GPU targets describe their matrix units as MatrixInstruction tables: the
// shape, the operand element types and, for every operand, which elements
// each lane of the subgroup holds (FragmentLayout). The GPU matmul lowering
// (lib/Conversion/LLMToGPU) builds its loads, stores and scale shuffles from
// these layouts alone; only the creation of the instruction op itself
// depends on the MatrixFamily.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_TARGETINFO_H
#define STRATA_LIB_TARGET_TARGETINFO_H

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include "mlir/Support/LLVM.h"

namespace mlir {
class OpPassManager;
class Operation;
} // namespace mlir

namespace mlir::strata {

/// Which kind of matrix instruction a target has (selects the op the GPU
/// lowering creates: amdgpu.mfma or nvvm.mma.sync).
enum class MatrixFamily { None, Mfma, MmaSync, Wgmma };

/// Element types of matrix operands. FNUZ is AMD CDNA3's fp8 (bias 8, no
/// negative zero, 0x80 = NaN); FN is OCP e4m3 (bias 7, max 448), the
/// checkpoint format.
enum class MatrixElement { BF16, F8E4M3FN, F8E4M3FNUZ, F32 };

/// Largest finite value of an fp8 element type (448 for FN, 240 for FNUZ).
double getFp8Max(MatrixElement element);

/// `(lane / div) % mod * mul`: one coordinate of a lane's fragment.
struct LaneMap {
  int64_t div = 1, mod = 1, mul = 1;
  int64_t at(int64_t lane) const { return lane / div % mod * mul; }
};

/// Which elements of an operand tile a lane holds. For A ([m, k]) `outer` is
/// the row and `inner` the k position; for B ([k, n], read from W[n, k])
/// `outer` is the column n and `inner` k; for C/D ([m, n]) `outer` is the
/// row and `inner` the column. A lane holds, piece after piece, `count`
/// consecutive inner elements starting at (outer.at(lane) + piece[0],
/// inner.at(lane) + piece[1]); the instruction operand is their
/// concatenation in piece order.
struct FragmentLayout {
  LaneMap outer, inner;
  llvm::SmallVector<std::array<int64_t, 2>, 4> pieces;
  int64_t count = 1;
  int64_t size() const { return count * static_cast<int64_t>(pieces.size()); }
};

/// One matrix instruction: D[m, n] = A[m, k] * B[k, n] + C[m, n] with f32
/// accumulation, executed by `subgroups` subgroups together.
struct MatrixInstruction {
  MatrixFamily family = MatrixFamily::None;
  int64_t m = 0, n = 0, k = 0;
  MatrixElement operands = MatrixElement::BF16;
  /// ISA mnemonic, for documentation and diagnostics.
  std::string mnemonic;
  /// Subgroups that issue it together (4 for sm_90a wgmma).
  int64_t subgroups = 1;
  /// Lane layouts; empty pieces when the lowering cannot use the
  /// instruction from registers (wgmma reads shared memory descriptors).
  FragmentLayout a, b, c;
};

/// Options of the device-binary phase.
struct BinaryOptions {
  /// `isa` (assembly / PTX text) or `bin` (HSACO / cubin).
  std::string format = "bin";
  /// Toolkit folder: ROCm-like (llvm/bin/ld.lld, amdgcn/bitcode) or CUDA
  /// (bin/ptxas, nvvm/libdevice).
  std::string toolkit;
};

class TargetInfo {
public:
  virtual ~TargetInfo() = default;

  /// Target name as used in pipeline options and artifacts (the artifact's
  /// TargetKind: "cpu", "gfx942", "gfx950", "sm_90", "sm_90a").
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

  /// Lanes of a subgroup (AMD wave, NVIDIA warp); 1 on the host.
  virtual int64_t getSubgroupSize() const { return 1; }
  /// Shared memory (LDS) per workgroup in bytes; 0 on the host.
  virtual int64_t getSharedMemoryBytes() const { return 0; }
  /// Shared memory a kernel may declare statically (workgroup attributions,
  /// no launch-time opt-in); at most getSharedMemoryBytes().
  virtual int64_t getStaticSharedMemoryBytes() const {
    return getSharedMemoryBytes();
  }
  /// Largest workgroup the lowering may launch.
  virtual int64_t getMaxWorkgroupSize() const { return 1; }
  /// The matrix instructions of the chip, in no particular order.
  virtual llvm::ArrayRef<MatrixInstruction> getMatrixInstructions() const {
    return {};
  }
  /// True when the binary pipeline starts every kernel with a wait for its
  /// predecessor grid (LaunchInfo.grid_dependency_control).
  virtual bool controlsGridDependencies() const { return false; }
  /// Appends the passes that lower `gpu.module`s to device code and
  /// serialize them into `gpu.binary` ops. Fails for a host target.
  virtual LogicalResult buildBinaryPipeline(OpPassManager &pm,
                                            const BinaryOptions &options) const;
};

/// The TargetInfo of target or chip `name` ("cpu", "gfx942", "gfx950",
/// "sm_90", "sm_90a"); null for an unknown name.
std::unique_ptr<TargetInfo> createTargetInfo(llvm::StringRef name);

/// The names createTargetInfo accepts, for diagnostics.
llvm::StringRef getKnownTargetNames();

/// The TargetInfo of GPU chip `chip`; null after emitting "unknown GPU chip
/// 'X' (expected one of ...)" at `anchor` when `chip` names no GPU target
/// (the passes and the driver that build GPU kernels share this check).
std::unique_ptr<TargetInfo> createGpuTargetInfo(Operation *anchor,
                                                llvm::StringRef chip);

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_TARGETINFO_H
