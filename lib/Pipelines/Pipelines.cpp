//===- Pipelines.cpp - the named compilation phases -----------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Each pass carries a comment saying why it runs where it runs. Callers use
// the builders (Pipelines.h), never their own pass lists.
//
//===----------------------------------------------------------------------===//

#include "lib/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "dialects/llm/Transforms/Passes.h"
#include "lib/Conversion/Passes.h"
#include "lib/Target/TargetInfo.h"

using namespace mlir;
using namespace mlir::strata;

LogicalResult mlir::strata::buildFusedPipeline(OpPassManager &pm,
                                               const PipelineOptions &options) {
  if (options.activationType != "bf16" && options.activationType != "f32")
    return failure();
  if (options.expertActivations != "bf16" && options.expertActivations != "fp8")
    return failure();
  // The per-rank graph first: the later passes (fusions, the precision
  // policy) see what each rank runs, collectives included.
  if (options.tensorParallelSize * options.expertParallelSize != 1) {
    llm::LLMShardModelPassOptions shard;
    shard.tensorParallelSize = options.tensorParallelSize;
    shard.expertParallelSize = options.expertParallelSize;
    pm.addPass(llm::createLLMShardModelPass(shard));
  }
  // The precision policy next, so that every later pass and every kernel
  // sees the final types.
  if (options.activationType == "f32")
    pm.addPass(llm::createLLMPromoteActivationsPass());
  if (options.expertActivations == "fp8")
    pm.addPass(llm::createLLMQuantizeExpertActivationsPass());
  // Folds and drops dead llm ops (all Pure) so no kernel is built for them.
  pm.addPass(createCanonicalizerPass());
  // Merges repeated llm.weight reads and identical subgraphs: one kernel
  // call and one weight binding each.
  pm.addPass(createCSEPass());
  // After CSE, so that a norm or projection another value also reads is
  // seen with all its uses (the fusions apply to single-use values only).
  if (options.fuseHyperConnections)
    pm.addPass(llm::createLLMFuseHyperConnectionsPass());
  return success();
}

void mlir::strata::buildKernelPipeline(OpPassManager &pm,
                                       const PipelineOptions &options) {
  if (options.target != "cpu") {
    // GPU targets: the hot ops (llm.linear) become launches of kernels on
    // the matrix units first; the pass reports an unknown chip.
    ConvertLLMToGPUPassOptions gpu;
    gpu.chip = options.target;
    pm.addPass(createConvertLLMToGPUPass(gpu));
  }
  // Every llm op becomes a call of an outlined memref kernel (DPS).
  pm.addPass(createConvertLLMToKernelPass());
  // Elementwise arith/math on whole tensors in the graph (residual adds,
  // casts) become linalg.generic, which one-shot-bufferize understands.
  pm.addPass(createConvertElementwiseToLinalgPass());
  // The graph's remaining tensors (function boundaries, upstream tensor ops,
  // the to_tensor/to_buffer bridges left by the conversion) become memrefs.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Removes bridge casts and dead allocations left by bufferization.
  pm.addPass(createCanonicalizerPass());
}

LogicalResult mlir::strata::buildTargetPipeline(OpPassManager &pm,
                                                const PipelineOptions &options) {
  std::unique_ptr<TargetInfo> target = createTargetInfo(options.target);
  if (!target)
    return failure();
  if (!target->isHost()) {
    // GPU: gpu.modules to device code and gpu.binary; the host side (step
    // functions, remaining CPU-style kernels) stays at the kernel phase.
    BinaryOptions binary;
    binary.format = options.gpuFormat;
    binary.toolkit = options.toolkit;
    return target->buildBinaryPipeline(pm, binary);
  }
  // Bufferization's copies become linalg.copy: kernels call no runtime.
  pm.addNestedPass<func::FuncOp>(createConvertMemRefCopyToLinalgPass());
  // linalg matmuls/fills/elementwise become scf loops over loads/stores.
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // collapse_shape/subview become explicit strided metadata ...
  pm.addPass(memref::createExpandStridedMetadataPass());
  // ... whose affine.apply index math lowers to arith.
  pm.addPass(createLowerAffinePass());
  if (target->needsBF16Expansion()) {
    // bf16 arithmetic (the graph's residual adds) as f32 arithmetic with a
    // rounding after each op, which is what bf16 hardware does too.
    arith::ArithEmulateUnsupportedFloatsOptions emulate;
    emulate.sourceTypeStrs = {"bf16"};
    emulate.targetTypeStr = "f32";
    pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
    // bf16 <-> f32 as integer code: no bf16 instructions or libcalls needed.
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = true;
    pm.addPass(arith::createArithExpandOpsPass(expand));
  }
  // Structured control flow to branches before the LLVM conversions.
  pm.addPass(createSCFToControlFlowPass());
  // Each dialect to LLVM; memref after arith/math so descriptor types
  // settle, func last but one (toolchain.md 3d).
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // Drops the casts of the partial conversions above.
  pm.addPass(createReconcileUnrealizedCastsPass());
  // The LLVM dialect module without the llm dialect's attributes (the kernel
  // contract): upstream tools read it.
  pm.addPass(createStripLLMAttributesPass());
  return success();
}

void mlir::strata::registerStrataPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "strata-fused", "llm -> fused phase",
      [](OpPassManager &pm, const PipelineOptions &options) {
        (void)buildFusedPipeline(pm, options);
      });
  PassPipelineRegistration<PipelineOptions>(
      "strata-kernel", "fused -> kernel phase", buildKernelPipeline);
  PassPipelineRegistration<PipelineOptions>(
      "strata-target", "kernel -> target phase (LLVM dialect)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        (void)buildTargetPipeline(pm, options);
      });
  PassPipelineRegistration<PipelineOptions>(
      "strata-lower", "llm -> target: the fused, kernel and target phases",
      [](OpPassManager &pm, const PipelineOptions &options) {
        (void)buildFusedPipeline(pm, options);
        buildKernelPipeline(pm, options);
        (void)buildTargetPipeline(pm, options);
      });
}
