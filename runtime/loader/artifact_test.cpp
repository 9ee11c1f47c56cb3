//===- artifact_test.cpp - tests of artifact loading and validation -------===//
//
// Part of strata. One test per validation check: each breaks one field of the
// small test artifact (test_artifact_builder.h) and expects the message that
// names it.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/artifact.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/loader/test_artifact_builder.h"
#include "runtime/loader/weight_manifest.h"

namespace strata::runtime {
namespace {

using testing::buildTestArtifact;
using testing::TestArtifactKnobs;

/// The message of loading an artifact built with `knobs` (empty when valid).
std::string loadError(const TestArtifactKnobs &knobs) {
  auto artifact = Artifact::fromBytes(buildTestArtifact(knobs));
  return artifact.ok() ? std::string()
                       : std::string(artifact.status().message());
}

const char *kPlan = "invalid artifact: targets[0] (cpu): plans[0] (prefill): ";

// Tests that the default test artifact is valid and its lookups work.
TEST(Artifact, ValidArtifactLoads) {
  auto artifact = Artifact::fromBytes(buildTestArtifact());
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  auto target = (*artifact)->target(artifact::TargetKind::cpu);
  ASSERT_TRUE(target.ok());
  EXPECT_TRUE(Artifact::plan(**target, artifact::StepKind::prefill).ok());
  auto decode = Artifact::plan(**target, artifact::StepKind::decode);
  EXPECT_EQ(decode.status().message(), "target 'cpu' has no 'decode' plan");
  auto gpu = (*artifact)->target(artifact::TargetKind::gfx950);
  EXPECT_EQ(gpu.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(gpu.status().message(),
            "artifact has no kernels for target 'gfx950' (it has: cpu)");
}

// Tests that a missing file names the path.
TEST(Artifact, MissingFile) {
  auto artifact = Artifact::fromFile("/nonexistent/model.strata");
  EXPECT_EQ(artifact.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(artifact.status().message(),
            "/nonexistent/model.strata: cannot open: No such file or directory");
}

// Tests that every truncation of a valid artifact is rejected, never crashes.
TEST(Artifact, EveryTruncationIsRejected) {
  std::vector<uint8_t> bytes = buildTestArtifact();
  for (size_t size = 0; size < bytes.size(); ++size) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + size);
    EXPECT_FALSE(Artifact::fromBytes(prefix).ok()) << size;
  }
}

// Tests that flipping any single byte is rejected (verifier or checksum).
TEST(Artifact, EveryFlippedByteIsRejected) {
  std::vector<uint8_t> bytes = buildTestArtifact();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> copy = bytes;
    copy[i] ^= 0x01;
    EXPECT_FALSE(Artifact::fromBytes(copy).ok()) << i;
  }
}

// Tests the version checks.
TEST(Artifact, Version) {
  TestArtifactKnobs knobs;
  knobs.format_version = kArtifactFormatVersion + 1;
  EXPECT_EQ(loadError(knobs),
            "artifact format version 2 is newer than this runtime supports "
            "(1); update the runtime");
  knobs.format_version = 0;
  EXPECT_EQ(loadError(knobs),
            "artifact format version 0 is older than this runtime supports "
            "(1); recompile the model");
}

// Tests that an artifact without a checksum is refused.
TEST(Artifact, MissingChecksum) {
  TestArtifactKnobs knobs;
  knobs.no_checksum = true;
  EXPECT_EQ(loadError(knobs), "artifact has no checksum");
}

// Tests the kernel index check of a dispatch.
TEST(Artifact, KernelIndexOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.kernel_index = 5;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[0]: kernel index 5 out of range (1 kernels)");
}

// Tests the buffer id check of a binding.
TEST(Artifact, BufferIdOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.buffer_id = 2;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[0]: bindings[1]: buffer id 2 out of range (2 "
                "entries)");
}

// Tests the cache id check of a binding.
TEST(Artifact, CacheIdOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.cache_id = 1;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[1]: bindings[1]: cache id 1 out of range (1 "
                "entries)");
}

// Tests the manifest index check of a binding.
TEST(Artifact, ManifestIndexOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.weight_index = 3;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[1]: bindings[0]: manifest index 3 out of range (1 "
                "entries)");
}

// Tests the binary index check of a kernel.
TEST(Artifact, BinaryIndexOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.binary_index = 1;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: targets[0] (cpu): kernels[0] 'scale': "
            "binary_index 1 out of range (1 binaries)");
}

// Tests that a kernel's chip must be its target's.
TEST(Artifact, KernelChipMismatch) {
  TestArtifactKnobs knobs;
  knobs.kernel_chip = "x86-64-v4";
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: targets[0] (cpu): kernels[0] 'scale': chip "
            "'x86-64-v4' differs from its target's 'x86-64-v2'");
}

// Tests the size expression checks: underflow, leftover values, bad symbol,
// bad opcode, negative constant.
TEST(Artifact, MalformedSizeExpressions) {
  using artifact::SizeOp;
  using artifact::SizeOpcode;
  auto op = [](SizeOpcode code, int64_t operand) {
    return SizeOp(static_cast<uint8_t>(code), operand);
  };
  std::string prefix = std::string(kPlan) + "buffers[0] 'in': size_bytes: ";
  TestArtifactKnobs knobs;
  knobs.buffer0_size = {op(SizeOpcode::constant, 4), op(SizeOpcode::mul, 0)};
  EXPECT_EQ(loadError(knobs), prefix + "op 1: stack underflow");
  knobs.buffer0_size = {op(SizeOpcode::constant, 4),
                        op(SizeOpcode::constant, 4)};
  EXPECT_EQ(loadError(knobs),
            prefix + "size expression leaves 2 values, expected 1");
  knobs.buffer0_size = {op(SizeOpcode::symbol, 99)};
  EXPECT_EQ(loadError(knobs), prefix + "op 0: unknown size symbol 99");
  knobs.buffer0_size = {SizeOp(200, 0)};
  EXPECT_EQ(loadError(knobs), prefix + "op 0: unknown opcode 200");
  knobs.buffer0_size = {op(SizeOpcode::constant, -8)};
  EXPECT_EQ(loadError(knobs), prefix + "op 0: negative constant -8");
}

// Tests that a dispatch needs one binding per kernel argument.
TEST(Artifact, BindingCountMismatch) {
  TestArtifactKnobs knobs;
  knobs.dispatch0_bindings = 2;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[0]: 2 bindings for kernel 'scale' with 3 "
                "arguments");
}

// Tests that a scalar argument cannot be bound to a buffer.
TEST(Artifact, BindingKindMismatch) {
  TestArtifactKnobs knobs;
  knobs.scalar_as_buffer = true;
  EXPECT_EQ(loadError(knobs),
            std::string(kPlan) +
                "dispatches[0]: bindings[2]: buffer binding for f32 scalar "
                "argument 'alpha'");
}

// Tests that a step kind appears once per target.
TEST(Artifact, DuplicateStep) {
  TestArtifactKnobs knobs;
  knobs.duplicate_step = true;
  EXPECT_EQ(loadError(knobs), "invalid artifact: targets[0] (cpu): plans[1] "
                              "(prefill): step appears twice");
}

// Tests the cache slot check.
TEST(Artifact, CacheSlotOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.cache_slot = 1;
  EXPECT_EQ(loadError(knobs), "invalid artifact: cache_layout: caches[0] "
                              "'layer0.kda_recurrent': slot 1 out of range "
                              "(1 layers)");
}

// Tests that an fp8 dequant weight needs its scale tensor.
TEST(Artifact, Fp8WeightWithoutScale) {
  TestArtifactKnobs knobs;
  knobs.fp8_without_scale = true;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: weights[0] 'w': fp8 dequant without scale_name");
}

// Tests the debug info kernel index check.
TEST(Artifact, DebugInfoKernelIndexOutOfRange) {
  TestArtifactKnobs knobs;
  knobs.debug_kernel_index = 4;
  EXPECT_EQ(loadError(knobs), "invalid artifact: debug_info.kernels[0]: "
                              "kernel index 4 out of range (1 kernels)");
}

// Tests that the model's per-layer lists match its layer count.
TEST(Artifact, LayerKindsLength) {
  TestArtifactKnobs knobs;
  knobs.layer_kind_count = 2;
  EXPECT_EQ(loadError(knobs), "invalid artifact: model: layer_kinds has 2 "
                              "entries, expected num_hidden_layers 1");
}

// Tests that a recorded activation type is bf16 or f32.
TEST(Artifact, ActivationDtype) {
  TestArtifactKnobs knobs;
  knobs.activation_dtype = artifact::DType::f8e4m3fn;
  EXPECT_EQ(loadError(knobs), "invalid artifact: model: activation_dtype "
                              "f8e4m3fn (expected bf16 or f32)");
  knobs.activation_dtype = artifact::DType::f32;
  EXPECT_TRUE(Artifact::fromBytes(buildTestArtifact(knobs)).ok());
}

// Tests the cache geometry checks: alignment and derived state sizes.
TEST(Artifact, CacheGeometry) {
  TestArtifactKnobs knobs;
  knobs.cache_alignment = 48;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: cache_layout: alignment 48 is not a power of two");
  knobs.cache_alignment = 64;
  knobs.kda_recurrent_bytes = 32;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: cache_layout: kda.recurrent_bytes_per_layer is "
            "32, expected 64 (64 aligned to 64)");
}

// Tests that index pages need a tail ring exactly when pools have several
// tokens: the pooled indexer (index_kpool 4) needs one, the dense indexer
// (index_kpool 1, one row per token) has none.
TEST(Artifact, TailRingPresentIffPooled) {
  TestArtifactKnobs knobs;
  knobs.index_kpool = 4;
  knobs.index_ring = true;
  EXPECT_EQ(loadError(knobs), "");
  knobs.index_ring = false;
  EXPECT_EQ(loadError(knobs), "invalid artifact: cache_layout: index_pages of "
                              "index_kpool 4 without tail_ring");
  knobs.index_kpool = 1;
  EXPECT_EQ(loadError(knobs), "");
  knobs.index_ring = true;
  EXPECT_EQ(loadError(knobs), "invalid artifact: cache_layout: tail_ring with "
                              "index_kpool 1 (the dense indexer has none)");
}

// Tests that the MTP draft chain's shared selection cache must keep a
// verification's kSharedSelectionRows rows (the scheduler names one of them).
TEST(Artifact, SharedSelectionRows) {
  TestArtifactKnobs knobs;
  knobs.shared_selection_rows = 4;
  EXPECT_EQ(loadError(knobs), "");
  knobs.shared_selection_rows = 2;
  EXPECT_EQ(loadError(knobs), "invalid artifact: cache_layout: "
                              "shared_selection: 2 rows of 72 entries "
                              "(expected 4 rows)");
}

// Tests that a GPU target validates with launch info and is refused without.
TEST(Artifact, GpuLaunchInfo) {
  TestArtifactKnobs knobs;
  knobs.gpu_target = true;
  auto artifact = Artifact::fromBytes(buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  EXPECT_TRUE((*artifact)->target(artifact::TargetKind::gfx942).ok());
  EXPECT_EQ((*artifact)->target(artifact::TargetKind::sm_90).status().message(),
            "artifact has no kernels for target 'sm_90' (it has: cpu, gfx942)");
  knobs.gpu_without_launch = true;
  EXPECT_EQ(loadError(knobs), "invalid artifact: targets[1] (gfx942): "
                              "kernels[0] 'scale': GPU kernel without launch "
                              "info");
}

// Tests that an operand of a matrix-unit kernel (16-byte vector loads) must
// start at a constant multiple of 16 bytes into its buffer.
TEST(Artifact, MatrixOperandOffset) {
  TestArtifactKnobs knobs;
  knobs.gpu_target = true;
  knobs.gpu_matrix_instruction = "v_mfma_f32_16x16x16_bf16";
  knobs.gpu_input_offset = 32;
  auto artifact = Artifact::fromBytes(buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  knobs.gpu_input_offset = 4;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: targets[1] (gfx942): plans[0] (prefill): "
            "dispatches[0]: bindings[0]: offset 4 into an operand of "
            "matrix-unit kernel 'scale' (v_mfma_f32_16x16x16_bf16), which "
            "reads 16-byte runs; expected a constant multiple of 16 bytes");
}

// Tests that a target kind this runtime does not know is refused.
TEST(Artifact, UnknownTargetKind) {
  TestArtifactKnobs knobs;
  knobs.target_kind = 9;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: targets[0]: unknown target kind 9");
}

// Tests target and step name parsing.
TEST(Artifact, ParseNames) {
  EXPECT_EQ(*parseTargetKind("sm_90"), artifact::TargetKind::sm_90);
  EXPECT_EQ(*parseTargetKind("sm_90a"), artifact::TargetKind::sm_90a);
  EXPECT_EQ(*parseStepKind("mtp_verify"), artifact::StepKind::mtp_verify);
  EXPECT_EQ(*parseStepKind("mtp_chain"), artifact::StepKind::mtp_chain);
  EXPECT_EQ(parseStepKind("verify").status().message(),
            "unknown step 'verify' (expected prefill, decode, mtp_draft, "
            "mtp_verify or mtp_chain)");
}

} // namespace
// Tests that a valid parallel layout loads, that checkSingleRank (what
// one-rank tools call) refuses it by name, and that checkWeightManifest
// checks a sharded weight against the whole checkpoint tensor.
TEST(Artifact, ParallelLayoutIsRefused) {
  TestArtifactKnobs knobs;
  knobs.parallel = true;
  knobs.parallel_ep = 2;
  auto artifact = Artifact::fromBytes(buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok()) << artifact.status().message();
  EXPECT_EQ((*artifact)->numRanks(), 4u);
  const char *refusal = "artifact is compiled for 4 ranks (tensor-parallel 2 "
                        "x expert-parallel 2); this tool runs one rank "
                        "(strata-run runs one process per rank; "
                        "docs/Parallel.md)";
  Status single = (*artifact)->checkSingleRank();
  EXPECT_EQ(single.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(single.message(), refusal);
  // Weight 0 is [2] per rank, split in 2: the checkpoint holds [4].
  auto lookup = [](std::vector<int64_t> shape) {
    return [shape](std::string_view name)
               -> std::optional<CheckpointTensorInfo> {
      if (name == "w")
        return CheckpointTensorInfo{"F32", shape};
      return std::nullopt;
    };
  };
  Status whole = checkWeightManifest(**artifact, lookup({4}));
  EXPECT_TRUE(whole.ok()) << whole.message();
  Status slice = checkWeightManifest(**artifact, lookup({2}));
  EXPECT_NE(slice.message().find("tensor 'w' shape: expected [4], found [2]"),
            std::string::npos)
      << slice.message();
  auto plain = Artifact::fromBytes(buildTestArtifact());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->numRanks(), 1u);
  EXPECT_TRUE((*plain)->checkSingleRank().ok());
}

// Tests each check of a collective dispatch: a valid all-reduce over tp,
// then each refusal (no layout, an integer sum, one binding, a dimension
// outside the shape).
TEST(Artifact, CollectiveChecks) {
  TestArtifactKnobs knobs;
  knobs.parallel = true;
  knobs.collective = true;
  EXPECT_TRUE(Artifact::fromBytes(buildTestArtifact(knobs)).ok());
  std::string at = std::string(kPlan) + "dispatches[2]";
  TestArtifactKnobs alone = knobs;
  alone.parallel = false;
  EXPECT_EQ(loadError(alone),
            fmt::format("{}: collective all_reduce in an artifact without a "
                        "parallel layout",
                        at));
  TestArtifactKnobs ints = knobs;
  ints.collective_dtype = artifact::DType::i32;
  EXPECT_EQ(loadError(ints), fmt::format("{}: all_reduce of i32 elements", at));
  TestArtifactKnobs one = knobs;
  one.collective_bindings = 1;
  EXPECT_EQ(loadError(one),
            fmt::format("{}: collective with 1 bindings; expected send and "
                        "recv",
                        at));
  TestArtifactKnobs gather = knobs;
  gather.collective_kind = artifact::CollectiveKind::all_gather;
  gather.collective_dim = 1;
  EXPECT_EQ(loadError(gather),
            fmt::format("{}: all_gather along dim 1 of a rank-1 shape", at));
}

// Tests each check of the parallel layout.
TEST(Artifact, ParallelLayoutChecks) {
  TestArtifactKnobs knobs;
  knobs.parallel = true;
  knobs.parallel_tp = 0;
  knobs.shard_parts = 0;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: parallel: tensor_parallel_size and "
            "expert_parallel_size must be >= 1, got 0 and 1");
  knobs = {};
  knobs.parallel = true;
  knobs.shard_group = 7;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: weights[0] 'w': shard 0: unknown group 7");
  knobs = {};
  knobs.parallel = true;
  knobs.shard_dim = 1;
  EXPECT_EQ(loadError(knobs), "invalid artifact: weights[0] 'w': shard 0: "
                              "dimension 1 outside the tensor's 1 or split "
                              "twice");
  knobs = {};
  knobs.parallel = true;
  knobs.shard_parts = 4;
  EXPECT_EQ(loadError(knobs), "invalid artifact: weights[0] 'w': shard 0: 4 "
                              "parts over group tp of 2 ranks");
  knobs = {};
  knobs.parallel = true;
  knobs.rank_manifests = 1;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: parallel: 1 rank manifests for 2 ranks");
  knobs = {};
  knobs.parallel = true;
  knobs.slices_per_rank = 2;
  EXPECT_EQ(loadError(knobs), "invalid artifact: parallel: rank 0 has 2 "
                              "weight slices for 1 weights");
  knobs = {};
  knobs.parallel = true;
  knobs.rank1_offset_delta = 1;
  EXPECT_EQ(loadError(knobs), "invalid artifact: parallel: rank 1 weights[0] "
                              "'w': offsets [3], expected [2] from its shards");
  knobs = {};
  knobs.parallel = true;
  knobs.scale_offsets_count = 1;
  EXPECT_EQ(loadError(knobs), "invalid artifact: parallel: rank 0 weights[0] "
                              "'w': 1 scale offsets for a scale of rank 0");
}

// Tests the block-scale splits of an fp8 weight's scale tensor: a part of
// whole blocks loads (rank 1 reads from 256 / 128 = 2); a data part that
// straddles blocks, or a scale part not sized ceil(data part / block), is
// refused by name.
TEST(Artifact, BlockScaleShardChecks) {
  TestArtifactKnobs knobs;
  knobs.parallel = true;
  knobs.shard_data_extent = 256;
  knobs.shard_scale_block = 128;
  EXPECT_TRUE(Artifact::fromBytes(testing::buildTestArtifact(knobs)).ok());
  knobs.shard_data_extent = 96;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: weights[0] 'w': shard 0: a scale part of 2 "
            "over data parts of 96 in blocks of 128 (a data part is whole "
            "blocks or inside one)");
  knobs.shard_data_extent = 64;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: weights[0] 'w': shard 0: a scale part of 2 "
            "over data parts of 64 in blocks of 128 (a data part is whole "
            "blocks or inside one)");
  knobs = {};
  knobs.parallel = true;
  knobs.shard_data_extent = 128;
  EXPECT_EQ(loadError(knobs),
            "invalid artifact: weights[0] 'w': shard 0: a scale part of 2 "
            "over data parts of 128 in blocks of 0 (a data part is whole "
            "blocks or inside one)");
}

} // namespace strata::runtime
