//===- Pipelines.h - the named compilation phases ---------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// One build<Phase>Pipeline per phase of style.md (`fused`, `kernel`,
// `target`); callers (strata-compile, tests, strata-opt's registered
// pipelines) always use these builders, never their own pass lists, so a
// `--compile-to=<phase>` stop is the same IR everywhere.
//
//   llm      -- buildFusedPipeline  --> fused (llm ops, cleaned up)
//   fused    -- buildKernelPipeline --> kernel (kernel funcs + calls, memrefs;
//                                       GPU targets: + gpu.launch_func of
//                                       matrix-unit kernels)
//   kernel   -- buildTargetPipeline --> target (LLVM dialect for cpu;
//                                       gpu.binary for GPU targets)
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_PIPELINES_PIPELINES_H
#define STRATA_LIB_PIPELINES_PIPELINES_H

#include <string>

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::strata {

/// Options shared by the phase builders.
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("target of the `target` phase"),
                             llvm::cl::init("cpu")};
  Option<std::string> activationType{
      *this, "activation-type",
      llvm::cl::desc("element type of activations and caches: bf16 (as the "
                     "model is written) or f32 (llm-promote-activations)"),
      llvm::cl::init("bf16")};
  Option<std::string> expertActivations{
      *this, "expert-activations",
      llvm::cl::desc("what the routed fp8 experts multiply: bf16 activations "
                     "(default) or fp8 ones quantised per token and 128-wide "
                     "group (llm-quantize-expert-activations)"),
      llvm::cl::init("bf16")};
  Option<bool> fuseHyperConnections{
      *this, "fuse-hyper-connections",
      llvm::cl::desc("fold each sub-layer's input norm into its llm.mhc_pre "
                     "and its output projection into its llm.mhc_post "
                     "(llm-fuse-hyper-connections)"),
      llvm::cl::init(true)};
  Option<int64_t> tensorParallelSize{
      *this, "tensor-parallel-size",
      llvm::cl::desc("ranks that split attention heads, dense and expert "
                     "intermediate dimensions and the vocabulary "
                     "(llm-shard-model)"),
      llvm::cl::init(1)};
  Option<int64_t> expertParallelSize{
      *this, "expert-parallel-size",
      llvm::cl::desc("ranks that split the routed experts (llm-shard-model)"),
      llvm::cl::init(1)};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("GPU toolkit folder (ROCm-like: llvm/bin/ld.lld, "
                     "amdgcn/bitcode; or CUDA: bin/ptxas, nvvm/libdevice)"),
      llvm::cl::init("")};
  Option<std::string> gpuFormat{
      *this, "gpu-format",
      llvm::cl::desc("GPU object format: bin (HSACO/cubin) or isa (text)"),
      llvm::cl::init("bin")};
};

/// llm -> fused: llm-level cleanups and the precision policy. Fails to build
/// for an unknown activation type or expert activation type.
LogicalResult buildFusedPipeline(OpPassManager &pm,
                                 const PipelineOptions &options);
/// fused -> kernel: outlined kernels over memrefs, bufferized graph.
void buildKernelPipeline(OpPassManager &pm, const PipelineOptions &options);
/// kernel -> target: the LLVM dialect (cpu), or gpu.binary objects for the
/// gpu.modules (gfx942, gfx950, sm_90, sm_90a; host side left as is). Fails
/// to build for an unknown target.
LogicalResult buildTargetPipeline(OpPassManager &pm,
                                  const PipelineOptions &options);

/// Registers `strata-fused`, `strata-kernel`, `strata-target` and
/// `strata-lower` (all three) as pass pipelines for strata-opt.
void registerStrataPipelines();

} // namespace mlir::strata

#endif // STRATA_LIB_PIPELINES_PIPELINES_H
