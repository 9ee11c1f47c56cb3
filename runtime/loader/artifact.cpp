//===- artifact.cpp - load a strata artifact ------------------------------===//
//
// Part of strata. File reading, identifier/verifier/version/checksum checks
// and lookups; the semantic checks are in artifact_validate.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/artifact.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace strata::runtime {

using namespace strata::artifact;

/// Semantic checks (artifact_validate.cpp).
Status validateArtifactContents(const ArtifactDef &def);

uint64_t computeArtifactChecksum(const uint8_t *data, size_t size,
                                 size_t checksum_offset) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    uint8_t byte = (i >= checksum_offset && i < checksum_offset + 8) ? 0 : data[i];
    hash = (hash ^ byte) * 0x100000001b3ull;
  }
  return hash;
}

Status validateArtifact(const uint8_t *data, size_t size) {
  if (size < 8)
    return invalidArgument("not a strata artifact: file of {} bytes is too "
                           "small",
                           size);
  if (!flatbuffers::BufferHasIdentifier(data, ArtifactDefIdentifier())) {
    std::string found;
    for (int i = 4; i < 8; ++i)
      found += (data[i] >= 0x20 && data[i] < 0x7f)
                   ? std::string(1, static_cast<char>(data[i]))
                   : fmt::format("\\x{:02x}", data[i]);
    return invalidArgument(
        "not a strata artifact: file identifier is '{}', expected '{}'", found,
        ArtifactDefIdentifier());
  }
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64,
                                 /*max_tables=*/10000000);
  if (!VerifyArtifactDefBuffer(verifier))
    return dataLoss("artifact is truncated or corrupt: flatbuffer "
                    "verification failed ({} bytes)",
                    size);
  const ArtifactDef *def = GetArtifactDef(data);
  uint32_t version = def->format_version();
  if (version > kArtifactFormatVersion)
    return failedPrecondition(
        "artifact format version {} is newer than this runtime supports ({}); "
        "update the runtime",
        version, kArtifactFormatVersion);
  if (version < kArtifactFormatVersion)
    return failedPrecondition(
        "artifact format version {} is older than this runtime supports ({}); "
        "recompile the model",
        version, kArtifactFormatVersion);
  const Checksum *checksum = def->checksum();
  if (!checksum)
    return dataLoss("artifact has no checksum");
  size_t offset = reinterpret_cast<const uint8_t *>(checksum) - data;
  uint64_t actual = computeArtifactChecksum(data, size, offset);
  if (actual != checksum->value())
    return dataLoss("artifact checksum mismatch: stored {:#018x}, computed "
                    "{:#018x} (the file is corrupt)",
                    checksum->value(), actual);
  return validateArtifactContents(*def).withContext("invalid artifact");
}

Artifact::Artifact(std::vector<uint8_t> bytes)
    : bytes_(std::move(bytes)), def_(GetArtifactDef(bytes_.data())) {}

StatusOr<std::unique_ptr<Artifact>>
Artifact::fromBytes(std::vector<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(validateArtifact(bytes.data(), bytes.size()));
  return std::unique_ptr<Artifact>(new Artifact(std::move(bytes)));
}

StatusOr<std::unique_ptr<Artifact>> Artifact::fromFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return notFound("{}: cannot open: {}", path, std::strerror(errno));
  std::streamoff size = in.tellg();
  if (size < 0)
    return unavailable("{}: cannot read", path);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(reinterpret_cast<char *>(bytes.data()), size))
    return unavailable("{}: cannot read {} bytes", path, size);
  StatusOr<std::unique_ptr<Artifact>> artifact = fromBytes(std::move(bytes));
  if (!artifact.ok())
    return artifact.status().withContext(path);
  return artifact;
}

StatusOr<const TargetDef *> Artifact::target(TargetKind kind) const {
  std::string available;
  if (def_->targets()) {
    for (const TargetDef *target : *def_->targets()) {
      if (target->target() == kind)
        return target;
      available += available.empty() ? "" : ", ";
      available += EnumNameTargetKind(target->target());
    }
  }
  return notFound("artifact has no kernels for target '{}' (it has: {})",
                  EnumNameTargetKind(kind),
                  available.empty() ? "none" : available);
}

StatusOr<const ExecutionPlan *> Artifact::plan(const TargetDef &target,
                                               StepKind step) {
  if (target.plans())
    for (const ExecutionPlan *plan : *target.plans())
      if (plan->step() == step)
        return plan;
  return notFound("target '{}' has no '{}' plan",
                  EnumNameTargetKind(target.target()), EnumNameStepKind(step));
}

uint32_t dtypeBytes(DType dtype) {
  switch (dtype) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::f8e4m3fn:
  case DType::f8e5m2:
  case DType::i8:
  case DType::u8:
  case DType::boolean:
    return 1;
  case DType::i64:
  case DType::f64:
    return 8;
  case DType::invalid:
    return 0;
  }
  return 0;
}

StatusOr<TargetKind> parseTargetKind(std::string_view name) {
  for (TargetKind kind : EnumValuesTargetKind())
    if (name == EnumNameTargetKind(kind))
      return kind;
  return invalidArgument(
      "unknown target '{}' (expected cpu, gfx942, gfx950, sm_90 or sm_90a)",
      name);
}

StatusOr<StepKind> parseStepKind(std::string_view name) {
  for (StepKind kind : EnumValuesStepKind())
    if (name == EnumNameStepKind(kind))
      return kind;
  return invalidArgument(
      "unknown step '{}' (expected prefill, decode, mtp_draft, mtp_verify or "
      "mtp_chain)",
      name);
}

uint32_t Artifact::numRanks() const {
  const artifact::ParallelLayout *layout = def_->parallel();
  return layout
             ? layout->tensor_parallel_size() * layout->expert_parallel_size()
             : 1;
}

Status Artifact::checkSingleRank() const {
  if (numRanks() == 1)
    return okStatus();
  const artifact::ParallelLayout *layout = def_->parallel();
  return failedPrecondition(
      "artifact is compiled for {} ranks (tensor-parallel {} x "
      "expert-parallel {}); this tool runs one rank (strata-run runs one "
      "process per rank; docs/Parallel.md)",
      numRanks(), layout->tensor_parallel_size(),
      layout->expert_parallel_size());
}

} // namespace strata::runtime
