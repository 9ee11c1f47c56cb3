//===- test_artifact_builder.cpp - small artifacts for loader tests -------===//
//
// Part of strata. See test_artifact_builder.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/test_artifact_builder.h"

#include <fstream>
#include <iterator>

#include <unistd.h>

#include "runtime/schemas/weight_shard_extent.h"

namespace strata::runtime::testing {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

namespace {

Offset<fb::SizeExpr> expr(FlatBufferBuilder &b, std::vector<fb::SizeOp> ops) {
  return fb::CreateSizeExprDirect(b, &ops);
}

fb::SizeOp constant(int64_t value) {
  return fb::SizeOp(static_cast<uint8_t>(fb::SizeOpcode::constant), value);
}
fb::SizeOp tokens() {
  return fb::SizeOp(static_cast<uint8_t>(fb::SizeOpcode::symbol),
                    static_cast<int64_t>(fb::SizeSymbol::num_tokens));
}
fb::SizeOp requests() {
  return fb::SizeOp(static_cast<uint8_t>(fb::SizeOpcode::symbol),
                    static_cast<int64_t>(fb::SizeSymbol::num_requests));
}
fb::SizeOp op(fb::SizeOpcode opcode) {
  return fb::SizeOp(static_cast<uint8_t>(opcode), 0);
}

Offset<fb::Binding> bufferBinding(FlatBufferBuilder &b, fb::BindingKind kind,
                                  uint32_t index, int64_t offset,
                                  std::vector<fb::SizeOp> extent) {
  std::vector<Offset<fb::SizeExpr>> shape = {expr(b, std::move(extent))};
  Offset<fb::SizeExpr> offset_expr;
  if (offset)
    offset_expr = expr(b, {constant(offset)});
  return fb::CreateBindingDirect(b, kind, index, offset_expr, &shape);
}

Offset<fb::Binding> floatBinding(FlatBufferBuilder &b, double value) {
  return fb::CreateBinding(b, fb::BindingKind::float_scalar, 0, 0, 0, 0, value);
}

} // namespace

std::vector<uint8_t> buildTestArtifact(const TestArtifactKnobs &k) {
  FlatBufferBuilder b;
  // Kernel scale(in: memref<?xf32>, out: memref<?xf32>, alpha: f32).
  std::vector<int64_t> dynamic = {-1};
  std::vector<Offset<fb::KernelArg>> args = {
      fb::CreateKernelArgDirect(b, "in", fb::ArgKind::buffer, fb::DType::f32,
                                1, &dynamic),
      fb::CreateKernelArgDirect(b, "out", fb::ArgKind::buffer, fb::DType::f32,
                                1, &dynamic),
      fb::CreateKernelArgDirect(b, "alpha", fb::ArgKind::scalar,
                                fb::DType::f32, 0, nullptr)};
  std::vector<Offset<fb::Kernel>> kernels = {fb::CreateKernelDirect(
      b, "scale", fb::TargetKind::cpu, k.kernel_chip.c_str(), k.binary_index,
      "strata_test_scale", fb::KernelAbi::packed_memref_descriptor, &args)};
  // Kernel scratch_probe(scratch: memref<?xu8>, out: memref<?xf32>).
  std::vector<Offset<fb::KernelArg>> probe_args = {
      fb::CreateKernelArgDirect(b, "scratch", fb::ArgKind::buffer,
                                fb::DType::u8, 1, &dynamic),
      fb::CreateKernelArgDirect(b, "out", fb::ArgKind::buffer, fb::DType::f32,
                                1, &dynamic)};
  if (k.scratch)
    kernels.push_back(fb::CreateKernelDirect(
        b, "scratch_probe", fb::TargetKind::cpu, k.kernel_chip.c_str(), 0,
        "strata_test_scratch_probe", fb::KernelAbi::packed_memref_descriptor,
        &probe_args));
  // Decode plan: scratch_probe with num_tokens * 16 bytes per block.
  auto scratchPlan = [&](std::vector<fb::SizeOp> blocks) {
    std::vector<fb::SizeOp> per_block = {tokens(), constant(16),
                                         op(fb::SizeOpcode::mul)};
    std::vector<fb::SizeOp> total = per_block;
    total.insert(total.end(), blocks.begin(), blocks.end());
    total.push_back(op(fb::SizeOpcode::mul));
    if (k.scratch_extent_mismatch) {
      total.push_back(constant(1));
      total.push_back(op(fb::SizeOpcode::add));
    }
    std::vector<Offset<fb::SizeExpr>> shape = {expr(b, total)};
    std::vector<Offset<fb::Binding>> bindings = {
        fb::CreateBindingDirect(b, fb::BindingKind::scratch, 0, 0, &shape,
                                expr(b, per_block)),
        bufferBinding(b, fb::BindingKind::buffer, 0, 0, {constant(2)})};
    std::vector<Offset<fb::BufferDef>> out = {fb::CreateBufferDefDirect(
        b, "out", fb::BufferKind::output, expr(b, {constant(8)}))};
    std::vector<Offset<fb::Dispatch>> probe = {
        fb::CreateDispatchDirect(b, 1, &bindings, "probe")};
    return fb::CreateExecutionPlanDirect(b, fb::StepKind::decode, &out,
                                         &probe);
  };
  b.ForceVectorAlignment(k.binary.size(), 1, 16);
  std::vector<Offset<fb::KernelBinary>> binaries = {fb::CreateKernelBinary(
      b, fb::BinaryFormat::elf_so, b.CreateVector(k.binary))};

  // Plan: out = 1.5 * exp(in[1 .. num_tokens]); cache = 2 * exp(w).
  std::vector<fb::SizeOp> in_size = k.buffer0_size;
  if (in_size.empty())
    in_size = {tokens(), constant(1), op(fb::SizeOpcode::add), constant(4),
               op(fb::SizeOpcode::mul)};
  std::vector<Offset<fb::BufferDef>> buffers = {
      fb::CreateBufferDefDirect(b, "in", fb::BufferKind::input,
                                expr(b, in_size)),
      fb::CreateBufferDefDirect(
          b, "out", fb::BufferKind::output,
          expr(b, {tokens(), constant(4), op(fb::SizeOpcode::mul)}))};
  std::vector<Offset<fb::Binding>> first = {
      bufferBinding(b, fb::BindingKind::buffer, 0, 4, {tokens()}),
      bufferBinding(b, fb::BindingKind::buffer, k.buffer_id, 0, {tokens()}),
      k.scalar_as_buffer
          ? bufferBinding(b, fb::BindingKind::buffer, 0, 0, {tokens()})
          : floatBinding(b, 1.5)};
  first.resize(k.dispatch0_bindings);
  std::vector<Offset<fb::Binding>> second = {
      bufferBinding(b, fb::BindingKind::weight, k.weight_index, 0,
                    {constant(4)}),
      bufferBinding(b, fb::BindingKind::cache, k.cache_id, 0, {constant(4)}),
      floatBinding(b, 2.0)};
  std::vector<Offset<fb::Dispatch>> dispatches = {
      fb::CreateDispatchDirect(b, k.kernel_index, &first, "first"),
      fb::CreateDispatchDirect(b, 0, &second, "second")};
  if (k.collective) {
    std::vector<Offset<fb::Binding>> regions = {
        bufferBinding(b, fb::BindingKind::buffer, 1, 0, {tokens()}),
        bufferBinding(b, fb::BindingKind::buffer, 1, 0, {tokens()})};
    regions.resize(k.collective_bindings,
                   bufferBinding(b, fb::BindingKind::buffer, 1, 0, {tokens()}));
    dispatches.push_back(fb::CreateDispatchDirect(
        b, 0, &regions, "sum",
        fb::CreateCollective(b, k.collective_kind, k.collective_group,
                             k.collective_dtype, k.collective_dim)));
  }
  std::vector<Offset<fb::ExecutionPlan>> plans = {fb::CreateExecutionPlanDirect(
      b, fb::StepKind::prefill, &buffers, &dispatches)};
  if (k.duplicate_step)
    plans.push_back(fb::CreateExecutionPlanDirect(b, fb::StepKind::prefill));
  if (k.scratch)
    plans.push_back(scratchPlan({constant(1)}));
  std::vector<Offset<fb::TargetDef>> targets = {fb::CreateTargetDefDirect(
      b, static_cast<fb::TargetKind>(k.target_kind), "x86-64-v2", &binaries,
      &kernels, &plans)};
  if (k.gpu_target) {
    std::vector<uint32_t> block = {256, 1, 1};
    std::vector<Offset<fb::SizeExpr>> grid = {
        expr(b, {tokens(), constant(256), op(fb::SizeOpcode::ceil_div)}),
        expr(b, {constant(1)}), expr(b, {constant(1)})};
    Offset<fb::LaunchInfo> launch;
    if (!k.gpu_without_launch)
      launch = fb::CreateLaunchInfoDirect(
          b, &block, &grid, 0,
          k.gpu_matrix_instruction.empty()
              ? nullptr
              : k.gpu_matrix_instruction.c_str());
    std::vector<Offset<fb::Kernel>> gpu_kernels = {fb::CreateKernelDirect(
        b, "scale", fb::TargetKind::gfx942, "gfx942", 0, "scale",
        fb::KernelAbi::gpu_memref_descriptor, &args, launch)};
    std::vector<Offset<fb::ExecutionPlan>> gpu_plans;
    if (!k.gpu_matrix_instruction.empty()) {
      std::vector<Offset<fb::BufferDef>> gpu_buffers = {
          fb::CreateBufferDefDirect(
              b, "in", fb::BufferKind::input,
              expr(b, {tokens(), constant(4), op(fb::SizeOpcode::mul),
                       constant(k.gpu_input_offset), op(fb::SizeOpcode::add)})),
          fb::CreateBufferDefDirect(
              b, "out", fb::BufferKind::output,
              expr(b, {tokens(), constant(4), op(fb::SizeOpcode::mul)}))};
      std::vector<Offset<fb::Binding>> gpu_bindings = {
          bufferBinding(b, fb::BindingKind::buffer, 0, k.gpu_input_offset,
                        {tokens()}),
          bufferBinding(b, fb::BindingKind::buffer, 1, 0, {tokens()}),
          floatBinding(b, 1.5)};
      std::vector<Offset<fb::Dispatch>> gpu_dispatches = {
          fb::CreateDispatchDirect(b, 0, &gpu_bindings, "matrix")};
      gpu_plans.push_back(fb::CreateExecutionPlanDirect(
          b, fb::StepKind::prefill, &gpu_buffers, &gpu_dispatches));
    }
    if (k.scratch) {
      std::vector<uint32_t> one = {1, 1, 1};
      std::vector<Offset<fb::SizeExpr>> probe_grid = {
          expr(b, {requests()}), expr(b, {constant(2)}),
          expr(b, {constant(1)})};
      gpu_kernels.push_back(fb::CreateKernelDirect(
          b, "scratch_probe", fb::TargetKind::gfx942, "gfx942", 0,
          "scratch_probe", fb::KernelAbi::gpu_memref_descriptor, &probe_args,
          fb::CreateLaunchInfoDirect(b, &one, &probe_grid, 0)));
      gpu_plans.push_back(scratchPlan(
          {requests(), constant(2), op(fb::SizeOpcode::mul)}));
    }
    std::vector<uint8_t> code = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x40};
    std::vector<Offset<fb::KernelBinary>> gpu_binaries = {
        fb::CreateKernelBinary(b, fb::BinaryFormat::hsaco,
                               b.CreateVector(code))};
    targets.push_back(fb::CreateTargetDefDirect(b, fb::TargetKind::gfx942,
                                                "gfx942", &gpu_binaries,
                                                &gpu_kernels, &gpu_plans));
  }

  std::vector<fb::LayerKind> layer_kinds(k.layer_kind_count,
                                         fb::LayerKind::kda);
  std::vector<fb::MlpKind> mlp_kinds = {fb::MlpKind::dense};
  auto model_name = b.CreateString("test-model");
  auto layer_vec = b.CreateVector(layer_kinds);
  auto mlp_vec = b.CreateVector(mlp_kinds);
  fb::ModelConfigBuilder model_builder(b);
  model_builder.add_name(model_name);
  model_builder.add_vocab_size(16);
  model_builder.add_hidden_size(8);
  model_builder.add_num_hidden_layers(1);
  model_builder.add_layer_kinds(layer_vec);
  model_builder.add_mlp_kinds(mlp_vec);
  model_builder.add_activation_dtype(k.activation_dtype);
  model_builder.add_index_kpool(k.index_kpool);
  auto model = model_builder.Finish();
  // KDA: 1 head of 4x4 f32 = 64 bytes; conv (2 - 1) * 12 bf16 = 24 -> 64.
  auto kda = fb::CreateKdaStateCache(b, 1, 1, 4, 4, fb::DType::f32, k.kda_recurrent_bytes, 2, 12,
                                     fb::DType::bf16, 64);
  std::vector<Offset<fb::CacheDef>> caches = {fb::CreateCacheDefDirect(
      b, "layer0.kda_recurrent", fb::CacheKind::kda_recurrent, 0,
      k.cache_slot)};
  // Index pages: rows of 8 bf16 (16 bytes); ring: 2 planes x 4 rows x 8
  // bf16 = 128 bytes.
  Offset<fb::IndexPageCache> index;
  Offset<fb::TailRingCache> ring;
  uint64_t page_tokens = 0;
  if (k.index_kpool > 0) {
    page_tokens = 4;
    uint64_t rows = page_tokens / k.index_kpool;
    uint64_t a = k.cache_alignment;
    index = fb::CreateIndexPageCache(b, 1, rows, fb::DType::bf16, 16,
                                     fb::DType::invalid,
                                     fb::IndexScaleLayout::none, 16,
                                     (rows * 16 + a - 1) / a * a);
    if (k.index_ring)
      ring = fb::CreateTailRingCache(b, 1, 4, 2, 8, fb::DType::bf16,
                                     (128 + a - 1) / a * a);
  }
  Offset<fb::SharedSelectionCache> shared;
  if (k.shared_selection_rows > 0) {
    uint64_t bytes = uint64_t(k.shared_selection_rows) * 72 * 4;
    uint64_t a = k.cache_alignment;
    shared = fb::CreateSharedSelectionCache(b, 1, k.shared_selection_rows, 72,
                                            (bytes + a - 1) / a * a);
  }
  auto layout = fb::CreateCacheLayoutDirect(b, k.cache_alignment, page_tokens,
                                            0, index, ring, kda, &caches,
                                            shared);

  bool sharded = k.parallel && k.shard_parts > 0;
  std::vector<int64_t> w_shape = {sharded ? 4 / k.shard_parts : 4};
  std::vector<Offset<fb::WeightShard>> shards;
  if (sharded)
    shards.push_back(
        fb::CreateWeightShard(b, k.shard_dim, k.shard_parts,
                              static_cast<fb::RankGroup>(k.shard_group),
                              k.shard_data_extent, k.shard_scale_block));
  std::vector<Offset<fb::WeightEntry>> weights = {fb::CreateWeightEntryDirect(
      b, "w", k.fp8_without_scale ? fb::DType::f8e4m3fn : fb::DType::f32,
      &w_shape,
      k.fp8_without_scale ? fb::WeightTransform::fp8_dequant
                          : fb::WeightTransform::none,
      fb::DType::f32, nullptr, fb::DType::invalid, nullptr,
      sharded ? &shards : nullptr)};

  Offset<fb::ParallelLayout> parallel;
  if (k.parallel) {
    uint32_t ranks = k.parallel_tp * k.parallel_ep;
    uint32_t manifests =
        k.rank_manifests < 0 ? ranks : static_cast<uint32_t>(k.rank_manifests);
    uint32_t slices =
        k.slices_per_rank < 0 ? 1 : static_cast<uint32_t>(k.slices_per_rank);
    std::vector<Offset<fb::RankManifest>> rank_list;
    for (uint32_t r = 0; r < manifests; ++r) {
      uint32_t coordinate = k.shard_group == 0   ? r % k.parallel_tp
                            : k.shard_group == 1 ? r / k.parallel_tp
                                                 : r;
      std::vector<int64_t> offsets = {
          sharded ? weightShardOffset(coordinate, w_shape[0],
                                      k.shard_data_extent, k.shard_scale_block)
                  : 0};
      if (r == 1)
        offsets[0] += k.rank1_offset_delta;
      std::vector<int64_t> scale_offsets(k.scale_offsets_count, 0);
      std::vector<Offset<fb::WeightSlice>> slice_list;
      for (uint32_t s = 0; s < slices; ++s)
        slice_list.push_back(
            fb::CreateWeightSliceDirect(b, &offsets, &scale_offsets));
      rank_list.push_back(fb::CreateRankManifestDirect(b, &slice_list));
    }
    parallel = fb::CreateParallelLayoutDirect(b, k.parallel_tp, k.parallel_ep,
                                              &rank_list);
  }

  std::vector<Offset<fb::SourceLocation>> locations = {
      fb::CreateSourceLocationDirect(b, "test.dsl", 3, 1, "scale")};
  std::vector<Offset<fb::KernelDebugInfo>> debug_kernels = {
      fb::CreateKernelDebugInfoDirect(b, fb::TargetKind::cpu,
                                      k.debug_kernel_index, &locations)};
  auto debug = fb::CreateDebugInfoDirect(b, &debug_kernels);

  fb::Checksum zero(0);
  auto root = fb::CreateArtifactDefDirect(
      b, k.format_version, "test", k.no_checksum ? nullptr : &zero, model,
      &targets, layout, &weights, debug, parallel);
  fb::FinishArtifactDefBuffer(b, root);
  std::vector<uint8_t> bytes(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  if (!k.no_checksum) {
    const fb::ArtifactDef *def = fb::GetArtifactDef(bytes.data());
    size_t offset =
        reinterpret_cast<const uint8_t *>(def->checksum()) - bytes.data();
    flatbuffers::WriteScalar<uint64_t>(
        bytes.data() + offset,
        computeArtifactChecksum(bytes.data(), bytes.size(), offset));
  }
  return bytes;
}

std::vector<uint8_t> readTestKernelLibrary() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return {};
  exe[n] = 0;
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));
  std::ifstream in(dir + "/testdata/libstrata_cpu_test_kernels.so",
                   std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

} // namespace strata::runtime::testing
