//===- MatmulTiling.cpp - choosing the GPU matmul tiling ------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Picks the matrix instruction and tile sizes of a matmul from TargetInfo
// alone (no chip names): see MatmulTiling.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::strata;

static bool isFp8(MatrixElement e) {
  return e == MatrixElement::F8E4M3FN || e == MatrixElement::F8E4M3FNUZ;
}

/// True when the per-row activation scales of QuantizeActivations can be
/// fetched with one shuffle: A holds one piece per lane, the row is
/// `lane % outer.mod` and the lanes of one row differ in the inner groups.
static bool supportsRowShuffles(const MatrixInstruction &mi) {
  const FragmentLayout &a = mi.a;
  return a.pieces.size() == 1 && a.outer.div == 1 && a.outer.mul == 1 &&
         a.inner.div == a.outer.mod;
}

KRunGroups mlir::strata::getKRunGroups(const FragmentLayout &l) {
  KRunGroups g;
  SmallVector<int64_t> sizes;
  for (const auto &piece : l.pieces) {
    auto it = llvm::find(g.outer, piece[0]);
    int64_t group = it - g.outer.begin();
    if (it == g.outer.end()) {
      g.outer.push_back(piece[0]);
      sizes.push_back(0);
    }
    g.group.push_back(group);
    g.rank.push_back(sizes[group]++);
  }
  g.perStep = sizes.empty() ? 0 : sizes[0] * l.count;
  return g;
}

SmallVector<int64_t> mlir::strata::kRunStepMask(const FragmentLayout &l,
                                                int64_t run, int64_t step) {
  KRunGroups g = getKRunGroups(l);
  SmallVector<int64_t> mask;
  for (size_t pi = 0; pi < l.pieces.size(); ++pi)
    for (int64_t e = 0; e < l.count; ++e)
      mask.push_back(g.group[pi] * run + step * g.perStep +
                     g.rank[pi] * l.count + e);
  return mask;
}

/// For k in [0, mi.k): (inner lane group, place in the lane's row) of
/// layout `l`'s first row group; empty when some k is held twice or never.
static SmallVector<std::pair<int64_t, int64_t>>
kPlaces(const FragmentLayout &l, int64_t k) {
  KRunGroups g = getKRunGroups(l);
  SmallVector<std::pair<int64_t, int64_t>> at(k, {-1, -1});
  for (int64_t q = 0; q < l.inner.mod; ++q)
    for (auto [pi, piece] : llvm::enumerate(l.pieces)) {
      if (g.group[pi] != 0)
        continue;
      for (int64_t e = 0; e < l.count; ++e) {
        int64_t pos = q * l.inner.mul + piece[1] + e;
        if (pos < 0 || pos >= k || at[pos].first != -1)
          return {};
        at[pos] = {q, g.rank[pi] * l.count + e};
      }
    }
  if (llvm::any_of(at, [](auto p) { return p.first == -1; }))
    return {};
  return at;
}

bool mlir::strata::supportsKRuns(const MatrixInstruction &mi) {
  for (const FragmentLayout *l : {&mi.a, &mi.b}) {
    KRunGroups g = getKRunGroups(*l);
    if (g.outer.empty() || g.outer.size() > 2 ||
        l->inner.mod * g.perStep != mi.k)
      return false;
    // Each row group repeats the first one's K positions, rank by rank.
    for (size_t i = 0; i < l->pieces.size(); ++i)
      for (size_t j = 0; j < l->pieces.size(); ++j)
        if (g.group[j] == 0 && g.rank[j] == g.rank[i] &&
            l->pieces[j][1] != l->pieces[i][1])
          return false;
  }
  SmallVector<std::pair<int64_t, int64_t>> a = kPlaces(mi.a, mi.k);
  return !a.empty() && a == kPlaces(mi.b, mi.k);
}

/// The usable instruction for operands `wantFp8` with the smallest m, then
/// the largest k; null when there is none.
const MatrixInstruction *
mlir::strata::pickMatrixInstruction(const TargetInfo &target, bool wantFp8) {
  const MatrixInstruction *best = nullptr;
  for (const MatrixInstruction &mi : target.getMatrixInstructions()) {
    if (mi.subgroups != 1 || mi.a.pieces.empty() || mi.b.pieces.empty() ||
        mi.c.pieces.empty())
      continue;
    if (wantFp8 ? !(isFp8(mi.operands) && supportsRowShuffles(mi))
                : mi.operands != MatrixElement::BF16)
      continue;
    if (!best || mi.m < best->m || (mi.m == best->m && mi.k > best->k))
      best = &mi;
  }
  return best;
}

FailureOr<MatmulTiling>
mlir::strata::chooseMatmulTiling(const TargetInfo &target,
                                 const MatmulProblem &problem,
                                 std::string &why) {
  MatmulTiling t;
  const MatrixInstruction *mi = nullptr;
  if (problem.fp8Input && !problem.fp8Weight) {
    why = "fp8 activations need fp8 block-scaled weights";
    return failure();
  }
  if (problem.fp8Input) {
    // The codes of x and W on the target's fp8 instruction (AMD's MFMA),
    // the decode forms on the bf16 one (chooseDecodeSplitK); NVIDIA's
    // register forms decode both onto the bf16 instruction and the
    // warpgroup ring takes the fp8 wgmma (chooseStagedTiling).
    t.fp8Mode = Fp8Mode::ScaledActivations;
    mi = pickMatrixInstruction(target, /*wantFp8=*/true);
    const MatrixInstruction *bf16 =
        pickMatrixInstruction(target, /*wantFp8=*/false);
    if (!mi)
      mi = bf16;
    else if (bf16)
      t.decodeMma = *bf16;
  } else if (problem.fp8Weight) {
    mi = pickMatrixInstruction(target, /*wantFp8=*/true);
    t.fp8Mode = Fp8Mode::QuantizeActivations;
    const MatrixInstruction *bf16 =
        pickMatrixInstruction(target, /*wantFp8=*/false);
    if (!mi) {
      mi = bf16;
      t.fp8Mode = Fp8Mode::DecodeWeights;
    } else if (bf16) {
      t.decodeMma = *bf16;
    }
  } else {
    mi = pickMatrixInstruction(target, /*wantFp8=*/false);
  }
  if (!mi) {
    why = llvm::formatv("target {0} has no matrix instruction for this matmul",
                        target.getChip())
              .str();
    return failure();
  }
  t.mma = *mi;
  t.kRuns = supportsKRuns(*mi);
  t.subgroupSize = target.getSubgroupSize();
  for (const MatrixInstruction &w : target.getMatrixInstructions())
    if (w.family == MatrixFamily::Wgmma && w.operands == MatrixElement::BF16)
      t.targetHasWarpgroupMma = true;
  // 64 rows per workgroup: 2 subgroups along M.
  t.subgroupsM = 2;
  t.fragsM = std::max<int64_t>(1, 64 / (2 * mi->m));
  // Up to 64 columns, narrowed until the tile divides N.
  for (int64_t sgN = 2; sgN >= 1 && !t.subgroupsN; sgN /= 2)
    for (int64_t fN = std::max<int64_t>(1, 64 / (sgN * mi->n)); fN >= 1;
         fN /= 2)
      if (problem.n % (sgN * fN * mi->n) == 0) {
        t.subgroupsN = sgN;
        t.fragsN = fN;
        break;
      }
  if (!t.subgroupsN) {
    why = llvm::formatv("output dimension {0} is not a multiple of {1}",
                        problem.n, mi->n)
              .str();
    return failure();
  }
  if (problem.fp8Weight) {
    t.scaleBlockN = problem.scaleBlockN;
    t.scaleBlockK = problem.scaleBlockK;
    if (t.scaleBlockN % mi->n || t.scaleBlockK % mi->k ||
        problem.k % t.scaleBlockK) {
      why = llvm::formatv("fp8 block {0}x{1} does not tile with {2}x{3} "
                          "instruction tiles and K = {4}",
                          t.scaleBlockN, t.scaleBlockK, mi->n, mi->k,
                          problem.k)
                .str();
      return failure();
    }
    t.blockK = t.scaleBlockK;
    // Decoded onto the bf16 instruction (NVIDIA), x's codes and their bf16
    // values are live beside W's in the register forms: half a scale group
    // per K block keeps moe_up's decode split form within 255 registers
    // beside its ring (a whole group spilled 120 bytes); both halves take
    // the group's scales.
    if (problem.fp8Input && !t.decodeMma && t.scaleBlockK % (2 * mi->k) == 0)
      t.blockK = t.scaleBlockK / 2;
  } else {
    for (int64_t steps : {4, 2, 1})
      if (problem.k % (steps * mi->k) == 0) {
        t.blockK = steps * mi->k;
        break;
      }
    if (!t.blockK) {
      why = llvm::formatv("input dimension {0} is not a multiple of {1}",
                          problem.k, mi->k)
                .str();
      return failure();
    }
  }
  return t;
}

std::optional<MatmulTiling>
mlir::strata::chooseDecodeSplitK(const MatmulTiling &tiling,
                                 const MatmulProblem &problem, int64_t &splits,
                                 int64_t columns, int64_t rowFrags) {
  // A block of two warpgroups (widenForWarpgroups) splits K over each
  // warpgroup's subgroups and gives the warpgroups a column group each.
  int64_t groups = tiling.warpgroups;
  splits = tiling.subgroupsM * tiling.subgroupsN / groups;
  // `columns` per block (at least one instruction's n): with 16, a decode
  // step streams the weight through N / 16 blocks, enough to fill the GPU
  // for projections of a few thousand outputs. fp32 weights (the MoE
  // router, N = 288: 18 blocks of 16) take one instruction's columns per
  // block: twice the blocks for a K walk of three instructions per step.
  // fp8 weights against quantised activations (AMD): the decode forms
  // decode the weights onto the bf16 instruction of the same m x n.
  // x's codes (ScaledActivations) on the fp8 instruction: the decode forms
  // decode them too, onto the same bf16 instruction.
  bool fp8Operands =
      tiling.fp8Mode == Fp8Mode::QuantizeActivations ||
      (tiling.fp8Mode == Fp8Mode::ScaledActivations && tiling.decodeMma);
  if (fp8Operands) {
    if (!tiling.decodeMma || tiling.decodeMma->m != tiling.mma.m ||
        tiling.decodeMma->n != tiling.mma.n ||
        tiling.blockK % tiling.decodeMma->k != 0)
      return std::nullopt;
    MatmulTiling decoded = tiling;
    decoded.mma = *tiling.decodeMma;
    decoded.decodeMma.reset();
    if (tiling.fp8Mode == Fp8Mode::QuantizeActivations)
      decoded.fp8Mode = Fp8Mode::DecodeWeights;
    decoded.kRuns = supportsKRuns(decoded.mma);
    return chooseDecodeSplitK(decoded, problem, splits, columns, rowFrags);
  }
  if (problem.f32Weight)
    columns = std::min(columns, tiling.mma.n);
  int64_t fragsN = std::max<int64_t>(columns / tiling.mma.n, 1);
  columns = fragsN * tiling.mma.n;
  if (splits < 2 || rowFrags < 1 || (problem.k / tiling.blockK) % splits != 0 ||
      (groups == 1 ? tiling.tileN() % columns != 0
                   : problem.n % (groups * columns) != 0) ||
      (rowFrags * tiling.mma.m * groups * columns) % tiling.threads() != 0)
    return std::nullopt;
  MatmulTiling split = tiling;
  split.fragsN = fragsN;
  split.subgroupsN = groups;
  split.fragsM = rowFrags;
  split.subgroupsM = 1;
  split.stepwiseA = rowFrags > 1;
  return split;
}

bool mlir::strata::takesWeightGemv(const MatmulTiling &tiling,
                                   const MatmulProblem &problem,
                                   int64_t splits, const DenseMatmul &dense) {
  return problem.f32Weight && dense.epilogue == MatmulEpilogue::Store &&
         !dense.hcMult && !dense.heads && splits >= 1 &&
         problem.n % kWeightGemvColumns == 0 &&
         problem.k % kWeightGemvRun == 0;
}

std::optional<MatmulTiling>
mlir::strata::chooseMultiRowDecodeSplitK(const MatmulTiling &tiling,
                                         const MatmulProblem &problem,
                                         int64_t &splits, int64_t &maxRows) {
  // Each subgroup holds rowFrags x fragsN accumulators (and as many block
  // accumulators for fp8): beyond 8 row fragments they would spill.
  int64_t rowFrags = tiling.tileM() / tiling.mma.m;
  if (tiling.tileM() % tiling.mma.m != 0 || rowFrags < 2 || rowFrags > 8 ||
      problem.n > kMultiRowDecodeMaxColumns)
    return std::nullopt;
  maxRows = problem.n <= kMultiRowDecodeTwoBlockMaxColumns
                ? std::max(kMultiRowDecodeMaxRows, tiling.tileM())
                : tiling.tileM();
  // Row tiles that fill the GPU in one row block, or whose K is long enough
  // to split over the grid, take the steps above kMultiRowDecodeWideMaxRows.
  bool tilesFill =
      tiling.tileN() > 0 && problem.n / tiling.tileN() >= kGridSplitKIdleBlocks;
  if (problem.n > kMultiRowDecodeTwoBlockMaxColumns &&
      (tilesFill || problem.k >= 2 * kGridSplitKMinK))
    maxRows = std::min(maxRows, kMultiRowDecodeWideMaxRows);
  return chooseDecodeSplitK(tiling, problem, splits, kDecodeTileColumns,
                            rowFrags);
}

int64_t mlir::strata::chooseDecodeGridSplits(const MatmulTiling &split,
                                             const MatmulProblem &problem,
                                             int64_t splits) {
  if (problem.f32Weight || problem.n % split.tileN() != 0)
    return 1;
  int64_t unit = splits * std::max(split.blockK, split.scaleBlockK);
  int64_t columnBlocks = problem.n / split.tileN();
  if (columnBlocks > kDecodeGridSplitKMaxColumnBlocks)
    return 1;
  int64_t z = 1;
  while (z * 2 <= kDecodeGridSplitKMaxSplits &&
         columnBlocks * z * 2 <= kDecodeGridSplitKTargetBlocks &&
         problem.k % (z * 2 * unit) == 0 &&
         problem.k / (z * 2) >= kDecodeGridSplitKMinK)
    z *= 2;
  return z;
}

std::optional<GridSplitK> mlir::strata::chooseGridSplitK(
    const MatmulTiling &plain, const MatmulProblem &problem,
    int64_t decodeMaxRows, int64_t stagedMinRows, const MatmulTiling *staged) {
  bool stagedTiles = staged && staged->wgmma && staged->ring();
  if (staged && !stagedTiles)
    return std::nullopt;
  const MatmulTiling &tiling = stagedTiles ? *staged : plain;
  if (problem.f32Weight || plain.staged || problem.n % tiling.tileN() != 0)
    return std::nullopt;
  GridSplitK split;
  split.staged = stagedTiles;
  split.tileM = tiling.tileM();
  split.tileN = tiling.tileN();
  split.minRows = decodeMaxRows + 1;
  split.maxRows = kGridSplitKMaxRows;
  if (stagedMinRows > 0)
    split.maxRows = std::min(split.maxRows, stagedMinRows - 1);
  if (split.maxRows < split.minRows)
    return std::nullopt;
  // A split's K range starts at a whole K block (stage) and fp8 scale
  // block.
  int64_t unit = std::max(
      {tiling.blockK, stagedTiles ? tiling.stageK : 0, tiling.scaleBlockK});
  int64_t columnTiles = problem.n / tiling.tileN();
  int64_t tiles = columnTiles * llvm::divideCeil(split.maxRows, tiling.tileM());
  if (tiles >
      (stagedTiles ? kGridSplitKStagedIdleBlocks : kGridSplitKIdleBlocks))
    return std::nullopt;
  int64_t splits = 1;
  while (splits * 2 <= kGridSplitKMaxSplits &&
         tiles * splits * 2 <= kGridSplitKTargetBlocks &&
         problem.k % (splits * 2 * unit) == 0 &&
         problem.k / (splits * 2) >= kGridSplitKMinK)
    splits *= 2;
  if (splits < 2)
    return std::nullopt;
  split.splits = splits;
  return split;
}

std::optional<MatmulTiling> mlir::strata::chooseGroupedDecodeSplitK(
    const MatmulTiling &tiling, const MatmulProblem &problem, int64_t &splits) {
  return chooseDecodeSplitK(tiling, problem, splits,
                            std::min(kGroupedDecodeColumns, tiling.tileN()));
}

int64_t mlir::strata::columnBlocks(const MatmulTiling &tiling,
                                   const MatmulProblem &problem,
                                   bool decodeForm) {
  int64_t splits = 0;
  std::optional<MatmulTiling> split =
      decodeForm ? chooseDecodeSplitK(tiling, problem, splits) : std::nullopt;
  return problem.n / (split ? split->tileN() : tiling.tileN());
}

LogicalResult mlir::strata::describeLinearMatmul(
    ShapedType x, ShapedType weight, int64_t blockN, int64_t blockK,
    ShapedType y, MatmulProblem &problem, MatmulTypes &types,
    std::string &why) {
  if (x.getRank() != 2 || weight.getRank() != 2 || y.getRank() != 2) {
    why = "expected a rank-2 input, weight and result";
    return failure();
  }
  if (!x.getElementType().isBF16()) {
    why = "expected a bf16 input";
    return failure();
  }
  bool fp8 = blockN > 0 && blockK > 0;
  Type w = weight.getElementType();
  Type result = y.getElementType();
  bool f32Weight = !fp8 && w.isF32() && result.isF32();
  if (fp8 ? !isa<Float8E4M3FNType>(w) : !w.isBF16() && !f32Weight) {
    why = fp8 ? "expected an f8E4M3FN weight"
              : "expected a bf16 weight (or an f32 weight with an f32 result)";
    return failure();
  }
  if (!result.isBF16() && !result.isF32()) {
    why = "expected a bf16 or f32 result";
    return failure();
  }
  problem = MatmulProblem();
  problem.n = weight.getDimSize(0);
  problem.k = weight.getDimSize(1);
  if (ShapedType::isDynamic(problem.n) || ShapedType::isDynamic(problem.k) ||
      x.getDimSize(1) != problem.k || y.getDimSize(1) != problem.n) {
    why = "expected static [N, K] weight matching the input and result";
    return failure();
  }
  problem.fp8Weight = fp8;
  problem.f32Weight = f32Weight;
  problem.scaleBlockN = fp8 ? blockN : 0;
  problem.scaleBlockK = fp8 ? blockK : 0;
  types = {x.getElementType(), w, result};
  return success();
}

gpu::GPUFuncOp mlir::strata::createMatrixKernelFunc(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, int64_t threads, StringRef mnemonic) {
  builder.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     builder.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                builder.getUnitAttr());
  func.setKnownBlockSize(ArrayRef<int32_t>{int32_t(threads), 1, 1});
  func->setAttr("strata.mma", builder.getStringAttr(mnemonic));
  builder.setInsertionPointToStart(&func.getBody().front());
  return func;
}

gpu::GPUFuncOp mlir::strata::getOrCreateMatrixKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, int64_t threads, StringRef mnemonic,
    llvm::function_ref<void(gpu::GPUFuncOp)> build) {
  if (auto existing = module.lookupSymbol<gpu::GPUFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  auto func = createMatrixKernelFunc(builder, loc, module, name, argTypes,
                                     threads, mnemonic);
  build(func);
  return func;
}

Value mlir::strata::addWorkgroupBuffer(gpu::GPUFuncOp func, Location loc,
                                       ArrayRef<int64_t> shape, Type elem) {
  auto space = gpu::AddressSpaceAttr::get(func.getContext(),
                                          gpu::AddressSpace::Workgroup);
  Value v = func.addWorkgroupAttribution(
      MemRefType::get(shape, elem, MemRefLayoutAttrInterface(), space), loc);
  func.setWorkgroupAttributionAttr(
      func.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(func.getContext(), 64), 16));
  return v;
}

/// Makes the staged tiling `t` the wgmma ring: the warpgroup instruction
/// reads its operands from the ring (no ldmatrix, instruction K order),
/// every block copied asynchronously.
static void takeWarpgroupRing(MatmulTiling &t) {
  t.wgmma = true;
  t.ldmatrix = false;
  t.kRuns = false;
  t.asyncCopy = true;
}

/// chooseWarpgroupTiling for fp8 activations (Fp8Mode::ScaledActivations):
/// `t` with its warpgroups and row fragments set. Stage rows of kFp8StageK
/// e4m3 codes (128 bytes, the 128-byte swizzle), one stage per scale
/// group, every chunk copied as stored (16 codes); the widest column tile
/// (128, 64) whose accumulators, doubled by the stage's own (promoted into
/// the running sums with both scales), stay within 128 fp32 registers per
/// lane.
static std::optional<MatmulTiling>
chooseFp8WarpgroupTiling(MatmulTiling t, const MatmulProblem &problem,
                         int64_t weights) {
  if (problem.transposedWeight || problem.k % kFp8StageK ||
      problem.scaleBlockK != kFp8StageK)
    return std::nullopt;
  int64_t threads = t.threads();
  for (int64_t tileN : {128, 64}) {
    t.fragsN = tileN / t.mma.n;
    if (problem.n % tileN || weights * tileN > 256 ||
        2 * weights * t.fragsM * t.fragsN * t.mma.c.size() > 128 ||
        (tileN * kFp8StageK / 16) % threads ||
        (t.tileM() * kFp8StageK / 16) % threads)
      continue;
    takeWarpgroupRing(t);
    t.stageK = kFp8StageK;
    t.blockK = kFp8StageK;
    t.stages = kWideStageStagesDeep;
    return t;
  }
  return std::nullopt;
}

/// The wgmma form of the staged tiling `t` (MatmulTiling::wgmma): as many
/// warpgroups as the kernel's block has (t.threads() / 128: one, or two for
/// the grouped experts' wide tiles, widenForWarpgroups), each taking 64 of
/// the tile's rows per instruction, tiles of `tileRows` (a multiple of the
/// warpgroups' rows) by the widest column tile (128, 64) that divides N,
/// keeps weights x tileN within one instruction (n <= 256) and the
/// accumulators within 128 fp32 registers per lane; the ring of
/// kAsyncStages blocks. None when no width fits. Not 256 columns: the
/// kernel's registers are its widest form's, and a 64 x 256 moe_down tile
/// (128 accumulators where the sm_90 ring has 64) made its decode form
/// 16-20 % slower on the H200.
static std::optional<MatmulTiling>
chooseWarpgroupTiling(MatmulTiling t, const MatmulProblem &problem,
                      int64_t weights, int64_t tileRows) {
  const MatrixInstruction &mi = t.mma;
  int64_t threads = t.threads();
  if (mi.family != MatrixFamily::MmaSync || mi.m != 16 || mi.n != 8 ||
      threads % kWarpgroupThreads)
    return std::nullopt;
  int64_t warpgroups = threads / kWarpgroupThreads;
  if (tileRows % (warpgroups * kWarpgroupRows))
    return std::nullopt;
  t.warpgroups = warpgroups;
  t.subgroupsM = warpgroups * kWarpgroupRows / mi.m;
  t.subgroupsN = 1;
  t.fragsM = tileRows / (warpgroups * kWarpgroupRows);
  if (problem.fp8Input)
    return chooseFp8WarpgroupTiling(t, problem, weights);
  // Weights read as stored (bf16, or fp8 decoded into the two bf16
  // buffers) take 128-byte stage rows (kWideStageK) where K is long.
  bool wideK = !problem.transposedWeight && problem.k % kWideStageK == 0 &&
               problem.k >= kWideStageMinK &&
               (!problem.fp8Weight || problem.scaleBlockK % kWideStageK == 0);
  // Every thread copies whole chunks of each K block: 8 bf16 values of x,
  // 16 values of a weight row (fp8; bf16 rows in 8, twice as many chunks).
  auto chunksDivide = [&](int64_t tileN, int64_t stageK) {
    return (tileN * stageK / 16) % threads == 0 &&
           (t.tileM() * stageK / 8) % threads == 0;
  };
  for (int64_t tileN : {128, 64}) {
    t.fragsN = tileN / mi.n;
    if (problem.n % tileN || weights * tileN > 256 ||
        weights * t.fragsM * t.fragsN * mi.c.size() > 128)
      continue;
    bool wide = wideK && chunksDivide(tileN, kWideStageK);
    if (!wide && !chunksDivide(tileN, kStageK))
      continue;
    takeWarpgroupRing(t);
    t.stages = kAsyncStages;
    if (wide) {
      t.stageK = kWideStageK;
      t.blockK = kWideStageK;
      t.stages = t.tileM() == kWarpgroupRows || warpgroups > 1
                     ? kWideStageStagesDeep
                     : kWideStageStages;
    }
    return t;
  }
  return std::nullopt;
}

std::optional<MatmulTiling>
mlir::strata::widenForWarpgroups(const MatmulTiling &tiling,
                                 const MatmulProblem &problem,
                                 int64_t weights) {
  // moe_up's gate and up (weights = 2) fill one warpgroup's accumulators
  // at 64 rows; moe_down's single weight has room for 128 rows in one
  // warpgroup, and its two-warpgroup block (1 per SM at 158 registers)
  // measured 13-35 % slower on the H200 at every step size.
  if (!tiling.targetHasWarpgroupMma || tiling.subgroupsM != 2 || weights != 2)
    return std::nullopt;
  MatmulTiling wide = tiling;
  wide.warpgroups = 2;
  wide.subgroupsN = 2 * kWarpgroupThreads / tiling.subgroupSize /
                    tiling.subgroupsM;
  wide.fragsN =
      std::max<int64_t>(1, 64 / (wide.subgroupsN * tiling.mma.n));
  if (wide.threads() != 2 * kWarpgroupThreads ||
      problem.n % wide.tileN() != 0)
    return std::nullopt;
  std::string why;
  std::optional<MatmulTiling> staged = chooseStagedTiling(
      wide, problem, weights, kGroupedWarpgroupTileRows, why);
  if (!staged || !staged->wgmma || staged->warpgroups != 2)
    return std::nullopt;
  // The decode split form stays (K splits over the block's subgroups).
  int64_t splits = 0, wideSplits = 0;
  if (chooseGroupedDecodeSplitK(tiling, problem, splits) &&
      !chooseGroupedDecodeSplitK(wide, problem, wideSplits))
    return std::nullopt;
  return wide;
}

std::optional<MatmulTiling>
mlir::strata::chooseStagedTiling(const MatmulTiling &tiling,
                                 const MatmulProblem &problem, int64_t weights,
                                 int64_t tileRows, std::string &why,
                                 bool allowWarpgroup) {
  const MatrixInstruction *mi = &tiling.mma;
  if (mi->operands != MatrixElement::BF16) {
    why = "fp8 instruction on quantised activations";
    return std::nullopt;
  }
  if (problem.f32Weight) {
    why = "fp32 weights";
    return std::nullopt;
  }
  if (kStageK % mi->k || problem.k % kStageK ||
      (problem.fp8Weight && problem.scaleBlockK % kStageK)) {
    why = llvm::formatv("K = {0} does not split into stages of {1}",
                        problem.k, kStageK)
              .str();
    return std::nullopt;
  }
  MatmulTiling t = tiling;
  t.fp8Mode = problem.fp8Input    ? Fp8Mode::ScaledActivations
              : problem.fp8Weight ? Fp8Mode::DecodeWeights
                                  : Fp8Mode::None;
  t.kRuns = supportsKRuns(*mi);
  t.stepwiseA = false;
  t.staged = true;
  t.blockK = kStageK;
  t.stageK = kStageK;
  // W^T's K rows are transposed on their way into the stage buffers (the
  // ring's decoded buffers, or the two buffers through registers): bf16
  // weights, whole 8-column chunks per thread; with f32 x (allowWarpgroup
  // false) the caller cuts the ring to two stages, which then would read
  // W^T as N-major rows, so only bf16 x.
  auto withTransposedWeight =
      [&](MatmulTiling r) -> std::optional<MatmulTiling> {
    if (!problem.transposedWeight)
      return r;
    if (problem.fp8Weight || !allowWarpgroup ||
        (kStageK * r.tileN() / 8) % r.threads() != 0) {
      why = "transposed weights are staged for bf16 weights and activations "
            "only";
      return std::nullopt;
    }
    r.transposedWeight = true;
    return r;
  };
  if (allowWarpgroup && tiling.targetHasWarpgroupMma)
    if (std::optional<MatmulTiling> w =
            chooseWarpgroupTiling(t, problem, weights, tileRows))
      return withTransposedWeight(*w);
  if (problem.fp8Input) {
    why = "fp8 activations are staged on the warpgroup ring only (sm_90a, "
          "K a multiple of 128 with 128-wide scale groups)";
    return std::nullopt;
  }
  if (tiling.threads() != 4 * tiling.subgroupSize) {
    why = "the kernel's block is not the register-staged tiles' 2 x 2 "
          "subgroups";
    return std::nullopt;
  }
  t.subgroupsM = 2;
  t.subgroupsN = 2;
  t.fragsM = tileRows / (2 * mi->m);
  int64_t accRegisters = 128;
  int64_t chunksPerRow = kStageK / 8;
  for (int64_t tileN : {128, 64}) {
    t.fragsN = tileN / (2 * mi->n);
    if (t.fragsM < 1 || t.fragsN < 1 || tileRows % (2 * mi->m) ||
        problem.n % tileN ||
        weights * t.fragsM * t.fragsN * mi->c.size() > accRegisters ||
        (tileRows * chunksPerRow) % t.threads() ||
        (tileN * chunksPerRow) % t.threads())
      continue;
    t.ldmatrix = mi->family == MatrixFamily::MmaSync && mi->m == 16 &&
                 mi->n == 8 && mi->k == 16 && t.fragsN % 2 == 0;
    if (t.ldmatrix)
      t.kRuns = false;
    t.asyncCopy = t.ldmatrix;
    // The ring's fp8 rows move in 16-byte chunks of 16 values.
    int64_t rawChunks = tileN * kStageK / 16;
    if (t.asyncCopy && rawChunks % t.threads() == 0)
      t.stages = kAsyncStages;
    return withTransposedWeight(t);
  }
  why = llvm::formatv("no staged tile of {0} rows divides N = {1}", tileRows,
                      problem.n)
            .str();
  return std::nullopt;
}

int64_t mlir::strata::stagedBufferBytes(const MatmulTiling &staged,
                                        int64_t weights) {
  int64_t stageK = staged.stageK;
  if (staged.fp8Mode == Fp8Mode::ScaledActivations)
    // The ring of x's and the weights' codes as stored, nothing decoded.
    return staged.stages * (staged.tileM() + weights * staged.tileN()) *
           staged.stageRowBytes();
  if (!staged.ring()) {
    // Two buffers of the tile's A rows and every weight's B rows, bf16.
    return 2 * (staged.tileM() + weights * staged.tileN()) * stageK * 2;
  }
  bool fp8 = staged.fp8Mode == Fp8Mode::DecodeWeights;
  bool decodes = fp8 || staged.transposedWeight;
  int64_t ringA = staged.stages * staged.tileM() * stageK * 2;
  int64_t ringB =
      staged.stages * weights * staged.tileN() * stageK * (fp8 ? 1 : 2);
  int64_t decoded = decodes ? 2 * weights * staged.tileN() * stageK * 2 : 0;
  return ringA + ringB + decoded;
}

void mlir::strata::recordSmallStepBytes(gpu::GPUFuncOp func, int64_t perRow,
                                        int64_t smallSteps, int64_t bytes) {
  func->setAttr(kSmallStepSharedMemoryAttrName,
                DenseI64ArrayAttr::get(func.getContext(),
                                       {perRow, smallSteps, bytes}));
}

void mlir::strata::fenceSharedWritesForAsyncProxy(OpBuilder &b, Location loc) {
  NVVM::FenceProxyOp::create(
      b, loc,
      NVVM::ProxyKindAttr::get(b.getContext(), NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

Value mlir::strata::addDynamicWorkgroupArena(gpu::GPUFuncOp func,
                                             Location loc, int64_t bytes) {
  OpBuilder b(func.getContext());
  b.setInsertionPointToStart(&func.getBody().front());
  auto space = gpu::AddressSpaceAttr::get(func.getContext(),
                                          gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                              MemRefLayoutAttrInterface(), space);
  Value arena = gpu::DynamicSharedMemoryOp::create(b, loc, type);
  int64_t recorded = 0;
  if (auto old = func->getAttrOfType<IntegerAttr>(kDynamicSharedMemoryAttrName))
    recorded = old.getInt();
  func->setAttr(kDynamicSharedMemoryAttrName,
                b.getI64IntegerAttr(std::max(recorded, bytes)));
  return arena;
}

Value mlir::strata::viewWorkgroupArena(OpBuilder &b, Location loc, Value arena,
                                       int64_t offset, ArrayRef<int64_t> shape,
                                       Type elem) {
  auto arenaType = cast<MemRefType>(arena.getType());
  auto type = MemRefType::get(shape, elem, MemRefLayoutAttrInterface(),
                              arenaType.getMemorySpace());
  Value shift = arith::ConstantIndexOp::create(b, loc, offset);
  return memref::ViewOp::create(b, loc, type, arena, shift, ValueRange{});
}
