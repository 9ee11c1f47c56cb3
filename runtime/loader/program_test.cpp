//===- program_test.cpp - tests of plan execution on the CPU device -------===//
//
// Part of strata. Runs the test artifact's prefill plan with the hand-written
// kernel library of runtime/device/cpu/testdata: buffer, weight, cache and
// float scalar bindings, byte offsets and shapes from size expressions.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/program.h"

#include <cmath>

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

} // namespace
} // namespace strata::runtime
