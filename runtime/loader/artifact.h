//===- artifact.h - load and validate a strata artifact ---------*- C++ -*-===//
//
// Part of strata. The only way the runtime reads an artifact
// (runtime/schemas/strata_artifact_def.fbs). Artifact::fromBytes/fromFile
// validate the whole file before returning it, in this order:
//   1. file identifier "STRA" (names the identifier found);
//   2. flatbuffers Verifier (every offset, vector and string in bounds);
//   3. format_version == kArtifactFormatVersion (names newer/older);
//   4. content checksum (FNV-1a 64; catches a flipped byte anywhere, including
//      inside kernel binaries);
//   5. every enum value known, every cross-reference in range (kernel index,
//      binary index, buffer id, cache id, manifest index), every size
//      expression well-formed, bindings consistent with kernel arguments, and
//      the cache geometry self-consistent.
// After that, accessors never need to re-check the file.
//
// Ownership: an Artifact owns its bytes; the flatbuffer accessors it returns
// point into them and live as long as the Artifact. Thread-safety: immutable
// after construction, safe to share between threads.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_ARTIFACT_H
#define STRATA_RUNTIME_LOADER_ARTIFACT_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/schemas/strata_artifact_def_generated.h"

namespace strata::runtime {

/// The artifact format version this runtime reads.
inline constexpr uint32_t kArtifactFormatVersion = 1;

/// FNV-1a 64 over `size` bytes at `data`, with the 8 bytes at
/// `checksum_offset` taken as zero (the checksum's own storage).
uint64_t computeArtifactChecksum(const uint8_t *data, size_t size,
                                 size_t checksum_offset);

/// Runs every check listed above on a buffer.
Status validateArtifact(const uint8_t *data, size_t size);

/// A validated artifact.
class Artifact {
public:
  /// Validates `bytes` and takes ownership of them.
  static StatusOr<std::unique_ptr<Artifact>> fromBytes(std::vector<uint8_t> bytes);
  /// Reads and validates the file at `path`; errors are prefixed with the path.
  static StatusOr<std::unique_ptr<Artifact>> fromFile(const std::string &path);

  /// The root table.
  const artifact::ArtifactDef &def() const { return *def_; }
  /// The raw file bytes.
  const std::vector<uint8_t> &bytes() const { return bytes_; }

  /// The kernels and plans for `target`, or NOT_FOUND naming the targets the
  /// artifact does have.
  StatusOr<const artifact::TargetDef *> target(artifact::TargetKind kind) const;

  /// The plan for `step` in `target`, or NOT_FOUND.
  static StatusOr<const artifact::ExecutionPlan *>
  plan(const artifact::TargetDef &target, artifact::StepKind step);

  /// Ranks the artifact was compiled for: T * E of its parallel layout, 1
  /// without one.
  uint32_t numRanks() const;

  /// OK for an artifact of one rank; FAILED_PRECONDITION naming the layout
  /// otherwise ("artifact is compiled for 4 ranks (tensor-parallel 2 x
  /// expert-parallel 2); this tool runs one rank (...)"): what tools that
  /// run a Program without communicators check first.
  Status checkSingleRank() const;

private:
  explicit Artifact(std::vector<uint8_t> bytes);
  std::vector<uint8_t> bytes_;
  const artifact::ArtifactDef *def_ = nullptr;
};

/// Bytes per element of `dtype` (0 for invalid).
uint32_t dtypeBytes(artifact::DType dtype);

/// Parses a target name ("cpu", "gfx942", "gfx950", "sm_90", "sm_90a").
StatusOr<artifact::TargetKind> parseTargetKind(std::string_view name);

/// Parses a step name ("prefill", "decode", "mtp_draft", "mtp_verify").
StatusOr<artifact::StepKind> parseStepKind(std::string_view name);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_ARTIFACT_H
