//===- ArtifactEmitter.cpp - kernel-phase module to artifact --------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Driver/ArtifactEmitter.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringMap.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/KernelPlan.h"
#include "lib/Driver/GpuKernelCompiler.h"
#include "runtime/schemas/mtp_draft_limit.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The DSL name of step argument `i` (`ids`, `layer3.latent_cache`, ...):
/// the NameLoc the frontend gives every entry argument.
std::string argumentName(func::FuncOp step, unsigned i) {
  Location loc = step.getArgument(i).getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// One cache operand of a step, before ids are assigned.
struct CacheUse {
  fb::CacheKind kind;
  uint32_t layer;
  Type type;
};

FailureOr<fb::CacheKind> cacheKindOf(Type llmType) {
  if (isa<llm::LatentPoolType>(llmType))
    return fb::CacheKind::mla_latent;
  if (isa<llm::IndexPoolType>(llmType))
    return fb::CacheKind::index_pages;
  if (isa<llm::TailRingType>(llmType))
    return fb::CacheKind::tail_ring;
  if (isa<llm::KdaStateType>(llmType))
    return fb::CacheKind::kda_recurrent;
  if (isa<llm::ConvStateType>(llmType))
    return fb::CacheKind::kda_conv;
  if (isa<llm::SharedSelectionType>(llmType))
    return fb::CacheKind::shared_selection;
  return failure();
}

bool isPaged(fb::CacheKind kind) {
  return kind == fb::CacheKind::mla_latent ||
         kind == fb::CacheKind::index_pages;
}

uint64_t elementBytes(Type type) {
  return (type.getIntOrFloatBitWidth() + 7) / 8;
}

/// Bytes of one page (paged kinds) or one slot (state kinds) of a cache of
/// llm type `type`, packed as its kernel memref (docs/Lowering.md).
uint64_t unitBytes(Type type) {
  MemRefType memref = getKernelMemRefType(type);
  uint64_t bytes = elementBytes(memref.getElementType());
  for (int64_t d : memref.getShape().drop_front())
    bytes *= d;
  return bytes;
}

/// The step's size that selects a grid dimension's form (GpuGridDim::forms):
/// extent 0 of the dispatch's argument 0 times the dimension's
/// stepMultiplier; none without that binding.
std::optional<SizeExpression> stepSizeOf(const DispatchDesc *dispatch,
                                         const GpuGridDim &dim) {
  if (!dispatch || dispatch->bindings.empty() ||
      dispatch->bindings[0].shape.empty())
    return std::nullopt;
  SizeExpression size = dispatch->bindings[0].shape[0];
  if (dim.stepMultiplier > 1)
    size = std::move(size) * SizeExpression::constant(dim.stepMultiplier);
  return size;
}

/// sum over `forms` of blocksOf(form) x [form's steps hold `stepSize`]:
/// the blocks of the one form that takes a step of that size.
SizeExpression
byStepForm(ArrayRef<GpuGridForm> forms, const SizeExpression &stepSize,
           llvm::function_ref<SizeExpression(const GpuGridForm &)> blocksOf) {
  std::optional<SizeExpression> sum;
  int64_t below = 0; // the previous form's largest step
  for (auto [i, form] : llvm::enumerate(forms)) {
    SizeExpression term = blocksOf(form);
    if (i > 0)
      term = std::move(term) *
             SizeExpression::less(SizeExpression::constant(below), stepSize);
    if (form.maxSize >= 0)
      term = std::move(term) *
             SizeExpression::less(stepSize,
                                  SizeExpression::constant(form.maxSize + 1));
    sum = sum ? std::move(*sum) + term : std::move(term);
    below = form.maxSize;
  }
  return sum ? std::move(*sum) : SizeExpression::constant(1);
}

/// The bytes per block of a kernel's scratch program (GpuKernelLibrary::
/// scratch) for the extents `dispatch` binds, folding constant parts.
FailureOr<SizeExpression> scratchBytes(ArrayRef<GpuScratchOp> program,
                                       const DispatchDesc &dispatch) {
  struct Entry {
    std::optional<int64_t> constant;
    SizeExpression expr;
  };
  std::vector<Entry> stack;
  auto constant = [](int64_t c) {
    return Entry{c, SizeExpression::constant(c)};
  };
  for (const GpuScratchOp &op : program) {
    switch (op.op) {
    case ScratchOp::Constant:
      stack.push_back(constant(op.a));
      continue;
    case ScratchOp::Extent: {
      if (op.a < 0 || static_cast<size_t>(op.a) >= dispatch.bindings.size())
        return failure();
      const std::vector<SizeExpression> &shape =
          dispatch.bindings[op.a].shape;
      if (op.b < 0 || static_cast<size_t>(op.b) >= shape.size())
        return failure();
      const SizeExpression &extent = shape[op.b];
      if (extent.ops.size() == 1 &&
          extent.ops[0].first == fb::SizeOpcode::constant)
        stack.push_back(constant(extent.ops[0].second));
      else
        stack.push_back({std::nullopt, extent});
      continue;
    }
    case ScratchOp::AlignUp: {
      if (stack.empty() || op.a <= 0)
        return failure();
      Entry &top = stack.back();
      if (top.constant)
        top = constant((*top.constant + op.a - 1) / op.a * op.a);
      else
        top.expr = SizeExpression::alignUp(top.expr,
                                           SizeExpression::constant(op.a));
      continue;
    }
    case ScratchOp::Add:
    case ScratchOp::Mul:
    case ScratchOp::Max:
    case ScratchOp::Less: {
      if (stack.size() < 2)
        return failure();
      Entry b = std::move(stack.back());
      stack.pop_back();
      Entry &a = stack.back();
      if (a.constant && b.constant) {
        int64_t x = *a.constant, y = *b.constant;
        a = constant(op.op == ScratchOp::Add   ? x + y
                     : op.op == ScratchOp::Mul ? x * y
                     : op.op == ScratchOp::Max ? std::max(x, y)
                                               : int64_t(x < y));
      } else {
        a.constant.reset();
        a.expr = op.op == ScratchOp::Add   ? a.expr + b.expr
                 : op.op == ScratchOp::Mul ? a.expr * b.expr
                 : op.op == ScratchOp::Max
                     ? SizeExpression::max(a.expr, b.expr)
                     : SizeExpression::less(a.expr, b.expr);
      }
      continue;
    }
    }
    return failure();
  }
  if (stack.size() != 1)
    return failure();
  return stack.back().expr;
}

/// The SizeSymbol of the running rank's coordinate in `group`.
fb::SizeSymbol rankSymbol(fb::RankGroup group) {
  switch (group) {
  case fb::RankGroup::tp:
    return fb::SizeSymbol::tp_rank;
  case fb::RankGroup::ep:
    return fb::SizeSymbol::ep_rank;
  case fb::RankGroup::world:
    break;
  }
  return fb::SizeSymbol::world_rank;
}

/// The schema form of a plan's collective.
FailureOr<CollectiveDesc> collectiveDesc(func::FuncOp step,
                                         const PlanCollective &collective) {
  CollectiveDesc desc;
  if (collective.kind == "all_reduce")
    desc.kind = fb::CollectiveKind::all_reduce;
  else if (collective.kind == "all_gather")
    desc.kind = fb::CollectiveKind::all_gather;
  else
    return step.emitError("unknown collective '") << collective.kind << "'";
  desc.group = static_cast<fb::RankGroup>(collective.group);
  FailureOr<fb::DType> dtype = toArtifactDType(collective.elementType);
  if (failed(dtype))
    return step.emitError("collective of element type ")
           << collective.elementType << ", which has no artifact dtype";
  desc.dtype = *dtype;
  desc.dim = static_cast<uint32_t>(collective.dim);
  return desc;
}

class Emitter {
public:
  Emitter(ModuleOp module, const ArtifactEmitOptions &options)
      : module(module), options(options) {}

  FailureOr<ArtifactDesc> run();

private:
  LogicalResult collectSteps();
  LogicalResult collectCaches(func::FuncOp step, const KernelPlan &plan);
  LogicalResult buildCacheLayout();
  LogicalResult collectWeights(const KernelPlan &plan);
  FailureOr<SizeExpression> extentExpr(func::FuncOp step,
                                       const KernelPlan &plan,
                                       const PlanExtent &extent);
  FailureOr<std::vector<SizeExpression>>
  shapeExpr(func::FuncOp step, const KernelPlan &plan,
            const std::vector<PlanExtent> &shape);
  FailureOr<PlanDesc> buildPlan(fb::StepKind kind, func::FuncOp step,
                                const KernelPlan &plan);
  /// The plans of every step kind, dispatching through kernelIndex.
  LogicalResult buildPlans(TargetDesc &target);
  FailureOr<TargetDesc> buildCpuTarget(ModuleOp kernels);
  FailureOr<TargetDesc> buildGpuTarget(ModuleOp kernels, StringRef chip);

  ModuleOp module;
  const ArtifactEmitOptions &options;
  ArtifactDesc artifact;

  func::FuncOp target, draft, chain;
  KernelPlan targetPlan, draftPlan, chainPlan;
  /// Cache operands by (kind, layer); the value is the cache id.
  std::map<std::pair<fb::CacheKind, uint32_t>, uint32_t> cacheIds;
  std::vector<CacheUse> cacheUses;
  /// Tokens per row of the program's index pools (1: the dense indexer),
  /// written as ModelConfig.index_kpool whatever the config says.
  std::optional<uint32_t> indexKpool;
  /// Manifest index by checkpoint tensor name.
  llvm::StringMap<uint32_t> weightIndex;
  /// Kernel index by kernel function name.
  llvm::StringMap<uint32_t> kernelIndex;
};

LogicalResult Emitter::collectSteps() {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func->hasAttr(kKernelAttrName))
      continue;
    StringRef name = func.getSymName();
    if (name.ends_with("_mtp_draft")) {
      draft = func;
    } else if (name.ends_with("_mtp_chain")) {
      chain = func;
    } else if (name.ends_with("_target")) {
      target = func;
    } else {
      return func.emitError("step function '")
             << name
             << "' is neither <model>_target, <model>_mtp_draft nor "
                "<model>_mtp_chain; the artifact has no step kind for it";
    }
  }
  if (!target)
    return module.emitError("no <model>_target step function in the module");
  if (chain && !draft)
    return chain.emitError("a draft chain step without a <model>_mtp_draft "
                           "step");
  return success();
}

LogicalResult Emitter::collectCaches(func::FuncOp step,
                                     const KernelPlan &plan) {
  for (const PlanCache &cache : plan.caches) {
    std::string name = argumentName(step, cache.argument);
    unsigned layer = 0;
    StringRef rest = name;
    if (!rest.consume_front("layer") || rest.consumeInteger(10, layer) ||
        !rest.starts_with("."))
      return step.emitError("cache argument ")
             << cache.argument << " ('" << name
             << "') is not named layer<N>.<cache>; the artifact cannot tell "
                "its layer";
    FailureOr<fb::CacheKind> kind = cacheKindOf(cache.llmType);
    if (failed(kind))
      return step.emitError("cache argument ")
             << cache.argument << " has no cache kind: " << cache.llmType;
    auto key = std::make_pair(*kind, static_cast<uint32_t>(layer));
    if (cacheIds.count(key))
      continue;
    cacheIds[key] = 0;
    cacheUses.push_back({*kind, static_cast<uint32_t>(layer), cache.llmType});
  }
  return success();
}

LogicalResult Emitter::buildCacheLayout() {
  // Ids in (layer, kind) order; slots in layer order within each kind.
  std::sort(cacheUses.begin(), cacheUses.end(),
            [](const CacheUse &a, const CacheUse &b) {
              return std::make_tuple(a.layer, static_cast<int>(a.kind)) <
                     std::make_tuple(b.layer, static_cast<int>(b.kind));
            });
  CacheLayoutDesc &layout = artifact.cacheLayout;
  std::map<fb::CacheKind, uint32_t> slots;
  std::map<fb::CacheKind, Type> typeOfKind;
  std::vector<uint64_t> units;
  for (const CacheUse &use : cacheUses) {
    auto [it, inserted] = typeOfKind.try_emplace(use.kind, use.type);
    if (!inserted && it->second != use.type)
      return module.emitError("layers disagree on the type of cache kind '")
             << fb::EnumNameCacheKind(use.kind) << "': " << it->second
             << " vs " << use.type;
    uint32_t id = layout.caches.size();
    cacheIds[{use.kind, use.layer}] = id;
    CacheDesc cache;
    cache.kind = use.kind;
    cache.layer = use.layer;
    cache.slot = slots[use.kind]++;
    cache.name = "layer" + std::to_string(use.layer) + "." +
                 fb::EnumNameCacheKind(use.kind);
    layout.caches.push_back(std::move(cache));
    units.push_back(unitBytes(use.type));
  }
  // Pages and slots are packed (the kernels' memrefs are contiguous), so the
  // alignment is the largest power of two (<= 256) dividing every unit.
  uint64_t alignment = 256;
  for (uint64_t unit : units)
    while (alignment > 1 && unit % alignment != 0)
      alignment /= 2;
  layout.alignment = alignment;

  auto dtype = [&](Type t) -> FailureOr<fb::DType> {
    FailureOr<fb::DType> d = toArtifactDType(t);
    if (failed(d))
      return module.emitError("cache element type ") << t << " has no dtype";
    return d;
  };
  for (auto &[kind, type] : typeOfKind) {
    uint32_t layers = slots[kind];
    if (auto latent = dyn_cast<llm::LatentPoolType>(type)) {
      FailureOr<fb::DType> d = dtype(latent.getElementType());
      if (failed(d))
        return failure();
      MlaLatentDesc mla;
      mla.numLayers = layers;
      mla.dtype = *d;
      mla.rowElements = latent.getWidth() + latent.getPad();
      mla.rowBytes = mla.rowElements * elementBytes(latent.getElementType());
      // fp8: the row's e4m3 values, then its fp32 scales (Fp8PageLayout).
      if (std::optional<Fp8PageLayout> fp8 = getFp8PageLayout(type))
        mla.rowBytes = fp8->rowBytes();
      mla.pageBytes = unitBytes(type);
      layout.pageSizeTokens = latent.getPageSize();
      layout.mlaLatent = mla;
    } else if (auto index = dyn_cast<llm::IndexPoolType>(type)) {
      FailureOr<fb::DType> d = dtype(index.getElementType());
      if (failed(d))
        return failure();
      IndexPagesDesc pages;
      pages.numLayers = layers;
      pages.rowsPerPage = index.getPageSize() / index.getKpool();
      indexKpool = index.getKpool();
      pages.valueDtype = *d;
      pages.valueBytes =
          index.getWidth() * elementBytes(index.getElementType());
      // fp8: the page's rows of e4m3 values, then one fp32 (ue8m0) scale
      // per row (Fp8PageLayout::valuesThenScales).
      bool fp8 = *d == fb::DType::f8e4m3fn;
      pages.scaleDtype = fp8 ? fb::DType::f32 : fb::DType::invalid;
      pages.scaleLayout = fp8 ? fb::IndexScaleLayout::values_then_scales
                              : fb::IndexScaleLayout::none;
      pages.rowStrideBytes = pages.valueBytes;
      pages.pageBytes = unitBytes(type);
      layout.pageSizeTokens = index.getPageSize();
      layout.indexPages = pages;
    } else if (auto ring = dyn_cast<llm::TailRingType>(type)) {
      FailureOr<fb::DType> d = dtype(ring.getElementType());
      if (failed(d))
        return failure();
      TailRingDesc desc;
      desc.numLayers = layers;
      desc.depth = ring.getDepth();
      desc.planes = 2;
      desc.rowElements = ring.getWidth();
      desc.dtype = *d;
      desc.bytesPerLayer = unitBytes(type);
      layout.tailRing = desc;
    } else if (auto state = dyn_cast<llm::KdaStateType>(type)) {
      KdaStateDesc &kda = layout.kda ? *layout.kda
                                     : layout.kda.emplace(KdaStateDesc{});
      kda.numLayers = layers;
      kda.numHeads = state.getHeads();
      kda.headDimK = state.getKeyDim();
      kda.headDimV = state.getValueDim();
      kda.recurrentDtype = fb::DType::f32;
      kda.recurrentBytesPerLayer = unitBytes(type);
    } else if (auto conv = dyn_cast<llm::ConvStateType>(type)) {
      FailureOr<fb::DType> d = dtype(conv.getElementType());
      if (failed(d))
        return failure();
      KdaStateDesc &kda = layout.kda ? *layout.kda
                                     : layout.kda.emplace(KdaStateDesc{});
      kda.convKernelSize = conv.getWidth() + 1;
      kda.convChannels = conv.getChannels();
      kda.convDtype = *d;
      kda.convBytesPerLayer = unitBytes(type);
    } else if (auto shared = dyn_cast<llm::SharedSelectionType>(type)) {
      SharedSelectionDesc desc;
      desc.numLayers = layers;
      desc.rows = shared.getRows();
      desc.rowElements =
          llm::SharedSelectionType::kSelectionColumn + shared.getWidth();
      desc.bytesPerLayer = unitBytes(type);
      layout.sharedSelection = desc;
    }
  }
  return success();
}

/// The manifest split of `shard` on `global` (dimension `dim`): a plain
/// one, or on an fp8 weight's scale global (kWeightScaleBlocksAttrName) a
/// block-scale split over the data's per-rank extent.
static WeightShardDesc weightShard(memref::GlobalOp global,
                                   llm::ShardAttr shard, size_t dim) {
  WeightShardDesc desc{static_cast<uint32_t>(shard.getDim()),
                       static_cast<uint32_t>(shard.getParts()),
                       static_cast<fb::RankGroup>(shard.getGroup())};
  auto blocks =
      global->getAttrOfType<DenseI64ArrayAttr>(kWeightScaleBlocksAttrName);
  auto dataShape =
      global->getAttrOfType<DenseI64ArrayAttr>(kWeightScaleDataShapeAttrName);
  if (blocks && dataShape && dim < size_t(blocks.size()) &&
      dim < size_t(dataShape.size())) {
    desc.dataExtent = dataShape[dim];
    desc.block = blocks[dim];
  }
  return desc;
}

LogicalResult Emitter::collectWeights(const KernelPlan &plan) {
  for (const std::string &name : plan.weights) {
    if (weightIndex.count(name))
      continue;
    auto global = module.lookupSymbol<memref::GlobalOp>(name);
    if (!global)
      return module.emitError("weight '") << name << "' has no memref.global";
    MemRefType type = global.getType();
    FailureOr<fb::DType> dtype = toArtifactDType(type.getElementType());
    if (failed(dtype))
      return global.emitError("weight element type has no artifact dtype");
    WeightDesc weight;
    weight.name = name;
    weight.dtype = *dtype;
    weight.runtimeDtype = *dtype;
    weight.shape.assign(type.getShape().begin(), type.getShape().end());
    weight.transform = StringRef(name).contains("{e}")
                           ? fb::WeightTransform::stack_experts
                           : fb::WeightTransform::none;
    if (auto shards = global->getAttrOfType<ArrayAttr>(kWeightShardsAttrName))
      for (auto shard : shards.getAsRange<llm::ShardAttr>())
        weight.shards.push_back(
            weightShard(global, shard, static_cast<size_t>(shard.getDim())));
    weightIndex[name] = artifact.weights.size();
    artifact.weights.push_back(std::move(weight));
  }
  return success();
}

FailureOr<SizeExpression> Emitter::extentExpr(func::FuncOp step,
                                              const KernelPlan &plan,
                                              const PlanExtent &extent) {
  using Sym = fb::SizeSymbol;
  if (extent.input < 0)
    return SizeExpression::constant(extent.value);
  // Cache pools: pages or slots.
  for (const PlanCache &cache : plan.caches) {
    if (cache.argument != extent.input)
      continue;
    FailureOr<fb::CacheKind> kind = cacheKindOf(cache.llmType);
    if (failed(kind) || extent.dim != 0)
      break;
    return SizeExpression::symbol(isPaged(*kind) ? Sym::kv_pages
                                                 : Sym::state_slots);
  }
  std::string name = argumentName(step, extent.input);
  if ((name == "ids" || name == "positions" || name == "hidden" ||
       name == "state_token_slots") &&
      extent.dim == 0)
    return SizeExpression::symbol(Sym::num_tokens);
  if (name == "seq_starts" && extent.dim == 0)
    return SizeExpression::symbol(Sym::num_requests) + 1;
  if ((name == "slots" || name == "state_src_slots" ||
       name == "state_dst_slots" || name == "shared_rows") &&
      extent.dim == 0)
    return SizeExpression::symbol(Sym::num_requests);
  if (name == "block_table")
    return SizeExpression::symbol(extent.dim == 0 ? Sym::num_requests
                                                  : Sym::num_pages);
  if (name == "rows" && extent.dim == 0)
    return SizeExpression::symbol(Sym::logit_rows);
  return step.emitError("no runtime size for extent ")
         << extent.dim << " of step argument " << extent.input << " ('"
         << name << "')";
}

FailureOr<std::vector<SizeExpression>>
Emitter::shapeExpr(func::FuncOp step, const KernelPlan &plan,
                   const std::vector<PlanExtent> &shape) {
  std::vector<SizeExpression> result;
  for (const PlanExtent &extent : shape) {
    FailureOr<SizeExpression> e = extentExpr(step, plan, extent);
    if (failed(e))
      return failure();
    result.push_back(std::move(*e));
  }
  return result;
}

/// The most tokens of one request in a step of `kind` (0: any): decode
/// steps have one, MTP verification the drafts + 1 (at most
/// kMaxMtpDraftTokens drafts); prefill and the draft any.
static uint32_t maxRequestTokens(fb::StepKind kind) {
  switch (kind) {
  case fb::StepKind::decode:
    return 1;
  case fb::StepKind::mtp_verify:
    return ::strata::kMaxMtpDraftTokens + 1;
  default:
    return 0;
  }
}

FailureOr<PlanDesc> Emitter::buildPlan(fb::StepKind kind, func::FuncOp step,
                                       const KernelPlan &plan) {
  PlanDesc desc;
  desc.step = kind;
  desc.maxRequestTokens = maxRequestTokens(kind);
  for (auto [i, buffer] : llvm::enumerate(plan.buffers)) {
    BufferDesc b;
    switch (buffer.role) {
    case PlanBuffer::Role::Input:
      b.kind = fb::BufferKind::input;
      b.name = argumentName(step, buffer.argument);
      if (b.name.empty())
        b.name = buffer.name;
      break;
    case PlanBuffer::Role::Output:
      b.kind = fb::BufferKind::output;
      // The entry contract (models/glm5_next/model.dsl): logits first, the
      // hidden state (the next MTP draft step's input) second, the greedy
      // tokens of the logits rows third.
      b.name = buffer.result == 0   ? "logits"
               : buffer.result == 1 ? "hidden_out"
               : buffer.result == 2 ? "greedy"
                                    : "result" + std::to_string(buffer.result);
      break;
    case PlanBuffer::Role::Activation:
      b.kind = fb::BufferKind::activation;
      b.name = "buf" + std::to_string(i);
      break;
    }
    SizeExpression size =
        SizeExpression::constant(elementBytes(buffer.elementType));
    for (const PlanExtent &extent : buffer.shape) {
      FailureOr<SizeExpression> e = extentExpr(step, plan, extent);
      if (failed(e))
        return failure();
      size = size * *e;
    }
    b.sizeBytes = std::move(size);
    desc.buffers.push_back(std::move(b));
  }
  for (const PlanDispatch &dispatch : plan.dispatches) {
    // Kernels that work only for requests longer than the plan's steps have
    // nothing to do in it.
    if (desc.maxRequestTokens &&
        dispatch.minRequestTokens > int64_t(desc.maxRequestTokens))
      continue;
    DispatchDesc d;
    d.label = dispatch.label;
    if (dispatch.collective) {
      FailureOr<CollectiveDesc> collective =
          collectiveDesc(step, *dispatch.collective);
      if (failed(collective))
        return failure();
      d.collective = *collective;
    } else {
      auto it = kernelIndex.find(dispatch.kernel);
      if (it == kernelIndex.end())
        return step.emitError("dispatch of '")
               << dispatch.kernel << "', which was not compiled";
      d.kernelIndex = it->second;
    }
    for (const PlanBinding &binding : dispatch.bindings) {
      FailureOr<std::vector<SizeExpression>> shape =
          shapeExpr(step, plan, binding.shape);
      if (failed(shape))
        return failure();
      switch (binding.kind) {
      case PlanBinding::Kind::Buffer:
        d.bindings.push_back(BindingDesc::buffer(binding.index, *shape));
        break;
      case PlanBinding::Kind::Weight:
        d.bindings.push_back(BindingDesc::weight(
            weightIndex.lookup(plan.weights[binding.index]), *shape));
        break;
      case PlanBinding::Kind::RankCoordinate:
        d.bindings.push_back(
            BindingDesc::intScalar(SizeExpression::symbol(rankSymbol(
                static_cast<fb::RankGroup>(binding.index)))));
        break;
      case PlanBinding::Kind::Cache: {
        const PlanCache &cache = plan.caches[binding.index];
        std::string name = argumentName(step, cache.argument);
        unsigned layer = 0;
        StringRef(name).drop_front(5).consumeInteger(10, layer);
        FailureOr<fb::CacheKind> kind = cacheKindOf(cache.llmType);
        d.bindings.push_back(
            BindingDesc::cache(cacheIds.at({*kind, layer}), *shape));
        break;
      }
      }
    }
    desc.dispatches.push_back(std::move(d));
  }
  return desc;
}

LogicalResult Emitter::buildPlans(TargetDesc &target) {
  for (fb::StepKind kind : {fb::StepKind::prefill, fb::StepKind::decode,
                            fb::StepKind::mtp_verify}) {
    FailureOr<PlanDesc> desc = buildPlan(kind, this->target, targetPlan);
    if (failed(desc))
      return failure();
    target.plans.push_back(std::move(*desc));
  }
  for (auto [kind, step, plan] :
       {std::tuple{fb::StepKind::mtp_draft, draft, &draftPlan},
        std::tuple{fb::StepKind::mtp_chain, chain, &chainPlan}}) {
    if (!step)
      continue;
    FailureOr<PlanDesc> desc = buildPlan(kind, step, *plan);
    if (failed(desc))
      return failure();
    target.plans.push_back(std::move(*desc));
  }
  return success();
}

FailureOr<TargetDesc> Emitter::buildCpuTarget(ModuleOp kernels) {
  FailureOr<CpuKernelLibrary> library =
      compileCpuKernels(kernels, options.cpu);
  if (failed(library))
    return failure();
  TargetDesc cpu;
  cpu.kind = fb::TargetKind::cpu;
  cpu.chip = options.cpu.cpu;
  cpu.binaries.push_back({fb::BinaryFormat::elf_so, library->sharedObject});
  kernelIndex.clear();
  for (auto [i, kernel] : llvm::enumerate(library->kernels)) {
    kernelIndex[kernel.name] = i;
    KernelDebugDesc debug;
    debug.target = fb::TargetKind::cpu;
    debug.kernelIndex = i;
    debug.locations.push_back(library->locations[i]);
    artifact.debugKernels.push_back(std::move(debug));
  }
  cpu.kernels = std::move(library->kernels);
  if (failed(buildPlans(cpu)))
    return failure();
  return cpu;
}

FailureOr<TargetDesc> Emitter::buildGpuTarget(ModuleOp kernels,
                                              StringRef chip) {
  FailureOr<GpuKernelLibrary> library =
      compileGpuKernels(kernels, chip,
                        chip.starts_with("gfx") ? options.rocmToolkit
                                                : options.gpuToolkit,
                        options.gpuIsaDir, options.gpuCodegen);
  if (failed(library))
    return failure();
  TargetDesc gpu;
  gpu.kind = library->kind;
  gpu.chip = library->chip;
  gpu.binaries.push_back(std::move(library->binary));
  kernelIndex.clear();
  for (auto [i, kernel] : llvm::enumerate(library->kernels))
    kernelIndex[kernel.name] = i;
  gpu.kernels = std::move(library->kernels);
  if (failed(buildPlans(gpu)))
    return failure();
  // Launch geometry: one thread per block; a grid dimension that follows an
  // argument's extent takes the size expression of that binding in the
  // kernel's first dispatch. The kernels loop with a grid stride, so the
  // grid only sets the parallelism, never the result.
  std::vector<const DispatchDesc *> firstDispatch(gpu.kernels.size());
  for (const PlanDesc &plan : gpu.plans)
    for (const DispatchDesc &dispatch : plan.dispatches)
      if (!firstDispatch[dispatch.kernelIndex])
        firstDispatch[dispatch.kernelIndex] = &dispatch;
  for (auto [k, kernel] : llvm::enumerate(gpu.kernels)) {
    LaunchDesc &launch = *kernel.launch;
    const DispatchDesc *dispatch = firstDispatch[k];
    std::array<SizeExpression, 3> extents;
    std::array<bool, 3> fromArgument = {false, false, false};
    // 1 while the kernel has work at the dispatch's sizes, else 0: a kernel
    // that works only up to `cap` or from `floor` rows launches one block
    // (in every dimension) outside its range.
    std::optional<SizeExpression> active;
    auto restrictTo = [&](SizeExpression factor) {
      active = active ? *active * factor : std::move(factor);
    };
    for (int d = 0; d < 3; ++d) {
      const GpuGridDim &dim = library->grids[k][d];
      extents[d] = SizeExpression::constant(dim.blocks);
      std::optional<SizeExpression> stepSize =
          dim.forms.empty() ? std::nullopt : stepSizeOf(dispatch, dim);
      if (dim.argument < 0 && stepSize) {
        extents[d] = byStepForm(dim.forms, *stepSize,
                                [](const GpuGridForm &form) {
                                  return SizeExpression::constant(form.blocks);
                                });
        fromArgument[d] = true;
      }
      if (dim.argument < 0 || !dispatch ||
          static_cast<size_t>(dim.argument) >= dispatch->bindings.size())
        continue;
      const BindingDesc &binding = dispatch->bindings[dim.argument];
      if (static_cast<size_t>(dim.dim) >= binding.shape.size())
        continue;
      SizeExpression extent = binding.shape[dim.dim];
      if (dim.multiplier > 1)
        extent = std::move(extent) * SizeExpression::constant(dim.multiplier);
      SizeExpression addend = SizeExpression::constant(dim.addend);
      if (dim.addend > 0 && dim.addendAtMostExtent)
        addend = SizeExpression::min(extent, addend);
      if (dim.floor > 0) {
        // The floor bounds this extent or another binding's.
        const SizeExpression *floored = &extent;
        if (dim.floorArgument >= 0) {
          if (static_cast<size_t>(dim.floorArgument) >=
                  dispatch->bindings.size() ||
              static_cast<size_t>(dim.floorDim) >=
                  dispatch->bindings[dim.floorArgument].shape.size())
            return module.emitError("GPU kernel '")
                   << kernel.name << "': grid floor on a missing binding";
          floored = &dispatch->bindings[dim.floorArgument].shape[dim.floorDim];
        }
        restrictTo(SizeExpression::less(
            SizeExpression::constant(dim.floor - 1), *floored));
      }
      if (stepSize)
        extent = byStepForm(dim.forms, *stepSize,
                            [&](const GpuGridForm &form) {
                              return SizeExpression::ceilDiv(
                                  extent,
                                  SizeExpression::constant(form.divisor));
                            });
      else if (dim.divisor > 1)
        extent = SizeExpression::ceilDiv(
            std::move(extent), SizeExpression::constant(dim.divisor));
      if (dim.addend > 0)
        extent = std::move(extent) + std::move(addend);
      if (dim.cap > 0) {
        // At most `cap` blocks.
        restrictTo(SizeExpression::less(
            extent, SizeExpression::constant(dim.cap + 1)));
        extent = SizeExpression::min(std::move(extent),
                                     SizeExpression::constant(dim.cap));
      }
      extents[d] = std::move(extent);
      fromArgument[d] = true;
    }
    for (int d = 0; d < 3; ++d)
      launch.grid[d] =
          !active && !fromArgument[d]
              ? std::move(extents[d])
              : SizeExpression::max(active ? std::move(extents[d]) * *active
                                           : std::move(extents[d]),
                                    SizeExpression::constant(1));
    // Steps of at most `smallSteps` (argument 0's rows x perRow) launch with
    // the bytes they use: small + (all - small) x (smallSteps < size).
    const std::vector<int64_t> &small = library->smallStepSharedMemory[k];
    if (small.size() == 3 && dispatch && !dispatch->bindings.empty() &&
        !dispatch->bindings[0].shape.empty()) {
      auto all = static_cast<int64_t>(launch.sharedMemoryBytes);
      SizeExpression size = dispatch->bindings[0].shape[0];
      if (small[0] > 1)
        size = std::move(size) * SizeExpression::constant(small[0]);
      launch.sharedMemory =
          SizeExpression::constant(small[2]) +
          SizeExpression::constant(all - small[2]) *
              SizeExpression::less(SizeExpression::constant(small[1]),
                                   size);
    }
  }
  // Arrival counters (K split over the grid): one plan buffer of kind
  // `counters` per plan that has such kernels, as large as the largest
  // count; every dispatch binds its start (the dispatches run one after
  // another and each leaves its counters at zero).
  for (PlanDesc &plan : gpu.plans) {
    int64_t most = 0;
    for (const DispatchDesc &dispatch : plan.dispatches)
      if (!dispatch.collective)
        most = std::max(most, library->counters[dispatch.kernelIndex]);
    if (most == 0)
      continue;
    auto id = static_cast<uint32_t>(plan.buffers.size());
    BufferDesc counters;
    counters.name = "tile_counters";
    counters.kind = fb::BufferKind::counters;
    counters.sizeBytes = SizeExpression::constant(most * 4);
    plan.buffers.push_back(std::move(counters));
    for (DispatchDesc &dispatch : plan.dispatches)
      if (!dispatch.collective)
        if (int64_t count = library->counters[dispatch.kernelIndex])
          dispatch.bindings.push_back(
              BindingDesc::buffer(id, {SizeExpression::constant(count)}));
  }
  // Global scratch: each dispatch of a kernel with a scratch argument binds
  // grid blocks x its bytes per block (for that dispatch's extents) of the
  // runtime's scratch buffer.
  for (PlanDesc &plan : gpu.plans) {
    for (DispatchDesc &dispatch : plan.dispatches) {
      const std::vector<GpuScratchOp> &program =
          library->scratch[dispatch.kernelIndex];
      if (program.empty())
        continue;
      const KernelDesc &kernel = gpu.kernels[dispatch.kernelIndex];
      FailureOr<SizeExpression> perBlock = scratchBytes(program, dispatch);
      if (failed(perBlock))
        return module.emitError("the scratch size of GPU kernel '")
               << kernel.name << "' does not evaluate for dispatch '"
               << dispatch.label << "'";
      const LaunchDesc &launch = *kernel.launch;
      auto isOne = [](const SizeExpression &e) {
        return e.ops.size() == 1 &&
               e.ops[0] == std::make_pair(fb::SizeOpcode::constant,
                                          int64_t{1});
      };
      SizeExpression total = launch.grid[0];
      for (const SizeExpression &e : {launch.grid[1], launch.grid[2]})
        if (!isOne(e))
          total = total * e;
      total = total * *perBlock;
      dispatch.bindings.push_back(
          BindingDesc::scratch(std::move(*perBlock), std::move(total)));
    }
  }
  return gpu;
}

FailureOr<ArtifactDesc> Emitter::run() {
  if (failed(collectSteps()))
    return failure();
  FailureOr<KernelPlan> plan = extractKernelPlan(target);
  if (failed(plan))
    return failure();
  targetPlan = std::move(*plan);
  if (draft) {
    plan = extractKernelPlan(draft);
    if (failed(plan))
      return failure();
    draftPlan = std::move(*plan);
  }
  if (chain) {
    plan = extractKernelPlan(chain);
    if (failed(plan))
      return failure();
    chainPlan = std::move(*plan);
  }
  if (failed(collectCaches(target, targetPlan)) ||
      (draft && failed(collectCaches(draft, draftPlan))) ||
      (chain && failed(collectCaches(chain, chainPlan))) ||
      failed(buildCacheLayout()) || failed(collectWeights(targetPlan)) ||
      (draft && failed(collectWeights(draftPlan))) ||
      (chain && failed(collectWeights(chainPlan))))
    return failure();

  if (options.tensorParallelSize * options.expertParallelSize > 1)
    artifact.parallel =
        computeParallelLayout(artifact.weights, options.tensorParallelSize,
                              options.expertParallelSize);

  // Kernels: a clone holding only the llm.kernel functions.
  OwningOpRef<ModuleOp> kernels = module.clone();
  for (Operation &op : llvm::make_early_inc_range(*kernels->getBody())) {
    auto func = dyn_cast<func::FuncOp>(op);
    if (!func || !func->hasAttr(kKernelAttrName))
      op.erase();
  }
  for (const std::string &name : options.targets) {
    if (options.onTarget)
      options.onTarget(name);
    FailureOr<TargetDesc> target = name == "cpu"
                                       ? buildCpuTarget(*kernels)
                                       : buildGpuTarget(*kernels, name);
    if (failed(target))
      return failure();
    artifact.targets.push_back(std::move(*target));
  }
  artifact.model = options.model;
  if (indexKpool)
    artifact.model.indexKpool = *indexKpool;
  artifact.producer = options.producer;
  return std::move(artifact);
}

} // namespace

FailureOr<ArtifactDesc>
mlir::strata::emitArtifact(ModuleOp kernelModule,
                           const ArtifactEmitOptions &options) {
  return Emitter(kernelModule, options).run();
}
