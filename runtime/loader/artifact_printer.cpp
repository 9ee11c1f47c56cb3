//===- artifact_printer.cpp - stable text form of an artifact -------------===//
//
// Part of strata. See artifact_printer.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/artifact_printer.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <cstdio>
#include <cstring>

#include <iostream>

#include <fmt/ranges.h>

#include "runtime/base/command_line.h"

#include "runtime/loader/size_expr.h"

namespace strata::runtime {

using namespace strata::artifact;

namespace {

std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

std::string shapeText(const flatbuffers::Vector<int64_t> *shape) {
  std::vector<std::string> parts;
  if (shape)
    for (int64_t extent : *shape)
      parts.push_back(extent < 0 ? "?" : std::to_string(extent));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string exprListText(
    const flatbuffers::Vector<flatbuffers::Offset<SizeExpr>> *exprs) {
  std::vector<std::string> parts;
  if (exprs)
    for (const SizeExpr *expr : *exprs)
      parts.push_back(formatSizeExpr(expr));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

void printModel(const ModelConfig &m, std::string &out) {
  std::vector<std::string> layers, mlps;
  for (LayerKind kind : *m.layer_kinds())
    layers.push_back(EnumNameLayerKind(kind));
  for (MlpKind kind : *m.mlp_kinds())
    mlps.push_back(EnumNameMlpKind(kind));
  fmt::format_to(std::back_inserter(out), "model '{}'\n", str(m.name()));
  auto field = [&](const char *name, auto value) {
    fmt::format_to(std::back_inserter(out), "  {}: {}\n", name, value);
  };
  field("vocab_size", m.vocab_size());
  field("hidden_size", m.hidden_size());
  field("num_hidden_layers", m.num_hidden_layers());
  field("num_nextn_predict_layers", m.num_nextn_predict_layers());
  field("layer_kinds", fmt::format("[{}]", fmt::join(layers, ", ")));
  field("mlp_kinds", fmt::format("[{}]", fmt::join(mlps, ", ")));
  field("num_attention_heads", m.num_attention_heads());
  field("kv_lora_rank", m.kv_lora_rank());
  field("q_lora_rank", m.q_lora_rank());
  field("qk_nope_head_dim", m.qk_nope_head_dim());
  field("qk_rope_head_dim", m.qk_rope_head_dim());
  field("v_head_dim", m.v_head_dim());
  field("index_n_heads", m.index_n_heads());
  field("index_head_dim", m.index_head_dim());
  field("index_topk", m.index_topk());
  field("index_kpool", m.index_kpool());
  field("hc_mult", m.hc_mult());
  field("n_routed_experts", m.n_routed_experts());
  field("n_shared_experts", m.n_shared_experts());
  field("num_experts_per_tok", m.num_experts_per_tok());
  field("kda_num_heads", m.kda_num_heads());
  field("kda_head_dim", m.kda_head_dim());
  field("short_conv_kernel_size", m.short_conv_kernel_size());
  field("rms_norm_eps", m.rms_norm_eps());
  field("max_position_embeddings", m.max_position_embeddings());
  field("eos_token_id", m.eos_token_id());
  field("pad_token_id", m.pad_token_id());
  if (m.eos_token_ids() && m.eos_token_ids()->size() > 0)
    fmt::format_to(std::back_inserter(out), "  eos_token_ids: [{}]\n",
                   fmt::join(*m.eos_token_ids(), ", "));
  if (m.activation_dtype() != DType::invalid)
    field("activation_dtype", EnumNameDType(m.activation_dtype()));
}

void printBinding(const ArtifactDef &def, const ExecutionPlan &plan,
                  const Binding &b, size_t index, std::string &out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "      bind {}: ", index);
  switch (b.kind()) {
  case BindingKind::int_scalar:
    fmt::format_to(it, "int {}\n", formatSizeExpr(b.value()));
    return;
  case BindingKind::float_scalar:
    fmt::format_to(it, "float {}\n", b.float_value());
    return;
  case BindingKind::weight:
    fmt::format_to(it, "weight {} '{}'", b.index(),
                   str(def.weights()->Get(b.index())->name()));
    break;
  case BindingKind::buffer:
    fmt::format_to(it, "buffer {} '{}'", b.index(),
                   str(plan.buffers()->Get(b.index())->name()));
    break;
  case BindingKind::cache:
    fmt::format_to(it, "cache {} '{}'", b.index(),
                   str(def.cache_layout()->caches()->Get(b.index())->name()));
    break;
  case BindingKind::scratch:
    fmt::format_to(it, "scratch {} per block", formatSizeExpr(b.value()));
    break;
  }
  if (b.offset_bytes())
    fmt::format_to(it, " offset {}", formatSizeExpr(b.offset_bytes()));
  fmt::format_to(it, " shape {}\n", exprListText(b.shape()));
}

void printTarget(const ArtifactDef &def, const TargetDef &t, std::string &out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "target {} chip '{}'\n", EnumNameTargetKind(t.target()),
                 str(t.chip()));
  size_t b = 0;
  if (t.binaries())
    for (const KernelBinary *binary : *t.binaries())
      fmt::format_to(it, "  binary {}: {}, {} bytes\n", b++,
                     EnumNameBinaryFormat(binary->format()),
                     binary->data()->size());
  size_t k = 0;
  for (const Kernel *kernel : *t.kernels()) {
    fmt::format_to(it, "  kernel {} '{}': binary {}, entry '{}', abi {}\n",
                   k++, str(kernel->name()), kernel->binary_index(),
                   str(kernel->entry_symbol()),
                   EnumNameKernelAbi(kernel->abi()));
    size_t a = 0;
    if (kernel->args())
      for (const KernelArg *arg : *kernel->args()) {
        if (arg->kind() == ArgKind::scalar)
          fmt::format_to(it, "    arg {} '{}': scalar {}\n", a++,
                         str(arg->name()), EnumNameDType(arg->dtype()));
        else
          fmt::format_to(it, "    arg {} '{}': buffer {} {}\n", a++,
                         str(arg->name()), EnumNameDType(arg->dtype()),
                         shapeText(arg->static_shape()));
      }
    if (const LaunchInfo *launch = kernel->launch()) {
      fmt::format_to(it, "    launch block [{}] grid {} shared {}",
                     fmt::join(*launch->block(), ", "),
                     exprListText(launch->grid()),
                     launch->shared_memory_bytes());
      if (launch->matrix_instruction())
        fmt::format_to(it, " matrix {}",
                       str(launch->matrix_instruction()));
      if (launch->shared_memory())
        fmt::format_to(it, " shared by step {}",
                       formatSizeExpr(launch->shared_memory()));
      if (launch->grid_dependency_control())
        fmt::format_to(it, " griddepcontrol");
      fmt::format_to(it, "\n");
    }
  }
  if (!t.plans())
    return;
  for (const ExecutionPlan *plan : *t.plans()) {
    size_t nb = plan->buffers() ? plan->buffers()->size() : 0;
    size_t nd = plan->dispatches() ? plan->dispatches()->size() : 0;
    fmt::format_to(it, "  plan {}: {} buffers, {} dispatches",
                   EnumNameStepKind(plan->step()), nb, nd);
    if (plan->max_request_tokens())
      fmt::format_to(it, ", max_request_tokens {}",
                     plan->max_request_tokens());
    fmt::format_to(it, "\n");
    for (size_t i = 0; i < nb; ++i) {
      const BufferDef *buffer = plan->buffers()->Get(i);
      fmt::format_to(it, "    buffer {} '{}': {}, {} bytes\n", i,
                     str(buffer->name()), EnumNameBufferKind(buffer->kind()),
                     formatSizeExpr(buffer->size_bytes()));
    }
    for (size_t i = 0; i < nd; ++i) {
      const Dispatch *dispatch = plan->dispatches()->Get(i);
      if (const Collective *collective = dispatch->collective())
        fmt::format_to(it, "    dispatch {} '{}': collective {} over {}, {}"
                           "{}\n",
                       i, str(dispatch->label()),
                       EnumNameCollectiveKind(collective->kind()),
                       EnumNameRankGroup(collective->group()),
                       EnumNameDType(collective->dtype()),
                       collective->kind() == CollectiveKind::all_gather
                           ? fmt::format(", dim {}", collective->dim())
                           : std::string());
      else
        fmt::format_to(
            it, "    dispatch {} '{}': kernel {} '{}'\n", i,
            str(dispatch->label()), dispatch->kernel_index(),
            str(t.kernels()->Get(dispatch->kernel_index())->name()));
      for (size_t j = 0; j < dispatch->bindings()->size(); ++j)
        printBinding(def, *plan, *dispatch->bindings()->Get(j), j, out);
    }
  }
}

void printCacheLayout(const CacheLayout &c, std::string &out) {
  auto it = std::back_inserter(out);
  fmt::format_to(it, "cache_layout alignment {} page_size_tokens {}\n",
                 c.alignment(), c.page_size_tokens());
  if (const MlaLatentCache *m = c.mla_latent())
    fmt::format_to(it,
                   "  mla_latent: layers {}, {} x {}, row_bytes {}, "
                   "page_bytes {}\n",
                   m->num_layers(), m->row_elements(), EnumNameDType(m->dtype()),
                   m->row_bytes(), m->page_bytes());
  if (const IndexPageCache *i = c.index_pages())
    fmt::format_to(it,
                   "  index_pages: layers {}, rows_per_page {}, values {} "
                   "bytes {}, scale {} {}, row_stride_bytes {}, page_bytes "
                   "{}\n",
                   i->num_layers(), i->rows_per_page(), i->value_bytes(),
                   EnumNameDType(i->value_dtype()),
                   EnumNameDType(i->scale_dtype()),
                   EnumNameIndexScaleLayout(i->scale_layout()),
                   i->row_stride_bytes(), i->page_bytes());
  if (const TailRingCache *r = c.tail_ring())
    fmt::format_to(it,
                   "  tail_ring: layers {}, depth {}, planes {}, {} x {}, "
                   "bytes_per_layer {}\n",
                   r->num_layers(), r->depth(), r->planes(), r->row_elements(),
                   EnumNameDType(r->dtype()), r->bytes_per_layer());
  if (const KdaStateCache *k = c.kda())
    fmt::format_to(it,
                   "  kda: layers {}, heads {}, recurrent {}x{} {} ({} "
                   "bytes), conv {}x{} {} ({} bytes)\n",
                   k->num_layers(), k->num_heads(), k->head_dim_k(),
                   k->head_dim_v(), EnumNameDType(k->recurrent_dtype()),
                   k->recurrent_bytes_per_layer(), k->conv_kernel_size() - 1,
                   k->conv_channels(), EnumNameDType(k->conv_dtype()),
                   k->conv_bytes_per_layer());
  if (const SharedSelectionCache *s = c.shared_selection())
    fmt::format_to(it,
                   "  shared_selection: layers {}, rows {}, {} x i32, "
                   "bytes_per_layer {}\n",
                   s->num_layers(), s->rows(), s->row_elements(),
                   s->bytes_per_layer());
  size_t i = 0;
  if (c.caches())
    for (const CacheDef *cache : *c.caches())
      fmt::format_to(it, "  cache {} '{}': {} layer {} slot {}\n", i++,
                     str(cache->name()), EnumNameCacheKind(cache->kind()),
                     cache->layer(), cache->slot());
}

} // namespace

std::string printArtifact(const Artifact &artifact) {
  const ArtifactDef &def = artifact.def();
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "strata artifact\n");
  fmt::format_to(it, "  format_version: {}\n", def.format_version());
  fmt::format_to(it, "  producer: '{}'\n", str(def.producer()));
  fmt::format_to(it, "  size: {} bytes\n", artifact.bytes().size());
  fmt::format_to(it, "  checksum: {:#018x}\n", def.checksum()->value());
  printModel(*def.model(), out);
  size_t nt = def.targets() ? def.targets()->size() : 0;
  fmt::format_to(it, "targets: {}\n", nt);
  for (size_t t = 0; t < nt; ++t)
    printTarget(def, *def.targets()->Get(t), out);
  printCacheLayout(*def.cache_layout(), out);
  size_t nw = def.weights() ? def.weights()->size() : 0;
  fmt::format_to(it, "weights: {}\n", nw);
  for (size_t w = 0; w < nw; ++w) {
    const WeightEntry *e = def.weights()->Get(w);
    fmt::format_to(it, "  weight {} '{}': {} {} {} -> {}", w, str(e->name()),
                   EnumNameDType(e->dtype()), shapeText(e->shape()),
                   EnumNameWeightTransform(e->transform()),
                   EnumNameDType(e->runtime_dtype()));
    if (e->scale_name() && e->scale_name()->size())
      fmt::format_to(it, ", scale '{}' {} {}", str(e->scale_name()),
                     EnumNameDType(e->scale_dtype()),
                     shapeText(e->scale_shape()));
    for (size_t s = 0; e->shards() && s < e->shards()->size(); ++s) {
      const WeightShard *shard = e->shards()->Get(s);
      fmt::format_to(it, ", dim {} / {} over {}", shard->dim(), shard->parts(),
                     EnumNameRankGroup(shard->group()));
      if (shard->block() > 0)
        fmt::format_to(it, " (scales of {}-element parts in blocks of {})",
                       shard->data_extent(), shard->block());
    }
    out += "\n";
  }
  if (const ParallelLayout *layout = def.parallel()) {
    size_t nr = layout->ranks() ? layout->ranks()->size() : 0;
    fmt::format_to(it, "parallel: tensor {} x expert {}, {} ranks\n",
                   layout->tensor_parallel_size(),
                   layout->expert_parallel_size(), nr);
    for (size_t r = 0; r < nr; ++r) {
      const RankManifest *rank = layout->ranks()->Get(r);
      size_t ns = rank->weights() ? rank->weights()->size() : 0;
      for (size_t w = 0; w < ns; ++w) {
        const WeightSlice *slice = rank->weights()->Get(w);
        fmt::format_to(it, "  rank {} weight {}: offsets {}", r, w,
                       shapeText(slice->offsets()));
        if (slice->scale_offsets() && slice->scale_offsets()->size())
          fmt::format_to(it, ", scale offsets {}",
                         shapeText(slice->scale_offsets()));
        out += "\n";
      }
    }
  }
  if (const DebugInfo *debug = def.debug_info()) {
    size_t nk = debug->kernels() ? debug->kernels()->size() : 0;
    fmt::format_to(it, "debug_info: {} kernels\n", nk);
    for (size_t k = 0; k < nk; ++k) {
      const KernelDebugInfo *info = debug->kernels()->Get(k);
      fmt::format_to(it, "  {} kernel {}:", EnumNameTargetKind(info->target()),
                     info->kernel_index());
      if (info->locations())
        for (const SourceLocation *loc : *info->locations())
          fmt::format_to(it, " {}:{}:{} '{}'", str(loc->file()), loc->line(),
                         loc->column(), str(loc->note()));
      out += "\n";
    }
  }
  return out;
}

StatusOr<RuntimeSizes> parseRuntimeSizes(std::string_view spec) {
  RuntimeSizes sizes;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view()
                                           : spec.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return invalidArgument("'{}': expected NAME=VALUE", item);
    std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    std::optional<SizeSymbol> symbol;
    std::vector<std::string_view> names;
    for (int i = 0; i <= static_cast<int>(SizeSymbol::MAX); ++i) {
      names.push_back(EnumNameSizeSymbol(static_cast<SizeSymbol>(i)));
      if (name == names.back())
        symbol = static_cast<SizeSymbol>(i);
    }
    if (!symbol)
      return invalidArgument("'{}': unknown size (one of: {})", name,
                             fmt::join(names, ", "));
    uint64_t number = 0;
    auto [end, error] =
        std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc() ||
        end != value.data() + value.size())
      return invalidArgument("'{}': '{}' is not a number", name, value);
    sizes[*symbol] = number;
  }
  return sizes;
}

StatusOr<std::string> printLaunchesAt(const Artifact &artifact,
                                      const RuntimeSizes &sizes) {
  const ArtifactDef &def = artifact.def();
  std::string out;
  auto it = std::back_inserter(out);
  for (size_t t = 0; def.targets() && t < def.targets()->size(); ++t) {
    const TargetDef *target = def.targets()->Get(t);
    for (const Kernel *kernel : *target->kernels()) {
      const LaunchInfo *launch = kernel->launch();
      if (!launch)
        continue;
      std::vector<uint64_t> grid;
      for (const SizeExpr *dim : *launch->grid()) {
        StatusOr<uint64_t> blocks = evaluateSizeExpr(dim, sizes);
        if (!blocks.ok())
          return blocks.status();
        grid.push_back(*blocks);
      }
      uint64_t shared = launch->shared_memory_bytes();
      if (launch->shared_memory()) {
        StatusOr<uint64_t> bytes =
            evaluateSizeExpr(launch->shared_memory(), sizes);
        if (!bytes.ok())
          return bytes.status();
        shared = *bytes;
      }
      // No block: Program::run skips the dispatch.
      bool skipped = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
      fmt::format_to(it, "target {} kernel '{}' grid [{}] shared {}{}\n",
                     EnumNameTargetKind(target->target()), str(kernel->name()),
                     fmt::join(grid, ", "), shared,
                     skipped ? " (no block: skipped)" : "");
    }
  }
  return out;
}

StatusOr<std::string_view> targetBinary(const Artifact &artifact,
                                        std::string_view target) {
  const ArtifactDef &def = artifact.def();
  std::vector<std::string> names;
  for (size_t t = 0; def.targets() && t < def.targets()->size(); ++t) {
    const TargetDef *candidate = def.targets()->Get(t);
    std::string name = EnumNameTargetKind(candidate->target());
    if (name == target) {
      if (!candidate->binaries() || candidate->binaries()->size() == 0)
        return notFound("target '{}' has no binary", target);
      const auto *data = candidate->binaries()->Get(0)->data();
      return std::string_view(reinterpret_cast<const char *>(data->data()),
                              data->size());
    }
    names.push_back(std::move(name));
  }
  return notFound("artifact has no target '{}' (it has: {})", target,
                  fmt::join(names, ", "));
}

int runDumpTool(int argc, char **argv) {
  CommandLine cl("strata-dump",
                 "usage: strata-dump <artifact.strata>\n"
                 "       strata-dump <artifact.strata> --binary <target> "
                 "<out-file>\n"
                 "       strata-dump <artifact.strata> --launch-at "
                 "num_tokens=N[,SIZE=N...]\n",
                 "Validates an artifact and prints it in a stable text form, "
                 "writes one\ntarget's kernel binary (.so, hsaco, cubin) "
                 "for llvm-objdump, or prints every GPU\nkernel's grid and "
                 "shared bytes at the given step sizes. docs/Artifact.md.");
  std::string path, launchAt;
  std::vector<std::string> binary;
  cl.app().add_option("artifact", path, "the .strata artifact");
  cl.app()
      .add_option("--launch-at", launchAt,
                  "print each GPU kernel's launch at these sizes (the "
                  "others 0)")
      ->type_name("<SIZE=N,...>");
  cl.app()
      .add_option("--binary", binary,
                  "write this target's kernel binary to out-file")
      ->expected(2)
      ->type_name("<target> <out-file>");
  if (std::optional<int> code = cl.parse(argc, argv, std::cout, std::cerr))
    return *code;
  if (path.empty())
    return cl.usageError(std::cerr, "no artifact given");
  bool extract = binary.size() == 2;
  auto fail = [](const Status &status) {
    std::fprintf(stderr, "error: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  };
  auto artifact = Artifact::fromFile(path);
  if (!artifact.ok())
    return fail(artifact.status());
  if (extract) {
    StatusOr<std::string_view> bytes = targetBinary(**artifact, binary[0]);
    if (!bytes.ok())
      return fail(bytes.status());
    std::FILE *out = std::fopen(binary[1].c_str(), "wb");
    if (!out)
      return fail(unavailable("{}: cannot open for writing: {}", binary[1],
                              std::strerror(errno)));
    size_t written = std::fwrite(bytes->data(), 1, bytes->size(), out);
    if (std::fclose(out) != 0 || written != bytes->size())
      return fail(unavailable("{}: write failed", binary[1]));
    return 0;
  }
  if (!launchAt.empty()) {
    StatusOr<RuntimeSizes> sizes = parseRuntimeSizes(launchAt);
    if (!sizes.ok())
      return fail(sizes.status());
    StatusOr<std::string> launches = printLaunchesAt(**artifact, *sizes);
    if (!launches.ok())
      return fail(launches.status());
    std::fwrite(launches->data(), 1, launches->size(), stdout);
    return 0;
  }
  std::string text = printArtifact(**artifact);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

} // namespace strata::runtime
