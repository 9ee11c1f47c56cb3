//===- ArtifactWriter.h - build a strata artifact ---------------*- C++ -*-===//
//
// Part of strata. The compiler side of runtime/schemas/strata_artifact_def.fbs:
// plain C++ structs describing an artifact and serializeArtifact(), which
// turns them into the flatbuffer (with the content checksum filled in). The
// compiler writes artifacts only through this file. Enumerations are the
// schema's own (strata::artifact::TargetKind, DType, ...).
//
// The writer does not re-check the contract: the runtime loader validates
// every artifact before use, and the compiler's tests run it on what they
// write.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_ARTIFACT_ARTIFACTWRITER_H
#define STRATA_LIB_ARTIFACT_ARTIFACTWRITER_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include "runtime/schemas/strata_artifact_def_generated.h"

namespace mlir::strata {

namespace fb = ::strata::artifact;

/// The format version this writer emits (runtime/loader kArtifactFormatVersion
/// must agree).
inline constexpr uint32_t kArtifactFormatVersion = 1;

/// A size expression (postfix program over u64) built with operators:
/// `SizeExpression::symbol(fb::SizeSymbol::num_tokens) * 1024`.
class SizeExpression {
public:
  SizeExpression() = default;
  static SizeExpression constant(int64_t value);
  static SizeExpression symbol(fb::SizeSymbol symbol);

  friend SizeExpression operator+(SizeExpression a, const SizeExpression &b);
  friend SizeExpression operator*(SizeExpression a, const SizeExpression &b);
  static SizeExpression ceilDiv(SizeExpression a, const SizeExpression &b);
  static SizeExpression alignUp(SizeExpression a, const SizeExpression &b);
  static SizeExpression max(SizeExpression a, const SizeExpression &b);
  static SizeExpression min(SizeExpression a, const SizeExpression &b);
  /// 1 if a < b, else 0.
  static SizeExpression less(SizeExpression a, const SizeExpression &b);

  bool empty() const { return ops.empty(); }

  /// (opcode, operand) pairs in evaluation order.
  std::vector<std::pair<fb::SizeOpcode, int64_t>> ops;

private:
  static SizeExpression binary(SizeExpression a, const SizeExpression &b,
                               fb::SizeOpcode opcode);
};
SizeExpression operator+(SizeExpression a, int64_t b);
SizeExpression operator*(SizeExpression a, int64_t b);

/// One kernel argument (schema KernelArg).
struct KernelArgDesc {
  std::string name;
  fb::ArgKind kind = fb::ArgKind::buffer;
  fb::DType dtype = fb::DType::invalid;
  /// Static extents, -1 for dynamic; empty for scalars.
  std::vector<int64_t> staticShape;
};

/// GPU launch geometry (schema LaunchInfo).
struct LaunchDesc {
  uint32_t block[3] = {1, 1, 1};
  SizeExpression grid[3];
  uint64_t sharedMemoryBytes = 0;
  /// Dynamic shared memory per block as a function of the step's sizes, at
  /// most sharedMemoryBytes; absent: sharedMemoryBytes for every dispatch.
  std::optional<SizeExpression> sharedMemory;
  /// The matrix-unit instruction of the kernel's inner loop (TargetInfo
  /// mnemonic); empty for kernels without one.
  std::string matrixInstruction;
  /// The kernel waits for its predecessor itself (schema
  /// grid_dependency_control).
  bool gridDependencyControl = false;
};

/// One kernel (schema Kernel); target and chip come from the enclosing target.
struct KernelDesc {
  std::string name;
  uint32_t binaryIndex = 0;
  std::string entrySymbol;
  std::vector<KernelArgDesc> args;
  std::optional<LaunchDesc> launch;
};

/// One binary (schema KernelBinary).
struct BinaryDesc {
  fb::BinaryFormat format = fb::BinaryFormat::elf_so;
  std::vector<uint8_t> data;
};

/// One binding (schema Binding); use the factory functions.
struct BindingDesc {
  fb::BindingKind kind = fb::BindingKind::buffer;
  uint32_t index = 0;
  std::optional<SizeExpression> offsetBytes;
  std::vector<SizeExpression> shape;
  SizeExpression value;
  double floatValue = 0.0;

  static BindingDesc weight(uint32_t manifestIndex,
                            std::vector<SizeExpression> shape);
  static BindingDesc buffer(uint32_t bufferId,
                            std::vector<SizeExpression> shape);
  static BindingDesc cache(uint32_t cacheId, std::vector<SizeExpression> shape);
  static BindingDesc intScalar(SizeExpression value);
  static BindingDesc floatScalar(double value);
  /// The dispatch's part of the target's scratch buffer: `bytesPerBlock` in
  /// value, the region `[totalBytes]` (grid blocks x bytes per block).
  static BindingDesc scratch(SizeExpression bytesPerBlock,
                             SizeExpression totalBytes);
};

/// A collective step (schema Collective).
struct CollectiveDesc {
  fb::CollectiveKind kind = fb::CollectiveKind::all_reduce;
  fb::RankGroup group = fb::RankGroup::tp;
  fb::DType dtype = fb::DType::invalid;
  uint32_t dim = 0;
};

struct DispatchDesc {
  uint32_t kernelIndex = 0;
  std::vector<BindingDesc> bindings;
  std::string label;
  /// Set for a collective step: bindings are send and recv, kernelIndex 0.
  std::optional<CollectiveDesc> collective;
};

struct BufferDesc {
  std::string name;
  fb::BufferKind kind = fb::BufferKind::activation;
  SizeExpression sizeBytes;
};

struct PlanDesc {
  fb::StepKind step = fb::StepKind::prefill;
  std::vector<BufferDesc> buffers;
  std::vector<DispatchDesc> dispatches;
  /// ExecutionPlan.max_request_tokens (0: any).
  uint32_t maxRequestTokens = 0;
};

struct TargetDesc {
  fb::TargetKind kind = fb::TargetKind::cpu;
  std::string chip;
  std::vector<BinaryDesc> binaries;
  std::vector<KernelDesc> kernels;
  std::vector<PlanDesc> plans;
};

/// Model hyperparameters (schema ModelConfig).
struct ModelDesc {
  std::string name;
  uint64_t vocabSize = 0, hiddenSize = 0;
  uint32_t numHiddenLayers = 0, numNextnPredictLayers = 0;
  std::vector<fb::LayerKind> layerKinds;
  std::vector<fb::MlpKind> mlpKinds;
  uint32_t numAttentionHeads = 0, kvLoraRank = 0, qLoraRank = 0;
  uint32_t qkNopeHeadDim = 0, qkRopeHeadDim = 0, vHeadDim = 0;
  uint32_t indexNHeads = 0, indexHeadDim = 0, indexTopk = 0, indexKpool = 0;
  uint32_t hcMult = 0, nRoutedExperts = 0, nSharedExperts = 0;
  uint32_t numExpertsPerTok = 0;
  uint32_t kdaNumHeads = 0, kdaHeadDim = 0, shortConvKernelSize = 0;
  float rmsNormEps = 0.0f;
  uint64_t maxPositionEmbeddings = 0;
  int64_t eosTokenId = 0, padTokenId = 0;
  /// Every end-of-sequence id (eosTokenId is the first).
  std::vector<int64_t> eosTokenIds;
  /// Element type of the activations (strata-compile --activation-type);
  /// invalid: not recorded.
  fb::DType activationDtype = fb::DType::invalid;
};

struct MlaLatentDesc {
  uint32_t numLayers = 0;
  fb::DType dtype = fb::DType::bf16;
  uint64_t rowElements = 0, rowBytes = 0, pageBytes = 0;
};
struct IndexPagesDesc {
  uint32_t numLayers = 0;
  uint64_t rowsPerPage = 0;
  fb::DType valueDtype = fb::DType::f8e4m3fn;
  uint64_t valueBytes = 0;
  fb::DType scaleDtype = fb::DType::f32;
  fb::IndexScaleLayout scaleLayout = fb::IndexScaleLayout::values_then_scales;
  uint64_t rowStrideBytes = 0, pageBytes = 0;
};
struct TailRingDesc {
  uint32_t numLayers = 0, depth = 0, planes = 2;
  uint64_t rowElements = 0;
  fb::DType dtype = fb::DType::bf16;
  uint64_t bytesPerLayer = 0;
};
struct KdaStateDesc {
  uint32_t numLayers = 0, numHeads = 0, headDimK = 0, headDimV = 0;
  fb::DType recurrentDtype = fb::DType::f32;
  uint64_t recurrentBytesPerLayer = 0;
  uint32_t convKernelSize = 0;
  uint64_t convChannels = 0;
  fb::DType convDtype = fb::DType::bf16;
  uint64_t convBytesPerLayer = 0;
};
struct SharedSelectionDesc {
  uint32_t numLayers = 0, rows = 0;
  uint64_t rowElements = 0, bytesPerLayer = 0;
};
struct CacheDesc {
  std::string name;
  fb::CacheKind kind = fb::CacheKind::mla_latent;
  uint32_t layer = 0, slot = 0;
};
struct CacheLayoutDesc {
  uint64_t alignment = 256;
  uint64_t pageSizeTokens = 0;
  std::optional<MlaLatentDesc> mlaLatent;
  std::optional<IndexPagesDesc> indexPages;
  std::optional<TailRingDesc> tailRing;
  std::optional<KdaStateDesc> kda;
  std::vector<CacheDesc> caches;
  std::optional<SharedSelectionDesc> sharedSelection;
};

/// Options of computeCacheLayout.
struct CacheLayoutOptions {
  /// KV page size in tokens (a multiple of index_kpool).
  uint64_t pageSizeTokens = 64;
  /// Alignment of every page and state.
  uint64_t alignment = 256;
  /// Speculative tokens per request (0 without MTP); sizes the tail ring.
  uint32_t numSpeculative = 0;
};

/// Derives the cache layout of `model` (MLA latent rows of kv_lora_rank +
/// qk_rope_head_dim bf16 values, fp8 pooled index rows with one f32 scale
/// stored values-then-scales, the tail ring depth next_pow2(P + 2 (n_spec +
/// 1)) or P without speculation, KDA f32 recurrent and bf16 conv state) and
/// one CacheDef per layer and cache kind, MTP layers after the decoder.
CacheLayoutDesc computeCacheLayout(const ModelDesc &model,
                                   const CacheLayoutOptions &options);

/// One split dimension of a checkpoint tensor (WeightShard).
struct WeightShardDesc {
  uint32_t dim = 0;
  uint32_t parts = 1;
  fb::RankGroup group = fb::RankGroup::tp;
  /// A block-scale tensor's split (block > 0): one data part's extent and
  /// the data elements per scale (runtime/schemas/weight_shard_extent.h).
  int64_t dataExtent = 0;
  int64_t block = 0;
};

struct WeightDesc {
  std::string name;
  fb::DType dtype = fb::DType::invalid;
  /// With shards: the extents one rank reads.
  std::vector<int64_t> shape;
  fb::WeightTransform transform = fb::WeightTransform::none;
  fb::DType runtimeDtype = fb::DType::invalid;
  std::string scaleName;
  fb::DType scaleDtype = fb::DType::invalid;
  std::vector<int64_t> scaleShape;
  /// Tensor/expert-parallel splits; empty: every rank reads the whole tensor.
  std::vector<WeightShardDesc> shards;
  /// Not written: the block extent of each dimension of the scale tensor
  /// ({1, 128, 128} for stacked fp8 experts), from which
  /// computeParallelLayout derives scale offsets. Empty without a scale.
  std::vector<int64_t> scaleBlock;
};

/// Where one rank's slice of one checkpoint tensor starts (WeightSlice).
struct WeightSliceDesc {
  std::vector<int64_t> offsets;
  std::vector<int64_t> scaleOffsets;
};

/// The rank layout of a sharded artifact (ParallelLayout).
struct ParallelDesc {
  uint32_t tensorParallelSize = 1;
  uint32_t expertParallelSize = 1;
  /// Per rank (T * E, rank order), per weight (ArtifactDesc.weights order).
  std::vector<std::vector<WeightSliceDesc>> ranks;
};

/// The slices every rank of a T x E layout reads: rank r's coordinate in
/// a shard's group (tp: r % T, ep: r / T, world: r) times the extent in each
/// sharded dimension (a block-scale split: times the data extent over the
/// block, rounded down), 0 elsewhere; scale offsets are those offsets
/// divided by `scaleBlock`, rounded down.
ParallelDesc computeParallelLayout(const std::vector<WeightDesc> &weights,
                                   uint32_t tensorParallelSize,
                                   uint32_t expertParallelSize);

struct SourceLocationDesc {
  std::string file;
  uint32_t line = 0, column = 0;
  std::string note;
};
struct KernelDebugDesc {
  fb::TargetKind target = fb::TargetKind::cpu;
  uint32_t kernelIndex = 0;
  std::vector<SourceLocationDesc> locations;
};

/// A whole artifact.
struct ArtifactDesc {
  /// Format version to write (tests write other values to test rejection).
  uint32_t formatVersion = kArtifactFormatVersion;
  std::string producer;
  ModelDesc model;
  std::vector<TargetDesc> targets;
  CacheLayoutDesc cacheLayout;
  std::vector<WeightDesc> weights;
  /// Written only when set (a layout of more than one rank).
  std::optional<ParallelDesc> parallel;
  /// Debug info is written only when non-empty.
  std::vector<KernelDebugDesc> debugKernels;
};

/// Serializes `artifact` into flatbuffer bytes with the checksum filled in.
std::vector<uint8_t> serializeArtifact(const ArtifactDesc &artifact);

/// Serializes `artifact` and writes it to `path` atomically.
llvm::Error writeArtifactFile(const ArtifactDesc &artifact,
                              llvm::StringRef path);

/// FNV-1a 64 of `data` with the 8 bytes at `checksumOffset` taken as zero
/// (the same function as runtime/loader computeArtifactChecksum).
uint64_t computeArtifactChecksum(const uint8_t *data, size_t size,
                                 size_t checksumOffset);

} // namespace mlir::strata

#endif // STRATA_LIB_ARTIFACT_ARTIFACTWRITER_H
