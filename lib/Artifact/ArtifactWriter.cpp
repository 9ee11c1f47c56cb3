//===- ArtifactWriter.cpp - build a strata artifact -----------------------===//
//
// Part of strata. Serializes ArtifactDesc into the flatbuffer of
// runtime/schemas/strata_artifact_def.fbs. The checksum struct is written as
// zero, the FNV-1a 64 of the finished buffer is computed with those 8 bytes as
// zero, and the value is patched into place.
//
//===----------------------------------------------------------------------===//

#include "lib/Artifact/ArtifactWriter.h"
#include "runtime/schemas/weight_shard_extent.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::strata;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

//===----------------------------------------------------------------------===//
// SizeExpression
//===----------------------------------------------------------------------===//

SizeExpression SizeExpression::constant(int64_t value) {
  SizeExpression e;
  e.ops.push_back({fb::SizeOpcode::constant, value});
  return e;
}

SizeExpression SizeExpression::symbol(fb::SizeSymbol symbol) {
  SizeExpression e;
  e.ops.push_back({fb::SizeOpcode::symbol, static_cast<int64_t>(symbol)});
  return e;
}

SizeExpression SizeExpression::binary(SizeExpression a, const SizeExpression &b,
                                      fb::SizeOpcode opcode) {
  a.ops.insert(a.ops.end(), b.ops.begin(), b.ops.end());
  a.ops.push_back({opcode, 0});
  return a;
}

SizeExpression mlir::strata::operator+(SizeExpression a,
                                       const SizeExpression &b) {
  return SizeExpression::binary(std::move(a), b, fb::SizeOpcode::add);
}
SizeExpression mlir::strata::operator*(SizeExpression a,
                                       const SizeExpression &b) {
  return SizeExpression::binary(std::move(a), b, fb::SizeOpcode::mul);
}
SizeExpression mlir::strata::operator+(SizeExpression a, int64_t b) {
  return std::move(a) + SizeExpression::constant(b);
}
SizeExpression mlir::strata::operator*(SizeExpression a, int64_t b) {
  return std::move(a) * SizeExpression::constant(b);
}
SizeExpression SizeExpression::ceilDiv(SizeExpression a,
                                       const SizeExpression &b) {
  return binary(std::move(a), b, fb::SizeOpcode::ceil_div);
}
SizeExpression SizeExpression::alignUp(SizeExpression a,
                                       const SizeExpression &b) {
  return binary(std::move(a), b, fb::SizeOpcode::align_up);
}
SizeExpression SizeExpression::max(SizeExpression a, const SizeExpression &b) {
  return binary(std::move(a), b, fb::SizeOpcode::max);
}

SizeExpression SizeExpression::min(SizeExpression a, const SizeExpression &b) {
  return binary(std::move(a), b, fb::SizeOpcode::min);
}

SizeExpression SizeExpression::less(SizeExpression a,
                                    const SizeExpression &b) {
  return binary(std::move(a), b, fb::SizeOpcode::less);
}

//===----------------------------------------------------------------------===//
// BindingDesc
//===----------------------------------------------------------------------===//

BindingDesc BindingDesc::weight(uint32_t manifestIndex,
                                std::vector<SizeExpression> shape) {
  BindingDesc b;
  b.kind = fb::BindingKind::weight;
  b.index = manifestIndex;
  b.shape = std::move(shape);
  return b;
}
BindingDesc BindingDesc::buffer(uint32_t bufferId,
                                std::vector<SizeExpression> shape) {
  BindingDesc b;
  b.kind = fb::BindingKind::buffer;
  b.index = bufferId;
  b.shape = std::move(shape);
  return b;
}
BindingDesc BindingDesc::cache(uint32_t cacheId,
                               std::vector<SizeExpression> shape) {
  BindingDesc b;
  b.kind = fb::BindingKind::cache;
  b.index = cacheId;
  b.shape = std::move(shape);
  return b;
}
BindingDesc BindingDesc::intScalar(SizeExpression value) {
  BindingDesc b;
  b.kind = fb::BindingKind::int_scalar;
  b.value = std::move(value);
  return b;
}
BindingDesc BindingDesc::scratch(SizeExpression bytesPerBlock,
                                 SizeExpression totalBytes) {
  BindingDesc b;
  b.kind = fb::BindingKind::scratch;
  b.value = std::move(bytesPerBlock);
  b.shape.push_back(std::move(totalBytes));
  return b;
}
BindingDesc BindingDesc::floatScalar(double value) {
  BindingDesc b;
  b.kind = fb::BindingKind::float_scalar;
  b.floatValue = value;
  return b;
}

//===----------------------------------------------------------------------===//
// Cache layout
//===----------------------------------------------------------------------===//

static uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

static uint32_t nextPowerOfTwo(uint32_t value) {
  uint32_t result = 1;
  while (result < value)
    result <<= 1;
  return result;
}

CacheLayoutDesc mlir::strata::computeCacheLayout(
    const ModelDesc &model, const CacheLayoutOptions &options) {
  CacheLayoutDesc layout;
  layout.alignment = options.alignment;
  layout.pageSizeTokens = options.pageSizeTokens;
  uint64_t align = options.alignment;
  uint32_t numLayers = model.numHiddenLayers + model.numNextnPredictLayers;
  // MTP layers are MLA layers with their own indexer (spec §4).
  std::vector<uint32_t> mlaLayers, kdaLayers;
  for (uint32_t l = 0; l < numLayers; ++l) {
    bool mla = l >= model.numHiddenLayers ||
               model.layerKinds[l] == fb::LayerKind::mla;
    (mla ? mlaLayers : kdaLayers).push_back(l);
  }
  if (!mlaLayers.empty()) {
    MlaLatentDesc mla;
    mla.numLayers = mlaLayers.size();
    mla.dtype = fb::DType::bf16;
    mla.rowElements = model.kvLoraRank + model.qkRopeHeadDim;
    mla.rowBytes = mla.rowElements * 2;
    mla.pageBytes = alignTo(options.pageSizeTokens * mla.rowBytes, align);
    layout.mlaLatent = mla;

    IndexPagesDesc index;
    index.numLayers = mlaLayers.size();
    index.rowsPerPage = options.pageSizeTokens / model.indexKpool;
    index.valueDtype = fb::DType::f8e4m3fn;
    index.valueBytes = model.indexHeadDim;
    index.scaleDtype = fb::DType::f32;
    index.scaleLayout = fb::IndexScaleLayout::values_then_scales;
    index.rowStrideBytes = index.valueBytes;
    index.pageBytes = alignTo(index.rowsPerPage * (index.valueBytes + 4), align);
    layout.indexPages = index;

    TailRingDesc ring;
    ring.numLayers = mlaLayers.size();
    ring.depth = options.numSpeculative == 0
                     ? nextPowerOfTwo(model.indexKpool)
                     : nextPowerOfTwo(model.indexKpool +
                                      2 * (options.numSpeculative + 1));
    ring.planes = 2;
    ring.rowElements = model.indexHeadDim;
    ring.dtype = fb::DType::bf16;
    ring.bytesPerLayer =
        alignTo(uint64_t(ring.planes) * ring.depth * ring.rowElements * 2,
                align);
    layout.tailRing = ring;
  }
  if (!kdaLayers.empty()) {
    KdaStateDesc kda;
    kda.numLayers = kdaLayers.size();
    kda.numHeads = model.kdaNumHeads;
    kda.headDimK = model.kdaHeadDim;
    kda.headDimV = model.kdaHeadDim;
    kda.recurrentDtype = fb::DType::f32;
    kda.recurrentBytesPerLayer =
        alignTo(uint64_t(kda.numHeads) * kda.headDimK * kda.headDimV * 4, align);
    kda.convKernelSize = model.shortConvKernelSize;
    kda.convChannels = 3ull * model.kdaNumHeads * model.kdaHeadDim;
    kda.convDtype = fb::DType::bf16;
    kda.convBytesPerLayer = alignTo(
        uint64_t(kda.convKernelSize - 1) * kda.convChannels * 2, align);
    layout.kda = kda;
  }
  auto add = [&](fb::CacheKind kind, uint32_t layer, uint32_t slot) {
    layout.caches.push_back(
        {"layer" + std::to_string(layer) + "." + fb::EnumNameCacheKind(kind),
         kind, layer, slot});
  };
  for (uint32_t s = 0; s < mlaLayers.size(); ++s) {
    add(fb::CacheKind::mla_latent, mlaLayers[s], s);
    add(fb::CacheKind::index_pages, mlaLayers[s], s);
    add(fb::CacheKind::tail_ring, mlaLayers[s], s);
  }
  for (uint32_t s = 0; s < kdaLayers.size(); ++s) {
    add(fb::CacheKind::kda_recurrent, kdaLayers[s], s);
    add(fb::CacheKind::kda_conv, kdaLayers[s], s);
  }
  return layout;
}

//===----------------------------------------------------------------------===//
// Serialization
//===----------------------------------------------------------------------===//

namespace {

class Serializer {
public:
  explicit Serializer(FlatBufferBuilder &b) : b(b) {}

  Offset<fb::SizeExpr> expr(const SizeExpression &e) {
    std::vector<fb::SizeOp> ops;
    for (auto [opcode, operand] : e.ops)
      ops.emplace_back(static_cast<uint8_t>(opcode), operand);
    return fb::CreateSizeExprDirect(b, &ops);
  }

  Offset<flatbuffers::Vector<Offset<fb::SizeExpr>>>
  exprs(const std::vector<SizeExpression> &list) {
    std::vector<Offset<fb::SizeExpr>> offsets;
    for (const SizeExpression &e : list)
      offsets.push_back(expr(e));
    return b.CreateVector(offsets);
  }

  Offset<fb::Kernel> kernel(const TargetDesc &t, const KernelDesc &k) {
    std::vector<Offset<fb::KernelArg>> args;
    for (const KernelArgDesc &a : k.args)
      args.push_back(fb::CreateKernelArgDirect(
          b, a.name.c_str(), a.kind, a.dtype,
          a.kind == fb::ArgKind::buffer ? a.staticShape.size() : 0,
          &a.staticShape));
    Offset<fb::LaunchInfo> launch;
    if (k.launch) {
      std::vector<uint32_t> block(k.launch->block, k.launch->block + 3);
      std::vector<SizeExpression> grid(k.launch->grid, k.launch->grid + 3);
      launch = fb::CreateLaunchInfo(
          b, b.CreateVector(block), exprs(grid), k.launch->sharedMemoryBytes,
          k.launch->matrixInstruction.empty()
              ? 0
              : b.CreateString(k.launch->matrixInstruction),
          k.launch->sharedMemory ? expr(*k.launch->sharedMemory) : 0,
          k.launch->gridDependencyControl);
    }
    fb::KernelAbi abi = t.kind == fb::TargetKind::cpu
                            ? fb::KernelAbi::packed_memref_descriptor
                            : fb::KernelAbi::gpu_memref_descriptor;
    return fb::CreateKernelDirect(b, k.name.c_str(), t.kind, t.chip.c_str(),
                                  k.binaryIndex, k.entrySymbol.c_str(), abi,
                                  &args, launch);
  }

  Offset<fb::Binding> binding(const BindingDesc &d) {
    Offset<fb::SizeExpr> offset, value;
    if (d.offsetBytes)
      offset = expr(*d.offsetBytes);
    if (!d.value.empty())
      value = expr(d.value);
    auto shape = exprs(d.shape);
    return fb::CreateBinding(b, d.kind, d.index, offset, shape, value,
                             d.floatValue);
  }

  Offset<fb::ExecutionPlan> plan(const PlanDesc &p) {
    std::vector<Offset<fb::BufferDef>> buffers;
    for (const BufferDesc &buf : p.buffers) {
      auto size = expr(buf.sizeBytes);
      buffers.push_back(
          fb::CreateBufferDefDirect(b, buf.name.c_str(), buf.kind, size));
    }
    std::vector<Offset<fb::Dispatch>> dispatches;
    for (const DispatchDesc &d : p.dispatches) {
      std::vector<Offset<fb::Binding>> bindings;
      for (const BindingDesc &bd : d.bindings)
        bindings.push_back(binding(bd));
      Offset<fb::Collective> collective;
      if (d.collective)
        collective = fb::CreateCollective(b, d.collective->kind,
                                          d.collective->group,
                                          d.collective->dtype,
                                          d.collective->dim);
      dispatches.push_back(fb::CreateDispatchDirect(
          b, d.kernelIndex, &bindings, d.label.c_str(), collective));
    }
    return fb::CreateExecutionPlanDirect(b, p.step, &buffers, &dispatches,
                                         p.maxRequestTokens);
  }

  Offset<fb::TargetDef> target(const TargetDesc &t) {
    std::vector<Offset<fb::KernelBinary>> binaries;
    for (const BinaryDesc &bin : t.binaries) {
      b.ForceVectorAlignment(bin.data.size(), 1, 16);
      auto data = b.CreateVector(bin.data);
      binaries.push_back(fb::CreateKernelBinary(b, bin.format, data));
    }
    std::vector<Offset<fb::Kernel>> kernels;
    for (const KernelDesc &k : t.kernels)
      kernels.push_back(kernel(t, k));
    std::vector<Offset<fb::ExecutionPlan>> plans;
    for (const PlanDesc &p : t.plans)
      plans.push_back(plan(p));
    return fb::CreateTargetDefDirect(b, t.kind, t.chip.c_str(), &binaries,
                                     &kernels, &plans);
  }

  Offset<fb::ModelConfig> model(const ModelDesc &m) {
    std::vector<uint8_t> layers, mlps;
    for (fb::LayerKind k : m.layerKinds)
      layers.push_back(static_cast<uint8_t>(k));
    for (fb::MlpKind k : m.mlpKinds)
      mlps.push_back(static_cast<uint8_t>(k));
    auto name = b.CreateString(m.name);
    auto layerVec = b.CreateVector(
        reinterpret_cast<const fb::LayerKind *>(layers.data()), layers.size());
    auto mlpVec = b.CreateVector(
        reinterpret_cast<const fb::MlpKind *>(mlps.data()), mlps.size());
    auto eosVec = b.CreateVector(m.eosTokenIds);
    return fb::CreateModelConfig(
        b, name, m.vocabSize, m.hiddenSize, m.numHiddenLayers,
        m.numNextnPredictLayers, layerVec, mlpVec, m.numAttentionHeads,
        m.kvLoraRank, m.qLoraRank, m.qkNopeHeadDim, m.qkRopeHeadDim,
        m.vHeadDim, m.indexNHeads, m.indexHeadDim, m.indexTopk, m.indexKpool,
        m.hcMult, m.nRoutedExperts, m.nSharedExperts, m.numExpertsPerTok,
        m.kdaNumHeads, m.kdaHeadDim, m.shortConvKernelSize, m.rmsNormEps,
        m.maxPositionEmbeddings, m.eosTokenId, m.padTokenId, eosVec,
        m.activationDtype);
  }

  Offset<fb::CacheLayout> cacheLayout(const CacheLayoutDesc &c) {
    Offset<fb::MlaLatentCache> mla;
    Offset<fb::IndexPageCache> index;
    Offset<fb::TailRingCache> ring;
    Offset<fb::KdaStateCache> kda;
    Offset<fb::SharedSelectionCache> shared;
    if (const auto &m = c.mlaLatent)
      mla = fb::CreateMlaLatentCache(b, m->numLayers, m->dtype, m->rowElements,
                                     m->rowBytes, m->pageBytes);
    if (const auto &i = c.indexPages)
      index = fb::CreateIndexPageCache(b, i->numLayers, i->rowsPerPage,
                                       i->valueDtype, i->valueBytes,
                                       i->scaleDtype, i->scaleLayout,
                                       i->rowStrideBytes, i->pageBytes);
    if (const auto &r = c.tailRing)
      ring = fb::CreateTailRingCache(b, r->numLayers, r->depth, r->planes,
                                     r->rowElements, r->dtype,
                                     r->bytesPerLayer);
    if (const auto &k = c.kda)
      kda = fb::CreateKdaStateCache(
          b, k->numLayers, k->numHeads, k->headDimK, k->headDimV,
          k->recurrentDtype, k->recurrentBytesPerLayer, k->convKernelSize,
          k->convChannels, k->convDtype, k->convBytesPerLayer);
    if (const auto &s = c.sharedSelection)
      shared = fb::CreateSharedSelectionCache(b, s->numLayers, s->rows,
                                              s->rowElements, s->bytesPerLayer);
    std::vector<Offset<fb::CacheDef>> caches;
    for (const CacheDesc &cache : c.caches)
      caches.push_back(fb::CreateCacheDefDirect(b, cache.name.c_str(),
                                                cache.kind, cache.layer,
                                                cache.slot));
    return fb::CreateCacheLayoutDirect(b, c.alignment, c.pageSizeTokens, mla,
                                       index, ring, kda, &caches, shared);
  }

  Offset<fb::WeightEntry> weight(const WeightDesc &w) {
    std::vector<Offset<fb::WeightShard>> shards;
    for (const WeightShardDesc &shard : w.shards)
      shards.push_back(
          fb::CreateWeightShard(b, shard.dim, shard.parts, shard.group,
                                shard.dataExtent, shard.block));
    return fb::CreateWeightEntryDirect(
        b, w.name.c_str(), w.dtype, &w.shape, w.transform, w.runtimeDtype,
        w.scaleName.c_str(), w.scaleDtype, &w.scaleShape,
        shards.empty() ? nullptr : &shards);
  }

  Offset<fb::ParallelLayout> parallel(const ParallelDesc &p) {
    std::vector<Offset<fb::RankManifest>> ranks;
    for (const std::vector<WeightSliceDesc> &rank : p.ranks) {
      std::vector<Offset<fb::WeightSlice>> slices;
      for (const WeightSliceDesc &slice : rank)
        slices.push_back(fb::CreateWeightSliceDirect(b, &slice.offsets,
                                                     &slice.scaleOffsets));
      ranks.push_back(fb::CreateRankManifestDirect(b, &slices));
    }
    return fb::CreateParallelLayoutDirect(b, p.tensorParallelSize,
                                          p.expertParallelSize, &ranks);
  }

  Offset<fb::DebugInfo> debugInfo(const std::vector<KernelDebugDesc> &list) {
    std::vector<Offset<fb::KernelDebugInfo>> kernels;
    for (const KernelDebugDesc &k : list) {
      std::vector<Offset<fb::SourceLocation>> locations;
      for (const SourceLocationDesc &l : k.locations)
        locations.push_back(fb::CreateSourceLocationDirect(
            b, l.file.c_str(), l.line, l.column, l.note.c_str()));
      kernels.push_back(fb::CreateKernelDebugInfoDirect(b, k.target,
                                                        k.kernelIndex,
                                                        &locations));
    }
    return fb::CreateDebugInfoDirect(b, &kernels);
  }

private:
  FlatBufferBuilder &b;
};

} // namespace

ParallelDesc
mlir::strata::computeParallelLayout(const std::vector<WeightDesc> &weights,
                                    uint32_t tensorParallelSize,
                                    uint32_t expertParallelSize) {
  ParallelDesc layout;
  layout.tensorParallelSize = tensorParallelSize;
  layout.expertParallelSize = expertParallelSize;
  uint32_t ranks = tensorParallelSize * expertParallelSize;
  for (uint32_t rank = 0; rank < ranks; ++rank) {
    std::vector<WeightSliceDesc> slices;
    for (const WeightDesc &w : weights) {
      WeightSliceDesc slice;
      slice.offsets.assign(w.shape.size(), 0);
      for (const WeightShardDesc &shard : w.shards) {
        uint32_t coordinate =
            shard.group == fb::RankGroup::tp   ? rank % tensorParallelSize
            : shard.group == fb::RankGroup::ep ? rank / tensorParallelSize
                                               : rank;
        slice.offsets[shard.dim] =
            ::strata::weightShardOffset(coordinate, w.shape[shard.dim],
                              shard.dataExtent, shard.block);
      }
      if (!w.scaleShape.empty()) {
        if (w.scaleBlock.size() != w.shape.size())
          llvm::report_fatal_error(llvm::Twine("weight '") + w.name +
                                   "' has a scale but no scale block per "
                                   "dimension");
        for (auto [d, offset] : llvm::enumerate(slice.offsets))
          slice.scaleOffsets.push_back(offset / w.scaleBlock[d]);
      }
      slices.push_back(std::move(slice));
    }
    layout.ranks.push_back(std::move(slices));
  }
  return layout;
}

uint64_t mlir::strata::computeArtifactChecksum(const uint8_t *data, size_t size,
                                               size_t checksumOffset) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    uint8_t byte =
        (i >= checksumOffset && i < checksumOffset + 8) ? 0 : data[i];
    hash = (hash ^ byte) * 0x100000001b3ull;
  }
  return hash;
}

std::vector<uint8_t> mlir::strata::serializeArtifact(const ArtifactDesc &a) {
  FlatBufferBuilder b(1 << 16);
  // Every scalar is stored, defaults included, so dumps and byte-level
  // tools (test/models/glm5_next/cpu/Inputs/patch_artifact.py) see them.
  b.ForceDefaults(true);
  Serializer s(b);
  std::vector<Offset<fb::TargetDef>> targets;
  for (const TargetDesc &t : a.targets)
    targets.push_back(s.target(t));
  auto targetVec = b.CreateVector(targets);
  auto model = s.model(a.model);
  auto cacheLayout = s.cacheLayout(a.cacheLayout);
  std::vector<Offset<fb::WeightEntry>> weights;
  for (const WeightDesc &w : a.weights)
    weights.push_back(s.weight(w));
  auto weightVec = b.CreateVector(weights);
  Offset<fb::DebugInfo> debug;
  if (!a.debugKernels.empty())
    debug = s.debugInfo(a.debugKernels);
  Offset<fb::ParallelLayout> parallel;
  if (a.parallel)
    parallel = s.parallel(*a.parallel);
  auto producer = b.CreateString(a.producer);
  fb::Checksum zero(0);
  auto root =
      fb::CreateArtifactDef(b, a.formatVersion, producer, &zero, model,
                            targetVec, cacheLayout, weightVec, debug, parallel);
  fb::FinishArtifactDefBuffer(b, root);

  std::vector<uint8_t> bytes(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  // Patch the checksum: find its storage through the finished buffer.
  const fb::ArtifactDef *def = fb::GetArtifactDef(bytes.data());
  size_t offset =
      reinterpret_cast<const uint8_t *>(def->checksum()) - bytes.data();
  flatbuffers::WriteScalar<uint64_t>(
      bytes.data() + offset,
      computeArtifactChecksum(bytes.data(), bytes.size(), offset));
  return bytes;
}

llvm::Error mlir::strata::writeArtifactFile(const ArtifactDesc &artifact,
                                            llvm::StringRef path) {
  std::vector<uint8_t> bytes = serializeArtifact(artifact);
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot open '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  out.os().write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  out.os().close();
  if (out.os().has_error())
    return llvm::createStringError(out.os().error(), "cannot write '%s'",
                                   path.str().c_str());
  out.keep();
  return llvm::Error::success();
}
