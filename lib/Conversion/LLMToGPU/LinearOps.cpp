//===- LinearOps.cpp - llm.linear to a GPU matmul kernel ------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.linear (x : [M, K] bf16, W : [N, K] bf16 or !llm.fp8_weight with
// 128x128 block scales, y : [M, N] bf16 or f32) becomes a launch of the
// tiled matmul kernel of MatmulTiling.h: grid (ceil(M / tileM), N / tileN,
// 1), block (threads, 1, 1). Ranks other than 2, f32 inputs or weights and
// shapes that do not tile are left to convert-llm-to-kernel. The same kernel
// is built from a linear kernel function's signature for the artifact's GPU
// targets (buildLinearMatmulKernel, LinearKernel.h).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/FormatVariadic.h"

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LinearKernel.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/MlaSplit.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

/// The module's gpu.module @strata_kernels, created (and the module marked
/// gpu.container_module) on first use.
static gpu::GPUModuleOp getKernelModule(RewriterBase &rewriter,
                                        Operation *anchor) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (auto existing =
          module.lookupSymbol<gpu::GPUModuleOp>(kGpuKernelModuleName))
    return existing;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  rewriter.getUnitAttr());
  return gpu::GPUModuleOp::create(rewriter, anchor->getLoc(),
                                  kGpuKernelModuleName);
}

namespace {

struct LinearToGPU : OpRewritePattern<llm::LinearOp> {
  LinearToGPU(MLIRContext *ctx, const TargetInfo &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(llm::LinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(op.getInput().getType());
    auto yType = cast<RankedTensorType>(op.getType());
    Type weightType = op.getWeight().getType();
    auto fp8 = dyn_cast<llm::Fp8WeightType>(weightType);
    ShapedType weightData =
        fp8 ? fp8.getWeight() : cast<ShapedType>(weightType);
    MatmulProblem problem;
    MatmulTypes types;
    std::string why;
    if (failed(describeLinearMatmul(xType, weightData,
                                    fp8 ? fp8.getBlockRows() : 0,
                                    fp8 ? fp8.getBlockCols() : 0, yType,
                                    problem, types, why)))
      return rewriter.notifyMatchFailure(op, why);
    FailureOr<MatmulTiling> tiling =
        chooseMatmulTiling(target, problem, why);
    if (failed(tiling))
      return rewriter.notifyMatchFailure(op, why);

    // Operands as memrefs.
    SmallVector<Value> operands;
    auto xMemref = MemRefType::get(xType.getShape(), types.x);
    operands.push_back(bufferization::ToBufferOp::create(
        rewriter, loc, xMemref, op.getInput(), /*readOnly=*/true));
    if (fp8) {
      FailureOr<SmallVector<Value>> buffers =
          getWeightBuffers(rewriter, loc, op.getWeight(), op.getWeight());
      if (failed(buffers))
        return rewriter.notifyMatchFailure(
            op, "fp8 weight does not come from llm.weight");
      operands.append(*buffers);
    } else {
      auto wType = cast<RankedTensorType>(weightType);
      operands.push_back(bufferization::ToBufferOp::create(
          rewriter, loc, MemRefType::get(wType.getShape(), types.weight),
          op.getWeight(), /*readOnly=*/true));
    }
    Value rows = memref::DimOp::create(rewriter, loc, operands[0], 0);
    auto yMemref = MemRefType::get(yType.getShape(), types.y);
    Value y = memref::AllocOp::create(rewriter, loc, yMemref, ValueRange{rows});
    operands.push_back(y);

    std::string name = llvm::formatv(
        "linear_{0}_{1}x{2}_{3}", fp8 ? "fp8" : "bf16", problem.n, problem.k,
        types.y.isF32() ? "f32" : "bf16");
    gpu::GPUModuleOp module = getKernelModule(rewriter, op);
    gpu::GPUFuncOp kernel = buildMatmulKernel(rewriter, loc, module, name,
                                              *tiling, problem, types);

    auto idx = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
    };
    Value gridX = arith::DivUIOp::create(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, rows, idx(tiling->tileM() - 1)),
        idx(tiling->tileM()));
    gpu::KernelDim3 grid{gridX, idx(columnBlocks(*tiling, problem, true)),
                         idx(1)};
    gpu::KernelDim3 block{idx(tiling->threads()), idx(1), idx(1)};
    gpu::LaunchFuncOp::create(rewriter, loc, kernel, grid, block,
                              /*dynamicSharedMemorySize=*/Value(), operands);
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, yType, y, /*restrict=*/true,
                               /*writable=*/true));
    return success();
  }

  const TargetInfo &target;
};

} // namespace

void mlir::strata::populateLinearToGPUPatterns(const TargetInfo &target,
                                               RewritePatternSet &patterns) {
  patterns.add<LinearToGPU>(patterns.getContext(), target);
}

/// Loads the dialects of a matmul kernel body (convert-llm-to-gpu's
/// dependent dialects; on this path no pass loads them) and fails when
/// `module` already has a function of the kernel function's name (the
/// builders would reuse it; kernel function names are unique).
static LogicalResult prepareMatmulModule(OpBuilder &builder,
                                         gpu::GPUModuleOp module,
                                         func::FuncOp kernel,
                                         std::string &why) {
  builder.getContext()
      ->loadDialect<amdgpu::AMDGPUDialect, arith::ArithDialect,
                    gpu::GPUDialect, LLVM::LLVMDialect, math::MathDialect,
                    memref::MemRefDialect, NVVM::NVVMDialect,
                    nvgpu::NVGPUDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  if (module.lookupSymbol(kernel.getSymName())) {
    why = "the GPU module already has a kernel of that name";
    return failure();
  }
  return success();
}

/// The residual-write arguments of a matmul kernel function (hcMult > 0):
/// the streams R, post and comb (by role), the result `y` [T, hcMult, n]
/// like R, post [T, hcMult] and comb [T, hcMult, hcMult] f32. Returns the
/// projection's own result type [T, n] (what describeLinearMatmul takes) or
/// fails with `why`.
static FailureOr<MemRefType>
checkResidualWriteArgs(FunctionType type, const KernelArguments &roles,
                       int64_t hcMult, int64_t n, MemRefType y,
                       std::string &why) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = Float32Type::get(type.getContext());
  auto arg = [&](KernelRole role) {
    return roles.type(type.getInputs(), role);
  };
  if (y.getShape() != ArrayRef<int64_t>({dyn, hcMult, n}) ||
      arg(KernelRole::Streams) != y ||
      arg(KernelRole::StreamPost) != MemRefType::get({dyn, hcMult}, f32) ||
      arg(KernelRole::StreamComb) !=
          MemRefType::get({dyn, hcMult, hcMult}, f32)) {
    why = "unexpected residual-write arguments";
    return failure();
  }
  return MemRefType::get({dyn, n}, y.getElementType());
}

namespace {
/// One form of a matmul kernel (a decode form, the plain or the staged row
/// tiles): the steps it takes, up to maxSize (argument 0's rows times the
/// grid's step multiplier; -1: every larger step), and the rows and columns
/// of one of its blocks.
struct TileForm {
  int64_t maxSize = -1;
  int64_t rows = 1;
  int64_t columns = 1;
  /// Blocks along grid z per tile (K split over the grid, GridSplitK).
  int64_t splits = 1;
};
} // namespace

/// Appends the row tiles' forms of the built kernel `func` for the steps
/// above `decodeMaxSize` (the largest a decode form takes, 0 without one):
/// its plain tiles (`tiling`) below strata.staged_min_rows rows, its staged
/// tiles (strata.staged_tile) from there on.
static void appendRowTileForms(gpu::GPUFuncOp func, const MatmulTiling &tiling,
                               int64_t decodeMaxSize,
                               SmallVectorImpl<TileForm> &forms) {
  auto staged = func->getAttrOfType<DenseI64ArrayAttr>("strata.staged_tile");
  auto minRows = func->getAttrOfType<IntegerAttr>("strata.staged_min_rows");
  if (!staged || staged.size() != 2 || !minRows) {
    forms.push_back({-1, tiling.tileM(), tiling.tileN()});
    return;
  }
  if (minRows.getInt() - 1 > decodeMaxSize)
    forms.push_back({minRows.getInt() - 1, tiling.tileM(), tiling.tileN()});
  forms.push_back({-1, staged[0], staged[1]});
}

/// The grid of a row-tile matmul over `forms` (smallest steps first): x =
/// ceil(rows of argument 0 x stepMultiplier / the form's rows), y = N / the
/// form's columns; the form is chosen per dispatch from the step's size, so
/// no block is launched for another form's tiles.
static GpuGrid rowTileGrid(ArrayRef<TileForm> forms,
                           const MatmulProblem &problem,
                           int64_t stepMultiplier = 1) {
  GpuGrid grid;
  GpuGridDim &x = grid[0], &y = grid[1], &z = grid[2];
  x = {0, 0, 1, forms.back().rows};
  x.multiplier = stepMultiplier;
  y.blocks = problem.n / forms.back().columns;
  z.blocks = forms.back().splits;
  if (forms.size() < 2)
    return grid;
  // Neighbouring forms of equal blocks in a dimension are one range there.
  auto add = [](std::vector<GpuGridForm> &dim, GpuGridForm form) {
    if (!dim.empty() && dim.back().divisor == form.divisor &&
        dim.back().blocks == form.blocks)
      dim.back().maxSize = form.maxSize;
    else
      dim.push_back(form);
  };
  for (const TileForm &form : forms) {
    add(x.forms, {form.maxSize, form.rows, 1});
    add(y.forms, {form.maxSize, 1, problem.n / form.columns});
    add(z.forms, {form.maxSize, 1, form.splits});
  }
  // A dimension equal in every form needs none (z, the K splits, has
  // forms only where some form splits).
  for (GpuGridDim *dim : {&x, &y, &z}) {
    if (dim->forms.size() == 1)
      dim->forms.clear();
    if (dim != &z || !dim->forms.empty())
      dim->stepMultiplier = stepMultiplier;
  }
  return grid;
}

/// The forms of a plain linear or dense projection built with decode forms
/// where `split` holds one (buildWithDecodeForms: one row fragment, then
/// the multi-row form where the problem has one), then its row tiles.
static SmallVector<TileForm> denseMatmulForms(gpu::GPUFuncOp func,
                                              const MatmulTiling &tiling,
                                              const MatmulProblem &problem,
                                              bool decodeForms,
                                              const DenseMatmul &dense) {
  SmallVector<TileForm> forms;
  int64_t splits = 0, decodeMax = 0;
  std::optional<MatmulTiling> split =
      decodeForms ? chooseDecodeSplitK(tiling, problem, splits) : std::nullopt;
  if (split) {
    // One row fragment: the fp32 weight's GEMV or the one-row split form.
    decodeMax = tiling.mma.m;
    forms.push_back({decodeMax, tiling.tileM(),
                     takesWeightGemv(tiling, problem, splits, dense)
                         ? kWeightGemvColumns
                         : split->tileN()});
    int64_t multiMax = decodeFormsMaxRows(tiling, problem, true);
    if (multiMax > decodeMax) {
      decodeMax = multiMax;
      forms.push_back({decodeMax, tiling.tileM(), split->tileN()});
    }
  }
  // The decode forms' K splits over the grid (buildSplitK).
  if (auto decodeSplits =
          func->getAttrOfType<DenseI64ArrayAttr>("strata.decode_grid_splits"))
    for (auto [form, z] : llvm::zip(forms, decodeSplits.asArrayRef()))
      form.splits = z;
  // The row tiles with K split over the grid (buildGridSplit), per split in
  // order of steps: [splits, min rows, max rows, tile rows, tile columns]
  // (the plain tiling's or the staged ring's, GridSplitK::staged).
  if (auto gridSplit =
          func->getAttrOfType<DenseI64ArrayAttr>("strata.grid_split_k")) {
    ArrayRef<int64_t> entries = gridSplit.asArrayRef();
    for (size_t i = 0; i + 5 <= entries.size(); i += 5) {
      // Steps below a split's first and above the previous form's take the
      // unsplit row tiles (the plain tiling's: the staged tiles start at
      // hundreds of rows).
      if (entries[i + 1] - 1 > decodeMax) {
        decodeMax = entries[i + 1] - 1;
        forms.push_back({decodeMax, tiling.tileM(), tiling.tileN()});
      }
      decodeMax = entries[i + 2];
      forms.push_back({decodeMax, entries[i + 3], entries[i + 4], entries[i]});
    }
  }
  appendRowTileForms(func, tiling, decodeMax, forms);
  return forms;
}

/// The grid of a grouped-expert matmul: x = ceil(T * topK / tile rows) +
/// min(experts, T * topK) tiles (at most one partial tile per expert with
/// slots), y = N / tile columns, by form: the decode form's tiles of `split`
/// (splitTileRows slots) up to kGroupedSplitKMaxSlots slots, the row tiles
/// above; one block below minSlots.
static GpuGrid groupedExpertGrid(gpu::GPUFuncOp func,
                                 const MatmulTiling &tiling,
                                 const MatmulProblem &problem,
                                 const GroupedExperts &grouped,
                                 const std::optional<MatmulTiling> &split) {
  SmallVector<TileForm> forms;
  int64_t decodeMax = 0;
  if (split) {
    decodeMax = kGroupedSplitKMaxSlots;
    forms.push_back({decodeMax, grouped.splitTileRows, split->tileN()});
  }
  appendRowTileForms(func, tiling, decodeMax, forms);
  GpuGrid grid = rowTileGrid(forms, problem, grouped.topK);
  GpuGridDim &x = grid[0];
  x.addend = grouped.experts;
  x.addendAtMostExtent = true;
  x.floor = grouped.minSlots;
  return grid;
}

/// The `_rows` twin of matrix kernel function `kernel` (kRowsTwinAttrName)
/// when the kernel's builder takes a decode split form (`hasDecodeForm`),
/// which lets the matrix kernel take every step size: `minCount` (its
/// min_rows / min_slots) becomes 0 and the twin's name is returned for the
/// caller to build empty. Else "".
static std::string coverSmallSteps(func::FuncOp kernel, bool hasDecodeForm,
                                   int64_t &minCount) {
  auto twin = kernel->getAttrOfType<FlatSymbolRefAttr>(kRowsTwinAttrName);
  if (!twin || !hasDecodeForm)
    return "";
  minCount = 0;
  return twin.getValue().str();
}

/// The argument roles of a matmul kernel function, x first (argument 0
/// gives the step's rows to the grid and the step-size branches), every
/// argument an identity-layout memref except the expert coordinate.
static FailureOr<KernelArguments> matmulArguments(func::FuncOp kernel,
                                                  std::string &why) {
  FailureOr<KernelArguments> roles = KernelArguments::of(kernel, why);
  if (failed(roles))
    return failure();
  if (roles->index(KernelRole::X) != 0u) {
    why = "x is not argument 0 (the step's rows)";
    return failure();
  }
  FunctionType type = kernel.getFunctionType();
  for (auto [role, t] : llvm::zip_equal(roles->all(), type.getInputs())) {
    auto m = dyn_cast<MemRefType>(t);
    if (role != KernelRole::ExpertCoordinate &&
        !(m && m.getLayout().isIdentity())) {
      why = "expected identity-layout memrefs";
      return failure();
    }
  }
  if (type.getNumResults() != 0) {
    why = "a kernel function returns nothing";
    return failure();
  }
  return roles;
}

/// `role`'s argument type of `kernel` as a memref (null when absent).
static MemRefType memrefOf(func::FuncOp kernel, const KernelArguments &roles,
                           KernelRole role) {
  return dyn_cast_or_null<MemRefType>(
      roles.type(kernel.getFunctionType().getInputs(), role));
}

/// The roles of `kernel` when they are exactly those of `order` (in any
/// order), and its signature with the arguments put in `order`: the order in
/// which a builder's checks read them. Fails with `why` otherwise.
static FailureOr<std::pair<KernelArguments, FunctionType>>
rolesInBuilderOrder(func::FuncOp kernel, ArrayRef<KernelRole> order,
                    std::string &why) {
  FailureOr<KernelArguments> roles = KernelArguments::of(kernel, why);
  if (failed(roles) || failed(roles->expectExactly(order, why)))
    return failure();
  FunctionType type = roles->inOrder(kernel.getFunctionType(), order);
  return std::make_pair(*roles, type);
}

/// Argument `role`'s position as a grid dimension's argument.
static int64_t gridArgument(const KernelArguments &roles, KernelRole role) {
  return static_cast<int64_t>(*roles.index(role));
}

bool mlir::strata::isLinearKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kLinearEpilogueAttrName) ||
         kernel->hasAttr(kLinearKernelAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildLinearMatmulKernel(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  if (!isLinearKernelFunction(kernel)) {
    why = "not a linear kernel function";
    return failure();
  }
  FunctionType type = kernel.getFunctionType();
  auto block = kernel->getAttrOfType<DenseI64ArrayAttr>(kWeightBlockAttrName);
  bool fp8 = block && block.size() == 2;
  // With an epilogue (mhc_post_linear): R, post and comb after the weight.
  int64_t hcMult = 0;
  if (Attribute epilogue = kernel->getAttr(kLinearEpilogueAttrName)) {
    auto info = dyn_cast<llm::LinearEpilogueAttr>(epilogue);
    if (!info || info.getKind() != llm::LinearEpilogueKind::MhcPost) {
      why = "unknown linear epilogue";
      return failure();
    }
    hcMult = info.getHcMult();
  }
  FailureOr<KernelArguments> roles = matmulArguments(kernel, why);
  if (failed(roles) ||
      failed(roles->expectExactly(linearMatmulRoles(fp8, hcMult), why)))
    return failure();
  auto arg = [&](KernelRole role) { return memrefOf(kernel, *roles, role); };
  MemRefType x = arg(KernelRole::X), weight = arg(KernelRole::Weight),
             y = arg(KernelRole::Out);
  if (hcMult) {
    FailureOr<MemRefType> projected = checkResidualWriteArgs(
        type, *roles, hcMult, weight.getRank() == 2 ? weight.getDimSize(0) : -1,
        y, why);
    if (failed(projected))
      return failure();
    y = *projected;
  }
  MatmulProblem problem;
  MatmulTypes types;
  if (failed(describeLinearMatmul(x, weight, fp8 ? block[0] : 0,
                                  fp8 ? block[1] : 0, y, problem, types,
                                  why)))
    return failure();
  if (fp8) {
    MemRefType scales = arg(KernelRole::WeightScales);
    SmallVector<int64_t> expected = {
        llvm::divideCeilSigned(problem.n, problem.scaleBlockN),
        llvm::divideCeilSigned(problem.k, problem.scaleBlockK)};
    if (!scales.getElementType().isF32() ||
        scales.getShape() != ArrayRef<int64_t>(expected)) {
      why = "unexpected fp8 scale shape";
      return failure();
    }
  }
  FailureOr<MatmulTiling> tiling = chooseMatmulTiling(target, problem, why);
  if (failed(tiling))
    return failure();
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  gpu::GPUFuncOp func = buildLinearMatmulKernelFunc(
      builder, kernel.getLoc(), module, kernel.getSymName(), type.getInputs(),
      roles->all(), *tiling, problem, types, hcMult, /*gridSplit=*/true);
  MatmulKernelFunction result;
  result.func = func;
  result.tiling = *tiling;
  // By the step's rows M (argument 0): (ceil(M / tileM), N / 16 (the
  // decode forms' columns), 1) for decode steps, the row tiles' above.
  DenseMatmul epilogue;
  epilogue.hcMult = hcMult;
  result.grid = rowTileGrid(
      denseMatmulForms(func, *tiling, problem, /*decodeForms=*/true, epilogue),
      problem);
  return result;
}

bool mlir::strata::isGroupedExpertKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kGroupedExpertsAttrName);
}

FailureOr<MatmulKernelFunction>
mlir::strata::buildGroupedExpertMatmulKernel(OpBuilder &builder,
                                             gpu::GPUModuleOp module,
                                             func::FuncOp kernel,
                                             const TargetInfo &target,
                                             std::string &why) {
  auto info =
      kernel->getAttrOfType<llm::GroupedExpertsAttr>(kGroupedExpertsAttrName);
  if (!info) {
    why = "not a grouped-expert kernel function";
    return failure();
  }
  GroupedExperts grouped;
  grouped.up = info.getKind() == llm::GroupedExpertsKind::Up;
  grouped.topK = info.getTopK();
  grouped.experts = info.getExperts();
  grouped.rankExperts = info.getRankExperts();
  grouped.minSlots = info.getMinSlots();
  grouped.limit = info.getSwigluLimit().getValueAsDouble();
  // moe_up: x, chosen, order, starts[, ep coordinate], gate[, s], up[, s],
  // act; moe_down: act, chosen, weights, order, starts[, ep coordinate],
  // down[, s], routed (the order of convert-llm-to-kernel; the builder reads
  // them by role).
  FunctionType type = kernel.getFunctionType();
  FailureOr<KernelArguments> roles = matmulArguments(kernel, why);
  if (failed(roles))
    return failure();
  auto arg = [&](KernelRole role) { return memrefOf(kernel, *roles, role); };
  MemRefType weight = arg(KernelRole::Weight);
  if (!weight) {
    why = "grouped experts take a weight";
    return failure();
  }
  bool fp8 = isa<Float8E4M3FNType>(weight.getElementType());
  MemRefType xType = arg(KernelRole::X);
  // fp8_expert_activations: x is e4m3 codes with per-group scales.
  bool fp8Input = xType && isa<Float8E4M3FNType>(xType.getElementType());
  SmallVector<KernelRole> expected = {
      KernelRole::X,         KernelRole::Chosen,
      KernelRole::SlotOrder, KernelRole::ExpertStarts,
      KernelRole::Weight,    KernelRole::Out};
  if (fp8Input)
    expected.push_back(KernelRole::XScales);
  if (!grouped.up)
    expected.push_back(KernelRole::RouteWeights);
  if (grouped.expertParallel())
    expected.push_back(KernelRole::ExpertCoordinate);
  if (fp8)
    expected.push_back(KernelRole::WeightScales);
  if (grouped.up)
    expected.push_back(KernelRole::UpWeight);
  if (grouped.up && fp8)
    expected.push_back(KernelRole::UpScales);
  if (failed(roles->expectExactly(expected, why)))
    return failure();
  grouped.roles.assign(roles->all().begin(), roles->all().end());
  MemRefType x = arg(KernelRole::X), y = arg(KernelRole::Out);
  if (weight.getRank() != 3 ||
      weight.getDimSize(0) != grouped.weightExperts() || x.getRank() < 2 ||
      y.getRank() != 3 || !(x.getElementType().isBF16() || fp8Input) ||
      !y.getElementType().isBF16() ||
      !(fp8 || weight.getElementType().isBF16())) {
    why = "grouped experts take bf16 activations (or e4m3 codes with "
          "scales) and bf16 or fp8 [experts, N, K] weights";
    return failure();
  }
  if (fp8Input && !fp8) {
    why = "fp8 activations need fp8 expert weights";
    return failure();
  }
  MatmulProblem problem;
  problem.n = weight.getDimSize(1);
  problem.k = weight.getDimSize(2);
  problem.fp8Weight = fp8;
  if (grouped.up &&
      (arg(KernelRole::UpWeight) != weight ||
       arg(KernelRole::UpScales) != arg(KernelRole::WeightScales))) {
    why = "the SwiGLU's gate and up weights differ in type";
    return failure();
  }
  if (fp8) {
    MemRefType scales = arg(KernelRole::WeightScales);
    if (scales.getRank() != 3 || !scales.getElementType().isF32() ||
        problem.n % scales.getDimSize(1) || problem.k % scales.getDimSize(2)) {
      why = "unexpected fp8 expert scale shape";
      return failure();
    }
    problem.scaleBlockN = problem.n / scales.getDimSize(1);
    problem.scaleBlockK = problem.k / scales.getDimSize(2);
  }
  if (fp8Input) {
    // One scale per row of x and scaleBlockK group of K.
    MemRefType xScales = arg(KernelRole::XScales);
    if (xScales.getRank() != x.getRank() || !xScales.getElementType().isF32() ||
        xScales.getShape().drop_back() != x.getShape().drop_back() ||
        xScales.getShape().back() * problem.scaleBlockK != problem.k) {
      why = "fp8 activations take one f32 scale per row and K block of the "
            "weights";
      return failure();
    }
    problem.fp8Input = true;
  }
  MatmulTypes types;
  types.x = x.getElementType();
  types.weight = weight.getElementType();
  types.y = y.getElementType();
  FailureOr<MatmulTiling> tiling = chooseMatmulTiling(target, problem, why);
  if (failed(tiling))
    return failure();
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  // sm_90a: a block of two warpgroups sharing each staged weight block.
  if (std::optional<MatmulTiling> wide =
          widenForWarpgroups(*tiling, problem, grouped.up ? 2 : 1))
    tiling = *wide;
  // With a decode split form the kernel takes every step size and its
  // `_rows` twin is built empty.
  int64_t splits = 0;
  std::optional<MatmulTiling> split =
      chooseGroupedDecodeSplitK(*tiling, problem, splits);
  std::string twin =
      coverSmallSteps(kernel, split.has_value(), grouped.minSlots);
  if (split)
    grouped.splitTileRows = tiling->mma.m;
  gpu::GPUFuncOp func = buildGroupedExpertKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(), type.getInputs(),
      *tiling, problem, types, grouped);
  MatmulKernelFunction result;
  result.func = func;
  result.tiling = *tiling;
  result.grid = groupedExpertGrid(func, *tiling, problem, grouped, split);
  result.rowsTwin = twin;
  return result;
}

bool mlir::strata::isDenseMatmulKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kDenseMatmulAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildDenseMatmulKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::DenseMatmulAttr>(kDenseMatmulAttrName);
  if (!info) {
    why = "not a dense matmul kernel function";
    return failure();
  }
  // The attribute's verifier guarantees each epilogue its parameters.
  DenseMatmul dense;
  dense.minRows = info.getMinRows();
  dense.hcMult = info.getHcMult();
  switch (info.getEpilogue()) {
  case llm::DenseEpilogue::Store:
    dense.epilogue = MatmulEpilogue::Store;
    break;
  case llm::DenseEpilogue::Swiglu:
    dense.epilogue = MatmulEpilogue::Swiglu;
    dense.limit = info.getSwigluLimit().getValueAsDouble();
    break;
  case llm::DenseEpilogue::AddSlotSum:
    dense.epilogue = MatmulEpilogue::AddSlotSum;
    dense.topK = info.getTopK();
    break;
  }
  FunctionType type = kernel.getFunctionType();
  FailureOr<KernelArguments> roles = matmulArguments(kernel, why);
  if (failed(roles))
    return failure();
  dense.roles.assign(roles->all().begin(), roles->all().end());
  auto arg = [&](KernelRole role) { return memrefOf(kernel, *roles, role); };
  MatmulProblem problem;
  MatmulTypes types;
  if (llm::HeadBatchedAttr heads = info.getHeadBatched()) {
    // Batched over heads: (x memref<?xHxKx{bf16|f32}>, W memref<RowsxKxbf16>
    // (or its transpose), y memref<?xHxNx{bf16|f32}>, not both f32), store
    // epilogue. Otherwise (x, [routed,] W[, s][, W_up[, s]], y).
    if (failed(roles->expectExactly(
            {KernelRole::X, KernelRole::Weight, KernelRole::Out}, why)))
      return failure();
    dense.heads = heads.getHeads();
    dense.weightRowOffset = heads.getWeightRowOffset();
    dense.weightRowStride = heads.getWeightRowStride();
    dense.transposedWeight = heads.getWeightTransposed();
    MemRefType x = arg(KernelRole::X), weight = arg(KernelRole::Weight),
               y = arg(KernelRole::Out);
    // Head h's block of W: [N, K] rows, or [K, N] rows when transposed.
    int64_t k = x.getRank() == 3 ? x.getDimSize(2) : 0;
    int64_t n = y.getRank() == 3 ? y.getDimSize(2) : 0;
    int64_t blockRows = dense.transposedWeight ? k : n;
    int64_t blockCols = dense.transposedWeight ? n : k;
    if (x.getRank() != 3 || y.getRank() != 3 || weight.getRank() != 2 ||
        !(x.getElementType().isBF16() || x.getElementType().isF32()) ||
        !weight.getElementType().isBF16() ||
        !(y.getElementType().isBF16() || y.getElementType().isF32()) ||
        // f32 in and out: an f32-activation artifact, which keeps fp32.
        (x.getElementType().isF32() && y.getElementType().isF32()) ||
        x.getDimSize(1) != dense.heads || y.getDimSize(1) != dense.heads ||
        ShapedType::isDynamic(n) || weight.getDimSize(1) != blockCols ||
        (dense.heads - 1) * dense.weightRowStride + dense.weightRowOffset +
                blockRows >
            weight.getDimSize(0)) {
      why = "head-batched matmuls take [T, H, K] inputs, a bf16 weight "
            "holding every head's block and a [T, H, N] result";
      return failure();
    }
    problem.n = n;
    problem.k = k;
    problem.transposedWeight = dense.transposedWeight;
    types = {builder.getBF16Type(), weight.getElementType(),
             y.getElementType()};
  } else {
    bool slotSum = dense.epilogue == MatmulEpilogue::AddSlotSum;
    bool swiglu = dense.epilogue == MatmulEpilogue::Swiglu;
    MemRefType x = arg(KernelRole::X), weight = arg(KernelRole::Weight);
    MemRefType y = arg(KernelRole::Out);
    if (!weight) {
      why = "dense matmuls take a weight";
      return failure();
    }
    bool fp8 = isa<Float8E4M3FNType>(weight.getElementType());
    SmallVector<KernelRole> expected = {KernelRole::X, KernelRole::Weight,
                                        KernelRole::Out};
    if (slotSum)
      expected.push_back(KernelRole::SlotSum);
    if (fp8)
      expected.push_back(KernelRole::WeightScales);
    if (swiglu)
      expected.push_back(KernelRole::UpWeight);
    if (swiglu && fp8)
      expected.push_back(KernelRole::UpScales);
    if (dense.hcMult)
      expected.append({KernelRole::Streams, KernelRole::StreamPost,
                       KernelRole::StreamComb});
    if (failed(roles->expectExactly(expected, why)))
      return failure();
    if (weight.getRank() != 2 || !x.getElementType().isBF16() ||
        !y.getElementType().isBF16()) {
      why = "dense matmuls take bf16 activations and bf16 or fp8 [N, K] "
            "weights";
      return failure();
    }
    if (dense.hcMult) {
      FailureOr<MemRefType> projected = checkResidualWriteArgs(
          type, *roles, dense.hcMult, weight.getDimSize(0), y, why);
      if (failed(projected))
        return failure();
      y = *projected;
    }
    int64_t blockN = 0, blockK = 0;
    if (fp8) {
      MemRefType scales = arg(KernelRole::WeightScales);
      if (scales.getRank() != 2 || !scales.getElementType().isF32() ||
          weight.getDimSize(0) % scales.getDimSize(0) ||
          weight.getDimSize(1) % scales.getDimSize(1)) {
        why = "unexpected fp8 scale shape";
        return failure();
      }
      blockN = weight.getDimSize(0) / scales.getDimSize(0);
      blockK = weight.getDimSize(1) / scales.getDimSize(1);
    }
    if (failed(describeLinearMatmul(x, weight, blockN, blockK, y, problem,
                                    types, why)))
      return failure();
    if (swiglu &&
        (arg(KernelRole::UpWeight) != weight ||
         arg(KernelRole::UpScales) != arg(KernelRole::WeightScales))) {
      why = "the SwiGLU's gate and up weights differ in type";
      return failure();
    }
    if (slotSum) {
      MemRefType routed = arg(KernelRole::SlotSum);
      if (routed.getRank() != 3 || routed.getDimSize(1) != dense.topK ||
          routed.getDimSize(2) != problem.n ||
          !routed.getElementType().isBF16()) {
        why = "unexpected routed-slot buffer";
        return failure();
      }
    }
  }
  FailureOr<MatmulTiling> tiling = chooseMatmulTiling(target, problem, why);
  if (failed(tiling))
    return failure();
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  std::string twin;
  int64_t splits = 0;
  if (!dense.heads)
    twin = coverSmallSteps(
        kernel, chooseDecodeSplitK(*tiling, problem, splits).has_value(),
        dense.minRows);
  gpu::GPUFuncOp func = buildDenseMatmulKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(), type.getInputs(),
      *tiling, problem, types, dense);
  MatmulKernelFunction result;
  result.func = func;
  result.tiling = *tiling;
  result.grid = rowTileGrid(
      denseMatmulForms(func, *tiling, problem, takesDecodeForm(dense), dense),
      problem);
  // Below min_rows the `_rows` kernel does the work: one block.
  result.grid[0].floor = dense.minRows;
  // Batched over heads: z.
  if (dense.heads)
    result.grid[2].blocks = dense.heads;
  result.rowsTwin = twin;
  return result;
}

/// Input `i` of `type` as a memref with the identity layout, else null.
static MemRefType identityMemRefInput(FunctionType type, unsigned i) {
  auto m = dyn_cast<MemRefType>(type.getInput(i));
  return m && m.getLayout().isIdentity() ? m : MemRefType();
}

/// True when input `i` of `type` is an identity-layout memref of `rank`
/// whose elements are `elem`.
static bool isMemRefInput(FunctionType type, unsigned i, int64_t rank,
                          Type elem) {
  MemRefType m = identityMemRefInput(type, i);
  return m && m.getRank() == rank && m.getElementType() == elem;
}

bool mlir::strata::isMlaAttendKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMlaAttendAttrName);
}

/// The latent pool of an mla_attend kernel function into `shape`: bf16
/// [pages, rows, width >= R], or fp8 bytes [pages, page bytes] with the page
/// layout `page` (#llm.fp8_page, MlaOps.cpp).
static LogicalResult describeLatentPool(MemRefType cache, llm::Fp8PageAttr page,
                                        MlaAttend &shape, std::string &why) {
  if (!page && cache.getElementType().isBF16() && cache.getRank() == 3 &&
      !cache.isDynamicDim(1) && !cache.isDynamicDim(2) &&
      cache.getDimSize(2) >= shape.rank) {
    shape.pageSize = cache.getDimSize(1);
    shape.poolWidth = cache.getDimSize(2);
    return success();
  }
  if (page) {
    shape.pageSize = page.getRowsPerPage();
    shape.poolWidth = page.getRowLanes();
    shape.fp8RowBytes = page.getRowBytes();
    shape.fp8ScaleOffset = page.getScaleOffset();
    shape.fp8GroupLanes = page.getGroupLanes();
  }
  if (!page || !cache.getElementType().isInteger(8) || cache.getRank() != 2 ||
      cache.isDynamicDim(1) || shape.poolWidth < shape.rank ||
      shape.fp8GroupLanes <= 0 || shape.rank % shape.fp8GroupLanes != 0 ||
      shape.fp8ScaleOffset < shape.poolWidth ||
      shape.pageSize * shape.fp8RowBytes > cache.getDimSize(1) ||
      shape.fp8RowBytes % 16 != 0 || shape.fp8ScaleOffset % 4 != 0) {
    why = "the matrix-unit mla_attend reads bf16 latent pools or fp8 ones "
          "with their page layout (16-byte aligned rows)";
    return failure();
  }
  return success();
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMlaAttendKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::MlaAttendAttr>(kMlaAttendAttrName);
  const KernelRole order[] = {
      KernelRole::X,         KernelRole::LatentPool,
      KernelRole::Selection, KernelRole::SelectionCounts,
      KernelRole::SeqStarts, KernelRole::BlockTable,
      KernelRole::Out,       KernelRole::SplitParts};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != 8 || type.getNumResults() != 0) {
    why = "not an mla_attend kernel function";
    return failure();
  }
  MemRefType qa = identityMemRefInput(type, 0);
  MemRefType cache = identityMemRefInput(type, 1);
  MemRefType oh = identityMemRefInput(type, 6);
  MemRefType parts = identityMemRefInput(type, 7);
  Type i32 = builder.getI32Type();
  auto isI32Vector = [&](unsigned i, int64_t rank) {
    return isMemRefInput(type, i, rank, i32);
  };
  if (!qa || !cache || !oh || qa.getRank() != 3 || qa != oh ||
      !qa.getElementType().isF32() || !isI32Vector(2, 2) ||
      !isI32Vector(3, 1) || !isI32Vector(4, 1) || !isI32Vector(5, 2) ||
      ShapedType::isDynamic(qa.getDimSize(1)) ||
      ShapedType::isDynamic(qa.getDimSize(2)) || !parts ||
      parts.getShape() != ArrayRef<int64_t>{kMlaSplitSlots, qa.getDimSize(1),
                                            qa.getDimSize(2) + 2}) {
    why = "unexpected mla_attend kernel signature";
    return failure();
  }
  MlaAttend shape;
  shape.heads = qa.getDimSize(1);
  shape.rank = qa.getDimSize(2);
  shape.scale = info.getSoftmaxScale().getValueAsDouble();
  if (failed(describeLatentPool(cache, info.getFp8Page(), shape, why)))
    return failure();
  FailureOr<const MatrixInstruction *> mi =
      chooseMlaAttendInstruction(target, shape, why);
  if (failed(mi))
    return failure();
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildMlaAttendKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, **mi, target);
  result.tiling.mma = **mi;
  // (tokens + kMlaSplitSlots, ceil(heads / heads per block), 1): at least
  // one block per (token, position range) of a split step (MlaSplit.h), the
  // extra ones idle in larger steps.
  result.grid[0] = {gridArgument(roles, KernelRole::X), 0, 1};
  result.grid[0].addend = kMlaSplitSlots;
  result.grid[1].blocks = llvm::divideCeilSigned(
      shape.heads, mlaAttendHeadsPerBlock(shape, **mi, target));
  return result;
}

bool mlir::strata::isMlaCombineKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMlaCombineAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMlaCombineKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  const KernelRole order[] = {KernelRole::Out, KernelRole::SplitParts};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  Type f32 = builder.getF32Type();
  MemRefType oh = identityMemRefInput(type, 0);
  MemRefType parts = identityMemRefInput(type, 1);
  if (type.getNumInputs() != 2 || type.getNumResults() != 0 ||
      !isMemRefInput(type, 0, 3, f32) || !isMemRefInput(type, 1, 3, f32) ||
      oh.isDynamicDim(1) || oh.isDynamicDim(2) ||
      parts.getShape() != ArrayRef<int64_t>{kMlaSplitSlots, oh.getDimSize(1),
                                            oh.getDimSize(2) + 2}) {
    why = "unexpected mla_combine kernel signature";
    return failure();
  }
  MlaCombine shape;
  shape.heads = oh.getDimSize(1);
  shape.rank = oh.getDimSize(2);
  if (failed(checkMlaCombine(shape, target, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildMlaCombineKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, target);
  // (min(tokens, kMlaSplitMaxTokens), heads, column blocks), one block in
  // larger steps (nothing to merge there). Column blocks: R / threads (a
  // column per thread) in steps of at most kMlaCombineNarrowMaxTokens
  // tokens, whose few (token, head) blocks would leave SMs idle; else one
  // (R / threads columns per thread: four times the blocks, each with two
  // DRAM round trips before its sums, took longer from 8 tokens on).
  result.grid[0] = {gridArgument(roles, KernelRole::Out), 0, 1};
  result.grid[0].cap = kMlaSplitMaxTokens;
  result.grid[1].blocks = shape.heads;
  result.grid[2].forms = {
      {kMlaCombineNarrowMaxTokens, 1, shape.rank / mlaCombineThreads(target)},
      {-1, 1, 1}};
  return result;
}

bool mlir::strata::isMoeSelectKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMoeSelectAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMoeSelectKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::MoeSelectAttr>(kMoeSelectAttrName);
  const KernelRole order[] = {KernelRole::X, KernelRole::CorrectionBias,
                              KernelRole::Chosen, KernelRole::RouteWeights};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  if (!info || type.getNumInputs() != 4 || type.getNumResults() != 0 ||
      !isMemRefInput(type, 0, 2, f32) || !isMemRefInput(type, 1, 1, f32) ||
      !isMemRefInput(type, 2, 2, i32) || !isMemRefInput(type, 3, 2, f32) ||
      identityMemRefInput(type, 0).getDimSize(1) != info.getExperts() ||
      identityMemRefInput(type, 1).getDimSize(0) != info.getExperts() ||
      identityMemRefInput(type, 2).getDimSize(1) != info.getTopK() ||
      identityMemRefInput(type, 3).getDimSize(1) != info.getTopK()) {
    why = "unexpected moe_select kernel signature";
    return failure();
  }
  if (info.getGroups() != 1) {
    why = "more than one expert group";
    return failure();
  }
  MoeSelect shape;
  shape.experts = info.getExperts();
  shape.topK = info.getTopK();
  shape.normalize = info.getNormalize();
  shape.renormEps = info.getRenormEps().getValueAsDouble();
  shape.scaling = info.getScaling().getValueAsDouble();
  if (shape.topK < 1 || shape.topK > shape.experts) {
    why = "top_k outside [1, experts]";
    return failure();
  }
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildMoeSelectKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, target);
  // One block per token: the extent of the logits' rows.
  result.grid[0] = {gridArgument(roles, KernelRole::X), 0, 1};
  return result;
}

bool mlir::strata::isMoeGroupKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMoeGroupAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMoeGroupKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::MoeGroupAttr>(kMoeGroupAttrName);
  const KernelRole order[] = {KernelRole::Chosen, KernelRole::SlotOrder,
                              KernelRole::ExpertStarts};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  Type i32 = builder.getI32Type();
  if (!info || type.getNumInputs() != 3 || type.getNumResults() != 0 ||
      !isMemRefInput(type, 0, 2, i32) || !isMemRefInput(type, 1, 2, i32) ||
      !isMemRefInput(type, 2, 1, i32) ||
      identityMemRefInput(type, 0).getDimSize(1) != info.getTopK() ||
      identityMemRefInput(type, 1).getDimSize(1) != info.getTopK() ||
      identityMemRefInput(type, 2).getDimSize(0) != info.getExperts() + 1) {
    why = "unexpected moe_group kernel signature";
    return failure();
  }
  MoeGroup shape;
  shape.experts = info.getExperts();
  shape.topK = info.getTopK();
  if (moeGroupWorkgroupBytes(shape, target) >
      target.getStaticSharedMemoryBytes()) {
    why = "the subgroups' counts of " + std::to_string(shape.experts) +
          " experts exceed the static workgroup memory";
    return failure();
  }
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildMoeGroupKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, target);
  // One block: the grid's default.
  return result;
}

bool mlir::strata::isKdaChunkKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKdaChunkAttrName);
}

/// The shape of KDA's chunk kernels from the state's or the betas' heads
/// `heads` and the prepared rows' width `width` (static), with `info`'s
/// parameters; heads 0 when the widths do not fit.
static KdaChunk kdaChunkShape(int64_t heads, int64_t width,
                              llm::KdaChunkAttr info) {
  KdaChunk shape;
  if (heads <= 0 || ShapedType::isDynamic(width) || width % heads)
    return shape;
  shape.heads = heads;
  shape.headDim = width / heads;
  shape.parts = kdaAttentionParts(shape.headDim);
  shape.gateLowerBound = info.getGateLowerBound().getValueAsDouble();
  shape.decodeMaxTokens = info.getDecodeMaxTokens();
  shape.tf32Products = info.getTf32Products();
  return shape;
}

/// Whether arguments `indices` of `type` are [?, width] memrefs of `elem`.
static bool hasRows(FunctionType type, ArrayRef<unsigned> indices,
                    int64_t width, Type elem) {
  return llvm::all_of(indices, [&](unsigned i) {
    return isMemRefInput(type, i, 2, elem) &&
           identityMemRefInput(type, i).getDimSize(1) == width;
  });
}

/// Whether arguments `indices` of `type` are [?, width] f32 memrefs.
static bool hasRowWidth(FunctionType type, ArrayRef<unsigned> indices,
                        int64_t width) {
  return hasRows(type, indices, width, Float32Type::get(type.getContext()));
}

/// Whether the prepared rows `indices` (q, k and, for the state kernel, v)
/// are [T, `width`] of one element type, bf16 or f32.
static bool hasPreparedRows(FunctionType type, ArrayRef<unsigned> indices,
                            int64_t width) {
  MemRefType first = identityMemRefInput(type, indices.front());
  return first &&
         (first.getElementType().isBF16() || first.getElementType().isF32()) &&
         hasRows(type, indices, width, first.getElementType());
}

/// What the two KDA chunk strategies share once the contract is read: the
/// prepared rows `preparedArgs` (bf16 or f32) and the f32 rows `rowArgs` of
/// the contract's `type` H d wide and the coefficient rows
/// `coefficientArgs` H C wide (else `why` names `kernelName`'s signature or
/// the chunk length), the f32 instruction, then `build`'s kernel.
static FailureOr<MatmulKernelFunction> buildKdaChunkStrategyKernel(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, const KernelArguments &roles, FunctionType type,
    const KdaChunk &shape, ArrayRef<unsigned> preparedArgs,
    ArrayRef<unsigned> rowArgs, ArrayRef<unsigned> coefficientArgs,
    StringRef kernelName, decltype(&buildKdaChunkKernel) build,
    std::string &why) {
  int64_t width = shape.heads * shape.headDim;
  if (!shape.heads || !hasPreparedRows(type, preparedArgs, width) ||
      !hasRowWidth(type, rowArgs, width)) {
    why = ("unexpected " + kernelName + " kernel signature").str();
    return failure();
  }
  if (!hasRowWidth(type, coefficientArgs, shape.heads * kdaChunkRows())) {
    why = "the chunk length is not the kernel's";
    return failure();
  }
  FailureOr<const MatrixInstruction *> mi =
      chooseKdaChunkInstruction(target, shape, why);
  if (failed(mi) || failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func =
      build(builder, kernel.getLoc(), module, kernel.getSymName(),
            kernel.getFunctionType().getInputs(), roles.all(), shape, **mi,
            target.getSubgroupSize(), target.getSharedMemoryBytes());
  result.tiling.mma = **mi;
  return result;
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKdaChunkKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto contract = rolesInBuilderOrder(kernel, kKdaAttentionRoles, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  auto info = kernel->getAttrOfType<llm::KdaChunkAttr>(kKdaChunkAttrName);
  if (!info || type.getNumInputs() != std::size(kKdaAttentionRoles) ||
      type.getNumResults() != 0) {
    why = "not a kda_attention kernel function";
    return failure();
  }
  // q, k, v [T, H d] (bf16 or f32), g and the read-out [T, H d], A_q and T
  // [T, H C] f32, the state [slots, H, d, d] f32, positions, starts and the
  // two slot vectors i32.
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  bool types = isMemRefInput(type, 6, 4, f32);
  for (unsigned i : {7u, 8u, 9u, 10u})
    types = types && isMemRefInput(type, i, 1, i32);
  MemRefType state = identityMemRefInput(type, 6);
  if (!types || state.isDynamicDim(1) || state.isDynamicDim(2) ||
      state.getDimSize(2) != state.getDimSize(3)) {
    why = "unexpected kda_attention kernel signature";
    return failure();
  }
  KdaChunk shape = kdaChunkShape(
      state.getDimSize(1), state.getDimSize(1) * state.getDimSize(2), info);
  auto built = buildKdaChunkStrategyKernel(
      builder, module, kernel, target, roles, type, shape, {0u, 1u, 2u},
      {3u, 11u}, {4u, 5u}, "kda_attention", buildKdaChunkKernel, why);
  if (failed(built))
    return failure();
  MatmulKernelFunction result = std::move(*built);
  // (seq_starts entries, heads, parts); the block of the last entry has no
  // request. Steps of at most decodeMaxTokens tokens are kda_decode's: one
  // block (the floor on argument 0's extent, the tokens).
  result.grid[0] = {gridArgument(roles, KernelRole::SeqStarts), 0, 1};
  result.grid[0].floor = shape.decodeMaxTokens + 1;
  result.grid[0].floorArgument = gridArgument(roles, KernelRole::X);
  result.grid[1].blocks = shape.heads;
  result.grid[2].blocks = shape.parts;
  return result;
}

bool mlir::strata::isKdaCoefficientsKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKdaCoefficientsAttrName);
}

FailureOr<MatmulKernelFunction>
mlir::strata::buildKdaCoefficientsKernelFunction(OpBuilder &builder,
                                                 gpu::GPUModuleOp module,
                                                 func::FuncOp kernel,
                                                 const TargetInfo &target,
                                                 std::string &why) {
  auto contract = rolesInBuilderOrder(kernel, kKdaCoefficientsRoles, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  auto info =
      kernel->getAttrOfType<llm::KdaChunkAttr>(kKdaCoefficientsAttrName);
  if (!info || type.getNumInputs() != std::size(kKdaCoefficientsRoles) ||
      type.getNumResults() != 0) {
    why = "not a kda_coefficients kernel function";
    return failure();
  }
  // q, k [T, H d] (bf16 or f32), g [T, H d], beta [T, H], A_q and T [T, H
  // C] f32; starts i32.
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  MemRefType beta = identityMemRefInput(type, 3);
  MemRefType q = identityMemRefInput(type, 0);
  if (!isMemRefInput(type, 3, 2, f32) || !isMemRefInput(type, 4, 1, i32) ||
      !q || q.getRank() != 2) {
    why = "unexpected kda_coefficients kernel signature";
    return failure();
  }
  KdaChunk shape = kdaChunkShape(beta.getDimSize(1), q.getDimSize(1), info);
  auto built = buildKdaChunkStrategyKernel(
      builder, module, kernel, target, roles, type, shape, {0u, 1u}, {2u},
      {5u, 6u}, "kda_coefficients", buildKdaCoefficientsKernel, why);
  if (failed(built))
    return failure();
  MatmulKernelFunction result = std::move(*built);
  // A block per 32-token window of the step and head; one block in steps of
  // at most decodeMaxTokens tokens (kda_decode's).
  result.grid[0] = {gridArgument(roles, KernelRole::X), 0, 1};
  result.grid[0].divisor = kdaChunkRows();
  result.grid[0].floor = shape.decodeMaxTokens + 1;
  result.grid[0].floorArgument = gridArgument(roles, KernelRole::X);
  result.grid[1].blocks = shape.heads;
  return result;
}

/// Whether argument `i` of `type` is an identity memref of `rank` with bf16
/// or f32 elements.
static bool isFloatMemRefInput(FunctionType type, unsigned i, int64_t rank) {
  MemRefType m = identityMemRefInput(type, i);
  return m && m.getRank() == rank &&
         (m.getElementType().isBF16() || m.getElementType().isF32());
}

/// The grid of a kernel with a subgroup per (token, head)
/// (KdaTokenKernels.cpp): x the extent of the `rows` argument's first
/// dimension, one block in steps of at most `decodeMaxTokens` tokens
/// (kda_decode's); y the head groups.
static void setKdaTokenRowsGrid(MatmulKernelFunction &result,
                                const KernelArguments &roles, KernelRole rows,
                                int64_t heads, int64_t decodeMaxTokens) {
  result.grid[0] = {gridArgument(roles, rows), 0, 1};
  result.grid[0].floor = decodeMaxTokens + 1;
  result.grid[0].floorArgument = gridArgument(roles, rows);
  result.grid[1].blocks =
      (heads + kKdaTokenHeadsPerBlock - 1) / kKdaTokenHeadsPerBlock;
}

bool mlir::strata::isKdaPrepareKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKdaPrepareAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKdaPrepareKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::KdaPrepareAttr>(kKdaPrepareAttrName);
  auto contract = rolesInBuilderOrder(kernel, kKdaPrepareRoles, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != std::size(kKdaPrepareRoles) ||
      type.getNumResults() != 0) {
    why = "not a kda_prepare kernel function";
    return failure();
  }
  // q, k, v, f [T, P], b [T, H], the conv weights [P, 1, K], the conv state
  // [slots, K - 1, 3 P] (bf16 or f32), A_log [H] and dt_bias [P] f32, the
  // index vectors i32, the prepared q, k, v rows [T, P] (bf16 or f32), g
  // [T, P] and betas [T, H] f32.
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  bool types = isMemRefInput(type, 8, 1, f32) && isMemRefInput(type, 9, 1, f32);
  for (unsigned i : {0u, 1u, 2u, 3u, 4u})
    types = types && isFloatMemRefInput(type, i, 2);
  for (unsigned i : {5u, 6u, 7u})
    types = types && isFloatMemRefInput(type, i, 3);
  types = types && isFloatMemRefInput(type, 10, 3);
  for (unsigned i : {11u, 12u, 13u})
    types = types && isMemRefInput(type, i, 1, i32);
  for (unsigned i : {14u, 15u, 16u})
    types = types && isFloatMemRefInput(type, i, 2);
  for (unsigned i : {17u, 18u})
    types = types && isMemRefInput(type, i, 2, f32);
  if (!types) {
    why = "unexpected kda_prepare kernel signature";
    return failure();
  }
  MemRefType q = identityMemRefInput(type, 0);
  MemRefType beta = identityMemRefInput(type, 4);
  MemRefType weights = identityMemRefInput(type, 5);
  MemRefType aLog = identityMemRefInput(type, 8);
  MemRefType conv = identityMemRefInput(type, 10);
  KdaPrepare shape;
  shape.heads = aLog.getDimSize(0);
  int64_t p = q.getDimSize(1);
  shape.headDim = shape.heads > 0 ? p / shape.heads : 0;
  shape.convTaps = weights.getDimSize(2);
  shape.gateLowerBound = info.getGateLowerBound().getValueAsDouble();
  shape.l2Eps = info.getL2Eps().getValueAsDouble();
  shape.qScale = info.getQScale().getValueAsDouble();
  shape.decodeMaxTokens = info.getDecodeMaxTokens();
  // Static widths: P channels of q, k, v, f, dt_bias, the weights and the
  // prepared rows, H betas, 3 P conv columns of K - 1 rows.
  bool widths =
      !ShapedType::isDynamic(p) && shape.heads > 0 &&
      p == shape.heads * shape.headDim && beta.getDimSize(1) == shape.heads &&
      !ShapedType::isDynamic(shape.convTaps) &&
      conv.getDimSize(1) == shape.convTaps - 1 && conv.getDimSize(2) == 3 * p &&
      identityMemRefInput(type, 9).getDimSize(0) == p &&
      identityMemRefInput(type, 18).getDimSize(1) == shape.heads;
  for (unsigned i : {1u, 2u, 3u, 14u, 15u, 16u, 17u})
    widths = widths && identityMemRefInput(type, i).getDimSize(1) == p;
  for (unsigned i : {5u, 6u, 7u})
    widths = widths && identityMemRefInput(type, i).getDimSize(0) == p &&
             identityMemRefInput(type, i).getDimSize(2) == shape.convTaps;
  if (!widths) {
    why = "unexpected kda_prepare kernel signature";
    return failure();
  }
  if (failed(checkKdaTokenRows(target, shape.heads, shape.headDim,
                               shape.convTaps, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildKdaPrepareKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape,
      target.getSubgroupSize());
  setKdaTokenRowsGrid(result, roles, KernelRole::X, shape.heads,
                      shape.decodeMaxTokens);
  return result;
}

bool mlir::strata::isKdaOutputKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKdaOutputAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKdaOutputKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::KdaOutputAttr>(kKdaOutputAttrName);
  auto contract = rolesInBuilderOrder(kernel, kKdaOutputRoles, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != std::size(kKdaOutputRoles) ||
      type.getNumResults() != 0) {
    why = "not a kda_output kernel function";
    return failure();
  }
  // The read-out [T, P] f32, gate, q, k, v and o [T, P], the norm weight
  // [d], the conv state [slots, K - 1, 3 P] (bf16 or f32), the index
  // vectors i32.
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  bool types = isMemRefInput(type, 0, 2, f32) &&
               isFloatMemRefInput(type, 2, 1) && isFloatMemRefInput(type, 6, 3);
  for (unsigned i : {1u, 3u, 4u, 5u, 11u})
    types = types && isFloatMemRefInput(type, i, 2);
  for (unsigned i : {7u, 8u, 9u, 10u})
    types = types && isMemRefInput(type, i, 1, i32);
  if (!types) {
    why = "unexpected kda_output kernel signature";
    return failure();
  }
  MemRefType conv = identityMemRefInput(type, 6);
  KdaOutput shape;
  int64_t p = identityMemRefInput(type, 0).getDimSize(1);
  shape.headDim = identityMemRefInput(type, 2).getDimSize(0);
  shape.heads = shape.headDim > 0 ? p / shape.headDim : 0;
  shape.convTaps = conv.getDimSize(1) + 1;
  shape.normEps = info.getNormEps().getValueAsDouble();
  shape.decodeMaxTokens = info.getDecodeMaxTokens();
  bool widths = !ShapedType::isDynamic(p) &&
                !ShapedType::isDynamic(shape.headDim) && shape.heads > 0 &&
                p == shape.heads * shape.headDim && !conv.isDynamicDim(1) &&
                conv.getDimSize(2) == 3 * p;
  for (unsigned i : {1u, 3u, 4u, 5u, 11u})
    widths = widths && identityMemRefInput(type, i).getDimSize(1) == p;
  if (!widths) {
    why = "unexpected kda_output kernel signature";
    return failure();
  }
  if (failed(checkKdaTokenRows(target, shape.heads, shape.headDim,
                               shape.convTaps, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildKdaOutputKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape,
      target.getSubgroupSize());
  setKdaTokenRowsGrid(result, roles, KernelRole::ReadOut, shape.heads,
                      shape.decodeMaxTokens);
  return result;
}

bool mlir::strata::isGroupQuantizeKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kGroupQuantizeAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildGroupQuantizeKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info =
      kernel->getAttrOfType<llm::GroupQuantizeAttr>(kGroupQuantizeAttrName);
  const KernelRole order[] = {KernelRole::X, KernelRole::Out,
                              KernelRole::XScales};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != 3 || type.getNumResults() != 0) {
    why = "not a group quantisation kernel function";
    return failure();
  }
  MemRefType x = identityMemRefInput(type, 0);
  MemRefType codes = identityMemRefInput(type, 1);
  MemRefType scales = identityMemRefInput(type, 2);
  int64_t rank = x ? x.getRank() : 0;
  bool types = x && codes && scales && (rank == 2 || rank == 3) &&
               (x.getElementType().isBF16() || x.getElementType().isF32()) &&
               isa<Float8E4M3FNType>(codes.getElementType()) &&
               scales.getElementType().isF32() &&
               codes.getShape() == x.getShape() && scales.getRank() == rank;
  for (int64_t d = 1; types && d < rank; ++d)
    types = !x.isDynamicDim(d) && !scales.isDynamicDim(d) &&
            (d + 1 == rank || scales.getDimSize(d) == x.getDimSize(d));
  if (!types) {
    why = "unexpected group quantisation kernel signature";
    return failure();
  }
  GroupQuantize shape;
  shape.block = info.getBlock();
  shape.width = x.getDimSize(rank - 1);
  shape.groups = scales.getDimSize(rank - 1);
  shape.inner = rank == 3 ? x.getDimSize(1) : 0;
  if (failed(checkGroupQuantize(target, shape, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildGroupQuantizeKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape,
      target.getSubgroupSize());
  // (rows of x's first dimension, the blocks of a row's groups).
  result.grid[0] = {gridArgument(roles, KernelRole::X), 0, 1};
  result.grid[1].blocks = groupQuantizeBlocksPerRow(shape);
  return result;
}

bool mlir::strata::isKdaDecodeKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKdaDecodeAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKdaDecodeKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::KdaDecodeAttr>(kKdaDecodeAttrName);
  // kda_decode's inputs, token_slots where the kernel has them, then out.
  SmallVector<KernelRole> order(std::begin(kKdaDecodeInputRoles),
                                std::end(kKdaDecodeInputRoles) - 1);
  FailureOr<KernelArguments> named = KernelArguments::of(kernel, why);
  if (failed(named))
    return failure();
  bool tokenSlots = named->has(KernelRole::TokenSlots);
  if (tokenSlots)
    order.push_back(KernelRole::TokenSlots);
  order.push_back(KernelRole::Out);
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  unsigned inputs = order.size();
  if (!info || type.getNumInputs() != inputs || type.getNumResults() != 0) {
    why = "not a kda_decode kernel function";
    return failure();
  }
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  auto floatInput = [&](unsigned i, int64_t rank) {
    MemRefType m = identityMemRefInput(type, i);
    return m && m.getRank() == rank &&
           (m.getElementType().isF32() || m.getElementType().isBF16());
  };
  MemRefType stateType = identityMemRefInput(type, 12);
  MemRefType convType = identityMemRefInput(type, 13);
  MemRefType weightType = identityMemRefInput(type, 6);
  bool types = isMemRefInput(type, 12, 4, f32) && floatInput(13, 3) &&
               floatInput(inputs - 1, 2) && weightType;
  for (unsigned i : {0u, 1u, 2u, 3u, 4u, 5u})
    types = types && floatInput(i, 2);
  for (unsigned i : {6u, 7u, 8u})
    types =
        types && floatInput(i, 3) && identityMemRefInput(type, i) == weightType;
  for (unsigned i : {9u, 10u, 11u})
    types = types && floatInput(i, 1);
  for (unsigned i = 14; i < inputs - 1; ++i)
    types = types && isMemRefInput(type, i, 1, i32);
  if (!types || stateType.isDynamicDim(1) || stateType.isDynamicDim(2) ||
      stateType.getDimSize(2) != stateType.getDimSize(3) ||
      weightType.isDynamicDim(2)) {
    why = "unexpected kda_decode kernel signature (bf16 or f32 operands, an "
          "f32 state)";
    return failure();
  }
  KdaDecode shape;
  shape.heads = stateType.getDimSize(1);
  shape.headDim = stateType.getDimSize(2);
  shape.convTaps = weightType.getDimSize(2);
  shape.gateLowerBound = info.getGateLowerBound().getValueAsDouble();
  shape.l2Eps = info.getL2Eps().getValueAsDouble();
  shape.qScale = info.getQScale().getValueAsDouble();
  shape.normEps = info.getNormEps().getValueAsDouble();
  shape.decodeMaxTokens = info.getDecodeMaxTokens();
  shape.tokenSlots = tokenSlots;
  // Static widths: P channels per token, H betas, 3P conv columns.
  int64_t p = shape.heads * shape.headDim;
  bool widths = identityMemRefInput(type, 4).getDimSize(1) == shape.heads &&
                weightType.getDimSize(0) == p &&
                identityMemRefInput(type, 9).getDimSize(0) == shape.heads &&
                identityMemRefInput(type, 10).getDimSize(0) == p &&
                identityMemRefInput(type, 11).getDimSize(0) == shape.headDim &&
                convType.getDimSize(1) == shape.convTaps - 1 &&
                convType.getDimSize(2) == 3 * p;
  for (unsigned i : {0u, 1u, 2u, 3u, 5u, inputs - 1})
    widths = widths && identityMemRefInput(type, i).getDimSize(1) == p;
  if (!widths) {
    why = "unexpected kda_decode kernel signature";
    return failure();
  }
  if (failed(checkKdaDecode(target, shape, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildKdaDecodeKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape,
      target.getSubgroupSize());
  // (seq_starts entries, heads): the block of the last entry has no request.
  result.grid[0] = {gridArgument(roles, KernelRole::SeqStarts), 0, 1};
  result.grid[1].blocks = shape.heads;
  return result;
}

bool mlir::strata::isKpoolScoresKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKpoolScoresAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKpoolScoresKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::KpoolScoresAttr>(kKpoolScoresAttrName);
  const KernelRole order[] = {KernelRole::X,         KernelRole::HeadWeights,
                              KernelRole::IndexPool, KernelRole::Positions,
                              KernelRole::SeqStarts, KernelRole::BlockTable,
                              KernelRole::Scores};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != 7 || type.getNumResults() != 0) {
    why = "not a kpool_scores kernel function";
    return failure();
  }
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  MemRefType q = identityMemRefInput(type, 0);
  MemRefType pool = identityMemRefInput(type, 2);
  MemRefType scores = identityMemRefInput(type, 6);
  // A bf16 pool [pages, rows, dim], or fp8 pages [pages, page bytes] i8.
  bool fp8 = pool && pool.getRank() == 2 && pool.getElementType().isInteger(8);
  bool types = q && pool && scores && q.getRank() == 3 &&
               (pool.getRank() == 3 || fp8) && isMemRefInput(type, 1, 2, f32) &&
               isMemRefInput(type, 6, 3, f32) &&
               isMemRefInput(type, 3, 1, i32) &&
               isMemRefInput(type, 4, 1, i32) && isMemRefInput(type, 5, 2, i32);
  if (!types || q.isDynamicDim(1) || q.isDynamicDim(2) ||
      pool.isDynamicDim(1) || (!fp8 && pool.isDynamicDim(2)) ||
      scores.isDynamicDim(2) ||
      (!fp8 && scores.getDimSize(2) != pool.getDimSize(1))) {
    why = "unexpected kpool_scores kernel signature";
    return failure();
  }
  if (!q.getElementType().isBF16() ||
      (!fp8 && (!pool.getElementType().isBF16() ||
                pool.getDimSize(2) != q.getDimSize(2)))) {
    why = "the matrix-unit kpool_scores reads bf16 queries and a bf16 or "
          "fp8 pool";
    return failure();
  }
  KpoolScores shape;
  shape.heads = q.getDimSize(1);
  shape.headDim = q.getDimSize(2);
  shape.kpool = info.getKpool();
  shape.rowsPerPage = scores.getDimSize(2);
  shape.scale = info.getScale().getValueAsDouble();
  if (fp8) {
    // The index pool's fp8 pages (Fp8PageLayout::valuesThenScales).
    Fp8PageLayout layout =
        Fp8PageLayout::valuesThenScales(shape.rowsPerPage, shape.headDim);
    if (pool.getDimSize(1) != layout.pageBytes) {
      why = "the fp8 index pages are not the values-then-scales layout";
      return failure();
    }
    shape.fp8PageBytes = layout.pageBytes;
  }
  FailureOr<const MatrixInstruction *> mi =
      chooseKpoolScoresInstruction(target, shape, why);
  if (failed(mi))
    return failure();
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildKpoolScoresKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, **mi,
      target.getSubgroupSize());
  result.tiling.mma = **mi;
  // (tokens + kKpoolScoreItems, 1, 1): every work item a block, the extra
  // ones idle in larger steps.
  result.grid[0] = {gridArgument(roles, KernelRole::X), 0, 1};
  result.grid[0].addend = kKpoolScoreItems;
  return result;
}

bool mlir::strata::isKpoolSelectKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kKpoolSelectAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKpoolSelectKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::KpoolSelectAttr>(kKpoolSelectAttrName);
  const KernelRole order[] = {KernelRole::Positions, KernelRole::Scores,
                              KernelRole::Selection,
                              KernelRole::SelectionCounts};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  Type f32 = builder.getF32Type(), i32 = builder.getI32Type();
  if (!info || type.getNumInputs() != 4 || type.getNumResults() != 0 ||
      !isMemRefInput(type, 0, 1, i32) || !isMemRefInput(type, 1, 3, f32) ||
      !isMemRefInput(type, 2, 2, i32) || !isMemRefInput(type, 3, 1, i32) ||
      identityMemRefInput(type, 1).isDynamicDim(2)) {
    why = "unexpected kpool_indexer kernel signature";
    return failure();
  }
  KpoolSelect shape;
  shape.kpool = info.getKpool();
  shape.topk = info.getTopk();
  shape.rowsPerPage = identityMemRefInput(type, 1).getDimSize(2);
  if (shape.kpool < 1 || shape.topk < shape.kpool) {
    why = "topk below one pool";
    return failure();
  }
  // A subgroup scans the subgroups' totals.
  int64_t lanes = target.getSubgroupSize();
  if (kKpoolSelectThreads % lanes || kKpoolSelectThreads / lanes > lanes) {
    why = "more subgroups in a block than lanes in a subgroup";
    return failure();
  }
  if (failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func = buildKpoolSelectKernel(
      builder, kernel.getLoc(), module, kernel.getSymName(),
      kernel.getFunctionType().getInputs(), roles.all(), shape, target);
  // One block per token: the extent of the positions.
  result.grid[0] = {gridArgument(roles, KernelRole::Positions), 0, 1};
  return result;
}

bool mlir::strata::isMhcMixKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMhcMixAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMhcMixKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::MhcMixAttr>(kMhcMixAttrName);
  const KernelRole order[] = {KernelRole::Streams, KernelRole::MixWeight,
                              KernelRole::MixParts};
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  FunctionType type = contract->second;
  if (!info || type.getNumInputs() != 3 || type.getNumResults() != 0) {
    why = "not an mhc_mix kernel function";
    return failure();
  }
  Type f32 = builder.getF32Type();
  MemRefType streams = identityMemRefInput(type, 0);
  MemRefType fn = identityMemRefInput(type, 1);
  MemRefType parts = identityMemRefInput(type, 2);
  if (!streams || !fn || !parts || streams.getRank() != 3 ||
      !isMemRefInput(type, 1, 2, f32) || !isMemRefInput(type, 2, 3, f32) ||
      streams.isDynamicDim(1) || streams.isDynamicDim(2) ||
      fn.isDynamicDim(0) || parts.isDynamicDim(1) || parts.isDynamicDim(2) ||
      fn.getDimSize(1) != streams.getDimSize(1) * streams.getDimSize(2) ||
      parts.getDimSize(1) != info.getSlices() ||
      parts.getDimSize(2) != fn.getDimSize(0) + 1 ||
      !(streams.getElementType().isBF16() ||
        streams.getElementType().isF32())) {
    why = "unexpected mhc_mix kernel signature";
    return failure();
  }
  MhcMix shape;
  shape.hcMult = streams.getDimSize(1);
  shape.width = streams.getDimSize(2);
  shape.mix = fn.getDimSize(0);
  shape.slices = info.getSlices();
  if (failed(checkMhcMix(shape, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func =
      buildMhcMixKernel(builder, kernel.getLoc(), module, kernel.getSymName(),
                        kernel.getFunctionType().getInputs(), roles.all(),
                        shape, target.getSubgroupSize());
  // (ceil(tokens / kMhcMixTokens), slices, 1).
  result.grid[0] = {gridArgument(roles, KernelRole::Streams), 0, 1};
  result.grid[0].divisor = kMhcMixTokens;
  result.grid[1].blocks = shape.slices;
  return result;
}

bool mlir::strata::isMhcPreKernelFunction(func::FuncOp kernel) {
  return kernel->hasAttr(kMhcPreAttrName);
}

FailureOr<MatmulKernelFunction> mlir::strata::buildMhcPreKernelFunction(
    OpBuilder &builder, gpu::GPUModuleOp module, func::FuncOp kernel,
    const TargetInfo &target, std::string &why) {
  auto info = kernel->getAttrOfType<llm::MhcPreAttr>(kMhcPreAttrName);
  FunctionType type = kernel.getFunctionType();
  bool xNorm = info && info.getXNormEps();
  unsigned inputs = xNorm ? 8 : 7;
  SmallVector<KernelRole> order = {KernelRole::Streams, KernelRole::MixParts,
                                   KernelRole::MixBase, KernelRole::MixScale};
  if (xNorm)
    order.push_back(KernelRole::XNormWeight);
  order.append(
      {KernelRole::Out, KernelRole::StreamPost, KernelRole::StreamComb});
  auto contract = rolesInBuilderOrder(kernel, order, why);
  if (failed(contract))
    return failure();
  KernelArguments roles = contract->first;
  type = contract->second;
  if (!info || type.getNumInputs() != inputs || type.getNumResults() != 0) {
    why = "not an mhc_pre kernel function";
    return failure();
  }
  Type f32 = builder.getF32Type(), bf16 = builder.getBF16Type();
  MemRefType streams = identityMemRefInput(type, 0);
  MemRefType parts = identityMemRefInput(type, 1);
  unsigned xArg = xNorm ? 5 : 4;
  if (!streams || !parts || streams.getRank() != 3 ||
      streams.isDynamicDim(1) || streams.isDynamicDim(2) ||
      !isMemRefInput(type, 1, 3, f32) || parts.isDynamicDim(1) ||
      !isMemRefInput(type, 2, 1, f32) || !isMemRefInput(type, 3, 1, f32) ||
      !isMemRefInput(type, xArg + 1, 2, f32) ||
      !isMemRefInput(type, xArg + 2, 3, f32)) {
    why = "unexpected mhc_pre kernel signature";
    return failure();
  }
  if (streams.getElementType() != bf16 ||
      !isMemRefInput(type, xArg, 2, bf16) ||
      (xNorm && !isMemRefInput(type, 4, 1, bf16))) {
    why = "the GPU mhc_pre reads bf16 streams";
    return failure();
  }
  MhcPre shape;
  shape.hcMult = info.getHcMult();
  shape.width = streams.getDimSize(2);
  shape.slices = parts.getDimSize(1);
  shape.sinkhornIters = info.getSinkhornIters();
  shape.hcEps = info.getHcEps().getValueAsDouble();
  shape.normEps = info.getNormEps().getValueAsDouble();
  shape.postMult = info.getPostMult().getValueAsDouble();
  shape.xNorm = xNorm;
  shape.xNormEps = xNorm ? info.getXNormEps().getValueAsDouble() : 0;
  if (streams.getDimSize(1) != shape.hcMult ||
      parts.getDimSize(2) != (2 + shape.hcMult) * shape.hcMult + 1) {
    why = "unexpected mhc_pre kernel signature";
    return failure();
  }
  if (failed(checkMhcPre(target, shape, why)) ||
      failed(prepareMatmulModule(builder, module, kernel, why)))
    return failure();
  MatmulKernelFunction result;
  result.func =
      buildMhcPreKernel(builder, kernel.getLoc(), module, kernel.getSymName(),
                        kernel.getFunctionType().getInputs(), roles.all(),
                        shape, target.getSubgroupSize());
  // One block per token.
  result.grid[0] = {gridArgument(roles, KernelRole::Streams), 0, 1};
  return result;
}

FailureOr<MatmulKernelFunction> mlir::strata::buildKernelByStrategy(
    llm::GpuStrategy strategy, OpBuilder &builder, gpu::GPUModuleOp module,
    func::FuncOp kernel, const TargetInfo &target, std::string &why) {
  using llm::GpuStrategy;
  switch (strategy) {
  case GpuStrategy::TiledMatmul:
    return buildLinearMatmulKernel(builder, module, kernel, target, why);
  case GpuStrategy::GroupedExperts:
    return buildGroupedExpertMatmulKernel(builder, module, kernel, target,
                                          why);
  case GpuStrategy::DenseMatmul:
    return buildDenseMatmulKernelFunction(builder, module, kernel, target,
                                          why);
  case GpuStrategy::MlaAttend:
    return buildMlaAttendKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::MlaCombine:
    return buildMlaCombineKernelFunction(builder, module, kernel, target,
                                         why);
  case GpuStrategy::MoeSelect:
    return buildMoeSelectKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::MoeGroup:
    return buildMoeGroupKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::KdaChunk:
    return buildKdaChunkKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::KdaCoefficients:
    return buildKdaCoefficientsKernelFunction(builder, module, kernel, target,
                                              why);
  case GpuStrategy::KdaDecode:
    return buildKdaDecodeKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::KdaPrepare:
    return buildKdaPrepareKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::KdaOutput:
    return buildKdaOutputKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::GroupQuantize:
    return buildGroupQuantizeKernelFunction(builder, module, kernel, target,
                                            why);
  case GpuStrategy::KpoolScores:
    return buildKpoolScoresKernelFunction(builder, module, kernel, target,
                                          why);
  case GpuStrategy::KpoolSelect:
    return buildKpoolSelectKernelFunction(builder, module, kernel, target,
                                          why);
  case GpuStrategy::MhcMix:
    return buildMhcMixKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::MhcPre:
    return buildMhcPreKernelFunction(builder, module, kernel, target, why);
  case GpuStrategy::Generic:
  case GpuStrategy::EmptyTwin:
    break;
  }
  why = "strategy '" + llm::stringifyGpuStrategy(strategy).str() +
        "' has no matrix-unit builder";
  return failure();
}
