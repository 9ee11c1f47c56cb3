//===- program_test.cpp - tests of plan execution on the CPU device -------===//
//
// Part of strata. Runs the test artifact's prefill plan with the hand-written
// kernel library of runtime/device/cpu/testdata: buffer, weight, cache and
// float scalar bindings, byte offsets and shapes from size expressions.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/program.h"

#include <cmath>

#include <cstring>

#include <gtest/gtest.h>

#include "runtime/device/cpu/cpu_device.h"
#include "runtime/loader/test_artifact_builder.h"

namespace strata::runtime {
namespace {

using artifact::SizeSymbol;
using artifact::StepKind;
using artifact::TargetKind;

std::unique_ptr<Artifact> realArtifact() {
  testing::TestArtifactKnobs knobs;
  knobs.binary = testing::readTestKernelLibrary();
  EXPECT_FALSE(knobs.binary.empty());
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact(knobs));
  EXPECT_TRUE(artifact.ok()) << artifact.status().toString();
  return std::move(artifact).value();
}

// Tests a whole plan: out = 1.5 exp(in[1..n]), cache = 2 exp(w).
TEST(Program, RunsPlan) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok()) << program.status().toString();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 5;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  ASSERT_TRUE(buffers.ok());
  ASSERT_EQ(buffers->buffers.size(), 2u);
  EXPECT_EQ(buffers->buffers[0]->size(), 24u);
  float in[6] = {9, 0.0f, 0.5f, -1.0f, 1.0f, 2.0f};
  ASSERT_TRUE(device->copyToDevice(*buffers->buffers[0], 0, in, 24).ok());
  float w[4] = {0.25f, -0.25f, 1.0f, 0.0f};
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(64, 0);
  ASSERT_TRUE(weight.ok() && cache.ok());
  ASSERT_TRUE(device->copyToDevice(**weight, 0, w, 16).ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  Status status =
      (*program)->run(StepKind::prefill, sizes, *buffers, resources);
  ASSERT_TRUE(status.ok()) << status.toString();
  float out[5], cached[4];
  ASSERT_TRUE(device->copyFromDevice(*buffers->buffers[1], 0, out, 20).ok());
  ASSERT_TRUE(device->copyFromDevice(**cache, 0, cached, 16).ok());
  for (int i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(out[i], 1.5f * std::exp(in[i + 1]));
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(cached[i], 2.0f * std::exp(w[i]));
}

/// Doubles send into recv, recording the regions it was given.
struct DoublingRunner : CollectiveRunner {
  Status run(const artifact::Collective &collective, const DispatchArg &send,
             const DispatchArg &recv, Stream &stream) override {
    kind = collective.kind();
    shapes = {send.shape, recv.shape};
    std::vector<float> values(send.shape[0]);
    STRATA_RETURN_IF_ERROR(stream.synchronize());
    std::memcpy(values.data(),
                static_cast<const uint8_t *>(send.buffer->hostPointer()) +
                    send.offset_bytes,
                values.size() * 4);
    for (float &v : values)
      v *= 2;
    std::memcpy(static_cast<uint8_t *>(recv.buffer->hostPointer()) +
                    recv.offset_bytes,
                values.data(), values.size() * 4);
    return okStatus();
  }
  artifact::CollectiveKind kind = artifact::CollectiveKind::all_gather;
  std::vector<std::vector<int64_t>> shapes;
};

// Tests a collective dispatch: run through the caller's CollectiveRunner
// with its evaluated regions (out = 2 * 1.5 exp(in[1..n])), and refused by
// name without one.
TEST(Program, RunsCollectivesThroughTheRunner) {
  testing::TestArtifactKnobs knobs;
  knobs.binary = testing::readTestKernelLibrary();
  knobs.parallel = true;
  knobs.collective = true;
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok()) << artifact.status().toString();
  auto device = createCpuDevice();
  auto program = Program::load(**artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok()) << program.status().toString();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 3;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  ASSERT_TRUE(buffers.ok());
  float in[4] = {9, 0.0f, 0.5f, -1.0f};
  ASSERT_TRUE(device->copyToDevice(*buffers->buffers[0], 0, in, 16).ok());
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(64, 0);
  ASSERT_TRUE(weight.ok() && cache.ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  Status refused =
      (*program)->run(StepKind::prefill, sizes, *buffers, resources);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(),
            "plan 'prefill' dispatch 2 (all_reduce over tp): no "
            "communicators (the artifact is compiled for 2 ranks; run one "
            "process per rank, docs/Parallel.md)");
  DoublingRunner runner;
  resources.collectives = &runner;
  Status status =
      (*program)->run(StepKind::prefill, sizes, *buffers, resources);
  ASSERT_TRUE(status.ok()) << status.toString();
  EXPECT_EQ(runner.kind, artifact::CollectiveKind::all_reduce);
  EXPECT_EQ(runner.shapes,
            (std::vector<std::vector<int64_t>>{{3}, {3}}));
  float out[3];
  ASSERT_TRUE(device->copyFromDevice(*buffers->buffers[1], 0, out, 12).ok());
  for (int i = 0; i < 3; ++i)
    EXPECT_FLOAT_EQ(out[i], 3.0f * std::exp(in[i + 1]));

  // Observed, the collective is a timing of its own: named, no kernel, the
  // send and recv regions' bytes (3 f32 each).
  std::vector<DispatchTiming> timings;
  DispatchObserver observer = [&](const DispatchTiming &t) {
    timings.push_back(t);
  };
  ASSERT_TRUE((*program)
                  ->run(StepKind::prefill, sizes, *buffers, resources,
                        nullptr, &observer)
                  .ok());
  ASSERT_EQ(timings.size(), 3u);
  EXPECT_EQ(timings[2].collective, "all_reduce over tp");
  EXPECT_EQ(timings[2].kernel_index, kNoKernel);
  EXPECT_EQ(timings[2].dispatch_index, 2u);
  EXPECT_EQ(timings[2].bound_bytes, 24u);
  EXPECT_GE(timings[2].seconds, 0.0);
  EXPECT_TRUE(timings[0].collective.empty());
}

// Tests the dispatch observer: one call per dispatch, in plan order, with
// the kernel index, a non-negative time and the bound regions' bytes (the
// first dispatch binds in[1..5] and out as f32 [5]: 40 bytes; the second the
// weight and the cache as f32 [4]: 32 bytes); and that the observed run
// computes the same results.
TEST(Program, ObserverTimesEveryDispatch) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok()) << program.status().toString();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 5;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(64, 0);
  ASSERT_TRUE(buffers.ok() && weight.ok() && cache.ok());
  float in[6] = {9, 0.0f, 0.5f, -1.0f, 1.0f, 2.0f};
  ASSERT_TRUE(device->copyToDevice(*buffers->buffers[0], 0, in, 24).ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  std::vector<DispatchTiming> seen;
  DispatchObserver observer = [&](const DispatchTiming &t) {
    seen.push_back(t);
  };
  Status status = (*program)->run(StepKind::prefill, sizes, *buffers,
                                  resources, nullptr, &observer);
  ASSERT_TRUE(status.ok()) << status.toString();
  ASSERT_EQ(seen.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(seen[d].dispatch_index, d);
    EXPECT_EQ(seen[d].kernel_index, 0u);
    EXPECT_GE(seen[d].seconds, 0.0);
  }
  EXPECT_EQ(seen[0].bound_bytes, 40u);
  EXPECT_EQ(seen[1].bound_bytes, 32u);
  float out[5];
  ASSERT_TRUE(device->copyFromDevice(*buffers->buffers[1], 0, out, 20).ok());
  for (int i = 0; i < 5; ++i)
    EXPECT_FLOAT_EQ(out[i], 1.5f * std::exp(in[i + 1]));
}

// Tests that an observed run on a capturing stream is rejected (events
// cannot be recorded there) and leaves the capture intact.
TEST(Program, ObserverRejectedWhileCapturing) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok()) << program.status().toString();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 3;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(64, 0);
  auto stream = device->createStream();
  ASSERT_TRUE(buffers.ok() && weight.ok() && cache.ok() && stream.ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  ASSERT_TRUE((*stream)->beginCapture().ok());
  DispatchObserver observer = [](const DispatchTiming &) {};
  Status status = (*program)->run(StepKind::prefill, sizes, *buffers,
                                  resources, stream->get(), &observer);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("cannot be timed"), std::string::npos);
  EXPECT_TRUE((*stream)->capturing());
}

// Tests that a step run on a capturing stream is recorded, not executed,
// and that replaying the graph computes what a direct run computes, also
// after the input changes.
TEST(Program, CapturesAndReplaysPlan) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok()) << program.status().toString();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 3;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(64, 0);
  auto stream = device->createStream();
  ASSERT_TRUE(buffers.ok() && weight.ok() && cache.ok() && stream.ok());
  float w[4] = {0.5f, 1.0f, -1.0f, 2.0f};
  ASSERT_TRUE(device->copyToDevice(**weight, 0, w, 16).ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  ASSERT_TRUE((*stream)->beginCapture().ok());
  Status status = (*program)->run(StepKind::prefill, sizes, *buffers,
                                  resources, stream->get());
  ASSERT_TRUE(status.ok()) << status.toString();
  auto graph = (*stream)->endCapture();
  ASSERT_TRUE(graph.ok());
  EXPECT_EQ((*graph)->operationCount(), 2u);
  float cached[4];
  ASSERT_TRUE(device->copyFromDevice(**cache, 0, cached, 16).ok());
  EXPECT_EQ(cached[0], 0.0f) << "capture must not execute";
  for (float first : {0.25f, -3.0f}) {
    float in[4] = {9, first, 0.5f, 1.0f};
    ASSERT_TRUE(device->copyToDevice(*buffers->buffers[0], 0, in, 16).ok());
    ASSERT_TRUE((*stream)->launchGraph(**graph).ok());
    ASSERT_TRUE((*stream)->synchronize().ok());
    float out[3];
    ASSERT_TRUE(device->copyFromDevice(*buffers->buffers[1], 0, out, 12).ok());
    for (int i = 0; i < 3; ++i)
      EXPECT_FLOAT_EQ(out[i], 1.5f * std::exp(in[i + 1]));
  }
  ASSERT_TRUE(device->copyFromDevice(**cache, 0, cached, 16).ok());
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(cached[i], 2.0f * std::exp(w[i]));
}

// Tests that running without the weights or caches a plan binds fails
// cleanly, and that a missing plan is named.
TEST(Program, MissingResources) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok());
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 2;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  ASSERT_TRUE(buffers.ok());
  Status status = (*program)->run(StepKind::prefill, sizes, *buffers, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "plan 'prefill' dispatch 1 ('scale'): weight 'w' is not loaded");
  EXPECT_EQ((*program)->allocateBuffers(StepKind::decode, sizes)
                .status()
                .message(),
            "target 'cpu' has no 'decode' plan");
}

// Tests that a binding region outside its buffer is caught at dispatch.
TEST(Program, RegionOutsideCache) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok());
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 2;
  auto buffers = (*program)->allocateBuffers(StepKind::prefill, sizes);
  auto weight = device->allocate(16, 0);
  auto cache = device->allocate(8, 0); // the plan writes 16 bytes
  ASSERT_TRUE(buffers.ok() && weight.ok() && cache.ok());
  PlanResources resources{{weight->get()}, {cache->get()}};
  Status status =
      (*program)->run(StepKind::prefill, sizes, *buffers, resources);
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "plan 'prefill' dispatch 1 ('scale'): kernel "
                              "'scale' argument 1: region [0, 16) exceeds "
                              "buffer of 8 bytes");
}

// Tests that loading a target the artifact lacks fails with NOT_FOUND.
TEST(Program, MissingTarget) {
  std::unique_ptr<Artifact> artifact = realArtifact();
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::sm_90, *device);
  EXPECT_EQ(program.status().code(), StatusCode::kNotFound);
}

// Tests that the CPU device refuses a GPU target's code object.
TEST(Program, CpuDeviceRefusesGpuBinaries) {
  testing::TestArtifactKnobs knobs;
  knobs.gpu_target = true;
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact(knobs));
  ASSERT_TRUE(artifact.ok());
  auto device = createCpuDevice();
  auto program = Program::load(**artifact, TargetKind::gfx942, *device);
  EXPECT_EQ(program.status().message(),
            "loading binary 0 of target 'gfx942': the cpu device loads ELF "
            "shared objects only");
}

std::unique_ptr<Artifact> scratchArtifact(bool mismatch = false) {
  testing::TestArtifactKnobs knobs;
  knobs.binary = testing::readTestKernelLibrary();
  knobs.scratch = true;
  knobs.gpu_target = true;
  knobs.scratch_extent_mismatch = mismatch;
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact(knobs));
  EXPECT_TRUE(artifact.ok()) << artifact.status().toString();
  return std::move(artifact).value();
}

// Runs the scratch plan for `tokens` tokens; returns out = [region bytes,
// sum of the region's bytes] as the kernel saw them.
std::vector<float> runProbe(Program &program, Device &device, uint64_t tokens,
                            PlanBuffers &buffers) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = tokens;
  auto allocated = program.allocateBuffers(StepKind::decode, sizes);
  EXPECT_TRUE(allocated.ok()) << allocated.status().toString();
  buffers = std::move(allocated).value();
  Status status = program.run(StepKind::decode, sizes, buffers, {});
  EXPECT_TRUE(status.ok()) << status.toString();
  std::vector<float> out(2);
  EXPECT_TRUE(device.copyFromDevice(*buffers.buffers[0], 0, out.data(), 8).ok());
  return out;
}

double probeSum(uint64_t n) {
  double sum = 0;
  for (uint64_t i = 0; i < n; ++i)
    sum += static_cast<double>(i % 251);
  return sum;
}

// The scratch test artifact (one 'scratch_probe' dispatch) with its program
// loaded on a CPU device, and its gfx942 decode plan, whose sizing needs no
// device.
class ScratchPlan : public ::testing::Test {
protected:
  void SetUp() override {
    artifact = scratchArtifact();
    ASSERT_TRUE(artifact);
    device = createCpuDevice();
    auto loaded = Program::load(*artifact, TargetKind::cpu, *device);
    ASSERT_TRUE(loaded.ok()) << loaded.status().toString();
    program = std::move(loaded).value();
    auto target = artifact->target(TargetKind::gfx942);
    ASSERT_TRUE(target.ok()) << target.status().toString();
    gpuTarget = *target;
    auto plan = Artifact::plan(*gpuTarget, StepKind::decode);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    gpuPlan = *plan;
  }

  StatusOr<uint64_t> gpuScratchBytes(const RuntimeSizes &sizes,
                                     uint64_t limit = kDefaultScratchLimit) {
    return planScratchBytes(*gpuTarget, *gpuPlan, sizes, limit);
  }

  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Device> device;
  std::unique_ptr<Program> program;
  const artifact::TargetDef *gpuTarget = nullptr;
  const artifact::ExecutionPlan *gpuPlan = nullptr;
};

// Tests the scratch buffer on the CPU: sized for the step (num_tokens x 16
// bytes, one block), bound whole to the kernel (which writes and reads every
// byte), kept for a smaller step, replaced by a larger one for a larger step
// while buffers allocated before keep the old one.
TEST_F(ScratchPlan, BindingSizedPerStep) {
  Program &p = *program;
  EXPECT_EQ(p.scratchCapacity(), 0u);
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 5;
  EXPECT_EQ(*p.scratchBytes(StepKind::decode, sizes), 80u);
  EXPECT_EQ(*p.scratchBytes(StepKind::prefill, sizes), 0u);

  PlanBuffers five, three, ten;
  std::vector<float> out = runProbe(p, *device, 5, five);
  EXPECT_EQ(out[0], 80.0f);
  EXPECT_EQ(out[1], static_cast<float>(probeSum(80)));
  ASSERT_TRUE(five.scratch);
  EXPECT_EQ(five.scratch->size(), 80u);
  EXPECT_EQ(p.scratchCapacity(), 80u);

  out = runProbe(p, *device, 3, three);
  EXPECT_EQ(out[0], 48.0f);
  EXPECT_EQ(three.scratch.get(), five.scratch.get());

  out = runProbe(p, *device, 10, ten);
  EXPECT_EQ(out[0], 160.0f);
  EXPECT_EQ(out[1], static_cast<float>(probeSum(160)));
  EXPECT_EQ(p.scratchCapacity(), 160u);
  EXPECT_NE(ten.scratch.get(), five.scratch.get());
  EXPECT_EQ(five.scratch->size(), 80u);

  // The prefill plan has no scratch binding: no scratch buffer.
  auto prefill = p.allocateBuffers(StepKind::prefill, sizes);
  ASSERT_TRUE(prefill.ok());
  EXPECT_FALSE(prefill->scratch);
}

// Tests the sizing on a GPU plan from the plan's facts alone: grid
// [num_requests, 2, 1] blocks x num_tokens x 16 bytes per block.
TEST_F(ScratchPlan, GridBlocksTimesBytesPerBlock) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_requests] = 3;
  sizes[SizeSymbol::num_tokens] = 4;
  auto bytes = gpuScratchBytes(sizes);
  ASSERT_TRUE(bytes.ok()) << bytes.status().toString();
  EXPECT_EQ(*bytes, 3u * 2u * 4u * 16u);
  // No requests: a grid of 0 blocks needs nothing.
  sizes[SizeSymbol::num_requests] = 0;
  EXPECT_EQ(*gpuScratchBytes(sizes), 0u);
}

// Tests that a step whose scratch regions are all empty still gets a
// scratch buffer to bind (and the kernel sees an empty region).
TEST_F(ScratchPlan, EmptyRegionIsBound) {
  PlanBuffers buffers;
  std::vector<float> out = runProbe(*program, *device, 0, buffers);
  ASSERT_TRUE(buffers.scratch);
  EXPECT_EQ(out[0], 0.0f);
}

// Tests the limit: a step whose scratch exceeds it fails with a clear
// RESOURCE_EXHAUSTED status (allocateBuffers and planScratchBytes), and the
// limit admits a step that fits.
TEST_F(ScratchPlan, LimitExceeded) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_requests] = 1000;
  sizes[SizeSymbol::num_tokens] = 1000;
  auto bytes = gpuScratchBytes(sizes, 1u << 20);
  EXPECT_EQ(bytes.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(bytes.status().message(),
            "plan 'decode' dispatch 0 ('scratch_probe'): scratch of 2000 "
            "blocks x 16000 bytes = 32000000 bytes exceeds the scratch limit "
            "of 1048576 bytes (a step with fewer requests or tokens needs "
            "less)");
  sizes[SizeSymbol::num_tokens] = 32;
  EXPECT_EQ(*gpuScratchBytes(sizes, 1u << 20), 2000u * 32u * 16u);

  program->setScratchLimit(64);
  sizes[SizeSymbol::num_tokens] = 5;
  auto buffers = program->allocateBuffers(StepKind::decode, sizes);
  EXPECT_EQ(buffers.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(buffers.status().message(),
            "plan 'decode' dispatch 0 ('scratch_probe'): scratch of 1 blocks "
            "x 80 bytes = 80 bytes exceeds the scratch limit of 64 bytes (a "
            "step with fewer requests or tokens needs less)");
  EXPECT_EQ(program->scratchCapacity(), 0u);
}

// Tests that running without a scratch buffer is an error, not a crash.
TEST_F(ScratchPlan, RunWithoutScratchBufferFails) {
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 5;
  auto buffers = program->allocateBuffers(StepKind::decode, sizes);
  ASSERT_TRUE(buffers.ok());
  buffers->scratch.reset();
  Status status = program->run(StepKind::decode, sizes, *buffers, {});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "plan 'decode' dispatch 0 ('scratch_probe'): no scratch buffer "
            "(the buffers were not allocated by allocateBuffers)");
}

// Tests that a scratch binding whose extent is not blocks x bytes per block
// is refused when the step is sized.
TEST(Program, ScratchExtentMismatchRefused) {
  std::unique_ptr<Artifact> artifact = scratchArtifact(/*mismatch=*/true);
  auto device = createCpuDevice();
  auto program = Program::load(*artifact, TargetKind::cpu, *device);
  ASSERT_TRUE(program.ok());
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = 5;
  auto bytes = (*program)->scratchBytes(StepKind::decode, sizes);
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bytes.status().message(),
            "plan 'decode' dispatch 0 ('scratch_probe'): scratch region is 81 "
            "bytes, the grid's 1 blocks x 80 bytes per block are 80");
}

} // namespace
} // namespace strata::runtime
