//===- test_artifact_builder.h - small artifacts for loader tests -*- C++ -*-===//
//
// Part of strata. Test-only: builds a small, valid artifact with the
// flatbuffers builder (no compiler involved) whose knobs break one field at a
// time, so each validation check has a test. The artifact has one cpu target
// with one kernel `scale(in: memref<?xf32>, out: memref<?xf32>, alpha: f32)`
// (testdata/test_kernels.c of runtime/device/cpu), a prefill plan of two
// dispatches (buffer -> buffer, weight -> cache) and a one-layer KDA model;
// optionally a scratch kernel and plan (TestArtifactKnobs::scratch).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_TEST_ARTIFACT_BUILDER_H
#define STRATA_RUNTIME_LOADER_TEST_ARTIFACT_BUILDER_H

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/loader/artifact.h"

namespace strata::runtime::testing {

namespace fb = strata::artifact;

/// Knobs of buildTestArtifact; the defaults give a valid artifact.
struct TestArtifactKnobs {
  /// Kernel binary bytes (default: a fake ELF header, enough for validation).
  std::vector<uint8_t> binary = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  uint32_t kernel_index = 0;
  uint32_t binary_index = 0;
  uint32_t buffer_id = 1;
  uint32_t cache_id = 0;
  uint32_t weight_index = 0;
  uint32_t cache_slot = 0;
  std::string kernel_chip = "x86-64-v2";
  /// Replaces the size expression of buffer 0 with these ops.
  std::vector<fb::SizeOp> buffer0_size;
  /// Number of bindings of dispatch 0 (the kernel has 3 arguments).
  uint32_t dispatch0_bindings = 3;
  /// Bind the scalar of dispatch 0 as a buffer.
  bool scalar_as_buffer = false;
  /// Add a second prefill plan.
  bool duplicate_step = false;
  /// Leave out the checksum struct.
  bool no_checksum = false;
  /// fp8 dequant transform on weight 0 without a scale tensor.
  bool fp8_without_scale = false;
  /// Kernel index of the debug info entry.
  uint32_t debug_kernel_index = 0;
  uint32_t format_version = kArtifactFormatVersion;
  /// Number of layer_kinds entries (the model has 1 layer).
  uint32_t layer_kind_count = 1;
  /// ModelConfig.activation_dtype (invalid: not recorded).
  fb::DType activation_dtype = fb::DType::invalid;
  /// CacheLayout.alignment.
  uint64_t cache_alignment = 64;
  /// KdaStateCache.recurrent_bytes_per_layer (64 is right).
  uint64_t kda_recurrent_bytes = 64;
  /// With index_kpool > 0: ModelConfig.index_kpool, a page size of 4 tokens
  /// and bf16 index pages of width 8 (4 / index_kpool rows per page), with
  /// a depth-4 tail ring when index_ring.
  uint32_t index_kpool = 0;
  bool index_ring = false;
  /// > 0: a shared selection cache (the MTP draft chain's) of this many
  /// rows of 64 + 8 i32 entries (kSharedSelectionRows = 4 is right).
  uint32_t shared_selection_rows = 0;
  /// Raw TargetKind value of the first target (0 = cpu).
  uint8_t target_kind = 0;
  /// Adds a gfx942 target (fake code object) whose kernel `scale` has launch
  /// info: block 256, grid ceil_div(num_tokens, 256).
  bool gpu_target = false;
  /// Leaves out the gfx942 kernel's launch info.
  bool gpu_without_launch = false;
  /// With gpu_target: the gfx942 kernel `scale` records this matrix
  /// instruction, and a prefill plan dispatches it with its input bound
  /// `gpu_input_offset` bytes into buffer `in`.
  std::string gpu_matrix_instruction;
  int64_t gpu_input_offset = 0;
  /// Adds a kernel `scratch_probe(scratch: memref<?xu8>, out: memref<?xf32>)`
  /// (kernel 1) and a decode plan dispatching it with a scratch binding of
  /// num_tokens x 16 bytes per block and an 8-byte output `out`; with
  /// gpu_target, the gfx942 target gets the same kernel (grid [num_requests,
  /// 2, 1]) and plan.
  bool scratch = false;
  /// The scratch binding's extent is one byte more than blocks x bytes per
  /// block.
  bool scratch_extent_mismatch = false;
  /// Writes a parallel layout of parallel_tp x parallel_ep ranks (one
  /// manifest each unless rank_manifests says otherwise) and, with
  /// shard_parts > 0, splits weight 0 ([4] f32) on shard_dim into
  /// shard_parts parts over shard_group (its shape becomes [4 / parts]);
  /// each rank's slice has the offsets its shards give, plus
  /// rank1_offset_delta on rank 1, and scale_offsets_count scale offsets.
  bool parallel = false;
  uint32_t parallel_tp = 2;
  uint32_t parallel_ep = 1;
  uint32_t shard_dim = 0;
  uint32_t shard_parts = 2;
  uint8_t shard_group = 0;
  int64_t rank1_offset_delta = 0;
  int32_t rank_manifests = -1;
  int32_t slices_per_rank = -1;
  uint32_t scale_offsets_count = 0;
  /// With shard_scale_block > 0, weight 0's split is a block-scale split
  /// (WeightShard.data_extent / block) and its offsets follow that rule.
  int64_t shard_data_extent = 0;
  int64_t shard_scale_block = 0;
  /// Appends a collective dispatch to the prefill plan: `collective_kind`
  /// over `collective_group` of `collective_dtype` elements from buffer
  /// `out` into buffer `out` (shape [num_tokens]), with
  /// `collective_bindings` bindings (2 is right) and dimension
  /// `collective_dim`.
  bool collective = false;
  fb::CollectiveKind collective_kind = fb::CollectiveKind::all_reduce;
  fb::RankGroup collective_group = fb::RankGroup::tp;
  fb::DType collective_dtype = fb::DType::f32;
  uint32_t collective_bindings = 2;
  uint32_t collective_dim = 0;
};

/// Builds the artifact's bytes with a correct checksum.
std::vector<uint8_t> buildTestArtifact(const TestArtifactKnobs &knobs = {});

/// Reads unittests/testdata/libstrata_cpu_test_kernels.so (beside the test
/// binary); empty if missing.
std::vector<uint8_t> readTestKernelLibrary();

} // namespace strata::runtime::testing

#endif // STRATA_RUNTIME_LOADER_TEST_ARTIFACT_BUILDER_H
