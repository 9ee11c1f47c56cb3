//===- ArtifactEmitter.h - kernel-phase module to artifact ------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The `artifact` phase of strata-compile: a module in the kernel phase (step
// functions calling outlined `llm.kernel` functions over memrefs) becomes an
// ArtifactDesc (lib/Artifact/ArtifactWriter.h):
//   * step functions are found by name: `<model>_target` serves the prefill,
//     decode and mtp_verify plans (one target forward over any number of
//     rows per request), `<model>_mtp_draft` the mtp_draft plan;
//   * each step's kernel plan (extractKernelPlan) becomes an ExecutionPlan;
//     its symbolic extents become SizeSymbols by the name of the step
//     argument they come from (ids/positions/hidden: num_tokens, seq_starts:
//     num_requests + 1, slots: num_requests, block_table: num_requests x
//     num_pages, rows: logit_rows, paged caches: kv_pages, per-request state
//     pools: state_slots);
//   * the weights the plans bind (memref.globals named by checkpoint tensor)
//     become the weight manifest, `{e}` expert patterns as stack_experts;
//   * the cache layout is read off the cache types of the step arguments
//     (their `llm.cache_type`), the layer off the argument's name
//     (`layer<N>.<cache>`, from the DSL's input());
//   * the kernels are compiled for the CPU (CpuKernelCompiler).
// docs/Artifact.md "From the kernel phase" is the user-facing description.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_DRIVER_ARTIFACTEMITTER_H
#define STRATA_LIB_DRIVER_ARTIFACTEMITTER_H

#include "mlir/IR/BuiltinOps.h"

#include <functional>

#include "lib/Artifact/ArtifactWriter.h"
#include "lib/Driver/GpuKernelCompiler.h"
#include "lib/Target/CPU/CpuKernelCompiler.h"

namespace mlir::strata {

struct ArtifactEmitOptions {
  /// Hyperparameters of the model (from its config.json).
  ModelDesc model;
  /// Producer string stored in the artifact.
  std::string producer = "strata-compile";
  /// CPU code generation options.
  CpuCompileOptions cpu;
  /// Targets, one TargetDef each, in this order: cpu, sm_90, gfx942,
  /// gfx950 (each at most once).
  std::vector<std::string> targets = {"cpu"};
  /// CUDA toolkit folder for sm_90 (ptxas, libdevice; empty: default).
  std::string gpuToolkit;
  /// ROCm-like toolkit folder for gfx942/gfx950 (empty: MLIR's lookup).
  std::string rocmToolkit;
  /// When set, each GPU target's assembly is also written to
  /// `<gpuIsaDir>/<chip>.{ptx,s}` (compileGpuKernels).
  std::string gpuIsaDir;
  /// Threads per block and matrix units on or off (bisecting aid).
  GpuCodegenOptions gpuCodegen;
  /// The rank layout the module was sharded for (llm-shard-model); above
  /// one rank the artifact gets its ParallelLayout from the weights' shards.
  uint32_t tensorParallelSize = 1;
  uint32_t expertParallelSize = 1;
  /// Called with each target's name before it is compiled (progress).
  std::function<void(llvm::StringRef)> onTarget;
};

/// Builds the artifact of `kernelModule` (kernel phase) for the CPU. Emits
/// diagnostics on the module and fails on anything the artifact cannot
/// express (unknown step argument names, unnamed cache arguments, ...).
FailureOr<ArtifactDesc> emitArtifact(ModuleOp kernelModule,
                                     const ArtifactEmitOptions &options);

} // namespace mlir::strata

#endif // STRATA_LIB_DRIVER_ARTIFACTEMITTER_H
