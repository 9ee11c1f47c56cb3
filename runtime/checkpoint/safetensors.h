//===- safetensors.h - memory-mapped safetensors files and checkpoints ----===//
//
// Part of strata. Reads the safetensors format (8-byte little-endian header
// length N, N bytes of JSON header, then the data section) through a
// read-only mmap, and sharded Hugging Face checkpoints through
// model.safetensors.index.json. Files are validated completely on open:
// length fields, header JSON, entry types, dtypes, shapes against byte sizes,
// offset ranges and overlaps, duplicate names within a file and across
// shards, and the index's weight_map against the shards. See
// docs/Checkpoint.md for the full list of rules and messages.
//
// Ownership and lifetime: SafetensorsFile owns its mapping and unmaps it on
// destruction; Checkpoint owns its files. A TensorView points into a mapping
// (data, name, file path) and is valid only while the SafetensorsFile or
// Checkpoint it came from is alive. The mapping is PROT_READ: writing through
// a view's data is undefined. Data are not necessarily aligned to their
// element size; read them with memcpy or with the conversion helpers.
//
// Thread-safety: after open() returns, every const member is safe to call
// from any number of threads concurrently (nothing is mutated or cached).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_SAFETENSORS_H
#define STRATA_RUNTIME_CHECKPOINT_SAFETENSORS_H

#include "runtime/base/status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {

/// Element types recognised in safetensors headers.
enum class DType { kBF16, kF16, kF32, kF8E4M3, kI32, kI64 };

/// The safetensors spelling: "BF16", "F16", "F32", "F8_E4M3", "I32", "I64".
std::string_view dtypeName(DType dtype);
/// Bytes per element.
int64_t dtypeSize(DType dtype);
/// Parses a safetensors dtype string; nullopt when unknown or unsupported.
std::optional<DType> parseDType(std::string_view name);
/// "[4, 5]".
std::string shapeString(const std::vector<int64_t> &shape);

/// A tensor inside a mapped file. Non-owning; see the lifetime note above.
struct TensorView {
  std::string_view name;
  std::string_view file; ///< Path of the file holding it.
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  uint64_t byte_size = 0;

  /// Product of the shape (1 for a scalar).
  int64_t numElements() const;
};

/// One tensor's header entry; offsets are relative to the data section.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// One memory-mapped .safetensors file.
class SafetensorsFile {
public:
  /// Maps and validates `path`. Errors are INVALID_ARGUMENT (malformed) or
  /// NOT_FOUND (cannot open); messages start with the path.
  static StatusOr<std::unique_ptr<SafetensorsFile>> open(const std::string &path);
  /// Validates an in-memory image (used by tests and by open()). The bytes
  /// must outlive the returned object; nothing is copied or unmapped.
  static StatusOr<std::unique_ptr<SafetensorsFile>>
  fromBytes(const uint8_t *bytes, uint64_t size, std::string path);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return path_; }
  /// Entries sorted by name.
  const std::vector<SafetensorsEntry> &entries() const { return entries_; }
  /// `__metadata__` (string to string); empty when absent.
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The entry named `name`, or nullptr.
  const SafetensorsEntry *find(std::string_view name) const;
  /// A view of `entry` (which must belong to this file).
  TensorView view(const SafetensorsEntry &entry) const;
  /// Size of the whole file in bytes.
  uint64_t fileSize() const { return size_; }

private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t *bytes_ = nullptr;
  uint64_t size_ = 0;
  const uint8_t *data_ = nullptr; ///< Start of the data section.
  bool mapped_ = false;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

/// An FP8 block-scaled weight and its scale: W[r, c] = e4m3(weight[r, c]) *
/// scale_inv[r / 128, c / 128].
struct Fp8Weight {
  TensorView weight;    ///< F8_E4M3 [out, in].
  TensorView scale_inv; ///< F32 [ceil(out/128), ceil(in/128)].
};

/// Name of the scale tensor paired with FP8 weight `name`:
/// "x.weight" -> "x.weight_scale_inv", anything else -> name + "_scale_inv".
std::string scaleInvName(std::string_view name);

/// A checkpoint: one or more safetensors files addressed by tensor name.
class Checkpoint {
public:
  /// Opens a checkpoint directory: model.safetensors.index.json and its
  /// shards when the index exists, else the single model.safetensors.
  static StatusOr<std::unique_ptr<Checkpoint>> open(const std::string &dir);
  /// Opens explicit files (no index); duplicate names across them fail.
  static StatusOr<std::unique_ptr<Checkpoint>>
  openFiles(const std::vector<std::string> &paths);
  /// Builds a checkpoint over already opened files (takes ownership).
  static StatusOr<std::unique_ptr<Checkpoint>>
  fromFiles(std::vector<std::unique_ptr<SafetensorsFile>> files);

  /// Any tensor by name (NOT_FOUND names the tensor).
  StatusOr<TensorView> tensor(std::string_view name) const;
  /// A tensor that must have `dtype` and `shape`; a mismatch is
  /// INVALID_ARGUMENT naming the tensor, its file, and both dtypes/shapes.
  StatusOr<TensorView> tensor(std::string_view name, DType dtype,
                              const std::vector<int64_t> &shape) const;
  /// An FP8 weight [out, in] with its `_scale_inv` partner, both checked.
  StatusOr<Fp8Weight> fp8Weight(std::string_view name, int64_t out,
                                int64_t in) const;

  /// All tensor names, sorted.
  std::vector<std::string> tensorNames() const;
  std::size_t numTensors() const { return tensors_.size(); }
  const std::vector<std::unique_ptr<SafetensorsFile>> &files() const {
    return files_;
  }
  /// Sum of all tensors' byte sizes.
  uint64_t totalTensorBytes() const;

private:
  Checkpoint() = default;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  struct Location {
    const SafetensorsFile *file;
    const SafetensorsEntry *entry;
  };
  std::map<std::string, Location, std::less<>> tensors_;
};

/// Converts a BF16, F16, F32 or F8_E4M3 tensor to fp32 (exact).
StatusOr<std::vector<float>> toF32(const TensorView &tensor);
/// Converts into `out` (numElements() floats).
Status toF32(const TensorView &tensor, float *out);
/// Dequantizes an FP8 block-scaled weight to fp32 [out, in], row-major.
StatusOr<std::vector<float>> dequantizeFp8(const Fp8Weight &weight);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_SAFETENSORS_H
