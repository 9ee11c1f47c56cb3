//===- run_test_artifact.cpp - run the end-to-end test artifact -----------===//
//
// Part of strata. strata-artifact-run-test: a runtime-side test program (no
// LLVM/MLIR) that loads the artifact written by strata-artifact-build-test
// through runtime/loader, optionally checks its weight manifest against a
// checkpoint description, loads the requested target onto the CPU device,
// runs the prefill and decode plans on procedural data and compares every
// output with a C++ reference of out = silu(x @ w) * 0.5.
//
//   strata-artifact-run-test <artifact> [--target=cpu] [--tokens=N]
//       [--requests=N] [--checkpoint=<file>]
//
// The checkpoint description has one tensor per line: "<name> <DTYPE>
// [d0,d1,...]" with safetensors dtype names; '#' starts a comment.
// Exit status 0 when every check passes; otherwise "error: ..." and 1.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/device/cpu/cpu_device.h"
#include "runtime/loader/artifact.h"
#include "runtime/loader/program.h"
#include "runtime/loader/weight_manifest.h"

using namespace strata::runtime;
namespace fb = strata::artifact;

namespace {

constexpr int kIn = 8, kOut = 16;

float weightValue(int k, int n) {
  return 0.5f * std::sin(0.37f * static_cast<float>(k * kOut + n) + 0.1f);
}
float inputValue(int t, int k) {
  return std::cos(0.11f * static_cast<float>(t * kIn + k) + 0.3f * t) * 2.0f;
}

StatusOr<std::map<std::string, CheckpointTensorInfo, std::less<>>>
readCheckpointDescription(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return notFound("cannot open checkpoint description '{}'", path);
  std::map<std::string, CheckpointTensorInfo, std::less<>> tensors;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields(line);
    std::string name, dtype, shape;
    fields >> name >> dtype >> shape;
    if (shape.size() < 2 || shape.front() != '[' || shape.back() != ']')
      return invalidArgument("bad checkpoint description line '{}'", line);
    CheckpointTensorInfo info;
    info.dtype = dtype;
    std::istringstream dims(shape.substr(1, shape.size() - 2));
    std::string dim;
    while (std::getline(dims, dim, ','))
      info.shape.push_back(std::stoll(dim));
    tensors[name] = info;
  }
  return tensors;
}

/// Runs `step` for `rows` rows and compares with the reference.
Status runStep(Program &program, Device &device, Buffer &weights,
               fb::StepKind step, uint64_t rows) {
  RuntimeSizes sizes;
  sizes[step == fb::StepKind::prefill ? fb::SizeSymbol::num_tokens
                                      : fb::SizeSymbol::num_requests] = rows;
  STRATA_ASSIGN_OR_RETURN(PlanBuffers buffers,
                          program.allocateBuffers(step, sizes));
  std::vector<float> x(rows * kIn);
  for (uint64_t t = 0; t < rows; ++t)
    for (int k = 0; k < kIn; ++k)
      x[t * kIn + k] = inputValue(static_cast<int>(t), k);
  STRATA_RETURN_IF_ERROR(device.copyToDevice(*buffers.buffers[0], 0, x.data(),
                                             x.size() * sizeof(float)));
  PlanResources resources;
  resources.weights = {&weights, nullptr};
  STRATA_RETURN_IF_ERROR(program.run(step, sizes, buffers, resources));
  STRATA_RETURN_IF_ERROR(device.synchronize());
  std::vector<float> out(rows * kOut);
  STRATA_RETURN_IF_ERROR(device.copyFromDevice(
      *buffers.buffers[2], 0, out.data(), out.size() * sizeof(float)));
  double max_error = 0.0;
  for (uint64_t t = 0; t < rows; ++t) {
    for (int n = 0; n < kOut; ++n) {
      double h = 0.0;
      for (int k = 0; k < kIn; ++k)
        h += double(x[t * kIn + k]) * double(weightValue(k, n));
      double expected = h / (1.0 + std::exp(-h)) * 0.5;
      double error = std::fabs(out[t * kOut + n] - expected);
      max_error = std::max(max_error, error);
      if (error > 1e-5 + 1e-5 * std::fabs(expected))
        return dataLoss("{} output [{}, {}] is {}, expected {}",
                        fb::EnumNameStepKind(step), t, n, out[t * kOut + n],
                        expected);
    }
  }
  std::printf("%s: %llu x %d outputs match the reference (max abs error "
              "%.1e)\n",
              fb::EnumNameStepKind(step), static_cast<unsigned long long>(rows),
              kOut, max_error);
  return okStatus();
}

Status run(int argc, char **argv) {
  std::string path, target_name = "cpu", checkpoint;
  uint64_t tokens = 7, requests = 3;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> const char * {
      return arg.substr(0, flag.size()) == flag ? argv[i] + flag.size()
                                                : nullptr;
    };
    if (const char *v = value("--target="))
      target_name = v;
    else if (const char *v = value("--tokens="))
      tokens = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--requests="))
      requests = std::strtoull(v, nullptr, 10);
    else if (const char *v = value("--checkpoint="))
      checkpoint = v;
    else if (arg.substr(0, 1) != "-" && path.empty())
      path = arg;
    else
      return invalidArgument("unknown argument '{}'", arg);
  }
  if (path.empty())
    return invalidArgument("usage: strata-artifact-run-test <artifact> "
                           "[--target=T] [--tokens=N] [--requests=N] "
                           "[--checkpoint=F]");
  STRATA_ASSIGN_OR_RETURN(auto artifact, Artifact::fromFile(path));
  STRATA_RETURN_IF_ERROR(artifact->checkSingleRank());
  std::printf("loaded %s: %zu bytes\n", path.c_str(),
              artifact->bytes().size());
  if (!checkpoint.empty()) {
    STRATA_ASSIGN_OR_RETURN(auto tensors, readCheckpointDescription(checkpoint));
    STRATA_RETURN_IF_ERROR(checkWeightManifest(
        *artifact,
        [&](std::string_view name) -> std::optional<CheckpointTensorInfo> {
          auto it = tensors.find(name);
          if (it == tensors.end())
            return std::nullopt;
          return it->second;
        }));
    std::printf("weight manifest matches the checkpoint (%u tensors)\n",
                artifact->def().weights()->size());
  }
  STRATA_ASSIGN_OR_RETURN(fb::TargetKind kind, parseTargetKind(target_name));
  std::unique_ptr<Device> device = createCpuDevice();
  STRATA_ASSIGN_OR_RETURN(auto program, Program::load(*artifact, kind, *device));
  std::printf("target %s loaded: %u kernels\n", target_name.c_str(),
              program->target().kernels()->size());

  std::vector<float> w(kIn * kOut);
  for (int k = 0; k < kIn; ++k)
    for (int n = 0; n < kOut; ++n)
      w[k * kOut + n] = weightValue(k, n);
  STRATA_ASSIGN_OR_RETURN(auto weights,
                          device->allocate(w.size() * sizeof(float), 0));
  STRATA_RETURN_IF_ERROR(device->copyToDevice(*weights, 0, w.data(),
                                              w.size() * sizeof(float)));
  STRATA_RETURN_IF_ERROR(
      runStep(*program, *device, *weights, fb::StepKind::prefill, tokens));
  STRATA_RETURN_IF_ERROR(
      runStep(*program, *device, *weights, fb::StepKind::decode, requests));
  return okStatus();
}

} // namespace

int main(int argc, char **argv) {
  Status status = run(argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
