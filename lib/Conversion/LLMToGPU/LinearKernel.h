//===- LinearKernel.h - matrix-unit kernels for linear kernel functions -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The artifact path compiles the kernel functions of convert-llm-to-kernel
// (shared by every target) rather than llm ops, so a GPU target reaches the
// tiled matmul of MatmulTiling.h from a linear kernel function's signature:
// the same problem description (describeLinearMatmul) and kernel generator
// (buildMatmulKernel) as the llm.linear pattern, under the kernel function's
// name and with its arguments in its order. docs/GPULowering.md "Linears on
// the matrix units".
//
// The argument lists below are in the order convert-llm-to-kernel emits;
// every builder reads the arguments by their #llm.kernel roles
// (KernelArguments.h), so a function with them in another order builds too
// (the matmuls want x first), and the gpu.func keeps the function's order.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_LINEARKERNEL_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_LINEARKERNEL_H

#include <optional>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include "lib/Conversion/LLMToGPU/LaunchGrid.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

namespace mlir::strata {

/// A kernel function rebuilt on the matrix units: the gpu.func, its tiling
/// (only `tiling.mma` for the attention and indexer kernels), the grid its
/// builder chose over the kernel's arguments, and the `_rows` twin it
/// replaces at every step size (it has a decode form: the caller builds the
/// twin empty; empty if none).
struct MatmulKernelFunction {
  gpu::GPUFuncOp func;
  MatmulTiling tiling;
  GpuGrid grid;
  std::string rowsTwin;
};

/// On an llm.kernel function after select-kernel-strategy: the builder a GPU
/// target makes its kernel with, a #llm.gpu_strategy.
inline constexpr llvm::StringLiteral kGpuStrategyAttrName = "llm.gpu_strategy";

/// The matrix-unit strategy whose builder takes `kernel`'s kind (by its
/// attributes), none when no builder does (select-kernel-strategy then
/// tries it).
std::optional<llm::GpuStrategy> matrixStrategyOf(func::FuncOp kernel);

/// True when `kernel` is a plain linear kernel function (kLinearKernelAttrName:
/// llm.linear's, lm_head's logits) or one with an epilogue
/// (kLinearEpilogueAttrName).
bool isLinearKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, the tiled matmul of
/// `kernel`, a linear kernel function with arguments (x memref<?xKxbf16>,
/// W memref<NxKxbf16>, y memref<?xNx{bf16|f32}>) or, for an fp8 weight
/// (`llm.weight_block = [bn, bk]`), (x, W memref<NxKxf8E4M3FN>,
/// scales memref<ceil(N/bn)xceil(K/bk)xf32>, y): the same arguments in the
/// same order. Fails with `why` (and builds nothing) when the signature has
/// another form or the shape does not tile on `target`.
FailureOr<MatmulKernelFunction>
buildLinearMatmulKernel(OpBuilder &builder, gpu::GPUModuleOp module,
                        func::FuncOp kernel, const TargetInfo &target,
                        std::string &why);

/// True when `kernel` carries kGroupedExpertsAttrName (moe_up / moe_down).
bool isGroupedExpertKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, the grouped matmul of a
/// moe_up kernel function (x memref<?xDxbf16>, chosen, order, starts
/// memref<?xkxi32>, memref<?xkxi32>, memref<E+1xi32>, gate and up
/// memref<ExIxDxT> [with scales memref<ExI/bnxD/bkxf32> each], act
/// memref<?xkxIxbf16>) or moe_down kernel function (act, chosen, weights
/// memref<?xkxf32>, order, starts, down memref<ExDxIxT> [scales], routed
/// memref<?xkxDxbf16>), the same arguments in the same order. Fails with
/// `why` (and builds nothing) for another signature, activations other than
/// bf16 or shapes that do not tile. fp8 experts take the target's fp8 mode:
/// weights decoded to bf16 (sm_90) or the slots' rows quantised per K block
/// against fp8 MFMA (gfx942, gfx950), both weights of moe_up against the
/// same quantised rows.
FailureOr<MatmulKernelFunction>
buildGroupedExpertMatmulKernel(OpBuilder &builder, gpu::GPUModuleOp module,
                               func::FuncOp kernel, const TargetInfo &target,
                               std::string &why);

/// True when `kernel` carries kDenseMatmulAttrName (the matmul half of a
/// dense projection pair: swiglu_up/down, moe_shared_up/down).
bool isDenseMatmulKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, the tiled matmul of a
/// dense projection kernel function with its epilogue (DenseMatmul): x
/// memref<?xKxbf16>, [routed memref<?xtopKxNxbf16> (add_slot_sum),] W
/// memref<NxKxT> [scales memref<N/bnxK/bkxf32>], [W_up, [scales] (swiglu),]
/// y memref<?xNxbf16>, the same arguments in the same order; with `heads`
/// (MLA's mla_absorb / mla_project) x memref<?xHxK>, a bf16 W holding every
/// head's block (transposed with `weight_transposed`), y memref<?xHxN>, one
/// of x and y bf16. Fails with `why` (and builds nothing) for another
/// signature, f32 activations or shapes that do not tile; fp8 weights take
/// the target's fp8 mode as for the grouped experts. With `hc_mult` in the
/// info, R, post and comb precede y and y is the new streams
/// (DenseMatmul::hcMult).
FailureOr<MatmulKernelFunction>
buildDenseMatmulKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                               func::FuncOp kernel, const TargetInfo &target,
                               std::string &why);

/// True when `kernel` carries kKdaChunkAttrName.
bool isKdaChunkKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKdaChunkKernel for a
/// chunked kda_attention kernel function, the same arguments in the same
/// order. Fails with `why` (and builds nothing) for another signature or a
/// target without f32 matrix instructions.
FailureOr<MatmulKernelFunction>
buildKdaChunkKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                            func::FuncOp kernel, const TargetInfo &target,
                            std::string &why);

/// True when `kernel` carries kKdaCoefficientsAttrName.
bool isKdaCoefficientsKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`,
/// buildKdaCoefficientsKernel for a kda_coefficients kernel function, the
/// same arguments in the same order. Fails with `why` (and builds nothing)
/// for another signature, another chunk length or a target without f32
/// matrix instructions.
FailureOr<MatmulKernelFunction>
buildKdaCoefficientsKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                                   func::FuncOp kernel,
                                   const TargetInfo &target, std::string &why);

/// True when `kernel` carries kMlaAttendAttrName.
bool isMlaAttendKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMlaAttendKernel for
/// an mla_attend kernel function (qa memref<?xHxRxf32>, latent pool
/// memref<?xPxWxbf16>, selection, counts, sequence starts, block table,
/// oh memref<?xHxRxf32>), the same arguments in the same order. Fails with
/// `why` (and builds nothing) for another signature, fp8 or f32 pools (they
/// keep the generic kernel) or a latent width that does not tile.
FailureOr<MatmulKernelFunction>
buildMlaAttendKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                             func::FuncOp kernel, const TargetInfo &target,
                             std::string &why);

/// True when `kernel` carries kKpoolScoresAttrName.
bool isKpoolScoresKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKpoolScoresKernel for
/// a kpool_scores kernel function, the same arguments in the same order.
/// Fails with `why` (and builds nothing) for another signature, f32 queries
/// or an fp8 index pool (they keep the generic kernel).
FailureOr<MatmulKernelFunction>
buildKpoolScoresKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                               func::FuncOp kernel, const TargetInfo &target,
                               std::string &why);

/// True when `kernel` carries kKpoolSelectAttrName.
bool isKpoolSelectKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKpoolSelectKernel for
/// a kpool_indexer selection kernel function, the same arguments in the same
/// order. Fails with `why` (and builds nothing) for another signature.
FailureOr<MatmulKernelFunction>
buildKpoolSelectKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                               func::FuncOp kernel, const TargetInfo &target,
                               std::string &why);

/// True when `kernel` carries kMlaCombineAttrName.
bool isMlaCombineKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMlaCombineKernel for
/// an mla_combine kernel function (oh memref<?xHxRxf32>, parts
/// memref<64xHx(R+2)xf32>), the same arguments in the same order. Fails with
/// `why` (and builds nothing) for another signature or a width
/// checkMlaCombine refuses.
FailureOr<MatmulKernelFunction>
buildMlaCombineKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                              func::FuncOp kernel, const TargetInfo &target,
                              std::string &why);

/// True when `kernel` carries kMoeSelectAttrName.
bool isMoeSelectKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMoeSelectKernel for
/// a moe_select kernel function (logits memref<?xExf32>, bias memref<Exf32>,
/// chosen memref<?xKxi32>, weights memref<?xKxf32>), the same arguments in
/// the same order. Fails with `why` (and builds nothing) for another
/// signature or more than one expert group.
FailureOr<MatmulKernelFunction>
buildMoeSelectKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                             func::FuncOp kernel, const TargetInfo &target,
                             std::string &why);

/// True when `kernel` carries kMoeGroupAttrName.
bool isMoeGroupKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMoeGroupKernel for a
/// moe_group kernel function (chosen memref<?xKxi32>, order memref<?xKxi32>,
/// starts memref<E+1xi32>), the same arguments in the same order, on a grid
/// of one block. Fails with `why` (and builds nothing) for another
/// signature.
FailureOr<MatmulKernelFunction>
buildMoeGroupKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                            func::FuncOp kernel, const TargetInfo &target,
                            std::string &why);

/// True when `kernel` carries kMhcMixAttrName.
bool isMhcMixKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMhcMixKernel for an
/// mhc_mix kernel function (streams memref<?xHxDxT> with T bf16 or f32, fn
/// memref<MIXx(H*D)xf32>, parts memref<?xSx(MIX+1)xf32>), the same arguments
/// in the same order. Fails with `why` (and builds nothing) for another
/// signature or a shape checkMhcMix refuses.
FailureOr<MatmulKernelFunction>
buildMhcMixKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                          func::FuncOp kernel, const TargetInfo &target,
                          std::string &why);

/// True when `kernel` carries kKdaPrepareAttrName.
bool isKdaPrepareKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKdaPrepareKernel for
/// a kda_prepare kernel function, the same arguments in the same order.
/// Fails with `why` (and builds nothing) for another signature or a shape
/// checkKdaTokenRows refuses.
FailureOr<MatmulKernelFunction>
buildKdaPrepareKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                              func::FuncOp kernel, const TargetInfo &target,
                              std::string &why);

/// True when `kernel` carries kKdaOutputAttrName.
bool isKdaOutputKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKdaOutputKernel for
/// a kda_output kernel function, the same arguments in the same order.
/// Fails with `why` (and builds nothing) for another signature or a shape
/// checkKdaTokenRows refuses.
FailureOr<MatmulKernelFunction>
buildKdaOutputKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                             func::FuncOp kernel, const TargetInfo &target,
                             std::string &why);

/// True when `kernel` carries kGroupQuantizeAttrName.
bool isGroupQuantizeKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildGroupQuantizeKernel
/// for a moe_quantize_x / moe_quantize_act kernel function, the same
/// arguments in the same order. Fails with `why` (and builds nothing) for
/// another signature or a shape checkGroupQuantize refuses.
FailureOr<MatmulKernelFunction>
buildGroupQuantizeKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                                 func::FuncOp kernel, const TargetInfo &target,
                                 std::string &why);

/// True when `kernel` carries kKdaDecodeAttrName.
bool isKdaDecodeKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildKdaDecodeKernel for a
/// kda_decode kernel function, the same arguments in the same order. Fails
/// with `why` (and builds nothing) for another signature, fp8 operands or a
/// shape checkKdaDecode refuses.
FailureOr<MatmulKernelFunction>
buildKdaDecodeKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                             func::FuncOp kernel, const TargetInfo &target,
                             std::string &why);

/// True when `kernel` carries kMhcPreAttrName.
bool isMhcPreKernelFunction(func::FuncOp kernel);

/// Builds `gpu.func @<kernel's name>` in `module`, buildMhcPreKernel for an
/// mhc_pre kernel function with bf16 streams, the same arguments in the same
/// order. Fails with `why` (and builds nothing) for another signature, f32
/// streams or a shape checkMhcPre refuses.
FailureOr<MatmulKernelFunction>
buildMhcPreKernelFunction(OpBuilder &builder, gpu::GPUModuleOp module,
                          func::FuncOp kernel, const TargetInfo &target,
                          std::string &why);

/// The matrix-unit form of `kernel` by the builder of `strategy` (one
/// builder per matrix strategy); fails with `why` where that builder
/// refuses the kernel, and for `generic` and `empty_twin`, which no builder
/// makes.
FailureOr<MatmulKernelFunction>
buildKernelByStrategy(llm::GpuStrategy strategy, OpBuilder &builder,
                      gpu::GPUModuleOp module, func::FuncOp kernel,
                      const TargetInfo &target, std::string &why);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_LINEARKERNEL_H
