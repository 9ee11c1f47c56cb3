//===- procedural.h - procedural test weights (docs/ProceduralWeights.md) -===//
//
// Part of strata. Every element of a procedural tensor is a fixed function of
// the tensor name and the flat element index, exactly as defined in
// docs/ProceduralWeights.md (FNV-1a-64 of the name, splitmix64, a 24-bit
// signed integer scaled by a per-role amplitude plus an offset, two separate
// fp32 operations). The FP8 helpers quantize per 128x128 block.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_PROCEDURAL_H
#define STRATA_RUNTIME_CHECKPOINT_PROCEDURAL_H

#include <cstdint>
#include <string_view>
#include <vector>

namespace strata::runtime {

/// FNV-1a 64-bit hash of `bytes`.
uint64_t fnv1a64(std::string_view bytes);
/// The splitmix64 finalizer (including the golden-ratio increment).
uint64_t splitmix64(uint64_t z);

/// The role of a tensor: element values are uniform in
/// [offset - amplitude, offset + amplitude).
struct ProceduralRole {
  float amplitude = 1.0f;
  float offset = 0.0f;
};

/// The role-table entry for checkpoint name `name` with shape `shape`.
ProceduralRole proceduralRole(std::string_view name,
                              const std::vector<int64_t> &shape);

/// Generator of one tensor's master values (fp32).
class ProceduralTensor {
public:
  ProceduralTensor(std::string_view name, const std::vector<int64_t> &shape);
  /// Master value of flat element `index`.
  float value(uint64_t index) const;
  /// Values of elements [begin, begin + count) into `out`.
  void values(uint64_t begin, uint64_t count, float *out) const;

private:
  uint64_t hash_;
  float scale_; ///< fp32(amplitude) * 2^-23.
  float offset_;
};

/// Block-quantizes rows [row_begin, row_begin + rows) of a procedural [out,
/// in] weight (rows: at most 128, row_begin a multiple of 128). Writes the
/// e4m3fn codes row-major into `out_codes` (rows * in bytes) when non-null
/// and the ceil(in/128) scales of this block row into `out_scales` when
/// non-null.
void quantizeProceduralRows(const ProceduralTensor &tensor, int64_t in,
                            int64_t row_begin, int64_t rows, uint8_t *out_codes,
                            float *out_scales);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_PROCEDURAL_H
