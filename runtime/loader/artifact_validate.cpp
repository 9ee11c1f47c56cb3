//===- artifact_validate.cpp - semantic checks of a strata artifact -------===//
//
// Part of strata. Runs after the flatbuffers Verifier (so every accessor is
// memory-safe) and checks what the Verifier cannot: enum values, required
// fields, cross-references (binary index, kernel index, buffer id, cache id,
// manifest index), size expressions, bindings against kernel arguments and
// the cache geometry. Each message names the field by path, e.g.
// "targets[0] (cpu): plans[1] (decode): dispatches[2]: bindings[0]: ...".
//
//===----------------------------------------------------------------------===//

#include <fmt/ranges.h>

#include <set>
#include <string>

#include "runtime/loader/artifact.h"
#include "runtime/loader/size_expr.h"
#include "runtime/schemas/mtp_draft_limit.h"
#include "runtime/schemas/weight_shard_extent.h"

namespace strata::runtime {

using namespace strata::artifact;

namespace {

template <typename E> bool known(E value) {
  return static_cast<int>(value) >= static_cast<int>(E::MIN) &&
         static_cast<int>(value) <= static_cast<int>(E::MAX);
}

bool validDType(DType dtype) { return known(dtype) && dtype != DType::invalid; }

std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

template <typename T> size_t count(const flatbuffers::Vector<T> *v) {
  return v ? v->size() : 0;
}

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

BinaryFormat expectedFormat(TargetKind kind) {
  switch (kind) {
  case TargetKind::cpu:
    return BinaryFormat::elf_so;
  case TargetKind::gfx942:
  case TargetKind::gfx950:
    return BinaryFormat::hsaco;
  case TargetKind::sm_90:
  case TargetKind::sm_90a:
    return BinaryFormat::cubin;
  }
  return BinaryFormat::elf_so;
}

Status validateModel(const ModelConfig *model) {
  if (!model)
    return invalidArgument("model: missing");
  if (count(model->layer_kinds()) != model->num_hidden_layers())
    return invalidArgument("model: layer_kinds has {} entries, expected "
                           "num_hidden_layers {}",
                           count(model->layer_kinds()),
                           model->num_hidden_layers());
  if (count(model->mlp_kinds()) != model->num_hidden_layers())
    return invalidArgument("model: mlp_kinds has {} entries, expected "
                           "num_hidden_layers {}",
                           count(model->mlp_kinds()),
                           model->num_hidden_layers());
  for (size_t i = 0; i < count(model->layer_kinds()); ++i)
    if (!known(model->layer_kinds()->Get(i)))
      return invalidArgument("model: layer_kinds[{}]: unknown kind {}", i,
                             static_cast<int>(model->layer_kinds()->Get(i)));
  for (size_t i = 0; i < count(model->mlp_kinds()); ++i)
    if (!known(model->mlp_kinds()->Get(i)))
      return invalidArgument("model: mlp_kinds[{}]: unknown kind {}", i,
                             static_cast<int>(model->mlp_kinds()->Get(i)));
  DType activations = model->activation_dtype();
  if (activations != DType::invalid && activations != DType::bf16 &&
      activations != DType::f32)
    return invalidArgument("model: activation_dtype {} (expected bf16 or f32)",
                           EnumNameDType(activations));
  return okStatus();
}

Status validateShape(const flatbuffers::Vector<int64_t> *shape,
                     const std::string &where) {
  for (size_t d = 0; d < count(shape); ++d)
    if (shape->Get(d) < 0)
      return invalidArgument("{}: negative extent {} in dimension {}", where,
                             shape->Get(d), d);
  return okStatus();
}

Status validateWeights(const ArtifactDef &def) {
  std::set<std::string> names;
  for (size_t i = 0; i < count(def.weights()); ++i) {
    const WeightEntry *w = def.weights()->Get(i);
    std::string where = fmt::format("weights[{}] '{}'", i, str(w->name()));
    if (str(w->name()).empty())
      return invalidArgument("weights[{}]: empty name", i);
    if (!names.insert(str(w->name())).second)
      return invalidArgument("{}: duplicate name", where);
    if (!validDType(w->dtype()))
      return invalidArgument("{}: invalid dtype {}", where,
                             static_cast<int>(w->dtype()));
    if (!validDType(w->runtime_dtype()))
      return invalidArgument("{}: invalid runtime_dtype {}", where,
                             static_cast<int>(w->runtime_dtype()));
    STRATA_RETURN_IF_ERROR(validateShape(w->shape(), where + ": shape"));
    if (!known(w->transform()))
      return invalidArgument("{}: unknown transform {}", where,
                             static_cast<int>(w->transform()));
    bool dequant = w->transform() == WeightTransform::fp8_dequant ||
                   w->transform() == WeightTransform::fp8_dequant_transpose;
    bool transpose = w->transform() == WeightTransform::transpose ||
                     w->transform() == WeightTransform::fp8_dequant_transpose;
    if (w->transform() == WeightTransform::stack_experts &&
        (str(w->name()).find("{e}") == std::string::npos ||
         count(w->shape()) < 1))
      return invalidArgument("{}: stack_experts needs a name with '{{e}}' and "
                             "a shape of rank >= 1",
                             where);
    if (transpose && count(w->shape()) != 2)
      return invalidArgument("{}: transpose needs a rank-2 tensor, got rank {}",
                             where, count(w->shape()));
    if (dequant) {
      if (w->dtype() != DType::f8e4m3fn && w->dtype() != DType::f8e5m2)
        return invalidArgument("{}: fp8 dequant of a {} tensor", where,
                               EnumNameDType(w->dtype()));
      if (str(w->scale_name()).empty())
        return invalidArgument("{}: fp8 dequant without scale_name", where);
      if (!validDType(w->scale_dtype()))
        return invalidArgument("{}: invalid scale_dtype {}", where,
                               static_cast<int>(w->scale_dtype()));
      STRATA_RETURN_IF_ERROR(
          validateShape(w->scale_shape(), where + ": scale_shape"));
    } else {
      if (!str(w->scale_name()).empty())
        return invalidArgument("{}: scale_name '{}' without an fp8 transform",
                               where, str(w->scale_name()));
      if (w->runtime_dtype() != w->dtype())
        return invalidArgument("{}: runtime_dtype {} differs from dtype {} "
                               "without a dequant transform",
                               where, EnumNameDType(w->runtime_dtype()),
                               EnumNameDType(w->dtype()));
    }
  }
  return okStatus();
}

Status checkAligned(uint64_t bytes, uint64_t minimum, uint64_t alignment,
                    const char *what) {
  if (bytes != alignUp(minimum, alignment))
    return invalidArgument("cache_layout: {} is {}, expected {} ({} aligned "
                           "to {})",
                           what, bytes, alignUp(minimum, alignment), minimum,
                           alignment);
  return okStatus();
}

Status validateCacheLayout(const ArtifactDef &def) {
  const CacheLayout *layout = def.cache_layout();
  if (!layout)
    return invalidArgument("cache_layout: missing");
  uint64_t alignment = layout->alignment();
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return invalidArgument("cache_layout: alignment {} is not a power of two",
                           alignment);
  const ModelConfig *model = def.model();
  uint64_t page = layout->page_size_tokens();
  if (const MlaLatentCache *mla = layout->mla_latent()) {
    if (page == 0)
      return invalidArgument("cache_layout: page_size_tokens is 0");
    if (!validDType(mla->dtype()))
      return invalidArgument("cache_layout: mla_latent: invalid dtype");
    if (mla->row_bytes() < mla->row_elements() * dtypeBytes(mla->dtype()))
      return invalidArgument("cache_layout: mla_latent: row_bytes {} < {} "
                             "elements of {}",
                             mla->row_bytes(), mla->row_elements(),
                             EnumNameDType(mla->dtype()));
    STRATA_RETURN_IF_ERROR(checkAligned(mla->page_bytes(),
                                        page * mla->row_bytes(), alignment,
                                        "mla_latent.page_bytes"));
  }
  if (const IndexPageCache *index = layout->index_pages()) {
    uint32_t kpool = model->index_kpool();
    if (kpool == 0 || page % kpool != 0)
      return invalidArgument("cache_layout: page_size_tokens {} is not a "
                             "multiple of index_kpool {}",
                             page, kpool);
    if (index->rows_per_page() != page / kpool)
      return invalidArgument("cache_layout: index_pages.rows_per_page is {}, "
                             "expected {}",
                             index->rows_per_page(), page / kpool);
    bool scaled = index->scale_layout() != IndexScaleLayout::none;
    if (!validDType(index->value_dtype()) ||
        (scaled && !validDType(index->scale_dtype())))
      return invalidArgument("cache_layout: index_pages: invalid dtype");
    if (!known(index->scale_layout()))
      return invalidArgument("cache_layout: index_pages: unknown scale layout");
    uint64_t scale = scaled ? dtypeBytes(index->scale_dtype()) : 0;
    uint64_t minimum;
    if (index->scale_layout() == IndexScaleLayout::interleaved) {
      if (index->row_stride_bytes() < index->value_bytes() + scale)
        return invalidArgument("cache_layout: index_pages.row_stride_bytes {} "
                               "< value_bytes {} + scale {}",
                               index->row_stride_bytes(), index->value_bytes(),
                               scale);
      minimum = index->rows_per_page() * index->row_stride_bytes();
    } else {
      if (index->row_stride_bytes() != index->value_bytes())
        return invalidArgument("cache_layout: index_pages.row_stride_bytes {} "
                               "!= value_bytes {} for values_then_scales",
                               index->row_stride_bytes(), index->value_bytes());
      minimum = index->rows_per_page() * (index->value_bytes() + scale);
    }
    STRATA_RETURN_IF_ERROR(checkAligned(index->page_bytes(), minimum,
                                        alignment, "index_pages.page_bytes"));
    // The pooled indexer finishes pools from the tail ring; the dense one
    // (index_kpool 1) has no incomplete pool and no ring.
    if (kpool > 1 && !layout->tail_ring())
      return invalidArgument("cache_layout: index_pages of index_kpool {} "
                             "without tail_ring",
                             kpool);
    if (kpool == 1 && layout->tail_ring())
      return invalidArgument("cache_layout: tail_ring with index_kpool 1 (the "
                             "dense indexer has none)");
  }
  if (const TailRingCache *ring = layout->tail_ring()) {
    if (!layout->index_pages())
      return invalidArgument("cache_layout: tail_ring without index_pages");
    if (!validDType(ring->dtype()))
      return invalidArgument("cache_layout: tail_ring: invalid dtype");
    uint32_t depth = ring->depth();
    if (depth == 0 || (depth & (depth - 1)) != 0 ||
        depth < model->index_kpool())
      return invalidArgument("cache_layout: tail_ring.depth {} is not a power "
                             "of two >= index_kpool {}",
                             depth, model->index_kpool());
    STRATA_RETURN_IF_ERROR(checkAligned(
        ring->bytes_per_layer(),
        uint64_t(ring->planes()) * depth * ring->row_elements() *
            dtypeBytes(ring->dtype()),
        alignment, "tail_ring.bytes_per_layer"));
  }
  if (const KdaStateCache *kda = layout->kda()) {
    if (!validDType(kda->recurrent_dtype()) || !validDType(kda->conv_dtype()))
      return invalidArgument("cache_layout: kda: invalid dtype");
    if (kda->conv_kernel_size() == 0)
      return invalidArgument("cache_layout: kda.conv_kernel_size is 0");
    STRATA_RETURN_IF_ERROR(checkAligned(
        kda->recurrent_bytes_per_layer(),
        uint64_t(kda->num_heads()) * kda->head_dim_k() * kda->head_dim_v() *
            dtypeBytes(kda->recurrent_dtype()),
        alignment, "kda.recurrent_bytes_per_layer"));
    STRATA_RETURN_IF_ERROR(checkAligned(
        kda->conv_bytes_per_layer(),
        uint64_t(kda->conv_kernel_size() - 1) * kda->conv_channels() *
            dtypeBytes(kda->conv_dtype()),
        alignment, "kda.conv_bytes_per_layer"));
  }
  if (const SharedSelectionCache *shared = layout->shared_selection()) {
    // A verification's rows: the runtime picks the accepted one.
    if (shared->rows() != kSharedSelectionRows ||
        shared->row_elements() == 0)
      return invalidArgument("cache_layout: shared_selection: {} rows of {} "
                             "entries (expected {} rows)",
                             shared->rows(), shared->row_elements(),
                             kSharedSelectionRows);
    STRATA_RETURN_IF_ERROR(checkAligned(
        shared->bytes_per_layer(),
        uint64_t(shared->rows()) * shared->row_elements() * sizeof(int32_t),
        alignment, "shared_selection.bytes_per_layer"));
  }
  uint64_t total_layers = uint64_t(model->num_hidden_layers()) +
                          model->num_nextn_predict_layers();
  for (size_t i = 0; i < count(layout->caches()); ++i) {
    const CacheDef *cache = layout->caches()->Get(i);
    std::string where =
        fmt::format("cache_layout: caches[{}] '{}'", i, str(cache->name()));
    if (!known(cache->kind()))
      return invalidArgument("{}: unknown kind {}", where,
                             static_cast<int>(cache->kind()));
    uint32_t pool_layers = 0;
    bool present = false;
    switch (cache->kind()) {
    case CacheKind::mla_latent:
      present = layout->mla_latent();
      pool_layers = present ? layout->mla_latent()->num_layers() : 0;
      break;
    case CacheKind::index_pages:
      present = layout->index_pages();
      pool_layers = present ? layout->index_pages()->num_layers() : 0;
      break;
    case CacheKind::tail_ring:
      present = layout->tail_ring();
      pool_layers = present ? layout->tail_ring()->num_layers() : 0;
      break;
    case CacheKind::kda_recurrent:
    case CacheKind::kda_conv:
      present = layout->kda();
      pool_layers = present ? layout->kda()->num_layers() : 0;
      break;
    case CacheKind::shared_selection:
      present = layout->shared_selection();
      pool_layers = present ? layout->shared_selection()->num_layers() : 0;
      break;
    }
    if (!present)
      return invalidArgument("{}: cache_layout has no {} geometry", where,
                             EnumNameCacheKind(cache->kind()));
    if (cache->slot() >= pool_layers)
      return invalidArgument("{}: slot {} out of range ({} layers)", where,
                             cache->slot(), pool_layers);
    if (cache->layer() >= total_layers)
      return invalidArgument("{}: layer {} out of range ({} layers)", where,
                             cache->layer(), total_layers);
  }
  return okStatus();
}

Status validateKernel(const TargetDef &target, const Kernel &kernel,
                      const std::string &where) {
  if (str(kernel.name()).empty())
    return invalidArgument("{}: empty name", where);
  if (kernel.target() != target.target())
    return invalidArgument("{}: target {} differs from its target {}", where,
                           static_cast<int>(kernel.target()),
                           EnumNameTargetKind(target.target()));
  if (str(kernel.chip()) != str(target.chip()))
    return invalidArgument("{}: chip '{}' differs from its target's '{}'",
                           where, str(kernel.chip()), str(target.chip()));
  if (kernel.binary_index() >= count(target.binaries()))
    return invalidArgument("{}: binary_index {} out of range ({} binaries)",
                           where, kernel.binary_index(),
                           count(target.binaries()));
  if (str(kernel.entry_symbol()).empty())
    return invalidArgument("{}: empty entry_symbol", where);
  bool gpu = target.target() != TargetKind::cpu;
  KernelAbi abi = gpu ? KernelAbi::gpu_memref_descriptor
                      : KernelAbi::packed_memref_descriptor;
  if (kernel.abi() != abi)
    return invalidArgument("{}: abi {} is not the {} abi {}", where,
                           static_cast<int>(kernel.abi()),
                           EnumNameTargetKind(target.target()),
                           EnumNameKernelAbi(abi));
  for (size_t a = 0; a < count(kernel.args()); ++a) {
    const KernelArg *arg = kernel.args()->Get(a);
    std::string at = fmt::format("{}: args[{}] '{}'", where, a, str(arg->name()));
    if (!known(arg->kind()))
      return invalidArgument("{}: unknown kind {}", at,
                             static_cast<int>(arg->kind()));
    if (!validDType(arg->dtype()))
      return invalidArgument("{}: invalid dtype {}", at,
                             static_cast<int>(arg->dtype()));
    if (arg->kind() == ArgKind::scalar) {
      DType t = arg->dtype();
      if (t != DType::i32 && t != DType::i64 && t != DType::f32 &&
          t != DType::f64)
        return invalidArgument("{}: scalar dtype {} is not i32, i64, f32 or "
                               "f64",
                               at, EnumNameDType(t));
      if (arg->rank() != 0 || count(arg->static_shape()) != 0)
        return invalidArgument("{}: scalar with a shape", at);
      continue;
    }
    if (count(arg->static_shape()) != arg->rank())
      return invalidArgument("{}: static_shape has {} entries, rank is {}", at,
                             count(arg->static_shape()), arg->rank());
    for (size_t d = 0; d < arg->rank(); ++d)
      if (arg->static_shape()->Get(d) < -1)
        return invalidArgument("{}: invalid static extent {}", at,
                               arg->static_shape()->Get(d));
  }
  if (gpu) {
    const LaunchInfo *launch = kernel.launch();
    if (!launch)
      return invalidArgument("{}: GPU kernel without launch info", where);
    if (count(launch->block()) != 3 || count(launch->grid()) != 3)
      return invalidArgument("{}: launch needs 3 block and 3 grid entries",
                             where);
    for (size_t d = 0; d < 3; ++d) {
      if (launch->block()->Get(d) == 0)
        return invalidArgument("{}: launch.block[{}] is 0", where, d);
      STRATA_RETURN_IF_ERROR(validateSizeExpr(
          launch->grid()->Get(d), fmt::format("{}: launch.grid[{}]", where, d)));
    }
    if (launch->shared_memory())
      STRATA_RETURN_IF_ERROR(validateSizeExpr(
          launch->shared_memory(), fmt::format("{}: launch.shared_memory",
                                               where)));
  } else if (kernel.launch()) {
    return invalidArgument("{}: cpu kernel with launch info", where);
  }
  return okStatus();
}

Status validateBinding(const ArtifactDef &def, const ExecutionPlan &plan,
                       const KernelArg &arg, const Binding &binding,
                       const std::string &where) {
  if (!known(binding.kind()))
    return invalidArgument("{}: unknown binding kind {}", where,
                           static_cast<int>(binding.kind()));
  bool scalar_binding = binding.kind() == BindingKind::int_scalar ||
                        binding.kind() == BindingKind::float_scalar;
  if (arg.kind() == ArgKind::scalar) {
    bool is_float = arg.dtype() == DType::f32 || arg.dtype() == DType::f64;
    BindingKind expected =
        is_float ? BindingKind::float_scalar : BindingKind::int_scalar;
    if (binding.kind() != expected)
      return invalidArgument("{}: {} binding for {} scalar argument '{}'",
                             where, EnumNameBindingKind(binding.kind()),
                             EnumNameDType(arg.dtype()), str(arg.name()));
    if (expected == BindingKind::int_scalar)
      return validateSizeExpr(binding.value(), where + ": value");
    return okStatus();
  }
  if (scalar_binding)
    return invalidArgument("{}: {} binding for buffer argument '{}'", where,
                           EnumNameBindingKind(binding.kind()),
                           str(arg.name()));
  if (binding.kind() == BindingKind::scratch) {
    if (arg.rank() != 1 || dtypeBytes(arg.dtype()) != 1)
      return invalidArgument("{}: scratch binding for argument '{}' ({} of "
                             "rank {}); expected a rank-1 buffer of bytes",
                             where, str(arg.name()), EnumNameDType(arg.dtype()),
                             arg.rank());
    if (binding.index() != 0 || binding.offset_bytes())
      return invalidArgument("{}: scratch binding with an index or offset",
                             where);
    STRATA_RETURN_IF_ERROR(
        validateSizeExpr(binding.value(), where + ": value"));
  }
  size_t limit = 0;
  const char *what = "";
  switch (binding.kind()) {
  case BindingKind::weight:
    limit = count(def.weights());
    what = "manifest index";
    break;
  case BindingKind::buffer:
    limit = count(plan.buffers());
    what = "buffer id";
    break;
  case BindingKind::cache:
    limit = count(def.cache_layout()->caches());
    what = "cache id";
    break;
  default:
    break;
  }
  if (binding.kind() != BindingKind::scratch && binding.index() >= limit)
    return invalidArgument("{}: {} {} out of range ({} entries)", where, what,
                           binding.index(), limit);
  if (binding.kind() == BindingKind::weight) {
    DType held = def.weights()->Get(binding.index())->runtime_dtype();
    if (dtypeBytes(held) != dtypeBytes(arg.dtype()))
      return invalidArgument("{}: weight '{}' holds {}, argument '{}' expects "
                             "{}",
                             where,
                             str(def.weights()->Get(binding.index())->name()),
                             EnumNameDType(held), str(arg.name()),
                             EnumNameDType(arg.dtype()));
  }
  if (binding.offset_bytes())
    STRATA_RETURN_IF_ERROR(
        validateSizeExpr(binding.offset_bytes(), where + ": offset_bytes"));
  if (count(binding.shape()) != arg.rank())
    return invalidArgument("{}: shape has {} extents, argument '{}' has rank "
                           "{}",
                           where, count(binding.shape()), str(arg.name()),
                           arg.rank());
  for (size_t d = 0; d < arg.rank(); ++d)
    STRATA_RETURN_IF_ERROR(validateSizeExpr(
        binding.shape()->Get(d), fmt::format("{}: shape[{}]", where, d)));
  return okStatus();
}

/// A matrix-unit kernel (launch.matrix_instruction set) reads its operands
/// in runs of up to 16 bytes with aligned vector loads (docs/GPULowering.md
/// "K runs"); device allocations are 256-byte aligned, so a bound region must
/// start at a constant multiple of 16 bytes into its object.
Status validateMatrixOperandOffset(const Kernel &kernel,
                                   const Binding &binding,
                                   const std::string &where) {
  const LaunchInfo *launch = kernel.launch();
  if (!launch || !launch->matrix_instruction() ||
      launch->matrix_instruction()->size() == 0 || !binding.offset_bytes())
    return okStatus();
  const SizeExpr *offset = binding.offset_bytes();
  bool constant = count(offset->ops()) == 1 &&
                  offset->ops()->Get(0)->opcode() ==
                      static_cast<uint8_t>(SizeOpcode::constant);
  if (constant && offset->ops()->Get(0)->operand() % 16 == 0)
    return okStatus();
  return invalidArgument(
      "{}: offset {} into an operand of matrix-unit kernel '{}' ({}), which "
      "reads 16-byte runs; expected a constant multiple of 16 bytes",
      where, formatSizeExpr(offset), str(kernel.name()),
      str(launch->matrix_instruction()));
}

/// A collective dispatch: a known call over a group of the artifact's
/// parallel layout, send and recv plan buffers whose shapes agree with the
/// call (recv's extent along an all-gather's dim is checked at run time,
/// where the group size is known).
Status validateCollective(const ArtifactDef &def, const ExecutionPlan &plan,
                          const Dispatch &dispatch, const std::string &where) {
  const Collective &collective = *dispatch.collective();
  if (!known(collective.kind()) || !known(collective.group()))
    return invalidArgument("{}: unknown collective kind {} or group {}", where,
                           static_cast<int>(collective.kind()),
                           static_cast<int>(collective.group()));
  if (!def.parallel())
    return invalidArgument("{}: collective {} in an artifact without a "
                           "parallel layout",
                           where, EnumNameCollectiveKind(collective.kind()));
  DType dtype = collective.dtype();
  bool reducible = dtype == DType::f32 || dtype == DType::bf16;
  if (!(reducible || dtype == DType::i32) ||
      (collective.kind() == CollectiveKind::all_reduce && !reducible))
    return invalidArgument("{}: {} of {} elements", where,
                           EnumNameCollectiveKind(collective.kind()),
                           EnumNameDType(dtype));
  if (count(dispatch.bindings()) != 2)
    return invalidArgument("{}: collective with {} bindings; expected send "
                           "and recv",
                           where, count(dispatch.bindings()));
  size_t rank = 0;
  for (size_t b = 0; b < 2; ++b) {
    const Binding *binding = dispatch.bindings()->Get(b);
    std::string at = fmt::format("{}: bindings[{}]", where, b);
    if (binding->kind() != BindingKind::buffer ||
        binding->index() >= count(plan.buffers()))
      return invalidArgument("{}: a collective binds plan buffers only ({} "
                             "{})",
                             at, EnumNameBindingKind(binding->kind()),
                             binding->index());
    if (binding->offset_bytes())
      STRATA_RETURN_IF_ERROR(
          validateSizeExpr(binding->offset_bytes(), at + ": offset_bytes"));
    if (b == 0)
      rank = count(binding->shape());
    if (count(binding->shape()) != rank || rank == 0)
      return invalidArgument("{}: send and recv shapes of rank {} and {}",
                             where, rank, count(binding->shape()));
    for (size_t d = 0; d < rank; ++d)
      STRATA_RETURN_IF_ERROR(validateSizeExpr(
          binding->shape()->Get(d), fmt::format("{}: shape[{}]", at, d)));
  }
  if (collective.kind() == CollectiveKind::all_gather &&
      collective.dim() >= rank)
    return invalidArgument("{}: all_gather along dim {} of a rank-{} shape",
                           where, collective.dim(), rank);
  return okStatus();
}

Status validatePlan(const ArtifactDef &def, const TargetDef &target,
                    const ExecutionPlan &plan, const std::string &where) {
  std::set<std::string> names;
  for (size_t b = 0; b < count(plan.buffers()); ++b) {
    const BufferDef *buffer = plan.buffers()->Get(b);
    std::string at = fmt::format("{}: buffers[{}] '{}'", where, b,
                                 str(buffer->name()));
    if (str(buffer->name()).empty() || !names.insert(str(buffer->name())).second)
      return invalidArgument("{}: empty or duplicate name", at);
    if (!known(buffer->kind()))
      return invalidArgument("{}: unknown kind {}", at,
                             static_cast<int>(buffer->kind()));
    STRATA_RETURN_IF_ERROR(
        validateSizeExpr(buffer->size_bytes(), at + ": size_bytes"));
  }
  for (size_t d = 0; d < count(plan.dispatches()); ++d) {
    const Dispatch *dispatch = plan.dispatches()->Get(d);
    std::string at = fmt::format("{}: dispatches[{}]", where, d);
    if (dispatch->collective()) {
      STRATA_RETURN_IF_ERROR(validateCollective(def, plan, *dispatch, at));
      continue;
    }
    if (dispatch->kernel_index() >= count(target.kernels()))
      return invalidArgument("{}: kernel index {} out of range ({} kernels)",
                             at, dispatch->kernel_index(),
                             count(target.kernels()));
    const Kernel *kernel = target.kernels()->Get(dispatch->kernel_index());
    if (count(dispatch->bindings()) != count(kernel->args()))
      return invalidArgument("{}: {} bindings for kernel '{}' with {} "
                             "arguments",
                             at, count(dispatch->bindings()),
                             str(kernel->name()), count(kernel->args()));
    for (size_t b = 0; b < count(dispatch->bindings()); ++b) {
      std::string binding_at = fmt::format("{}: bindings[{}]", at, b);
      STRATA_RETURN_IF_ERROR(validateBinding(def, plan,
                                             *kernel->args()->Get(b),
                                             *dispatch->bindings()->Get(b),
                                             binding_at));
      STRATA_RETURN_IF_ERROR(validateMatrixOperandOffset(
          *kernel, *dispatch->bindings()->Get(b), binding_at));
    }
  }
  return okStatus();
}

Status validateTargets(const ArtifactDef &def) {
  std::set<int> seen_targets;
  for (size_t t = 0; t < count(def.targets()); ++t) {
    const TargetDef *target = def.targets()->Get(t);
    if (!known(target->target()))
      return invalidArgument("targets[{}]: unknown target kind {}", t,
                             static_cast<int>(target->target()));
    std::string where = fmt::format("targets[{}] ({})", t,
                                    EnumNameTargetKind(target->target()));
    if (!seen_targets.insert(static_cast<int>(target->target())).second)
      return invalidArgument("{}: target appears twice", where);
    if (str(target->chip()).empty())
      return invalidArgument("{}: empty chip", where);
    if (count(target->kernels()) == 0)
      return invalidArgument("{}: no kernels", where);
    for (size_t b = 0; b < count(target->binaries()); ++b) {
      const KernelBinary *binary = target->binaries()->Get(b);
      if (binary->format() != expectedFormat(target->target()))
        return invalidArgument("{}: binaries[{}]: format {} cannot run on {}",
                               where, b, static_cast<int>(binary->format()),
                               EnumNameTargetKind(target->target()));
      if (count(binary->data()) == 0)
        return invalidArgument("{}: binaries[{}]: empty", where, b);
    }
    std::set<std::string> kernel_names;
    for (size_t k = 0; k < count(target->kernels()); ++k) {
      const Kernel *kernel = target->kernels()->Get(k);
      std::string at =
          fmt::format("{}: kernels[{}] '{}'", where, k, str(kernel->name()));
      STRATA_RETURN_IF_ERROR(validateKernel(*target, *kernel, at));
      if (!kernel_names.insert(str(kernel->name())).second)
        return invalidArgument("{}: duplicate kernel name", at);
    }
    std::set<int> seen_steps;
    for (size_t p = 0; p < count(target->plans()); ++p) {
      const ExecutionPlan *plan = target->plans()->Get(p);
      if (!known(plan->step()))
        return invalidArgument("{}: plans[{}]: unknown step kind {}", where, p,
                               static_cast<int>(plan->step()));
      std::string at = fmt::format("{}: plans[{}] ({})", where, p,
                                   EnumNameStepKind(plan->step()));
      if (!seen_steps.insert(static_cast<int>(plan->step())).second)
        return invalidArgument("{}: step appears twice", at);
      STRATA_RETURN_IF_ERROR(validatePlan(def, *target, *plan, at));
    }
  }
  return okStatus();
}

Status validateDebugInfo(const ArtifactDef &def) {
  const DebugInfo *debug = def.debug_info();
  if (!debug)
    return okStatus();
  for (size_t i = 0; i < count(debug->kernels()); ++i) {
    const KernelDebugInfo *info = debug->kernels()->Get(i);
    const TargetDef *found = nullptr;
    for (size_t t = 0; t < count(def.targets()); ++t)
      if (def.targets()->Get(t)->target() == info->target())
        found = def.targets()->Get(t);
    if (!found)
      return invalidArgument("debug_info.kernels[{}]: no target {}", i,
                             static_cast<int>(info->target()));
    if (info->kernel_index() >= count(found->kernels()))
      return invalidArgument("debug_info.kernels[{}]: kernel index {} out of "
                             "range ({} kernels)",
                             i, info->kernel_index(), count(found->kernels()));
  }
  return okStatus();
}

/// The parallel layout and the weights' shards: sizes >= 1, shards inside the
/// tensor and sized to their group, one manifest per rank with one slice per
/// weight whose offsets are the rank's coordinate times the extent in each
/// sharded dimension (docs/Artifact.md).
Status validateParallel(const ArtifactDef &def) {
  const ParallelLayout *layout = def.parallel();
  uint32_t tp = layout ? layout->tensor_parallel_size() : 1;
  uint32_t ep = layout ? layout->expert_parallel_size() : 1;
  if (tp < 1 || ep < 1)
    return invalidArgument("parallel: tensor_parallel_size and "
                           "expert_parallel_size must be >= 1, got {} and {}",
                           tp, ep);
  uint64_t ranks = uint64_t(tp) * ep;
  auto groupSize = [&](RankGroup group) -> uint64_t {
    return group == RankGroup::tp ? tp : group == RankGroup::ep ? ep : ranks;
  };
  size_t nw = count(def.weights());
  for (size_t i = 0; i < nw; ++i) {
    const WeightEntry *w = def.weights()->Get(i);
    std::string where = fmt::format("weights[{}] '{}'", i, str(w->name()));
    std::set<uint32_t> dims;
    for (size_t s = 0; s < count(w->shards()); ++s) {
      const WeightShard *shard = w->shards()->Get(s);
      if (!known(shard->group()))
        return invalidArgument("{}: shard {}: unknown group {}", where, s,
                               static_cast<int>(shard->group()));
      if (shard->dim() >= count(w->shape()) ||
          !dims.insert(shard->dim()).second)
        return invalidArgument("{}: shard {}: dimension {} outside the "
                               "tensor's {} or split twice",
                               where, s, shard->dim(), count(w->shape()));
      if (shard->parts() < 2 || shard->parts() != groupSize(shard->group()))
        return invalidArgument("{}: shard {}: {} parts over group {} of {} "
                               "ranks",
                               where, s, shard->parts(),
                               EnumNameRankGroup(shard->group()),
                               groupSize(shard->group()));
      if (!isWellFormedScaleShard(w->shape()->Get(shard->dim()),
                                  shard->data_extent(), shard->block()))
        return invalidArgument("{}: shard {}: a scale part of {} over data "
                               "parts of {} in blocks of {} (a data part is "
                               "whole blocks or inside one)",
                               where, s, w->shape()->Get(shard->dim()),
                               shard->data_extent(), shard->block());
    }
  }
  if (!layout)
    return okStatus();
  if (count(layout->ranks()) != ranks)
    return invalidArgument("parallel: {} rank manifests for {} ranks",
                           count(layout->ranks()), ranks);
  for (uint32_t r = 0; r < ranks; ++r) {
    const RankManifest *manifest = layout->ranks()->Get(r);
    if (count(manifest->weights()) != nw)
      return invalidArgument("parallel: rank {} has {} weight slices for {} "
                             "weights",
                             r, count(manifest->weights()), nw);
    for (size_t i = 0; i < nw; ++i) {
      const WeightEntry *w = def.weights()->Get(i);
      const WeightSlice *slice = manifest->weights()->Get(i);
      std::vector<int64_t> expected(count(w->shape()), 0);
      for (size_t s = 0; s < count(w->shards()); ++s) {
        const WeightShard *shard = w->shards()->Get(s);
        uint64_t coordinate = shard->group() == RankGroup::tp   ? r % tp
                              : shard->group() == RankGroup::ep ? r / tp
                                                                : r;
        expected[shard->dim()] =
            weightShardOffset(coordinate, w->shape()->Get(shard->dim()),
                              shard->data_extent(), shard->block());
      }
      std::vector<int64_t> found;
      if (slice->offsets())
        found.assign(slice->offsets()->begin(), slice->offsets()->end());
      if (found != expected)
        return invalidArgument("parallel: rank {} weights[{}] '{}': offsets "
                               "[{}], expected [{}] from its shards",
                               r, i, str(w->name()), fmt::join(found, ", "),
                               fmt::join(expected, ", "));
      if (count(slice->scale_offsets()) != count(w->scale_shape()))
        return invalidArgument("parallel: rank {} weights[{}] '{}': {} scale "
                               "offsets for a scale of rank {}",
                               r, i, str(w->name()),
                               count(slice->scale_offsets()),
                               count(w->scale_shape()));
    }
  }
  return okStatus();
}

} // namespace

Status validateArtifactContents(const ArtifactDef &def) {
  STRATA_RETURN_IF_ERROR(validateModel(def.model()));
  STRATA_RETURN_IF_ERROR(validateWeights(def));
  STRATA_RETURN_IF_ERROR(validateCacheLayout(def));
  STRATA_RETURN_IF_ERROR(validateTargets(def));
  STRATA_RETURN_IF_ERROR(validateDebugInfo(def));
  STRATA_RETURN_IF_ERROR(validateParallel(def));
  return okStatus();
}

} // namespace strata::runtime
