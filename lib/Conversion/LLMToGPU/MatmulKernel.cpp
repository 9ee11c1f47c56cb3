//===- MatmulKernel.cpp - the tiled GPU matmul kernel ---------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMatmulKernel: y[M, N] = x[M, K] * W[N, K]^T on the matrix units, from
// a MatmulTiling. Operand fragments are read straight from global memory
// into registers: with K runs (MatmulTiling::kRuns) each lane reads its rows
// of a K block as one contiguous run (wide aligned vector loads) and feeds
// each instruction step a slice, A and B permuted alike; else in the
// instruction's FragmentLayout order. The K loop is an scf.for carrying the
// fp32 accumulators; block scales (fp8) are applied to a per-K-block
// accumulator; the 64-row tiles of M are walked with a grid stride (any grid
// x is right); the tail rows of M are clamped on load and skipped on store.
// A plain linear's kernel also has decode forms: when M is at most one
// instruction's rows, and (multi-row form, N up to 16384) when M is at most
// tileM (128 for N up to 2048), with blocks of tileM rows whose row
// fragments past M are skipped: the subgroups split K and add their partial
// tiles in workgroup memory in subgroup order (buildSplitK), so each block
// reads its 16 columns of the weight once for all of its rows. With
// DenseMatmul::hcMult either form ends in mHC's residual write instead of a
// store of y (storeStreams: an attention o_proj, an FFN's last projection).
// Shared-memory staging is not done yet (docs/GPULowering.md).
//
// Only emitMma depends on the MatrixFamily: amdgpu.mfma on AMD,
// nvvm.mma.sync (bf16 packed in i32 pairs) on NVIDIA. fp32 weights (the MoE
// router's) enter as three exact bf16 terms (weightTerms).

//
// buildGroupedExpertKernel: the same tiles over the routed slots of an MoE,
// grouped by expert (moe_group's order / starts): a block takes one tile of
// one expert's slots (the expert found by walking starts), gathers the
// slots' rows of x (or of the routed activations), multiplies them by that
// expert's weights and writes each row back to its slot through the
// epilogue: SwiGLU of the gate and up accumulators (moe_up: two weights
// against the same A fragments) or the routing weight (moe_down), with the
// rounding points of FfnOps.cpp. Expert-parallel (GroupedExperts::
// rankExperts): the grouping is over all experts, the weights hold the
// rank's; a tile of the rank's expert multiplies by its local index (global
// expert minus the rank's first), a tile of another rank's expert skips the
// products and stores 0 into its slots through the same epilogue (they
// contribute nothing to the rank's partial sum).
//
//===----------------------------------------------------------------------===//

#include <functional>
#include <tuple>

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/KernelToGPU/KernelToGPU.h"
#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Lane coordinates of one FragmentLayout.
struct LaneCoords {
  Value outer, inner;
};

/// A form's K split over the grid (GridSplitK): `splits` blocks along grid
/// z per tile, the tiles' arrival counters, the dispatch's global scratch
/// (i8) and the i32 workgroup word that tells a block's threads whether it
/// arrived last.
struct GridSplitArgs {
  int64_t splits = 1;
  Value counters, scratch, lastFlag;
};

class MatmulKernelBuilder : LaneArith {
public:
  MatmulKernelBuilder(OpBuilder &b, Location loc, const MatmulTiling &t,
                      const MatmulProblem &p, const MatmulTypes &types)
      : LaneArith(b, loc), t(t), p(p), types(types), mi(t.mma) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    fp8 = b.getType<Float8E4M3FNType>();
    if (mi.operands == MatrixElement::F8E4M3FNUZ)
      mmaFp8 = b.getType<Float8E4M3FNUZType>();
    else
      mmaFp8 = fp8;
  }

  /// The plain (linear) or dense-projection kernel's body from its
  /// arguments (buildMatmulKernel, buildDenseMatmulKernel), without the
  /// return.
  void build(ValueRange args, const DenseMatmul &dense);
  /// A plain linear's body for decode steps: built with a split tiling
  /// (chooseDecodeSplitK: one row fragment, steps of at most mma.m rows;
  /// chooseMultiRowDecodeSplitK: tileM rows, block x taking rows [x * tileM,
  /// + tileM)), subgroup s of the block's `splits` accumulates the block's
  /// rows and columns over the s-th K range, the partial sums meet in
  /// `partial` (workgroup memory, at least [splits, weights, tileM,
  /// columns] f32) and are added in subgroup order, then rounded once into
  /// y.
  void buildSplitK(ValueRange args, Value partial, int64_t splits,
                   const DenseMatmul &dense,
                   const GridSplitArgs *grid = nullptr);
  /// A plain linear's body for steps of at most mma.m rows with an fp32
  /// weight (takesWeightGemv: the MoE router): block y takes
  /// kWeightGemvColumns columns, whose weight rows every thread holds in
  /// registers (16-byte loads, all issued at once: the weight is read once,
  /// by N / kWeightGemvColumns blocks); per row of the step each thread
  /// multiplies its K elements in fp32 (fused multiply-adds, exact
  /// products), the subgroups' sums meet in `partial` (workgroup memory, at
  /// least [splits, 1, 1, kWeightGemvColumns] f32) and are added in
  /// subgroup order into y.
  void buildWeightGemv(ValueRange args, Value partial, int64_t splits,
                       const DenseMatmul &dense);
  /// A plain linear's row tiles with K split over the grid (GridSplitK):
  /// block (x, y, z) accumulates tile (x, y) over K range z of `splits`,
  /// stores its fp32 accumulators into its slice of `scratch` (the
  /// dispatch's global scratch, block x + gx (y + gy z) at its own slice),
  /// and adds one to the tile's arrival counter in `counters` (i32, zero
  /// between dispatches); the block that arrives last (`lastFlag`, an i32
  /// workgroup word, tells its threads) sets the counter back to zero, adds
  /// the tile's slices in split order (its own included) and runs the
  /// epilogue. One tile per block: grid x is the step's row tiles.
  void buildGridSplit(ValueRange args, const DenseMatmul &dense,
                      const GridSplitArgs &grid);

private:
  /// Binds x, [slotSum,] w[, scales][, w2[, scales2]][, streams, streamPost,
  /// streamComb], y from a plain or dense kernel's arguments (`d`'s
  /// epilogue and hcMult say which are there).
  void bindArgs(ValueRange args, const DenseMatmul &d);

  /// The grid split's global scratch as f32, and the first float of block
  /// (bx, by, z)'s slice of `sliceFloats` in it: the runtime's scratch
  /// layout, block x + gx (y + gy z).
  Value scratchFloats(const GridSplitArgs &grid) {
    Value floats = arith::DivUIOp::create(
        b, loc, memref::DimOp::create(b, loc, grid.scratch, 0), idx(4));
    return memref::ViewOp::create(b, loc,
                                  MemRefType::get({ShapedType::kDynamic}, f32),
                                  grid.scratch, idx(0), ValueRange{floats});
  }
  Value sliceStart(Value bx, Value by, Value z, int64_t sliceFloats) {
    Value gx = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value gy = gpu::GridDimOp::create(b, loc, gpu::Dimension::y);
    return mul(
        add(bx, arith::MulIOp::create(
                    b, loc, gx, add(by, arith::MulIOp::create(b, loc, gy, z)))),
        sliceFloats);
  }
  /// After this block stored its partial results into its scratch slice:
  /// releases them (fence), counts the block's arrival at tile (bx, by)
  /// (thread 0, one atomic add on counter bx + gx by), and in the block that
  /// finds grid.splits - 1 arrivals before its own (block-uniform through
  /// grid.lastFlag) sets the counter back to zero, acquires the other
  /// blocks' results (fence) and runs `finish`.
  void finishInLastBlock(const GridSplitArgs &grid, Value bx, Value by,
                         llvm::function_ref<void()> finish);
  /// buildSplitK's second half under a grid split: block z's subgroups
  /// have split its share of K (storePartials); their sums go to its scratch
  /// slice, and the tile's last block adds the slices in split order and
  /// runs the epilogue for the rows below M.
  void buildSplitKPartOfGrid(Value partial, int64_t splits,
                             const GridSplitArgs &grid, Value tid, Value bx,
                             Value sg, Value colBase, Value rowBase,
                             int64_t numWeights);

  Value zeros(VectorType type) {
    return arith::ConstantOp::create(b, loc, b.getZeroAttr(type));
  }
  Value splat(Value scalar, int64_t n) {
    return vector::BroadcastOp::create(b, loc, VectorType::get({n}, f32),
                                       scalar);
  }

  LaneCoords coords(const FragmentLayout &l) {
    return {laneMap(l.outer), laneMap(l.inner)};
  }

  /// Indices of element (row, col) of `mem` ([rows, K] in this kernel's
  /// form: grouped slots, head-batched or plain). `clamp` keeps rows of A
  /// below M (the tail of the last tile re-reads the last row).
  SmallVector<Value> elementIndices(Value row, Value col, bool clamp) {
    SmallVector<Value> indices;
    if (grouped && clamp) {
      // A row of a grouped tile: the slot at that position of the expert's
      // range (the range's last slot past its end).
      Value last = arith::SubIOp::create(b, loc, rowEnd, idx(1));
      Value pos = arith::MinUIOp::create(b, loc, add(rowStart, row), last);
      indices = aRowIndices(slotAt(pos));
      indices.push_back(col);
    } else if (grouped) {
      indices = {expert, row, col};
    } else if (dense.heads && clamp) {
      indices = {arith::MinUIOp::create(b, loc, row, lastRow), head, col};
    } else if (dense.heads) {
      indices = {add(add(mul(head, dense.weightRowStride),
                         dense.weightRowOffset),
                     row),
                 col};
    } else {
      if (clamp)
        row = arith::MinUIOp::create(b, loc, row, lastRow);
      indices = {row, col};
    }
    return indices;
  }

  /// Indices into an operand's memory of element (row, col) of a fragment
  /// (elementIndices, or a staged form's workgroup buffer).
  using Indexer = llvm::function_ref<SmallVector<Value>(Value, Value)>;

  /// `n` consecutive elements of `mem` from `indices` as a vector of
  /// `elem`, aligned to their size (rows hold a multiple of the instruction
  /// k elements and runs start at a multiple of their length, so the vector
  /// load is one or a few wide loads instead of one load per element); f32
  /// activations (MLA's oh) enter the matrix unit rounded.
  Value loadRun(Value mem, Type elem, int64_t n, ValueRange indices) {
    Type stored = cast<MemRefType>(mem.getType()).getElementType();
    int64_t bytes = n * stored.getIntOrFloatBitWidth() / 8;
    auto load = [&](Type type) {
      auto op = vector::LoadOp::create(b, loc, VectorType::get({n}, type),
                                       mem, indices);
      op.setAlignment(uint64_t(std::min<int64_t>(bytes, 16)));
      return op.getResult();
    };
    if (stored != elem && stored.isF32())
      return arith::TruncFOp::create(b, loc, VectorType::get({n}, elem),
                                     load(stored));
    return load(elem);
  }

  /// The fragment of `mem` ([rows, K]) for the tile at (outerBase,
  /// innerBase), as one vector<size x elem>, in the instruction's own K
  /// order. `clamp` keeps rows < M.
  Value loadFragment(Value mem, Type elem, const FragmentLayout &l,
                     const LaneCoords &c, Value outerBase, Value innerBase,
                     bool clamp, Indexer at = nullptr) {
    VectorType pieceType = VectorType::get({l.count}, elem);
    VectorType fragType = VectorType::get({l.size()}, elem);
    Value frag;
    for (auto [i, piece] : llvm::enumerate(l.pieces)) {
      Value row = add(add(outerBase, c.outer), piece[0]);
      Value col = add(add(innerBase, c.inner), piece[1]);
      Value v;
      if (at) {
        v = loadRun(mem, elem, l.count, at(row, col));
      } else if (dense.heads && dense.transposedWeight && !clamp) {
        // W^T: the fragment's K run lies down a column; one load each.
        Value base = add(mul(head, dense.weightRowStride),
                         dense.weightRowOffset);
        SmallVector<Value> elems;
        for (int64_t e = 0; e < l.count; ++e)
          elems.push_back(memref::LoadOp::create(
              b, loc, mem, ValueRange{add(add(base, col), e), row}));
        v = vector::FromElementsOp::create(b, loc, pieceType, elems);
      } else {
        v = loadRun(mem, elem, l.count, elementIndices(row, col, clamp));
      }
      if (l.pieces.size() == 1)
        return v;
      if (!frag)
        frag = zeros(fragType);
      frag = vector::InsertStridedSliceOp::create(
          b, loc, v, frag, ArrayRef<int64_t>{int64_t(i) * l.count},
          ArrayRef<int64_t>{1});
    }
    return frag;
  }

  /// The fragments of the K block at `kb` (one per instruction step) of
  /// the tile at `outerBase`. With K runs (MatmulTiling::kRuns) the block's
  /// K positions are permuted the same way for A and B: the lane that holds
  /// inner group q of the instruction takes, for each of its rows, the
  /// contiguous run [kb + q * run, kb + (q + 1) * run) of the block
  /// (run = the lane's elements per row and step x steps) and feeds step s
  /// with the run's s-th slice. Every product of the block is still formed
  /// once with matching A and B elements; only which instruction step adds
  /// it changes. Without, each step loads the instruction's own K order.
  SmallVector<Value> loadKBlock(Value mem, Type elem, const FragmentLayout &l,
                                const LaneCoords &c, Value outerBase, Value kb,
                                bool clamp, Indexer at = nullptr) {
    int64_t steps = t.blockK / mi.k;
    SmallVector<Value> frags;
    if (!kRuns) {
      for (int64_t s = 0; s < steps; ++s)
        frags.push_back(loadFragment(mem, elem, l, c, outerBase,
                                     add(kb, s * mi.k), clamp, at));
      return frags;
    }
    KRunGroups g = getKRunGroups(l);
    int64_t run = g.perStep * steps;
    Value q = laneMap({l.inner.div, l.inner.mod, 1});
    Value col = add(kb, mul(q, run));
    SmallVector<Value> runs;
    for (int64_t outer : g.outer) {
      Value row = add(add(outerBase, c.outer), outer);
      runs.push_back(loadRun(mem, elem, run,
                             at ? at(row, col)
                                : elementIndices(row, col, clamp)));
    }
    Value second = runs.size() > 1 ? runs[1] : runs[0];
    for (int64_t s = 0; s < steps; ++s)
      frags.push_back(vector::ShuffleOp::create(b, loc, runs[0], second,
                                                kRunStepMask(l, run, s)));
    return frags;
  }

  /// The fragment of instruction step `s` of the K block at `kb` of the
  /// tile at `outerBase`: loadKBlock's s-th fragment, read on its own (the
  /// lane's perStep elements of each of its rows at the step's place in
  /// the K-run order; the instruction's own order without K runs).
  Value loadKStep(Value mem, Type elem, const FragmentLayout &l,
                  const LaneCoords &c, Value outerBase, Value kb, int64_t s,
                  bool clamp) {
    if (!kRuns)
      return loadFragment(mem, elem, l, c, outerBase, add(kb, s * mi.k), clamp);
    KRunGroups g = getKRunGroups(l);
    int64_t run = g.perStep * (t.blockK / mi.k);
    Value q = laneMap({l.inner.div, l.inner.mod, 1});
    Value col = add(add(kb, mul(q, run)), s * g.perStep);
    SmallVector<Value> parts;
    for (int64_t outer : g.outer)
      parts.push_back(loadRun(
          mem, elem, g.perStep,
          elementIndices(add(add(outerBase, c.outer), outer), col, clamp)));
    Value second = parts.size() > 1 ? parts[1] : parts[0];
    return vector::ShuffleOp::create(b, loc, parts[0], second,
                                     kRunStepMask(l, g.perStep, 0));
  }

  /// The weights multiplied by the same A fragments, each with its block
  /// scales: W, and the SwiGLU's W_up (whose accumulators follow W's).
  SmallVector<std::pair<Value, Value>> weightOperands() const {
    SmallVector<std::pair<Value, Value>> weights = {{w, scales}};
    if (w2)
      weights.push_back({w2, scales2});
    return weights;
  }

  /// The element type W's fragments are read in: fp8 bytes, fp32 values or
  /// bf16.
  Type weightElement() const {
    if (t.fp8Mode != Fp8Mode::None)
      return fp8;
    return p.f32Weight ? f32 : bf16;
  }
  /// The bf16 B operands of W's fragment `raw` (read as weightElement()),
  /// whose products with A are summed in order: the fp8 bytes decoded; the
  /// fp32 values as lo, mid, hi (splitF32, small terms first); bf16 as is.
  SmallVector<Value> weightTerms(Value raw) {
    if (t.fp8Mode == Fp8Mode::DecodeWeights || scaledInput())
      return {decodeFp8(raw)};
    if (p.f32Weight)
      return splitF32(raw);
    return {raw};
  }
  /// fp32 values w as bf16 terms lo, mid, hi with hi + mid + lo = w exactly:
  /// hi keeps w's top 16 bits (a bf16 value, so the truncation is exact),
  /// mid those of the exact remainder w - hi, lo the rest (at most 8
  /// significant bits: exact in bf16). For finite w (an infinite one gives
  /// NaN terms).
  SmallVector<Value> splitF32(Value v) {
    auto type = cast<VectorType>(v.getType());
    auto i32 = VectorType::get(type.getShape(), b.getI32Type());
    auto half = VectorType::get(type.getShape(), bf16);
    Value mask = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(i32, b.getI32IntegerAttr(int32_t(0xffff0000u))));
    auto top = [&](Value x) {
      return arith::BitcastOp::create(
          b, loc, type,
          arith::AndIOp::create(
              b, loc, arith::BitcastOp::create(b, loc, i32, x), mask));
    };
    Value hi = top(v);
    Value rest = arith::SubFOp::create(b, loc, v, hi);
    Value mid = top(rest);
    Value lo = arith::SubFOp::create(b, loc, rest, mid);
    auto toBf16 = [&](Value x) -> Value {
      return arith::TruncFOp::create(b, loc, half, x);
    };
    return {toBf16(lo), toBf16(mid), toBf16(hi)};
  }

  /// Decodes OCP e4m3fn values to bf16 exactly: on NVIDIA by the
  /// hardware conversion (decodeFp8Pairs), elsewhere by integer code
  /// (normal numbers re-biased into an f32, subnormals m * 2^-9).
  Value decodeFp8(Value v) {
    int64_t n = cast<VectorType>(v.getType()).getNumElements();
    return arith::TruncFOp::create(b, loc, VectorType::get({n}, bf16),
                                   decodeFp8ToF32(v));
  }
  /// decodeFp8's values as f32 (exact), for a product taken in f32.
  Value decodeFp8ToF32(Value v) {
    if (mi.family == MatrixFamily::MmaSync)
      return decodeFp8Pairs(v);
    auto i8 = VectorType::get({cast<VectorType>(v.getType()).getNumElements()},
                              b.getI8Type());
    return decodeE4M3ToF32(arith::BitcastOp::create(b, loc, i8, v));
  }

  /// e4m3fn pairs to f32 with `cvt.rn.f16x2.e4m3x2` (sm_89+), one
  /// instruction per pair instead of about ten integer ops per value; both
  /// steps are exact (every e4m3 value is an f16 and a bf16 value), so the
  /// result is the integer decode's bit for bit.
  Value decodeFp8Pairs(Value v) {
    int64_t n = cast<VectorType>(v.getType()).getNumElements();
    auto i8 = b.getI8Type();
    auto f16Pair = VectorType::get({2}, b.getF16Type());
    Value bytes =
        arith::BitcastOp::create(b, loc, VectorType::get({n}, i8), v);
    Value halves = zeros(VectorType::get({n}, b.getF16Type()));
    for (int64_t i = 0; i < n; i += 2) {
      Value pair = vector::ExtractStridedSliceOp::create(
          b, loc, bytes, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{2},
          ArrayRef<int64_t>{1});
      Value h = NVVM::ConvertF8x2ToF16x2Op::create(b, loc, f16Pair, pair,
                                                   /*relu=*/false, fp8);
      halves = vector::InsertStridedSliceOp::create(
          b, loc, h, halves, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
    }
    return arith::ExtFOp::create(b, loc, VectorType::get({n}, f32), halves);
  }

  /// OCP e4m3fn weight bytes as operands of the fp8 instruction: as is for
  /// OCP targets; for FNUZ the same bits mean half the value (bias 8), and
  /// 0x80 (-0 in OCP, NaN in FNUZ) becomes 0. The factor 2 goes into the
  /// block scale (fnuzScaleFactor).
  Value toMmaFp8(Value v) {
    if (mmaFp8 == fp8)
      return v;
    auto type = cast<VectorType>(v.getType());
    auto i8 = VectorType::get(type.getShape(), b.getI8Type());
    Value bits = arith::BitcastOp::create(b, loc, i8, v);
    Value negZero = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(i8, b.getI8IntegerAttr(-128)));
    Value isNegZero =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bits, negZero);
    bits = arith::SelectOp::create(b, loc, isNegZero, zeros(i8), bits);
    return arith::BitcastOp::create(
        b, loc, VectorType::get(type.getShape(), mmaFp8), bits);
  }
  double fnuzScaleFactor() const { return mmaFp8 == fp8 ? 1.0 : 2.0; }

  Value emitMma(Value a, Value bv, Value acc);
  /// The block scale in `from` (W's or W_up's scales) of column `colBase`
  /// and K block `kb`.
  Value loadWeightScale(Value from, Value colBase, Value kb) {
    Value row = arith::DivUIOp::create(b, loc, colBase, idx(t.scaleBlockN));
    Value col = arith::DivUIOp::create(b, loc, kb, idx(t.scaleBlockK));
    SmallVector<Value> indices = {row, col};
    if (grouped)
      indices.insert(indices.begin(), expert);
    return memref::LoadOp::create(b, loc, from, indices);
  }
  /// ScaledActivations: x arrives as e4m3 codes with per-group scales.
  bool scaledInput() const { return t.fp8Mode == Fp8Mode::ScaledActivations; }
  /// Where x's scales of row fragment `i`'s C rows are: per piece of C,
  /// the indices of the row's scale of group 0 (rows past the tile clamp
  /// like their A rows). Loop-invariant over K: computed once per tile.
  SmallVector<SmallVector<Value>> rowScaleIndices(int64_t i) {
    SmallVector<SmallVector<Value>> rows;
    for (auto piece : mi.c.pieces)
      rows.push_back(elementIndices(
          add(add(rowBases[i], cLane.outer), piece[0]), idx(0), true));
    return rows;
  }
  /// rowScaleIndices of each row fragment for the register forms' K loop
  /// (accumulate).
  SmallVector<SmallVector<SmallVector<Value>>> tileScaleRows;
  /// x's scales at `rows` (rowScaleIndices) for the K group holding `kb`,
  /// one vector in C's element order.
  Value loadRowScales(ArrayRef<SmallVector<Value>> rows, Value kb) {
    Value group = arith::DivUIOp::create(b, loc, kb, idx(t.scaleBlockK));
    SmallVector<Value> perElement;
    for (SmallVector<Value> at : rows) {
      at.back() = group;
      Value scale = memref::LoadOp::create(b, loc, xScales, at);
      for (int64_t e = 0; e < mi.c.count; ++e)
        perElement.push_back(scale);
    }
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.c.size()}, f32), perElement);
  }
  SmallVector<Value> buildKBlock(Value kb, ValueRange accs);
  /// buildKBlock of a stepwiseA tiling (the multi-row decode form): every
  /// weight's B fragments of the block read and decoded once, then row
  /// fragment by row fragment (those past the step's rows skipped, a
  /// block-uniform branch) the A fragments step by step against them.
  SmallVector<Value> buildKBlockByRows(Value kb, ValueRange accs);
  /// The K loop of one tile: fragsM x fragsN fp32 accumulators per weight
  /// (`weights` of them, W's first), built by buildKBlock.
  SmallVector<Value> accumulate(int64_t weights, Value kBegin = {},
                                Value kEnd = {}) {
    if (t.staged)
      return accumulateStaged(weights);
    // x's scale addresses (ScaledActivations) are loop-invariant: computed
    // once here, not per K block behind the slot's order load.
    tileScaleRows.clear();
    if (scaledInput())
      for (int64_t i = 0; i < t.fragsM; ++i)
        tileScaleRows.push_back(rowScaleIndices(i));
    VectorType accType = VectorType::get({mi.c.size()}, f32);
    SmallVector<Value> inits(weights * t.fragsM * t.fragsN, zeros(accType));
    auto loop = scf::ForOp::create(
        b, loc, kBegin ? kBegin : idx(0), kEnd ? kEnd : idx(p.k),
        idx(t.blockK), inits,
        [&](OpBuilder &nb, Location, Value kb, ValueRange iterArgs) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> next = buildKBlock(kb, iterArgs);
          scf::YieldOp::create(b, loc, next);
        });
    return SmallVector<Value>(loop.getResults());
  }
  void storeResults(ValueRange accs);
  /// The staged tiles' results through the free stage arena (a tile of
  /// `weights` x tileM x tileN values, each rounded to y's type, which is
  /// every epilogue's first step), then the epilogue by runs of kRunColumns
  /// columns of a row: 16-byte loads of the rounded values (and of the
  /// streams or slot sums), 16-byte stores of the results, where the
  /// fragments' own layout stores 2 or 4 bytes per lane. Only the staged
  /// forms with a bf16 y and an arena large enough (storesThroughArena).
  bool storesThroughArena(int64_t weights) const;
  /// The runs' rows are `base` + their row in the tile; those at `bound`
  /// or past it are not stored.
  void storeThroughArena(
      ValueRange accs, int64_t weights, Value base, Value bound,
      llvm::function_ref<void(Value row, Value col, ArrayRef<Value> run,
                              ArrayRef<Value> upRun)>
          storeRun);
  /// The dense epilogue of kRunColumns rounded results of row `row` from
  /// column `col` (upRun: W_up's, Swiglu).
  void storeDenseRun(Value row, Value col, ArrayRef<Value> run,
                     ArrayRef<Value> upRun);
  /// The grouped epilogue of kRunColumns rounded results at slot position
  /// `pos` from column `col`.
  void storeGroupedRun(Value pos, Value col, ArrayRef<Value> run,
                       ArrayRef<Value> upRun);
  /// kRunColumns values of row `at` (the last index the first column) of
  /// `mem` as f32 (one vector load).
  SmallVector<Value> loadRun(Value mem, SmallVector<Value> at);
  /// Stores f32 `values` rounded to `mem`'s elements at `at` (one vector
  /// store).
  void storeRun(ArrayRef<Value> values, Value mem, SmallVector<Value> at);
  /// Columns of a run of the arena epilogue: 16 bytes of bf16.
  static constexpr int64_t kRunColumns = 8;
  /// Padding of the arena tile's rows: 16 bytes, so that a subgroup's
  /// fragment rows start in different banks; none where the padded tile
  /// would not fit the arena (AMD's two stage buffers of 128 x 128 tiles:
  /// exactly the unpadded tile's 32 KiB, and a larger arena would halve the
  /// blocks per gfx942 compute unit).
  static constexpr int64_t kArenaRowPad = 8;
  int64_t arenaRowPad(int64_t weights) const;
  /// The staged form's workgroup arena of the tile (accumulateStaged).
  Value tileArena;

  /// The staged form's K loop (MatmulTiling::staged): fragsM x fragsN fp32
  /// accumulators per weight, from the tile's operands staged block by
  /// block through two workgroup buffers (stageArena's, else the kernel's
  /// own).
  /// With `kBase`, over the `kLength` K values from there (a multiple of
  /// stageK; the ring only: GridSplitK::staged), else all of K.
  SmallVector<Value> accumulateStaged(int64_t weights, Value kBase = {},
                                      int64_t kLength = 0);
  /// This thread's chunks (16 bytes: `elements` values of one row) of a
  /// stage: the leading indices of each chunk's row in x (with `withA`),
  /// then in every weight (col = 0 left for the K block), and where it goes
  /// in the stage buffers. 8 elements for bf16 rows; 16 for the ring's raw
  /// fp8 weight rows, which the thread that copies a chunk also decodes.
  struct StageChunk {
    SmallVector<Value> at; // indices of the row's element 0
    Value row, part;       // row in the tile, chunk in the K block
    int64_t weight = -1;   // -1: A (x)
    int64_t elements = 8;  // values per chunk
    bool transposed = false; // W^T: `row` a K row, `part` 8 columns
  };
  SmallVector<StageChunk> stageChunks(int64_t weights, int64_t elements = 8,
                                      bool withA = true);
  /// A chunk's indices in its operand (x or a weight) for the K block at
  /// `kb`, and in its stage buffer `buf` (8-element chunks; swizzled with
  /// ldmatrix reads).
  SmallVector<Value> chunkSource(const StageChunk &chunk, Value kb);
  SmallVector<Value> chunkTarget(const StageChunk &chunk, Value buf);
  /// The chunks' values of the K block at `kb`: bf16 rows of x; the weight
  /// rows as bf16, fp8 decoded and multiplied by their block scale
  /// (rounded once to bf16).
  SmallVector<Value> loadStage(ArrayRef<StageChunk> chunks, Value kb);
  void storeStage(ArrayRef<StageChunk> chunks, ArrayRef<Value> values,
                  Value stageA, Value stageB, Value buf);
  /// The chunks' rows of the K block at `kb` copied into buffer `buf` by
  /// asynchronous copies (nvgpu.device_async_copy, 16 bytes each); their
  /// group's token, null without chunks.
  Value copyStage(ArrayRef<StageChunk> chunks, Value kb, Value stageA,
                  Value stageB, Value buf);
  /// One stage's products: every subgroup's A fragments read from buffer
  /// `bufA` of stageA and B fragments from buffer `bufB` of stageB, added
  /// into `accs`.
  SmallVector<Value> multiplyStage(Value stageA, Value bufA, Value stageB,
                                   Value bufB, ValueRange accs,
                                   int64_t weights);
  /// multiplyStage with ldmatrix reads (MatmulTiling::ldmatrix).
  SmallVector<Value> multiplyStageLdmatrix(Value stageA, Value bufA,
                                           Value stageB, Value bufB,
                                           ValueRange accs, int64_t weights);
  /// accumulateStaged with the ring of asynchronous copies
  /// (MatmulTiling::ring).
  SmallVector<Value> accumulateRing(Value arena, int64_t weights,
                                    Value kBase = {}, int64_t kLength = 0);
  /// One ring block's products on the warpgroup instruction
  /// (MatmulTiling::wgmma): the tile's A rows at byte `aOffset` and its
  /// weights x tileN B rows at byte `bOffset` of the arena at shared
  /// address `arenaAddress` (i64), one wgmma step per 32 bytes of the
  /// stage rows, issued as one committed group, added into `accs` (or with
  /// `fresh` into zeros: a stage's own accumulators); the results are
  /// valid after the group's wgmma.wait_group (accumulateRing waits before
  /// the next barrier).
  SmallVector<Value> issueWarpgroupStage(Value arenaAddress, Value aOffset,
                                         Value bOffset, ValueRange accs,
                                         int64_t weights, bool fresh = false);
  /// Two warpgroups on a grouped tile: whether this thread's warpgroup has
  /// rows in the expert's slots (a 2048-token prefill routes ~57 slots to
  /// each expert: half-empty tiles of 128); null where every warpgroup has.
  Value warpgroupHasRows() {
    if (!t.wgmma || t.warpgroups < 2 || !grouped)
      return Value();
    return ult(add(rowStart, mul(warpgroupIndex(), kWarpgroupRows)), rowEnd);
  }
  /// `issue()` (a wgmma group) in a warpgroup-uniform branch on `hasRows`,
  /// `otherwise` without rows; `issue()` alone where `hasRows` is null.
  SmallVector<Value>
  ifWarpgroupHasRows(Value hasRows, ValueRange otherwise,
                     llvm::function_ref<SmallVector<Value>()> issue) {
    if (!hasRows)
      return issue();
    auto ifRows = scf::IfOp::create(b, loc, otherwise.getTypes(), hasRows,
                                    /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifRows.thenBlock());
    scf::YieldOp::create(b, loc, issue());
    b.setInsertionPointToStart(ifRows.elseBlock());
    scf::YieldOp::create(b, loc, otherwise);
    return SmallVector<Value>(ifRows.getResults());
  }
  /// accumulateRing for x's e4m3 codes (ScaledActivations): x's and the
  /// weights' codes copied as stored into a ring of kFp8StageK-wide blocks,
  /// one scale group each, multiplied on the fp8 wgmma into the stage's
  /// own accumulators, which are then added into the running sums times
  /// x's row scales and the weights' block scales (the fp32 promotion of
  /// DeepGEMM's fp8 GEMMs).
  SmallVector<Value> accumulateScaledRing(Value arena, int64_t weights);
  /// The scales of one K group of the fp8 ring: x's of each row fragment
  /// (loadRowScales' vectors) and each weight's block scale of each column
  /// fragment (weight-major).
  struct BlockScales {
    SmallVector<Value> rows, columns;
  };
  /// The BlockScales of the K group at `kb` for x's rows at `scaleRows`
  /// (rowScaleIndices per row fragment): global loads the ring issues
  /// before a block's products, so that their latency overlaps them.
  BlockScales
  loadBlockScales(Value kb, int64_t weights,
                  ArrayRef<SmallVector<SmallVector<Value>>> scaleRows);
  /// The running sums `accs` plus the stage's `blocks` times x's row scales
  /// and each weight's block scale (`scales`).
  SmallVector<Value> promoteScaledBlock(ValueRange blocks, ValueRange accs,
                                        const BlockScales &scales,
                                        int64_t weights);
  /// The wgmma matrix descriptor of stage rows (64 bytes each, K-major,
  /// 64-byte swizzle: stageColumn's) starting at byte `offset` of the
  /// arena at `arenaAddress`.
  Value warpgroupDescriptor(Value arenaAddress, Value offset);
  /// This thread's warpgroup in the block (MatmulTiling::warpgroups).
  Value warpgroupIndex() {
    return arith::DivUIOp::create(
        b, loc, gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x),
        idx(kWarpgroupThreads));
  }
  /// Orders this thread's generic-proxy writes of workgroup memory (copies,
  /// decoded rows) before the wgmma reads of the async proxy.
  void fenceForWarpgroup() { fenceSharedWritesForAsyncProxy(b, loc); }
  /// The block scale of each raw chunk's rows at the K block `kb`.
  SmallVector<Value> rawChunkScales(ArrayRef<StageChunk> chunks, Value kb);
  /// The raw chunks of ring slot `slot` decoded, multiplied by their block
  /// scales and rounded to bf16 (the reference's dequantised weight), into
  /// buffer `buf` of `decoded` ([2, weights, tileN, kStageK] bf16).
  void decodeRawChunks(ArrayRef<StageChunk> chunks, ArrayRef<Value> scales,
                       Value ring, Value slot, Value decoded, Value buf);
  /// This thread's 16-byte chunks of a ring block of W^T
  /// (MatmulTiling::transposedWeight): `row` the block's K row, `part` the
  /// chunk of 8 columns in the tile; consecutive threads take consecutive K
  /// rows, so that a subgroup's transposed stores fill one decoded row.
  SmallVector<StageChunk> transposedChunks(int64_t weights);
  /// A W^T chunk's indices in the weight for the K block at `kb`, and its
  /// element offset in its ring row (chunks swizzled by the row's low 3
  /// bits: the subgroup's 8 rows of a phase read distinct banks).
  SmallVector<Value> transposedSource(const StageChunk &chunk, Value kb);
  Value transposedRingColumn(const StageChunk &chunk);
  /// The W^T chunks of ring slot `slot` ([stages, weights, kStageK, tileN]
  /// bf16) written transposed into buffer `buf` of `decoded` ([2, weights,
  /// tileN, kStageK] bf16, stageColumn's swizzle).
  void transposeRawChunks(ArrayRef<StageChunk> chunks, Value ring, Value slot,
                          Value decoded, Value buf);
  /// A W^T chunk's 8 values (one K row, 8 columns) as column K of 8 rows of
  /// buffer `buf` of `stage` ([*, weights, tileN, kStageK] bf16).
  void storeTransposed(const StageChunk &chunk, Value values, Value stage,
                       Value buf);
  /// The element column of 16-byte chunk `chunk` of stage row `row`
  /// (swizzled with ldmatrix reads).
  Value stageColumn(Value row, Value chunk);
  /// Four 8 x 8 bf16 tiles of stage buffer `mem` (leading indices `at`):
  /// this lane addresses row `row`, chunk `chunk` (nvgpu.ldmatrix x4).
  Value loadMatrixTiles(Value mem, SmallVector<Value> at, Value row,
                        Value chunk);

public:
  /// The i8 workgroup buffer the staged form takes its stage buffers from
  /// (shared with the kernel's decode forms); unset: its own.
  Value stageArena;
  const MatmulTiling &tiling() const { return t; }
  /// Bytes the staged form needs of stageArena (0 without one).
  /// The staged form's buffers are a ring in dynamic workgroup memory.
  bool ring() const { return t.ring(); }
  int64_t stagedArenaBytes(int64_t weights) const {
    return t.staged ? stagedBufferBytes(t, weights) : 0;
  }

private:
  /// The grid-stride loop over `numTiles` tiles from block `bx`; none when
  /// `count` (rows or slots) is below `minCount` > 0, since the op's `*_rows`
  /// kernel does those steps.
  scf::ForOp createTileLoop(Value bx, Value numTiles, Value count,
                            int64_t minCount) {
    if (minCount > 0)
      numTiles = arith::SelectOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, count,
                                idx(minCount)),
          numTiles, idx(0));
    Value gx = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    return scf::ForOp::create(b, loc, bx, numTiles, gx);
  }
  /// This thread's place in a split form's block: sets `lane`, the
  /// fragment column bases and lane coordinates; returns the thread id,
  /// blockIdx.x, the subgroup (its K range) and the block's first column.
  std::tuple<Value, Value, Value, Value> placeSplitSubgroup(int64_t splits) {
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    lane = arith::RemUIOp::create(b, loc, tid, idx(t.subgroupSize));
    Value sg = arith::DivUIOp::create(b, loc, tid, idx(t.subgroupSize));
    Value colBase = mul(by, t.tileN());
    // Column groups (subgroupsN > 1): subgroups splits * g .. take the
    // columns g * fragsN * n .. of the tile.
    splitColumn = idx(0);
    if (t.subgroupsN > 1) {
      splitColumn = mul(arith::DivUIOp::create(b, loc, sg, idx(splits)),
                        t.fragsN * mi.n);
      sg = arith::RemUIOp::create(b, loc, sg, idx(splits));
    }
    for (int64_t j = 0; j < t.fragsN; ++j)
      colBases.push_back(add(add(colBase, splitColumn), j * mi.n));
    aLane = coords(mi.a);
    bLane = coords(mi.b);
    cLane = coords(mi.c);
    kRuns = t.kRuns;
    return {tid, bx, sg, colBase};
  }
  /// Continues inside `if (blockIdx.y < N / tileN)`: a kernel with a decode
  /// form has the decode form's (narrower) column blocks, of which the row
  /// tiles use the first N / tileN. Uniform per block.
  void guardColumnBlock() {
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    auto inside = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, by,
                              idx(p.n / t.tileN())),
        false);
    b.setInsertionPoint(inside.thenBlock()->getTerminator());
  }
  /// Block (bx, by) of the row tiles renumbered by MatmulTiling::
  /// rasterRows: the linear block number l = by * gridDim.x + bx (blocks
  /// with by < N / tileN; guardColumnBlock ends the others) enumerates
  /// groups of r row tiles, each group's blocks taking its rows for one
  /// column tile after another (the last group may have fewer rows).
  /// Returns (first row tile, column tile): a bijection of [0, gridDim.x) x
  /// [0, N / tileN), so the grid-stride row loop still covers every tile of
  /// every column.
  std::pair<Value, Value> rasterTile(Value bx, Value by) {
    int64_t columns = p.n / t.tileN();
    int64_t r = t.rasterRows;
    Value gx = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    Value linear = add(arith::MulIOp::create(b, loc, by, gx), bx);
    if (r == 1)
      return {arith::DivUIOp::create(b, loc, linear, idx(columns)),
              arith::RemUIOp::create(b, loc, linear, idx(columns))};
    Value group = arith::DivUIOp::create(b, loc, linear, idx(r * columns));
    Value first = mul(group, r);
    Value rows = minu(arith::SubIOp::create(b, loc, gx, first), idx(r));
    Value inGroup = arith::RemUIOp::create(b, loc, linear, idx(r * columns));
    return {add(first, arith::RemUIOp::create(b, loc, inGroup, rows)),
            arith::DivUIOp::create(b, loc, inGroup, rows)};
  }
  /// This thread's place in the tile: sets `lane`, the fragment column
  /// bases and lane coordinates; returns blockIdx.x and the subgroup's first
  /// row within a tile.
  std::pair<Value, Value> placeSubgroup() {
    Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
    if (t.rasterRows > 0 && t.rasterMinRows == 0) {
      std::tie(bx, by) = rasterTile(bx, by);
    } else if (t.rasterRows > 0) {
      auto [rasterX, rasterY] = rasterTile(bx, by);
      // Below rasterMinRows rows (grouped: slots) the blocks keep their
      // order: one select per coordinate, uniform per block.
      Value rows = memref::DimOp::create(b, loc, x, 0);
      if (grouped)
        rows = mul(rows, grouped->topK);
      Value rastered = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::uge, rows, idx(t.rasterMinRows));
      bx = arith::SelectOp::create(b, loc, rastered, rasterX, bx);
      by = arith::SelectOp::create(b, loc, rastered, rasterY, by);
    }
    lane = arith::RemUIOp::create(b, loc, tid, idx(t.subgroupSize));
    Value sg = arith::DivUIOp::create(b, loc, tid, idx(t.subgroupSize));
    Value sgM = arith::RemUIOp::create(b, loc, sg, idx(t.subgroupsM));
    Value sgN = arith::DivUIOp::create(b, loc, sg, idx(t.subgroupsM));
    tileCol = mul(by, t.tileN());
    subgroupCol = mul(sgN, t.fragsN * mi.n);
    subgroupRow = mul(sgM, t.subgroupRows());
    Value colBase = add(tileCol, subgroupCol);
    for (int64_t j = 0; j < t.fragsN; ++j)
      colBases.push_back(add(colBase, j * mi.n));
    aLane = coords(mi.a);
    bLane = coords(mi.b);
    kRuns = t.kRuns && !(dense.heads && dense.transposedWeight);
    cLane = coords(mi.c);
    return {bx, subgroupRow};
  }

public:
  /// The grouped-expert form (buildGroupedExpertKernel).
  struct Grouped {
    bool up = true;
    int64_t topK = 0, experts = 0, minSlots = 0;
    /// GroupedExperts::rankExperts (0: every expert is in the weights).
    int64_t rankExperts = 0;
    double limit = 0;
    Value order, starts, routeWeights;
    /// Expert parallelism: the rank's ep coordinate (the i64 argument; its
    /// first expert is computed where a tile needs it, so that nothing
    /// stays live across the kernel's loops).
    Value coordinate;
  };
  /// The grouped kernel's body from its arguments (buildGroupedExpertKernel),
  /// without the return.
  void buildGroupedKernel(ValueRange args, const GroupedExperts &e);
  /// The grouped kernel's decode form: built with the split tiling
  /// (chooseDecodeSplitK), a block takes one instruction's rows (mma.m) of
  /// one expert's slots and its `splits` subgroups each accumulate them over
  /// a K range; the partial sums meet in `arena` (an i8 workgroup buffer),
  /// are added in subgroup order and go through the grouped epilogue.
  void buildGroupedSplitKKernel(ValueRange args, const GroupedExperts &e,
                                Value arena, int64_t splits);

private:
  Grouped bindGroupedArgs(ValueRange args, const GroupedExperts &e);
  void buildGrouped(Grouped g);
  /// The experts' tiles of `tileRows` slots (each expert's in order) as
  /// the block sees them: every thread holds `perThread` consecutive
  /// experts from `firstExpert`, whose `tiles` tiles start at `firstTile`
  /// (a block-wide scan of the tile counts, done once per kernel instead of
  /// a walk over all experts per tile); `found` (workgroup memory) carries
  /// a tile's expert and place from the thread that holds it to the block.
  struct ExpertTiles {
    int64_t tileRows = 0, perThread = 0;
    Value tid, firstExpert, firstTile, tiles, found;
  };
  ExpertTiles scanExpertTiles(int64_t tileRows);
  /// Binds the tile of global expert `found`: `expert` (its index in the
  /// weights) and `tileOwned` (whether it is the rank's; null without
  /// expert parallelism, when every expert is).
  void bindTileExpert(Value found);
  /// `weights`' accumulators of the tile (accumulate), zeros for another
  /// rank's expert without multiplying (a block-uniform branch).
  SmallVector<Value> accumulateRankExpert(int64_t weights);
  /// The epilogue's value `v` of a slot, 0 in a tile of another rank's
  /// expert: those slots contribute nothing to this rank's sum. One store
  /// path for both keeps the registers of the kernel without expert
  /// parallelism (a separate zero-store branch raised moe_up's VGPRs on
  /// gfx950 from 157 to 221).
  Value rankValue(Value v);
  /// Tiles of expert `e` (< experts, else 0) of `table`.
  Value expertTiles(const ExpertTiles &table, Value e);
  /// The expert of grouped tile `tile` and the tile's place among that
  /// expert's tiles; the expert is `experts` for a tile past the last one.
  /// Block-uniform (three barriers): every thread of the block calls it
  /// with the same tile.
  std::pair<Value, Value> findTileExpert(const ExpertTiles &table, Value tile);
  /// The split forms' first half: subgroup `sg` accumulates its K range
  /// (window / splits from `kBase`, the block's K window: all of K, or its
  /// share under a grid split) for every weight and stores its partial tiles
  /// into `partial` [splits, weights, rows, columns] (rows at least tileM);
  /// then a barrier.
  void storePartials(Value partial, Value sg, int64_t splits,
                     int64_t numWeights, Value kBase = {}, int64_t window = 0) {
    int64_t range = (window ? window : p.k) / splits;
    Value kBegin = mul(sg, range);
    if (kBase)
      kBegin = add(kBase, kBegin);
    Value kEnd = add(kBegin, range);
    // Another rank's expert: an empty K range, zero partial sums.
    if (tileOwned)
      kEnd = arith::SelectOp::create(b, loc, tileOwned, kEnd, kBegin);
    SmallVector<Value> accs = accumulate(numWeights, kBegin, kEnd);
    int64_t perWeight = t.fragsM * t.fragsN;
    for (int64_t wi = 0; wi < numWeights; ++wi)
      for (int64_t i = 0; i < t.fragsM; ++i)
        for (int64_t j = 0; j < t.fragsN; ++j) {
          Value acc = accs[wi * perWeight + i * t.fragsN + j];
          int64_t e = 0;
          for (auto piece : mi.c.pieces)
            for (int64_t c = 0; c < mi.c.count; ++c, ++e) {
              Value row = add(cLane.outer, i * mi.m + piece[0]);
              Value col = add(add(add(cLane.inner, splitColumn), j * mi.n),
                              piece[1] + c);
              memref::StoreOp::create(
                  b, loc, vector::ExtractOp::create(b, loc, acc, e), partial,
                  ValueRange{sg, idx(wi), row, col});
            }
        }
    gpu::BarrierOp::create(b, loc);
  }
  /// The second half: element (row, col) of every weight, the subgroups'
  /// partial sums added in subgroup order.
  SmallVector<Value> sumPartials(Value partial, int64_t splits,
                                 int64_t numWeights, Value row, Value col) {
    SmallVector<Value> sums;
    for (int64_t wi = 0; wi < numWeights; ++wi) {
      Value sum = memref::LoadOp::create(b, loc, partial,
                                         ValueRange{idx(0), idx(wi), row, col});
      for (int64_t s2 = 1; s2 < splits; ++s2)
        sum = arith::AddFOp::create(
            b, loc, sum,
            memref::LoadOp::create(b, loc, partial,
                                   ValueRange{idx(s2), idx(wi), row, col}));
      sums.push_back(sum);
    }
    return sums;
  }
  /// The grouped epilogue of one element: the slot at flat position `pos`
  /// of the grouping, column `col`, from W's accumulator `acc` (and W_up's
  /// `upAcc` for moe_up), stored into its token's slot row.
  void storeGroupedElement(Value pos, Value col, Value acc, Value upAcc);
  /// The most tiles of `rows` slots the experts' slot ranges can need:
  /// ceil(slots / rows) + min(experts, slots) (one partial tile per expert
  /// with slots).
  Value groupedTiles(Value slots, int64_t rows) {
    return add(arith::CeilDivUIOp::create(b, loc, slots, idx(rows)),
               arith::MinUIOp::create(b, loc, slots, idx(grouped->experts)));
  }
  /// Slot id (t * k + j) at flat position `pos` of moe_group's order.
  Value slotAt(Value pos) {
    Value k = idx(grouped->topK);
    Value v = memref::LoadOp::create(
        b, loc, grouped->order,
        ValueRange{arith::DivUIOp::create(b, loc, pos, k),
                   arith::RemUIOp::create(b, loc, pos, k)});
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  /// Leading indices of a slot's row of A: (t) of x for moe_up, (t, j) of
  /// the routed activations for moe_down.
  SmallVector<Value> aRowIndices(Value slot) {
    Value k = idx(grouped->topK);
    Value tok = arith::DivUIOp::create(b, loc, slot, k);
    if (grouped->up)
      return {tok};
    return {tok, arith::RemUIOp::create(b, loc, slot, k)};
  }
  Value roundTo(Value v, Type type) {
    Value rounded = arith::TruncFOp::create(b, loc, type, v);
    return arith::ExtFOp::create(b, loc, f32, rounded);
  }
  /// round(silu(min(round(g), L))) * clamp(round(u), -L, L) in f32 (the
  /// caller rounds), silu(x) = x * 1 / (1 + exp(-x)) as in KernelBuilder.
  Value swiglu(Value gateAcc, Value upAcc, double limitValue) {
    Type act = types.y;
    Value limit = cf32(limitValue);
    Value gate = arith::MinimumFOp::create(b, loc, roundTo(gateAcc, act), limit);
    Value up = arith::MaximumFOp::create(
        b, loc, arith::MinimumFOp::create(b, loc, roundTo(upAcc, act), limit),
        cf32(-limitValue));
    Value sig = arith::DivFOp::create(
        b, loc, cf32(1.0),
        arith::AddFOp::create(
            b, loc, cf32(1.0),
            math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, gate))));
    Value silu = roundTo(arith::MulFOp::create(b, loc, gate, sig), act);
    return arith::MulFOp::create(b, loc, silu, up);
  }
  void storeGroupedResults(ValueRange accs);
  /// The dense epilogue of element (row, col) from W's accumulator `acc`
  /// (and W_up's `upAcc` for Swiglu), stored into y or, with hcMult, through
  /// the residual write with the row's `streamWeights`.
  void storeDenseElement(Value row, Value col, Value acc, Value upAcc,
                         ArrayRef<Value> streamWeights);
  /// The residual write's per-row weights (DenseMatmul::hcMult): post[row, :]
  /// then comb[row, :, :], loaded once for the elements of a row.
  SmallVector<Value> loadStreamWeights(Value row);
  /// The residual write of element (row, col) whose value before rounding
  /// is `acc`.
  void storeStreams(Value acc, Value row, Value col, ArrayRef<Value> weights);

  std::optional<Grouped> grouped;
  Value expert, tileOwned, rowStart, rowEnd;
  /// The split forms' first column of this subgroup's column group
  /// (placeSplitSubgroup; 0 with one group).
  Value splitColumn;
  /// The dense projection's epilogue (Store for linears).
  DenseMatmul dense;
  /// The SwiGLU's second weight (up) and its scales; AddSlotSum's routed
  /// slots.
  Value w2, scales2, slotSum;
  /// The residual write's streams, post weights and comb matrices.
  Value streams, streamPost, streamComb;

  const MatmulTiling &t;
  const MatmulProblem &p;
  const MatmulTypes &types;
  const MatrixInstruction &mi;
  Type f32, bf16, fp8, mmaFp8;
  Value x, w, scales, y;
  /// x's scales, one per row and scaleBlockK group (ScaledActivations).
  Value xScales;
  Value lastRow, numRows;
  /// Batched over heads: blockIdx.z.
  Value head;
  SmallVector<Value> rowBases, colBases; // per fragment
  /// The row tile's first row (as elementIndices takes rows: absolute, or
  /// within the expert's slots when grouped) and first column; the
  /// subgroup's first row and column within the tile.
  Value tileRow, tileCol, subgroupRow, subgroupCol;
  LaneCoords aLane, bLane, cLane;
  /// The tiling's K runs, unless a weight is read transposed (one element
  /// per load: no run to widen, and A must follow B's K order).
  bool kRuns = false;
};

} // namespace

/// The elements of vector `v`.
static SmallVector<Value> elementsOf(OpBuilder &b, Location loc, Value v) {
  SmallVector<Value> elems;
  for (int64_t i = 0; i < cast<VectorType>(v.getType()).getNumElements(); ++i)
    elems.push_back(vector::ExtractOp::create(b, loc, v, i));
  return elems;
}

/// c += x * y on one tf32 mma.sync of `mi`'s shape: x and y the A and B
/// fragments' tf32 registers (i32), c the accumulator's f32 elements,
/// updated.
static void tf32MmaSync(OpBuilder &b, Location loc, const MatrixInstruction &mi,
                        ArrayRef<Value> x, ArrayRef<Value> y,
                        SmallVector<Value> &c) {
  SmallVector<Type> fields(c.size(), b.getF32Type());
  auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
  Value d = NVVM::MmaOp::create(
      b, loc, structType, x, y, c, {mi.m, mi.n, mi.k}, std::nullopt,
      std::nullopt,
      std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32, NVVM::MMATypes::tf32},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0, e = c.size(); i < e; ++i)
    c[i] = LLVM::ExtractValueOp::create(b, loc, d, i);
}

/// acc + a * bv for f32 fragments on tf32 mma.sync: each operand split into
/// x_hi (its top 19 bits, a tf32 value) and x_lo = x - x_hi (exact, then
/// also cut to tf32), and acc + a_lo b_hi + a_hi b_lo + a_hi b_hi (the small
/// terms first): relative error about 2^-20 per product instead of tf32's
/// 2^-11 (a_lo b_lo is dropped).
static Value emitTf32x3(OpBuilder &b, Location loc, const MatrixInstruction &mi,
                        Value a, Value bv, Value acc) {
  Type i32 = b.getI32Type();
  Value mask = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(
                                                     int32_t(0xffffe000u)));
  // (hi, lo) registers of a fragment, in fragment order.
  auto split = [&](Value v) {
    SmallVector<Value> hi, lo;
    for (Value x : elementsOf(b, loc, v)) {
      Value bits = arith::BitcastOp::create(b, loc, i32, x);
      Value h = arith::AndIOp::create(b, loc, bits, mask);
      Value rest = arith::SubFOp::create(
          b, loc, x, arith::BitcastOp::create(b, loc, b.getF32Type(), h));
      hi.push_back(h);
      lo.push_back(arith::AndIOp::create(
          b, loc, arith::BitcastOp::create(b, loc, i32, rest), mask));
    }
    return std::make_pair(hi, lo);
  };
  auto [aHi, aLo] = split(a);
  auto [bHi, bLo] = split(bv);
  SmallVector<Value> c = elementsOf(b, loc, acc);
  tf32MmaSync(b, loc, mi, aLo, bHi, c);
  tf32MmaSync(b, loc, mi, aHi, bLo, c);
  tf32MmaSync(b, loc, mi, aHi, bHi, c);
  return vector::FromElementsOp::create(b, loc, acc.getType(), c);
}

static Value tf32Bits(OpBuilder &b, Location loc, Value x) {
  return NVVM::ConvertFloatToTF32Op::create(
      b, loc, b.getI32Type(), x, NVVM::FPRoundingMode::RNA,
      NVVM::SaturationMode::NONE, /*relu=*/false);
}

Value mlir::strata::roundToTf32(OpBuilder &b, Location loc, Value x) {
  return arith::BitcastOp::create(b, loc, b.getF32Type(), tf32Bits(b, loc, x));
}

/// acc + a * bv for f32 fragments on one tf32 mma.sync, each operand
/// rounded to tf32 (cvt.rna.tf32.f32) unless `rounded` says the kernel did
/// (roundToTf32): relative error about 2^-11 per product.
static Value emitTf32(OpBuilder &b, Location loc, const MatrixInstruction &mi,
                      Value a, Value bv, Value acc, bool rounded) {
  auto registers = [&](Value v) {
    SmallVector<Value> regs;
    for (Value x : elementsOf(b, loc, v))
      regs.push_back(rounded
                         ? arith::BitcastOp::create(b, loc, b.getI32Type(), x)
                         : tf32Bits(b, loc, x));
    return regs;
  };
  SmallVector<Value> c = elementsOf(b, loc, acc);
  tf32MmaSync(b, loc, mi, registers(a), registers(bv), c);
  return vector::FromElementsOp::create(b, loc, acc.getType(), c);
}

Value mlir::strata::emitMatrixInstruction(OpBuilder &b, Location loc,
                                          const MatrixInstruction &mi, Value a,
                                          Value bv, Value acc,
                                          F32Products f32Products) {
  auto accType = cast<VectorType>(acc.getType());
  switch (mi.family) {
  case MatrixFamily::Mfma:
    // One f32 per lane is a scalar operand.
    if (mi.operands == MatrixElement::F32 && mi.a.size() == 1) {
      a = vector::ExtractOp::create(b, loc, a, 0);
      bv = vector::ExtractOp::create(b, loc, bv, 0);
    }
    return amdgpu::MFMAOp::create(
        b, loc, accType, b.getI32IntegerAttr(mi.m), b.getI32IntegerAttr(mi.n),
        b.getI32IntegerAttr(mi.k), b.getI32IntegerAttr(1), a, bv, acc,
        b.getI32IntegerAttr(0), b.getI32IntegerAttr(0),
        amdgpu::MFMAPermBAttr::get(b.getContext(), amdgpu::MFMAPermB::none));
  case MatrixFamily::MmaSync: {
    if (mi.operands == MatrixElement::F32)
      return f32Products == F32Products::Exact
                 ? emitTf32x3(b, loc, mi, a, bv, acc)
                 : emitTf32(b, loc, mi, a, bv, acc,
                            f32Products == F32Products::Tf32Rounded);
    // bf16 pairs packed into i32 registers, in fragment order.
    auto asI32 = [&](Value v) {
      int64_t n = cast<VectorType>(v.getType()).getNumElements() / 2;
      Value packed = vector::BitCastOp::create(
          b, loc, VectorType::get({n}, b.getI32Type()), v);
      SmallVector<Value> regs;
      for (int64_t i = 0; i < n; ++i)
        regs.push_back(vector::ExtractOp::create(b, loc, packed, i));
      return regs;
    };
    SmallVector<Value> c;
    for (int64_t i = 0; i < accType.getNumElements(); ++i)
      c.push_back(vector::ExtractOp::create(b, loc, acc, i));
    SmallVector<Type> fields(c.size(), b.getF32Type());
    auto structType = LLVM::LLVMStructType::getLiteral(b.getContext(), fields);
    Value d = NVVM::MmaOp::create(
        b, loc, structType, asI32(a), asI32(bv), c, {mi.m, mi.n, mi.k},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::bf16,
                                      NVVM::MMATypes::bf16},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < accType.getNumElements(); ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, loc, d, i));
    return vector::FromElementsOp::create(b, loc, accType, out);
  }
  case MatrixFamily::None:
  case MatrixFamily::Wgmma:
    break;
  }
  llvm_unreachable("matrix family without a register lowering");
}

Value MatmulKernelBuilder::emitMma(Value a, Value bv, Value acc) {
  return emitMatrixInstruction(b, loc, mi, a, bv, acc);
}

SmallVector<Value> MatmulKernelBuilder::buildKBlockByRows(Value kb,
                                                          ValueRange accs) {
  int64_t steps = t.blockK / mi.k;
  VectorType accType = VectorType::get({mi.c.size()}, f32);
  SmallVector<Value> out(accs.begin(), accs.end());
  SmallVector<std::pair<Value, Value>> weights = weightOperands();
  int64_t perWeight = t.fragsM * t.fragsN;
  bool blockScaled = t.fp8Mode != Fp8Mode::None;

  // B of every weight and column fragment, [weight][j][step x terms]
  // (weightTerms), decoded once for all row fragments; the block scales as
  // C-fragment vectors.
  SmallVector<SmallVector<SmallVector<Value>>> bvs;
  SmallVector<SmallVector<Value>> blockScales;
  for (auto weight : weights) {
    bvs.emplace_back();
    blockScales.emplace_back();
    for (int64_t j = 0; j < t.fragsN; ++j) {
      SmallVector<Value> raw = loadKBlock(weight.first, weightElement(), mi.b,
                                          bLane, colBases[j], kb, false);
      if (blockScaled)
        blockScales.back().push_back(splat(
            loadWeightScale(weight.second, colBases[j], kb), mi.c.size()));
      // [step * terms + term]
      SmallVector<Value> terms;
      for (Value v : raw)
        llvm::append_range(terms, weightTerms(v));
      bvs.back().push_back(terms);
    }
  }

  for (int64_t i = 0; i < t.fragsM; ++i) {
    // Accumulators of row fragment i, weight by weight.
    SmallVector<int64_t> at;
    for (size_t wi = 0; wi < weights.size(); ++wi)
      for (int64_t j = 0; j < t.fragsN; ++j)
        at.push_back(wi * perWeight + i * t.fragsN + j);
    SmallVector<Value> current;
    for (int64_t a : at)
      current.push_back(out[a]);
    auto multiply = [&]() {
      SmallVector<Value> blk =
          blockScaled ? SmallVector<Value>(at.size(), zeros(accType)) : current;
      for (int64_t s = 0; s < steps; ++s) {
        Value a = loadKStep(x, bf16, mi.a, aLane, rowBases[i], kb, s, true);
        for (size_t wi = 0; wi < weights.size(); ++wi)
          for (int64_t j = 0; j < t.fragsN; ++j) {
            Value &acc = blk[wi * t.fragsN + j];
            int64_t terms = bvs[wi][j].size() / steps;
            for (int64_t term = 0; term < terms; ++term)
              acc = emitMma(a, bvs[wi][j][s * terms + term], acc);
          }
      }
      if (!blockScaled)
        return blk;
      for (size_t wi = 0; wi < weights.size(); ++wi)
        for (int64_t j = 0; j < t.fragsN; ++j) {
          int64_t n = wi * t.fragsN + j;
          blk[n] = math::FmaOp::create(b, loc, blk[n], blockScales[wi][j],
                                       current[n]);
        }
      return blk;
    };
    SmallVector<Value> next;
    if (i == 0) {
      // The block has rows (buildSplitK), so its first fragment has some.
      next = multiply();
    } else {
      auto has = scf::IfOp::create(
          b, loc, ValueRange(current).getTypes(),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowBases[i],
                                numRows),
          /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(has.thenBlock());
        scf::YieldOp::create(b, loc, multiply());
        b.setInsertionPointToStart(has.elseBlock());
        scf::YieldOp::create(b, loc, current);
      }
      next.assign(has.getResults().begin(), has.getResults().end());
    }
    for (auto [n, a] : llvm::enumerate(at))
      out[a] = next[n];
  }
  return out;
}

SmallVector<Value> MatmulKernelBuilder::buildKBlock(Value kb,
                                                    ValueRange accs) {
  if (t.stepwiseA)
    return buildKBlockByRows(kb, accs);
  int64_t steps = t.blockK / mi.k;
  VectorType accType = VectorType::get({mi.c.size()}, f32);
  SmallVector<Value> out(accs.begin(), accs.end());
  auto at = [&](int64_t i, int64_t j) { return i * t.fragsN + j; };

  SmallVector<std::pair<Value, Value>> weights = weightOperands();
  int64_t perWeight = t.fragsM * t.fragsN;
  auto atW = [&](size_t wi, int64_t i, int64_t j) {
    return wi * perWeight + at(i, j);
  };

  // bf16 weights accumulate into the running sums; fp8 ones into a block
  // accumulator per tile, scaled into the running sum below.
  bool blockScaled = t.fp8Mode != Fp8Mode::None;
  SmallVector<Value> blk =
      blockScaled ? SmallVector<Value>(out.size(), zeros(accType)) : out;
  // Per C element: x's scales (Quantize: computed; ScaledActivations:
  // loaded).
  SmallVector<Value> rowScale(t.fragsM);
  // The fp8 instruction on x's codes: quantised here, or as they come.
  bool fp8Operands = t.fp8Mode == Fp8Mode::QuantizeActivations ||
                     (scaledInput() && mi.operands != MatrixElement::BF16);
  if (!fp8Operands) {
    SmallVector<SmallVector<Value>> a; // [i][step]
    for (int64_t i = 0; i < t.fragsM; ++i) {
      if (!scaledInput()) {
        a.push_back(loadKBlock(x, bf16, mi.a, aLane, rowBases[i], kb, true));
        continue;
      }
      // e4m3 codes decoded to bf16 (exact).
      a.emplace_back();
      for (Value codes : loadKBlock(x, fp8, mi.a, aLane, rowBases[i], kb, true))
        a.back().push_back(decodeFp8(codes));
      rowScale[i] = loadRowScales(tileScaleRows[i], kb);
    }
    for (auto [wi, weight] : llvm::enumerate(weights))
      for (int64_t j = 0; j < t.fragsN; ++j) {
        SmallVector<Value> bvs = loadKBlock(weight.first, weightElement(), mi.b,
                                            bLane, colBases[j], kb, false);
        for (int64_t s = 0; s < steps; ++s)
          for (Value bv : weightTerms(bvs[s]))
            for (int64_t i = 0; i < t.fragsM; ++i)
              blk[atW(wi, i, j)] = emitMma(a[i][s], bv, blk[atW(wi, i, j)]);
      }
    if (!blockScaled)
      return blk;
  } else {
    SmallVector<SmallVector<Value>> q(t.fragsM);
    if (scaledInput()) {
      // x's OCP codes as the instruction's operands (FNUZ: the same bits
      // are half the value, so the row scale doubles).
      for (int64_t i = 0; i < t.fragsM; ++i) {
        for (Value codes :
             loadKBlock(x, fp8, mi.a, aLane, rowBases[i], kb, true))
          q[i].push_back(toMmaFp8(codes));
        rowScale[i] = loadRowScales(tileScaleRows[i], kb);
        if (fnuzScaleFactor() != 1.0)
          rowScale[i] = arith::MulFOp::create(
              b, loc, rowScale[i], splat(cf32(fnuzScaleFactor()), mi.c.size()));
      }
    } else {
      // Quantise x: each lane holds `steps` fragments of its row; the row's
      // amax over the K block is reduced across the inner lane groups.
      int64_t n = mi.a.size();
      double fp8Max = getFp8Max(mi.operands);
      for (int64_t i = 0; i < t.fragsM; ++i) {
        SmallVector<Value> vals;
        Value amax = cf32(0.0);
        for (Value a :
             loadKBlock(x, bf16, mi.a, aLane, rowBases[i], kb, true)) {
          Value v = arith::ExtFOp::create(b, loc, VectorType::get({n}, f32), a);
          vals.push_back(v);
          Value m = vector::ReductionOp::create(
              b, loc, vector::CombiningKind::MAXIMUMF,
              math::AbsFOp::create(b, loc, v));
          amax = arith::MaximumFOp::create(b, loc, amax, m);
        }
        for (int64_t g = 1; g < mi.a.inner.mod; g *= 2) {
          auto shuffle = gpu::ShuffleOp::create(
              b, loc, amax, ci32(g * mi.a.inner.div), ci32(t.subgroupSize),
              gpu::ShuffleMode::XOR);
          amax = arith::MaximumFOp::create(b, loc, amax,
                                           shuffle.getShuffleResult());
        }
        amax = arith::MaximumFOp::create(b, loc, amax, cf32(1e-12));
        Value scale = arith::DivFOp::create(b, loc, amax, cf32(fp8Max));
        Value inv = arith::DivFOp::create(b, loc, cf32(fp8Max), amax);
        for (Value v : vals) {
          Value scaled = arith::MulFOp::create(b, loc, v, splat(inv, n));
          scaled =
              arith::MinimumFOp::create(b, loc, scaled, splat(cf32(fp8Max), n));
          scaled = arith::MaximumFOp::create(b, loc, scaled,
                                             splat(cf32(-fp8Max), n));
          q[i].push_back(arith::TruncFOp::create(
              b, loc, VectorType::get({n}, mmaFp8), scaled));
        }
        // Scale of the row of each C element: from lane `row` (inner group 0).
        SmallVector<Value> perElement;
        for (auto piece : mi.c.pieces)
          for (int64_t e = 0; e < mi.c.count; ++e) {
            (void)e;
            Value row = add(cLane.outer, piece[0]);
            Value src = arith::IndexCastOp::create(b, loc, b.getI32Type(), row);
            auto shuffle =
                gpu::ShuffleOp::create(b, loc, scale, src, ci32(t.subgroupSize),
                                       gpu::ShuffleMode::IDX);
            perElement.push_back(shuffle.getShuffleResult());
          }
        rowScale[i] =
            vector::FromElementsOp::create(b, loc, accType, perElement);
      }
    }
    // Every weight (the SwiGLU's W_up too) against the same quantised A.
    for (auto [wi, weight] : llvm::enumerate(weights))
      for (int64_t j = 0; j < t.fragsN; ++j) {
        SmallVector<Value> bvs =
            loadKBlock(weight.first, fp8, mi.b, bLane, colBases[j], kb, false);
        for (int64_t s = 0; s < steps; ++s) {
          Value bv = toMmaFp8(bvs[s]);
          for (int64_t i = 0; i < t.fragsM; ++i)
            blk[atW(wi, i, j)] = emitMma(q[i][s], bv, blk[atW(wi, i, j)]);
        }
      }
  }
  for (auto [wi, weight] : llvm::enumerate(weights))
    for (int64_t j = 0; j < t.fragsN; ++j) {
      Value ws = loadWeightScale(weight.second, colBases[j], kb);
      if (fnuzScaleFactor() != 1.0 && fp8Operands)
        ws = arith::MulFOp::create(b, loc, ws, cf32(fnuzScaleFactor()));
      Value wsv = splat(ws, mi.c.size());
      for (int64_t i = 0; i < t.fragsM; ++i) {
        Value scale = wsv;
        if (rowScale[i])
          scale = arith::MulFOp::create(b, loc, rowScale[i], wsv);
        out[atW(wi, i, j)] = math::FmaOp::create(b, loc, blk[atW(wi, i, j)],
                                                 scale, out[atW(wi, i, j)]);
      }
    }
  return out;
}

int64_t MatmulKernelBuilder::arenaRowPad(int64_t weights) const {
  int64_t padded = weights * t.tileM() * (t.tileN() + kArenaRowPad) * 2;
  return padded <= stagedBufferBytes(t, weights) ? kArenaRowPad : 0;
}

bool MatmulKernelBuilder::storesThroughArena(int64_t weights) const {
  int64_t bytes = weights * t.tileM() * t.tileN() * 2;
  return t.staged && types.y.isBF16() && t.tileN() % kRunColumns == 0 &&
         bytes <= stagedBufferBytes(t, weights);
}

void MatmulKernelBuilder::storeThroughArena(
    ValueRange accs, int64_t weights, Value base, Value bound,
    llvm::function_ref<void(Value, Value, ArrayRef<Value>, ArrayRef<Value>)>
        storeRun) {
  int64_t rowElements = t.tileN() + arenaRowPad(weights);
  Value tile = viewWorkgroupArena(b, loc, tileArena, 0,
                                  {weights, t.tileM(), rowElements}, bf16);
  // Every thread's last reads of the stage buffers are done.
  gpu::BarrierOp::create(b, loc);
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t wi = 0; wi < weights; ++wi)
    for (int64_t i = 0; i < t.fragsM; ++i)
      for (int64_t j = 0; j < t.fragsN; ++j) {
        Value acc = accs[wi * perWeight + i * t.fragsN + j];
        Value rowBase = add(arith::SubIOp::create(b, loc, rowBases[i], tileRow),
                            cLane.outer);
        Value colBase = add(arith::SubIOp::create(b, loc, colBases[j], tileCol),
                            cLane.inner);
        int64_t e = 0;
        for (auto piece : mi.c.pieces) {
          // The piece's mi.c.count consecutive columns, rounded, as one
          // vector store.
          SmallVector<Value> values;
          for (int64_t c = 0; c < mi.c.count; ++c, ++e)
            values.push_back(arith::TruncFOp::create(
                b, loc, bf16, vector::ExtractOp::create(b, loc, acc, e)));
          Value vec = vector::FromElementsOp::create(
              b, loc, VectorType::get({mi.c.count}, bf16), values);
          auto store = vector::StoreOp::create(
              b, loc, vec, tile,
              ValueRange{idx(wi), add(rowBase, piece[0]),
                         add(colBase, piece[1])});
          store.setAlignment(uint64_t(mi.c.count * 2));
        }
      }
  gpu::BarrierOp::create(b, loc);
  // Runs: thread `tid` takes run tid, tid + threads, ... of the tile's
  // tileM x (tileN / kRunColumns), row-major.
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  int64_t runsPerRow = t.tileN() / kRunColumns;
  int64_t runs = t.tileM() * runsPerRow;
  int64_t threads = t.threads();
  int64_t rounds = llvm::divideCeil(runs, threads);
  for (int64_t r = 0; r < rounds; ++r) {
    Value run = add(tid, r * threads);
    OpBuilder::InsertionGuard guard(b);
    if ((r + 1) * threads > runs) {
      auto inside = scf::IfOp::create(b, loc, ult(run, idx(runs)), false);
      b.setInsertionPointToStart(inside.thenBlock());
    }
    Value localRow = arith::DivUIOp::create(b, loc, run, idx(runsPerRow));
    Value localCol = mul(arith::RemUIOp::create(b, loc, run, idx(runsPerRow)),
                         kRunColumns);
    SmallVector<SmallVector<Value>> values;
    for (int64_t wi = 0; wi < weights; ++wi)
      values.push_back(loadRun(tile, {idx(wi), localRow, localCol}));
    Value col = add(tileCol, localCol);
    Value row = add(base, localRow);
    ifThen(ult(row, bound), [&] {
      storeRun(row, col, values[0],
               weights > 1 ? ArrayRef<Value>(values[1]) : ArrayRef<Value>());
    });
  }
  // The runs' reads end before the arena takes the next tile's stages.
  gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> MatmulKernelBuilder::loadRun(Value mem,
                                                SmallVector<Value> at) {
  Type elem = cast<MemRefType>(mem.getType()).getElementType();
  auto load = vector::LoadOp::create(
      b, loc, VectorType::get({kRunColumns}, elem), mem, at);
  load.setAlignment(uint64_t(kRunColumns * elem.getIntOrFloatBitWidth() / 8));
  Value vec = load;
  SmallVector<Value> values;
  for (int64_t c = 0; c < kRunColumns; ++c) {
    Value v = vector::ExtractOp::create(b, loc, vec, c);
    values.push_back(elem == f32 ? v : arith::ExtFOp::create(b, loc, f32, v));
  }
  return values;
}

void MatmulKernelBuilder::storeRun(ArrayRef<Value> values, Value mem,
                                   SmallVector<Value> at) {
  Type elem = cast<MemRefType>(mem.getType()).getElementType();
  SmallVector<Value> rounded;
  for (Value v : values)
    rounded.push_back(elem == f32 ? v
                                  : arith::TruncFOp::create(b, loc, elem, v));
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({kRunColumns}, elem), rounded);
  auto store = vector::StoreOp::create(b, loc, vec, mem, at);
  store.setAlignment(uint64_t(kRunColumns * elem.getIntOrFloatBitWidth() / 8));
}

void MatmulKernelBuilder::storeDenseRun(Value row, Value col,
                                        ArrayRef<Value> run,
                                        ArrayRef<Value> upRun) {
  // The element epilogue of storeDenseElement on rounded values (rounding
  // them again changes nothing), kRunColumns at a time.
  SmallVector<Value> v(run.begin(), run.end());
  switch (dense.epilogue) {
  case MatmulEpilogue::Store:
    break;
  case MatmulEpilogue::Swiglu:
    for (int64_t c = 0; c < kRunColumns; ++c)
      v[c] = swiglu(run[c], upRun[c], dense.limit);
    break;
  case MatmulEpilogue::AddSlotSum: {
    SmallVector<Value> sums(kRunColumns, cf32(0.0));
    for (int64_t k = 0; k < dense.topK; ++k) {
      SmallVector<Value> slot = loadRun(slotSum, {row, idx(k), col});
      for (int64_t c = 0; c < kRunColumns; ++c)
        sums[c] = arith::AddFOp::create(b, loc, sums[c], slot[c]);
    }
    for (int64_t c = 0; c < kRunColumns; ++c)
      v[c] = arith::AddFOp::create(b, loc, sums[c], run[c]);
    break;
  }
  }
  if (!dense.hcMult) {
    SmallVector<Value> at = {row, col};
    if (dense.heads)
      at.insert(at.begin() + 1, head);
    storeRun(v, y, at);
    return;
  }
  // storeStreams: post * round(v) first, then the source streams in order.
  int64_t h = dense.hcMult;
  SmallVector<Value> weights = loadStreamWeights(row);
  SmallVector<SmallVector<Value>> sources;
  for (int64_t i = 0; i < h; ++i)
    sources.push_back(loadRun(streams, {row, idx(i), col}));
  for (int64_t j = 0; j < h; ++j) {
    SmallVector<Value> out;
    for (int64_t c = 0; c < kRunColumns; ++c) {
      Value sum = arith::MulFOp::create(b, loc, weights[j],
                                        roundTo(v[c], types.y));
      for (int64_t i = 0; i < h; ++i)
        sum = arith::AddFOp::create(
            b, loc, sum,
            arith::MulFOp::create(b, loc, weights[h + i * h + j],
                                  sources[i][c]));
      out.push_back(sum);
    }
    storeRun(out, y, {row, idx(j), col});
  }
}

void MatmulKernelBuilder::storeGroupedRun(Value pos, Value col,
                                          ArrayRef<Value> run,
                                          ArrayRef<Value> upRun) {
  // storeGroupedElement on rounded values, kRunColumns at a time.
  Value slot = slotAt(pos);
  Value k = idx(grouped->topK);
  Value tok = arith::DivUIOp::create(b, loc, slot, k);
  Value slotInToken = arith::RemUIOp::create(b, loc, slot, k);
  SmallVector<Value> v;
  Value routeWeight;
  if (!grouped->up)
    routeWeight = memref::LoadOp::create(b, loc, grouped->routeWeights,
                                         ValueRange{tok, slotInToken});
  for (int64_t c = 0; c < kRunColumns; ++c)
    v.push_back(rankValue(
        grouped->up ? swiglu(run[c], upRun[c], grouped->limit)
                    : arith::MulFOp::create(b, loc, routeWeight, run[c])
                          .getResult()));
  storeRun(v, y, {tok, slotInToken, col});
}

void MatmulKernelBuilder::storeResults(ValueRange accs) {
  int64_t weights = dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1;
  if (storesThroughArena(weights)) {
    storeThroughArena(accs, weights, tileRow, numRows,
                      [&](Value row, Value col, ArrayRef<Value> run,
                          ArrayRef<Value> upRun) {
                        storeDenseRun(row, col, run, upRun);
                      });
    return;
  }
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t i = 0; i < t.fragsM; ++i)
    for (int64_t j = 0; j < t.fragsN; ++j) {
      Value acc = accs[i * t.fragsN + j];
      int64_t e = 0;
      for (auto piece : mi.c.pieces) {
        Value row = add(add(rowBases[i], cLane.outer), piece[0]);
        Value inBounds = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, row, numRows);
        auto ifOp = scf::IfOp::create(b, loc, inBounds, false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        SmallVector<Value> streamWeights;
        if (dense.hcMult)
          streamWeights = loadStreamWeights(row);
        for (int64_t c = 0; c < mi.c.count; ++c, ++e) {
          Value col = add(add(colBases[j], cLane.inner), piece[1] + c);
          Value upAcc;
          if (dense.epilogue == MatmulEpilogue::Swiglu)
            upAcc = vector::ExtractOp::create(
                b, loc, accs[perWeight + i * t.fragsN + j], e);
          storeDenseElement(row, col,
                            vector::ExtractOp::create(b, loc, acc, e), upAcc,
                            streamWeights);
        }
      }
    }
}

SmallVector<MatmulKernelBuilder::StageChunk>
MatmulKernelBuilder::stageChunks(int64_t weights, int64_t elements,
                                 bool withA) {
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  int64_t threads = t.threads();
  int64_t perRow = t.stageK / elements;
  SmallVector<StageChunk> chunks;
  for (int64_t wi = withA ? -1 : 0; wi < weights; ++wi) {
    int64_t rows = wi < 0 ? t.tileM() : t.tileN();
    for (int64_t c = 0; c < rows * perRow / threads; ++c) {
      StageChunk chunk;
      chunk.weight = wi;
      chunk.elements = elements;
      Value at = add(tid, c * threads);
      chunk.row = arith::DivUIOp::create(b, loc, at, idx(perRow));
      chunk.part = arith::RemUIOp::create(b, loc, at, idx(perRow));
      // A rows past M re-read the last row (elementIndices' clamp).
      chunk.at = wi < 0 ? elementIndices(add(tileRow, chunk.row), idx(0),
                                         /*clamp=*/true)
                        : elementIndices(add(tileCol, chunk.row), idx(0),
                                         /*clamp=*/false);
      chunks.push_back(chunk);
    }
  }
  return chunks;
}

SmallVector<Value> MatmulKernelBuilder::chunkSource(const StageChunk &chunk,
                                                    Value kb) {
  SmallVector<Value> at = chunk.at;
  at.back() = add(kb, mul(chunk.part, chunk.elements));
  return at;
}

SmallVector<Value> MatmulKernelBuilder::chunkTarget(const StageChunk &chunk,
                                                    Value buf) {
  SmallVector<Value> at = {buf, chunk.row, stageColumn(chunk.row, chunk.part)};
  if (chunk.weight >= 0)
    at.insert(at.begin() + 1, idx(chunk.weight));
  return at;
}

SmallVector<Value>
MatmulKernelBuilder::loadStage(ArrayRef<StageChunk> chunks, Value kb) {
  SmallVector<std::pair<Value, Value>> weights = weightOperands();
  SmallVector<Value> values;
  for (const StageChunk &chunk : chunks) {
    if (chunk.transposed) {
      values.push_back(loadRun(weights[chunk.weight].first, bf16, 8,
                               transposedSource(chunk, kb)));
      continue;
    }
    SmallVector<Value> at = chunkSource(chunk, kb);
    if (chunk.weight < 0) {
      values.push_back(loadRun(x, bf16, 8, at));
      continue;
    }
    auto [weight, weightScales] = weights[chunk.weight];
    Value raw = loadRun(weight, weightElement(), 8, at);
    if (t.fp8Mode == Fp8Mode::None) {
      values.push_back(raw);
      continue;
    }
    // round(decoded * scale), the reference's bf16 dequantisation.
    Value scale = loadWeightScale(weightScales, at[at.size() - 2], kb);
    Value scaled =
        arith::MulFOp::create(b, loc, decodeFp8ToF32(raw), splat(scale, 8));
    values.push_back(arith::TruncFOp::create(
        b, loc, VectorType::get({8}, bf16), scaled));
  }
  return values;
}

Value MatmulKernelBuilder::copyStage(ArrayRef<StageChunk> chunks, Value kb,
                                     Value stageA, Value stageB, Value buf) {
  if (chunks.empty())
    return {};
  SmallVector<Value> tokens;
  auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
  SmallVector<std::pair<Value, Value>> weights = weightOperands();
  for (const StageChunk &chunk : chunks) {
    bool isA = chunk.weight < 0;
    SmallVector<Value> from = chunkSource(chunk, kb);
    SmallVector<Value> to = chunkTarget(chunk, buf);
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        b, loc, token, isA ? stageA : stageB, to,
        isA ? x : weights[chunk.weight].first, from, b.getIndexAttr(8),
        Value(), b.getUnitAttr()));
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, tokens);
}

void MatmulKernelBuilder::storeStage(ArrayRef<StageChunk> chunks,
                                     ArrayRef<Value> values, Value stageA,
                                     Value stageB, Value buf) {
  for (auto [chunk, value] : llvm::zip_equal(chunks, values)) {
    if (chunk.transposed) {
      storeTransposed(chunk, value, stageB, buf);
      continue;
    }
    auto store = vector::StoreOp::create(b, loc, value,
                                         chunk.weight < 0 ? stageA : stageB,
                                         chunkTarget(chunk, buf));
    store.setAlignment(uint64_t(16));
  }
}

Value MatmulKernelBuilder::stageColumn(Value row, Value chunk) {
  // The hardware's swizzles of 64-byte rows (chunk c of row r at c ^ ((r /
  // 2) mod 4)) and of 128-byte rows (c ^ (r mod 8)); a 16-byte chunk holds
  // 8 bf16 values or 16 e4m3 codes.
  int64_t perChunk = 16 / t.stageElementBytes();
  if (t.wgmma && t.stageRowBytes() == 128) {
    chunk = arith::XOrIOp::create(b, loc, chunk,
                                  arith::AndIOp::create(b, loc, row, idx(7)));
  } else if (t.ldmatrix || t.wgmma) {
    Value swizzle = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, row, idx(1)), idx(3));
    chunk = arith::XOrIOp::create(b, loc, chunk, swizzle);
  }
  return mul(chunk, perChunk);
}

Value MatmulKernelBuilder::loadMatrixTiles(Value mem, SmallVector<Value> at,
                                           Value row, Value chunk) {
  at.push_back(row);
  at.push_back(stageColumn(row, chunk));
  auto type = VectorType::get({4, 2}, bf16);
  return nvgpu::LdMatrixOp::create(b, loc, type, mem, at,
                                   /*transpose=*/false, /*numTiles=*/4);
}

SmallVector<Value> MatmulKernelBuilder::multiplyStageLdmatrix(
    Value stageA, Value bufA, Value stageB, Value bufB, ValueRange accs,
    int64_t weights) {
  // Lane group q = lane / 8 addresses tile q of the four: its lane's row
  // (lane mod 8) of that tile.
  int64_t steps = t.stageK / mi.k;
  Value inGroup = arith::RemUIOp::create(b, loc, lane, idx(8));
  Value q = arith::DivUIOp::create(b, loc, lane, idx(8));
  Value qLow = arith::RemUIOp::create(b, loc, q, idx(2));
  Value qHigh = arith::DivUIOp::create(b, loc, q, idx(2));
  auto flat = [&](Value v, int64_t first, int64_t tiles) -> Value {
    auto part = vector::ExtractStridedSliceOp::create(
        b, loc, v, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{tiles},
        ArrayRef<int64_t>{1});
    return vector::ShapeCastOp::create(
        b, loc, VectorType::get({tiles * 2}, bf16), part);
  };
  // A (16 x 16 per step): tiles (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15): a0..a3 of the instruction.
  SmallVector<SmallVector<Value>> a(t.fragsM); // [i][step]
  for (int64_t i = 0; i < t.fragsM; ++i)
    for (int64_t s = 0; s < steps; ++s) {
      Value row = add(add(add(subgroupRow, i * mi.m), inGroup), mul(qLow, 8));
      Value chunk = add(qHigh, 2 * s);
      a[i].push_back(flat(loadMatrixTiles(stageA, {bufA}, row, chunk), 0, 4));
    }
  // B (two column fragments of 8 per load): tiles (cols j, k 0-7), (cols j,
  // k 8-15), (cols j + 1, k 0-7), (cols j + 1, k 8-15): b0, b1 of each.
  SmallVector<Value> out(accs.begin(), accs.end());
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t wi = 0; wi < weights; ++wi)
    for (int64_t j = 0; j < t.fragsN; j += 2)
      for (int64_t s = 0; s < steps; ++s) {
        Value col = add(add(add(subgroupCol, j * mi.n), inGroup), mul(qHigh, 8));
        Value chunk = add(qLow, 2 * s);
        Value tiles = loadMatrixTiles(stageB, {bufB, idx(wi)}, col, chunk);
        for (int64_t half = 0; half < 2; ++half) {
          Value bv = flat(tiles, 2 * half, 2);
          for (int64_t i = 0; i < t.fragsM; ++i) {
            Value &acc = out[wi * perWeight + i * t.fragsN + j + half];
            acc = emitMma(a[i][s], bv, acc);
          }
        }
      }
  return out;
}

SmallVector<Value> MatmulKernelBuilder::multiplyStage(Value stageA, Value bufA,
                                                      Value stageB, Value bufB,
                                                      ValueRange accs,
                                                      int64_t weights) {
  if (t.ldmatrix)
    return multiplyStageLdmatrix(stageA, bufA, stageB, bufB, accs, weights);
  int64_t steps = t.stageK / mi.k;
  SmallVector<Value> out(accs.begin(), accs.end());
  SmallVector<SmallVector<Value>> a; // [i][step]
  for (int64_t i = 0; i < t.fragsM; ++i)
    a.push_back(loadKBlock(stageA, bf16, mi.a, aLane,
                           add(subgroupRow, i * mi.m), idx(0), false,
                           [&](Value row, Value col) {
                             return SmallVector<Value>{bufA, row, col};
                           }));
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t wi = 0; wi < weights; ++wi)
    for (int64_t j = 0; j < t.fragsN; ++j) {
      SmallVector<Value> bv = loadKBlock(
          stageB, bf16, mi.b, bLane, add(subgroupCol, j * mi.n), idx(0), false,
          [&](Value row, Value col) {
            return SmallVector<Value>{bufB, idx(wi), row, col};
          });
      for (int64_t s = 0; s < steps; ++s)
        for (int64_t i = 0; i < t.fragsM; ++i) {
          Value &acc = out[wi * perWeight + i * t.fragsN + j];
          acc = emitMma(a[i][s], bv[s], acc);
        }
    }
  return out;
}

SmallVector<Value> MatmulKernelBuilder::accumulateStaged(int64_t weights,
                                                         Value kBase,
                                                         int64_t kLength) {
  assert((!kBase || t.ring()) && "K ranges of the staged tiles: ring only");
  Value arena = stageArena;
  if (!arena) {
    auto func =
        b.getInsertionBlock()->getParent()->getParentOfType<gpu::GPUFuncOp>();
    int64_t bytes = stagedBufferBytes(t, weights);
    arena = t.ring() ? addDynamicWorkgroupArena(func, loc, bytes)
                     : addWorkgroupBuffer(func, loc, {bytes}, b.getI8Type());
  }
  tileArena = arena;
  if (t.ring())
    return accumulateRing(arena, weights, kBase, kLength);
  Value stageA =
      viewWorkgroupArena(b, loc, arena, 0, {2, t.tileM(), t.stageK}, bf16);
  Value stageB = viewWorkgroupArena(b, loc, arena, 2 * t.tileM() * t.stageK * 2,
                                    {2, weights, t.tileN(), t.stageK}, bf16);
  SmallVector<StageChunk> chunks =
      stageChunks(t.transposedWeight ? 0 : weights);
  if (t.transposedWeight)
    llvm::append_range(chunks, transposedChunks(weights));
  // Chunks the asynchronous copy moves (MatmulTiling::asyncCopy: rows
  // stored as bf16, no conversion) and those that go through registers (fp8
  // weights decoded, f32 activations rounded).
  auto storedAsBf16 = [](Value mem) {
    return cast<MemRefType>(mem.getType()).getElementType().isBF16();
  };
  SmallVector<StageChunk> copied, converted;
  for (const StageChunk &chunk : chunks)
    (t.asyncCopy && !chunk.transposed && storedAsBf16(chunk.weight < 0 ? x : w)
         ? copied
         : converted)
        .push_back(chunk);
  // Block 0 into buffer 0; then per block: the next block's copies and
  // loads issued, the current buffer multiplied, the converted chunks of
  // the next block stored into the other buffer (read last in the previous
  // block, before its barrier), the copies waited for, a barrier. The last
  // block re-reads itself as its "next" (no branch).
  auto stage = [&](Value kb, Value buf, auto &&between) {
    Value group = copyStage(copied, kb, stageA, stageB, buf);
    SmallVector<Value> values = loadStage(converted, kb);
    between();
    storeStage(converted, values, stageA, stageB, buf);
    if (group)
      nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                       b.getI32IntegerAttr(0));
    gpu::BarrierOp::create(b, loc);
  };
  stage(idx(0), idx(0), [] {});
  VectorType accType = VectorType::get({mi.c.size()}, f32);
  SmallVector<Value> inits(weights * t.fragsM * t.fragsN, zeros(accType));
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(p.k), idx(t.stageK), inits,
      [&](OpBuilder &nb, Location, Value kb, ValueRange iterArgs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value buf = arith::RemUIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, kb, idx(t.stageK)), idx(2));
        Value next = minu(add(kb, t.stageK), idx(p.k - t.stageK));
        SmallVector<Value> accs;
        stage(next, arith::SubIOp::create(b, loc, idx(1), buf), [&] {
          accs = multiplyStage(stageA, buf, stageB, buf, iterArgs, weights);
        });
        scf::YieldOp::create(b, loc, accs);
      });
  return SmallVector<Value>(loop.getResults());
}

SmallVector<Value>
MatmulKernelBuilder::rawChunkScales(ArrayRef<StageChunk> chunks, Value kb) {
  SmallVector<std::pair<Value, Value>> weights = weightOperands();
  SmallVector<Value> scales;
  for (const StageChunk &chunk : chunks)
    scales.push_back(loadWeightScale(weights[chunk.weight].second,
                                     chunk.at[chunk.at.size() - 2], kb));
  return scales;
}

void MatmulKernelBuilder::decodeRawChunks(ArrayRef<StageChunk> chunks,
                                          ArrayRef<Value> scales, Value ring,
                                          Value slot, Value decoded,
                                          Value buf) {
  for (auto [chunk, scale] : llvm::zip_equal(chunks, scales)) {
    auto raw = vector::LoadOp::create(
        b, loc, VectorType::get({16}, fp8), ring,
        ValueRange{slot, idx(chunk.weight), chunk.row, mul(chunk.part, 16)});
    raw.setAlignment(uint64_t(16));
    // round(decoded * scale), the reference's bf16 dequantisation.
    Value scaled =
        arith::MulFOp::create(b, loc, decodeFp8ToF32(raw), splat(scale, 16));
    Value values = arith::TruncFOp::create(
        b, loc, VectorType::get({16}, bf16), scaled);
    for (int64_t half = 0; half < 2; ++half) {
      Value part = vector::ExtractStridedSliceOp::create(
          b, loc, values, ArrayRef<int64_t>{8 * half}, ArrayRef<int64_t>{8},
          ArrayRef<int64_t>{1});
      Value column = stageColumn(chunk.row, add(mul(chunk.part, 2), half));
      auto store = vector::StoreOp::create(
          b, loc, part, decoded,
          ValueRange{buf, idx(chunk.weight), chunk.row, column});
      store.setAlignment(uint64_t(16));
    }
  }
}

SmallVector<MatmulKernelBuilder::StageChunk>
MatmulKernelBuilder::transposedChunks(int64_t weights) {
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  int64_t threads = t.threads();
  SmallVector<StageChunk> chunks;
  for (int64_t wi = 0; wi < weights; ++wi)
    for (int64_t c = 0; c < t.stageK * t.tileN() / 8 / threads; ++c) {
      StageChunk chunk;
      chunk.weight = wi;
      chunk.transposed = true;
      Value at = add(tid, c * threads);
      chunk.row = arith::RemUIOp::create(b, loc, at, idx(t.stageK));
      chunk.part = arith::DivUIOp::create(b, loc, at, idx(t.stageK));
      chunks.push_back(chunk);
    }
  return chunks;
}

SmallVector<Value>
MatmulKernelBuilder::transposedSource(const StageChunk &chunk, Value kb) {
  // Head h's block of W^T: rows h * stride + offset + k, columns n.
  return elementIndices(add(kb, chunk.row), add(tileCol, mul(chunk.part, 8)),
                        /*clamp=*/false);
}

Value MatmulKernelBuilder::transposedRingColumn(const StageChunk &chunk) {
  Value swizzle = arith::AndIOp::create(b, loc, chunk.row, idx(7));
  return mul(arith::XOrIOp::create(b, loc, chunk.part, swizzle), 8);
}

void MatmulKernelBuilder::transposeRawChunks(ArrayRef<StageChunk> chunks,
                                             Value ring, Value slot,
                                             Value decoded, Value buf) {
  for (const StageChunk &chunk : chunks) {
    auto raw =
        vector::LoadOp::create(b, loc, VectorType::get({8}, bf16), ring,
                               ValueRange{slot, idx(chunk.weight), chunk.row,
                                          transposedRingColumn(chunk)});
    raw.setAlignment(uint64_t(16));
    storeTransposed(chunk, raw, decoded, buf);
  }
}

void MatmulKernelBuilder::storeTransposed(const StageChunk &chunk, Value values,
                                          Value stage, Value buf) {
  // Element e is W^T[k = row][n = 8 part + e]: column k of stage row n.
  Value kChunk = arith::DivUIOp::create(b, loc, chunk.row, idx(8));
  Value kInChunk = arith::RemUIOp::create(b, loc, chunk.row, idx(8));
  for (int64_t e = 0; e < 8; ++e) {
    Value n = add(mul(chunk.part, 8), e);
    Value column = add(stageColumn(n, kChunk), kInChunk);
    memref::StoreOp::create(b, loc,
                            vector::ExtractOp::create(b, loc, values, e), stage,
                            ValueRange{buf, idx(chunk.weight), n, column});
  }
}

Value MatmulKernelBuilder::warpgroupDescriptor(Value arenaAddress,
                                               Value offset) {
  auto i64 = b.getI64Type();
  auto constant = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(i64, APInt(64, v)));
  };
  Value address = arith::AddIOp::create(
      b, loc, arenaAddress,
      arith::IndexCastUIOp::create(b, loc, i64, offset));
  // Bits 0-13: the address / 16 (18 bits of shared address).
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address, constant(0x3ffff)),
      constant(4));
  // Bits 16-29: leading byte offset / 16 (unused by K-major swizzled
  // operands whose K step fits the swizzle row; 1 by convention); 32-45:
  // stride byte offset / 16 between 8-row groups (8 stage rows); 62-63:
  // the swizzle of the stage rows (stageColumn): layout 2 for 64 bytes,
  // 1 for 128.
  uint64_t layout = t.stageRowBytes() == 128 ? 1 : 2;
  uint64_t fixed = (uint64_t(1) << 16) |
                   (uint64_t(8 * t.stageRowBytes() / 16) << 32) |
                   (layout << 62);
  return arith::OrIOp::create(b, loc, start, constant(fixed));
}

SmallVector<Value>
MatmulKernelBuilder::issueWarpgroupStage(Value arenaAddress, Value aOffset,
                                         Value bOffset, ValueRange accs,
                                         int64_t weights, bool fresh) {
  int64_t n = weights * t.tileN();
  int64_t registers = kWarpgroupRows * n / kWarpgroupThreads;
  int64_t rowBytes = t.stageRowBytes();
  // Warpgroup g's rows start 64 g rows into each fragment's (one
  // warpgroup: g = 0).
  if (t.warpgroups > 1)
    aOffset = add(aOffset, mul(warpgroupIndex(), kWarpgroupRows * rowBytes));
  int64_t perFragment = mi.c.size();
  auto structType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(registers, f32));
  // accs[w * perWeight + i * fragsN + j]: weight w, row fragment i (the
  // tile's rows 64 i ..), 8 columns j.
  int64_t perWeight = t.fragsM * t.fragsN;
  auto accIndex = [&](int64_t i, int64_t r) {
    int64_t column = r / perFragment;
    return (column / t.fragsN) * perWeight + i * t.fragsN +
           column % t.fragsN;
  };
  // A K step is 32 bytes along the stage rows: 16 bf16 values, or 32 e4m3
  // codes (ScaledActivations: the fp8 instruction on x's and W's codes).
  bool codes = scaledInput();
  int64_t stepK = codes ? 32 : 16;
  NVVM::WGMMATypes operandType =
      codes ? NVVM::WGMMATypes::e4m3 : NVVM::WGMMATypes::bf16;
  auto shape =
      NVVM::MMAShapeAttr::get(b.getContext(), kWarpgroupRows, n, stepK);
  // The accumulators of each 64-row half in the instruction's register
  // order: 4 per 8 columns (weight-major), the m16n8 fragment order of
  // each.
  // `fresh`: the first step overwrites them (scale-d 0), so they start
  // undefined.
  SmallVector<Value> d;
  for (int64_t i = 0; i < t.fragsM; ++i) {
    Value packed = LLVM::PoisonOp::create(b, loc, structType);
    for (int64_t r = 0; r < registers && !fresh; ++r)
      packed = LLVM::InsertValueOp::create(
          b, loc, packed,
          vector::ExtractOp::create(b, loc, accs[accIndex(i, r)],
                                    r % perFragment),
          r);
    d.push_back(packed);
  }
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t step = 0; step < rowBytes / 32; ++step) {
    Value descB = warpgroupDescriptor(arenaAddress, add(bOffset, 32 * step));
    auto scaleOut = fresh && step == 0 ? NVVM::WGMMAScaleOut::zero
                                       : NVVM::WGMMAScaleOut::one;
    for (int64_t i = 0; i < t.fragsM; ++i) {
      Value descA = warpgroupDescriptor(
          arenaAddress,
          add(aOffset, i * t.fragmentRowStride() * rowBytes + 32 * step));
      d[i] = NVVM::WgmmaMmaAsyncOp::create(
          b, loc, structType, d[i], descA, descB, shape, operandType,
          operandType, NVVM::WGMMATypes::f32, scaleOut, NVVM::WGMMAScaleIn::one,
          NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row, NVVM::MMALayout::col,
          NVVM::MMAIntOverflowAttr());
    }
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  VectorType accType = VectorType::get({perFragment}, f32);
  SmallVector<SmallVector<Value>> elements(accs.size());
  for (int64_t i = 0; i < t.fragsM; ++i)
    for (int64_t r = 0; r < registers; ++r)
      elements[accIndex(i, r)].push_back(
          LLVM::ExtractValueOp::create(b, loc, d[i], r));
  SmallVector<Value> out;
  for (auto &e : elements)
    out.push_back(vector::FromElementsOp::create(b, loc, accType, e));
  return out;
}

/// The ring (MatmulTiling::ring), K block k of nK in slot k mod S:
///   prologue: copy blocks 0 .. S-2 (a group each); [fp8: wait for block 0,
///             decode it into decoded buffer 0]
///   block k:  barrier (block k's rows, copied or decoded by every thread,
///             are visible; every subgroup is done with block k-1, whose
///             slot and decoded buffer are now free);
///             copy block k+S-1 into slot (k-1) mod S; [fp8: load the block
///             scales of block k+1];
///             multiply slot k mod S (A) and slot k mod S or decoded buffer
///             k mod 2 (B) (wgmma: issued before the copies, which then
///             overlap the products);
///             wait for this thread's copies of block k+1; [fp8: decode them
///             from slot (k+1) mod S into decoded buffer (k+1) mod 2]
///   after:    wait for every copy, barrier (the next tile reuses the ring).
/// Blocks past the last one are copied with no source bytes (zero fill, no
/// reads), so the loop has no branch. One barrier per block.
SmallVector<Value> MatmulKernelBuilder::accumulateRing(Value arena,
                                                       int64_t weights,
                                                       Value kBase,
                                                       int64_t kLength) {
  if (scaledInput()) {
    assert(!kBase && "the fp8 ring runs no grid split");
    return accumulateScaledRing(arena, weights);
  }
  if (!kBase) {
    kBase = idx(0);
    kLength = p.k;
  }
  int64_t stages = t.stages;
  bool fp8Weights = t.fp8Mode == Fp8Mode::DecodeWeights;
  bool transposed = t.transposedWeight;
  // Weight blocks that pass through the decoded buffers on their way from
  // the ring to the products (fp8 decoded, W^T transposed).
  bool decodes = fp8Weights || transposed;
  Type ringElement = fp8Weights ? Type(fp8) : Type(bf16);
  // Bytes of one ring slot of x and of the weights, and of one decoded
  // bf16 block of fp8 weights.
  int64_t slotBytesA = t.tileM() * t.stageK * 2;
  int64_t slotBytesB = weights * t.tileN() * t.stageK * (fp8Weights ? 1 : 2);
  int64_t decodedBytes = weights * t.tileN() * t.stageK * 2;
  int64_t ringABytes = stages * slotBytesA;
  int64_t ringBBytes = stages * slotBytesB;
  Value stageA =
      viewWorkgroupArena(b, loc, arena, 0, {stages, t.tileM(), t.stageK}, bf16);
  SmallVector<int64_t> ringShape = {stages, weights, t.tileN(), t.stageK};
  if (transposed)
    ringShape = {stages, weights, t.stageK, t.tileN()};
  Value ringB =
      viewWorkgroupArena(b, loc, arena, ringABytes, ringShape, ringElement);
  Value decoded =
      decodes ? viewWorkgroupArena(b, loc, arena, ringABytes + ringBBytes,
                                   {2, weights, t.tileN(), t.stageK}, bf16)
              : Value();
  SmallVector<StageChunk> copied = stageChunks(decodes ? 0 : weights);
  SmallVector<StageChunk> raw;
  if (fp8Weights)
    raw = stageChunks(weights, /*elements=*/16, /*withA=*/false);
  if (transposed)
    raw = transposedChunks(weights);
  int64_t blocks = kLength / t.stageK;
  auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
  SmallVector<std::pair<Value, Value>> operands = weightOperands();
  // Where K block `block` (index) starts, clamped to the last block.
  auto blockStart = [&](Value block) {
    return add(kBase, mul(minu(block, idx(blocks - 1)), t.stageK));
  };
  // Block `block` (index) into slot `slot`: the source clamped to the last
  // block, with no bytes read past it.
  auto copyBlock = [&](Value block, Value slot) {
    Value inside = ult(block, idx(blocks));
    Value kb = blockStart(block);
    SmallVector<Value> tokens;
    auto copy = [&](Value dst, SmallVector<Value> to, Value src,
                    SmallVector<Value> from, int64_t elements) {
      Value count = arith::SelectOp::create(b, loc, inside, idx(elements),
                                            idx(0));
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          b, loc, token, dst, to, src, from, b.getIndexAttr(elements), count,
          b.getUnitAttr()));
    };
    for (const StageChunk &chunk : copied) {
      bool isA = chunk.weight < 0;
      SmallVector<Value> to = chunkTarget(chunk, slot);
      copy(isA ? stageA : ringB, to, isA ? x : operands[chunk.weight].first,
           chunkSource(chunk, kb), 8);
    }
    for (const StageChunk &chunk : raw) {
      if (transposed)
        copy(ringB,
             {slot, idx(chunk.weight), chunk.row, transposedRingColumn(chunk)},
             operands[chunk.weight].first, transposedSource(chunk, kb), 8);
      else
        copy(ringB, {slot, idx(chunk.weight), chunk.row, mul(chunk.part, 16)},
             operands[chunk.weight].first, chunkSource(chunk, kb), 16);
    }
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, tokens);
  };
  Value group;
  for (int64_t s = 0; s + 1 < stages; ++s)
    group = copyBlock(idx(s), idx(s));
  auto waitForNext = [&] {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(stages - 2));
  };
  waitForNext();
  if (fp8Weights)
    decodeRawChunks(raw, rawChunkScales(raw, kBase), ringB, idx(0), decoded,
                    idx(0));
  if (transposed)
    transposeRawChunks(raw, ringB, idx(0), decoded, idx(0));
  Value arenaAddress;
  if (t.wgmma) {
    fenceForWarpgroup();
    arenaAddress = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arena));
  }
  Value hasRows = warpgroupHasRows();
  VectorType accType = VectorType::get({mi.c.size()}, f32);
  SmallVector<Value> inits(weights * t.fragsM * t.fragsN, zeros(accType));
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(blocks), idx(1), inits,
      [&](OpBuilder &nb, Location, Value k, ValueRange iterArgs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        gpu::BarrierOp::create(b, loc);
        auto slotOf = [&](Value block) {
          return arith::RemUIOp::create(b, loc, block, idx(stages));
        };
        Value slot = slotOf(k);
        Value ahead = add(k, stages - 1);
        // wgmma: the copies are issued after the products, whose
        // asynchronous run they overlap (they fill slot (k - 1) mod S,
        // which no product of block k reads).
        if (!t.wgmma)
          copyBlock(ahead, slotOf(ahead));
        Value next = add(k, 1);
        SmallVector<Value> scales;
        if (fp8Weights)
          scales = rawChunkScales(raw, blockStart(next));
        Value half = arith::RemUIOp::create(b, loc, k, idx(2));
        SmallVector<Value> accs;
        if (t.wgmma) {
          Value bOffset =
              decodes ? add(mul(half, decodedBytes), ringABytes + ringBBytes)
                      : add(mul(slot, slotBytesB), ringABytes);
          Value aOffset = mul(slot, slotBytesA);
          accs = ifWarpgroupHasRows(hasRows, iterArgs, [&] {
            return issueWarpgroupStage(arenaAddress, aOffset, bOffset, iterArgs,
                                       weights);
          });
          copyBlock(ahead, slotOf(ahead));
        } else if (decodes) {
          accs = multiplyStage(stageA, slot, decoded, half, iterArgs, weights);
        } else {
          accs = multiplyStage(stageA, slot, ringB, slot, iterArgs, weights);
        }
        waitForNext();
        if (fp8Weights)
          decodeRawChunks(raw, scales, ringB, slotOf(next), decoded,
                          arith::RemUIOp::create(b, loc, next, idx(2)));
        if (transposed)
          transposeRawChunks(raw, ringB, slotOf(next), decoded,
                             arith::RemUIOp::create(b, loc, next, idx(2)));
        if (t.wgmma) {
          // Block k + 1's rows are this thread's writes; block k's
          // products end before the barrier frees its slot.
          fenceForWarpgroup();
          NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        }
        scf::YieldOp::create(b, loc, accs);
      });
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  return SmallVector<Value>(loop.getResults());
}

/// The ring of x's and W's e4m3 codes, K block k of nK in slot k mod S:
///   prologue: copy blocks 0 .. S-2 (a group each)
///   block k:  barrier (block k's codes are visible, block k-1's slot is
///             free); load block k's scales; issue the fp8 wgmma group of
///             slot k mod S into fresh accumulators (skipped by a warpgroup
///             without rows: zeros); copy block k+S-1 into slot (k-1) mod S
///             while it runs; wait for this
///             thread's copies of block k+1 and fence them for the async
///             proxy; wait for the group; promote with both scales
///   after:    wait for every copy, barrier (the next tile reuses the ring).
SmallVector<Value> MatmulKernelBuilder::accumulateScaledRing(Value arena,
                                                             int64_t weights) {
  int64_t stages = t.stages;
  int64_t rowBytes = t.stageRowBytes();
  int64_t slotBytesA = t.tileM() * rowBytes;
  int64_t slotBytesB = weights * t.tileN() * rowBytes;
  int64_t ringABytes = stages * slotBytesA;
  Value ringA =
      viewWorkgroupArena(b, loc, arena, 0, {stages, t.tileM(), t.stageK}, fp8);
  Value ringB = viewWorkgroupArena(b, loc, arena, ringABytes,
                                   {stages, weights, t.tileN(), t.stageK}, fp8);
  SmallVector<StageChunk> chunks = stageChunks(weights, /*elements=*/16);
  int64_t blocks = p.k / t.stageK;
  auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
  SmallVector<std::pair<Value, Value>> operands = weightOperands();
  // Block `block` (index) into slot `slot`; past the last block the copies
  // read nothing and fill zeros, so the loop has no branch.
  auto copyBlock = [&](Value block, Value slot) {
    Value inside = ult(block, idx(blocks));
    Value kb = mul(minu(block, idx(blocks - 1)), t.stageK);
    Value count = arith::SelectOp::create(b, loc, inside, idx(16), idx(0));
    SmallVector<Value> tokens;
    for (const StageChunk &chunk : chunks) {
      bool isA = chunk.weight < 0;
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          b, loc, token, isA ? ringA : ringB, chunkTarget(chunk, slot),
          isA ? x : operands[chunk.weight].first, chunkSource(chunk, kb),
          b.getIndexAttr(16), count, b.getUnitAttr()));
    }
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, tokens);
  };
  Value group;
  for (int64_t s = 0; s + 1 < stages; ++s)
    group = copyBlock(idx(s), idx(s));
  auto waitForNext = [&] {
    nvgpu::DeviceAsyncWaitOp::create(b, loc, group,
                                     b.getI32IntegerAttr(stages - 2));
  };
  waitForNext();
  fenceForWarpgroup();
  Value arenaAddress = arith::IndexCastUIOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arena));
  Value hasRows = warpgroupHasRows();
  SmallVector<SmallVector<SmallVector<Value>>> scaleRows;
  for (int64_t i = 0; i < t.fragsM; ++i)
    scaleRows.push_back(rowScaleIndices(i));
  VectorType accType = VectorType::get({mi.c.size()}, f32);
  SmallVector<Value> inits(weights * t.fragsM * t.fragsN, zeros(accType));
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(blocks), idx(1), inits,
      [&](OpBuilder &nb, Location, Value k, ValueRange iterArgs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        gpu::BarrierOp::create(b, loc);
        auto slotOf = [&](Value block) {
          return arith::RemUIOp::create(b, loc, block, idx(stages));
        };
        Value slot = slotOf(k);
        Value ahead = add(k, stages - 1);
        Value aOffset = mul(slot, slotBytesA);
        Value bOffset = add(mul(slot, slotBytesB), ringABytes);
        // The block's scales are loaded before its products, which hide
        // their latency (loaded after the wait, every block would wait for
        // them).
        BlockScales scales =
            loadBlockScales(mul(k, t.stageK), weights, scaleRows);
        // Without rows a warpgroup's stage adds zeros.
        SmallVector<Value> blockAccs = ifWarpgroupHasRows(hasRows, inits, [&] {
          return issueWarpgroupStage(arenaAddress, aOffset, bOffset, iterArgs,
                                     weights, /*fresh=*/true);
        });
        // The next copies' issue overlaps the products (slot (k - 1) mod S,
        // which they do not read).
        copyBlock(ahead, slotOf(ahead));
        waitForNext();
        // Block k + 1's codes are this thread's writes.
        fenceForWarpgroup();
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        scf::YieldOp::create(
            b, loc, promoteScaledBlock(blockAccs, iterArgs, scales, weights));
      });
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(0));
  gpu::BarrierOp::create(b, loc);
  return SmallVector<Value>(loop.getResults());
}

MatmulKernelBuilder::BlockScales MatmulKernelBuilder::loadBlockScales(
    Value kb, int64_t weights,
    ArrayRef<SmallVector<SmallVector<Value>>> scaleRows) {
  BlockScales scales;
  for (int64_t i = 0; i < t.fragsM; ++i)
    scales.rows.push_back(loadRowScales(scaleRows[i], kb));
  SmallVector<std::pair<Value, Value>> operands = weightOperands();
  // One block scale per weight when the tile's columns lie in one scale
  // block (tileN divides scaleBlockN: tiles start at multiples of tileN).
  bool oneScale = t.scaleBlockN % t.tileN() == 0;
  for (int64_t wi = 0; wi < weights; ++wi) {
    Value tileScale;
    if (oneScale)
      tileScale = loadWeightScale(operands[wi].second, colBases[0], kb);
    for (int64_t j = 0; j < t.fragsN; ++j)
      scales.columns.push_back(
          oneScale ? tileScale
                   : loadWeightScale(operands[wi].second, colBases[j], kb));
  }
  return scales;
}

SmallVector<Value>
MatmulKernelBuilder::promoteScaledBlock(ValueRange blocks, ValueRange accs,
                                        const BlockScales &scales,
                                        int64_t weights) {
  SmallVector<Value> out(accs.begin(), accs.end());
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t wi = 0; wi < weights; ++wi)
    for (int64_t j = 0; j < t.fragsN; ++j) {
      Value ws = splat(scales.columns[wi * t.fragsN + j], mi.c.size());
      for (int64_t i = 0; i < t.fragsM; ++i) {
        int64_t a = wi * perWeight + i * t.fragsN + j;
        Value scale = arith::MulFOp::create(b, loc, scales.rows[i], ws);
        out[a] = math::FmaOp::create(b, loc, blocks[a], scale, accs[a]);
      }
    }
  return out;
}

void MatmulKernelBuilder::storeDenseElement(Value row, Value col, Value acc,
                                            Value upAcc,
                                            ArrayRef<Value> streamWeights) {
  Value v = acc;
  switch (dense.epilogue) {
  case MatmulEpilogue::Store:
    break;
  case MatmulEpilogue::Swiglu:
    v = swiglu(acc, upAcc, dense.limit);
    break;
  case MatmulEpilogue::AddSlotSum: {
    // The routed slots summed in slot order, then the rounded projection
    // (FfnOps' moe_shared_down).
    Value sum = cf32(0.0);
    for (int64_t k = 0; k < dense.topK; ++k) {
      Value r = memref::LoadOp::create(b, loc, slotSum,
                                       ValueRange{row, idx(k), col});
      sum = arith::AddFOp::create(b, loc, sum,
                                  arith::ExtFOp::create(b, loc, f32, r));
    }
    v = arith::AddFOp::create(b, loc, sum, roundTo(acc, types.y));
    break;
  }
  }
  if (dense.hcMult) {
    storeStreams(v, row, col, streamWeights);
    return;
  }
  if (types.y != f32)
    v = arith::TruncFOp::create(b, loc, types.y, v);
  SmallVector<Value> at = {row, col};
  if (dense.heads)
    at.insert(at.begin() + 1, head);
  memref::StoreOp::create(b, loc, v, y, at);
}

void MatmulKernelBuilder::bindArgs(ValueRange args, const DenseMatmul &d) {
  dense = d;
  KernelArguments roles(dense.roles);
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  x = at(KernelRole::X);
  slotSum = at(KernelRole::SlotSum);
  w = at(KernelRole::Weight);
  scales = at(KernelRole::WeightScales);
  w2 = at(KernelRole::UpWeight);
  scales2 = at(KernelRole::UpScales);
  streams = at(KernelRole::Streams);
  streamPost = at(KernelRole::StreamPost);
  streamComb = at(KernelRole::StreamComb);
  y = at(KernelRole::Out);
}

void MatmulKernelBuilder::build(ValueRange args, const DenseMatmul &d) {
  bindArgs(args, d);
  auto [bx, subgroupRow] = placeSubgroup();
  OpBuilder::InsertionGuard columnGuard(b);
  guardColumnBlock();
  if (dense.heads)
    head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  numRows = memref::DimOp::create(b, loc, x, 0);
  lastRow = arith::SubIOp::create(b, loc, numRows, idx(1));

  // Row tiles over the grid with a grid stride: any grid x covers all M
  // rows (one launch geometry serves dispatches of different M), and M = 0
  // runs no tile. The trip count depends on the block only, so the
  // subgroups of a block stay converged.
  scf::ForOp tileLoop = createTileLoop(
      bx, arith::CeilDivUIOp::create(b, loc, numRows, idx(t.tileM())),
      numRows, dense.minRows);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(tileLoop.getBody()->getTerminator());
  Value tile = tileLoop.getInductionVar();
  tileRow = mul(tile, t.tileM());
  Value rowBase = add(tileRow, subgroupRow);
  for (int64_t i = 0; i < t.fragsM; ++i)
    rowBases.push_back(add(rowBase, i * t.fragmentRowStride()));

  storeResults(
      accumulate(dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1));
  b.setInsertionPointAfter(tileLoop);
}

void MatmulKernelBuilder::buildSplitKPartOfGrid(Value partial, int64_t splits,
                                                const GridSplitArgs &grid,
                                                Value tid, Value bx, Value sg,
                                                Value colBase, Value rowBase,
                                                int64_t numWeights) {
  int64_t threads = splits * t.subgroupsN * t.subgroupSize;
  int64_t perThread = t.tileM() * t.tileN() / threads;
  // K split over the grid too: block z's subgroups split its share of K,
  // their sums go to its scratch slice, the tile's last block adds the
  // slices in split order and runs the epilogue.
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value bz = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  int64_t window = p.k / grid.splits;
  storePartials(partial, sg, splits, numWeights, mul(bz, window), window);
  int64_t sliceFloats = numWeights * t.tileM() * t.tileN();
  Value partials = scratchFloats(grid);
  auto element = [&](Value slice, int64_t wi, Value at) {
    return add(add(slice, at), wi * t.tileM() * t.tileN());
  };
  Value mine = sliceStart(bx, by, bz, sliceFloats);
  for (int64_t i = 0; i < perThread; ++i) {
    Value at = add(tid, i * threads);
    Value local = arith::DivUIOp::create(b, loc, at, idx(t.tileN()));
    Value col = arith::RemUIOp::create(b, loc, at, idx(t.tileN()));
    SmallVector<Value> sums =
        sumPartials(partial, splits, numWeights, local, col);
    for (auto [wi, sum] : llvm::enumerate(sums))
      memref::StoreOp::create(b, loc, sum, partials,
                              ValueRange{element(mine, wi, at)});
  }
  finishInLastBlock(grid, bx, by, [&] {
    for (int64_t i = 0; i < perThread; ++i) {
      Value at = add(tid, i * threads);
      Value local = arith::DivUIOp::create(b, loc, at, idx(t.tileN()));
      Value col = arith::RemUIOp::create(b, loc, at, idx(t.tileN()));
      Value row = add(rowBase, local);
      ifThen(ult(row, numRows), [&] {
        SmallVector<Value> totals(numWeights, cf32(0.0));
        for (int64_t z = 0; z < grid.splits; ++z) {
          Value slice = sliceStart(bx, by, idx(z), sliceFloats);
          for (int64_t wi = 0; wi < numWeights; ++wi)
            totals[wi] = arith::AddFOp::create(
                b, loc, totals[wi],
                memref::LoadOp::create(b, loc, partials,
                                       ValueRange{element(slice, wi, at)}));
        }
        SmallVector<Value> streamWeights;
        if (dense.hcMult)
          streamWeights = loadStreamWeights(row);
        storeDenseElement(row, add(colBase, col), totals[0],
                          numWeights > 1 ? totals[1] : Value(), streamWeights);
      });
    }
  });
}

void MatmulKernelBuilder::buildSplitK(ValueRange args, Value partial,
                                      int64_t splits, const DenseMatmul &d,
                                      const GridSplitArgs *grid) {
  bindArgs(args, d);
  auto [tid, bx, sg, colBase] = placeSplitSubgroup(splits);
  numRows = memref::DimOp::create(b, loc, x, 0);
  lastRow = arith::SubIOp::create(b, loc, numRows, idx(1));
  int64_t numWeights = dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1;

  // The block's rows [bx * tileM, + tileM), if it has any (grid x is the
  // row tiles' ceil(M / tileM); with one row fragment only block 0 has
  // rows).
  Value rowBase = mul(bx, t.tileM());
  auto has =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                              rowBase, numRows),
                        false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(has.thenBlock()->getTerminator());
  for (int64_t i = 0; i < t.fragsM; ++i)
    rowBases.push_back(add(rowBase, i * mi.m));
  int64_t threads = splits * t.subgroupsN * t.subgroupSize;
  int64_t perThread = t.tileM() * t.tileN() / threads;
  if (grid && grid->splits > 1) {
    buildSplitKPartOfGrid(partial, splits, *grid, tid, bx, sg, colBase, rowBase,
                          numWeights);
    return;
  }
  storePartials(partial, sg, splits, numWeights);
  // Each thread adds up some of the tile's elements, subgroup by subgroup.
  for (int64_t i = 0; i < perThread; ++i) {
    Value at = add(tid, i * threads);
    Value local = arith::DivUIOp::create(b, loc, at, idx(t.tileN()));
    Value col = arith::RemUIOp::create(b, loc, at, idx(t.tileN()));
    Value row = add(rowBase, local);
    auto inBounds = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, numRows),
        false);
    OpBuilder::InsertionGuard rowGuard(b);
    b.setInsertionPoint(inBounds.thenBlock()->getTerminator());
    SmallVector<Value> sums =
        sumPartials(partial, splits, numWeights, local, col);
    SmallVector<Value> streamWeights;
    if (dense.hcMult)
      streamWeights = loadStreamWeights(row);
    storeDenseElement(row, add(colBase, col), sums[0],
                      numWeights > 1 ? sums[1] : Value(), streamWeights);
  }
}

void MatmulKernelBuilder::finishInLastBlock(const GridSplitArgs &grid, Value bx,
                                            Value by,
                                            llvm::function_ref<void()> finish) {
  StringRef scope = mi.family == MatrixFamily::Mfma ? "agent" : "device";
  LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::release, scope);
  barrier();
  Value gx = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
  Value tileIndex = add(bx, arith::MulIOp::create(b, loc, gx, by));
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  ifThen(ieq(tid, idx(0)), [&] {
    Value before =
        memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, ci32(1),
                                    grid.counters, ValueRange{tileIndex});
    Value last = ieq(before, ci32(grid.splits - 1));
    memref::StoreOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, b.getI32Type(), last),
        grid.lastFlag, ValueRange{idx(0)});
    // The next dispatch finds the counter at zero.
    ifThen(last, [&] {
      memref::StoreOp::create(b, loc, ci32(0), grid.counters,
                              ValueRange{tileIndex});
    });
  });
  barrier();
  Value isLast =
      ieq(memref::LoadOp::create(b, loc, grid.lastFlag, ValueRange{idx(0)}),
          ci32(1));
  ifThen(isLast, [&] {
    LLVM::FenceOp::create(b, loc, LLVM::AtomicOrdering::acquire, scope);
    finish();
  });
}

void MatmulKernelBuilder::buildGridSplit(ValueRange args, const DenseMatmul &d,
                                         const GridSplitArgs &grid) {
  bindArgs(args, d);
  auto [blockX, subgroupRow] = placeSubgroup();
  Value bx = blockX;
  OpBuilder::InsertionGuard columnGuard(b);
  guardColumnBlock();
  numRows = memref::DimOp::create(b, loc, x, 0);
  lastRow = arith::SubIOp::create(b, loc, numRows, idx(1));
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value bz = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  tileRow = mul(bx, t.tileM());
  Value rowBase = add(tileRow, subgroupRow);
  for (int64_t i = 0; i < t.fragsM; ++i)
    rowBases.push_back(add(rowBase, i * t.fragmentRowStride()));
  int64_t weights = dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1;
  int64_t range = p.k / grid.splits;
  Value kBegin = mul(bz, range);
  // The staged ring's tiles (GridSplitK::staged) walk their K range through
  // the ring.
  SmallVector<Value> accs =
      t.staged ? accumulateStaged(weights, kBegin, range)
               : accumulate(weights, kBegin, add(kBegin, range));

  // This block's accumulators into its scratch slice: accumulator a of
  // thread `tid` at floats (a x threads + tid) x c of the slice (each
  // thread's c floats contiguous, a subgroup's stores one run).
  int64_t c = mi.c.size();
  int64_t threads = t.threads();
  int64_t sliceFloats = int64_t(accs.size()) * threads * c;
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value partials = scratchFloats(grid);
  auto at = [&](Value slice, int64_t a) {
    return add(slice, mul(add(tid, a * threads), c));
  };
  VectorType accType = VectorType::get({c}, f32);
  Value mine = sliceStart(bx, by, bz, sliceFloats);
  for (auto [a, acc] : llvm::enumerate(accs))
    vector::StoreOp::create(b, loc, acc, partials,
                            ValueRange{at(mine, int64_t(a))});
  finishInLastBlock(grid, bx, by, [&] {
    SmallVector<Value> sums(accs.size(), zeros(accType));
    for (int64_t z = 0; z < grid.splits; ++z) {
      Value slice = sliceStart(bx, by, idx(z), sliceFloats);
      for (size_t a = 0; a < accs.size(); ++a)
        sums[a] = arith::AddFOp::create(
            b, loc, sums[a],
            vector::LoadOp::create(b, loc, accType, partials,
                                   ValueRange{at(slice, int64_t(a))}));
    }
    storeResults(sums);
  });
}

void MatmulKernelBuilder::buildWeightGemv(ValueRange args, Value partial,
                                          int64_t splits,
                                          const DenseMatmul &d) {
  bindArgs(args, d);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value laneId = arith::RemUIOp::create(b, loc, tid, idx(t.subgroupSize));
  Value sg = arith::DivUIOp::create(b, loc, tid, idx(t.subgroupSize));
  numRows = memref::DimOp::create(b, loc, x, 0);
  Value colBase = mul(by, kWeightGemvColumns);
  int64_t threads = splits * t.subgroupsN * t.subgroupSize;
  int64_t loads = llvm::divideCeil(p.k, threads * kWeightGemvRun);
  // Element k of load j: (j * threads + tid) * kWeightGemvRun + e; a run
  // past K reads the last run and its weights count as zero.
  VectorType run = VectorType::get({kWeightGemvRun}, f32);
  SmallVector<Value> ks, inside;
  for (int64_t j = 0; j < loads; ++j) {
    Value k = mul(add(tid, j * threads), kWeightGemvRun);
    inside.push_back(ult(k, idx(p.k)));
    ks.push_back(minu(k, idx(p.k - kWeightGemvRun)));
  }
  SmallVector<SmallVector<Value>> weight(kWeightGemvColumns);
  for (int64_t c = 0; c < kWeightGemvColumns; ++c)
    for (auto [k, in] : llvm::zip(ks, inside)) {
      auto load = vector::LoadOp::create(b, loc, run, w,
                                         ValueRange{add(colBase, c), k});
      load.setAlignment(uint64_t(kWeightGemvRun * 4));
      weight[c].push_back(arith::SelectOp::create(
          b, loc, in, load.getResult(),
          arith::ConstantOp::create(b, loc, b.getZeroAttr(run))));
    }
  // The step's rows one by one (the trip count is the block's: uniform).
  auto rows = scf::ForOp::create(b, loc, idx(0), numRows, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(rows.getBody()->getTerminator());
  Value row = rows.getInductionVar();
  SmallVector<Value> xs;
  for (Value k : ks) {
    auto load = vector::LoadOp::create(
        b, loc, VectorType::get({kWeightGemvRun}, bf16), x,
        ValueRange{row, k});
    load.setAlignment(uint64_t(kWeightGemvRun * 2));
    xs.push_back(arith::ExtFOp::create(
        b, loc, VectorType::get({kWeightGemvRun}, f32), load.getResult()));
  }
  for (int64_t c = 0; c < kWeightGemvColumns; ++c) {
    Value acc = cf32(0.0);
    for (int64_t j = 0; j < loads; ++j)
      for (int64_t e = 0; e < kWeightGemvRun; ++e)
        acc = math::FmaOp::create(
            b, loc, vector::ExtractOp::create(b, loc, xs[j], e),
            vector::ExtractOp::create(b, loc, weight[c][j], e), acc);
    acc = subgroupSum(acc, t.subgroupSize);
    ifThen(ieq(laneId, idx(0)), [&] {
      memref::StoreOp::create(b, loc, acc, partial,
                              ValueRange{sg, idx(0), idx(0), idx(c)});
    });
  }
  gpu::BarrierOp::create(b, loc);
  // Thread c adds column c's subgroup sums in subgroup order.
  ifThen(ult(tid, idx(kWeightGemvColumns)), [&] {
    Value sum = cf32(0.0);
    for (int64_t s = 0; s < splits; ++s)
      sum = arith::AddFOp::create(
          b, loc, sum,
          memref::LoadOp::create(b, loc, partial,
                                 ValueRange{idx(s), idx(0), idx(0), tid}));
    storeDenseElement(row, add(colBase, tid), sum, Value(), {});
  });
  // The sums are read before the next row overwrites them.
  gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> MatmulKernelBuilder::loadStreamWeights(Value row) {
  // post[row, 0..h) then comb[row, i, j] row-major.
  int64_t h = dense.hcMult;
  SmallVector<Value> weights;
  for (int64_t j = 0; j < h; ++j)
    weights.push_back(
        memref::LoadOp::create(b, loc, streamPost, ValueRange{row, idx(j)}));
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < h; ++j)
      weights.push_back(memref::LoadOp::create(
          b, loc, streamComb, ValueRange{row, idx(i), idx(j)}));
  return weights;
}

void MatmulKernelBuilder::storeStreams(Value acc, Value row, Value col,
                                       ArrayRef<Value> weights) {
  // The rounding and summation order of HyperConnectionOps' mhc_post:
  // post * y first, then the source streams in order.
  Value yv = roundTo(acc, types.y);
  int64_t h = dense.hcMult;
  SmallVector<Value> sources;
  for (int64_t i = 0; i < h; ++i) {
    Value r = memref::LoadOp::create(b, loc, streams,
                                     ValueRange{row, idx(i), col});
    sources.push_back(r.getType() == f32
                          ? r
                          : arith::ExtFOp::create(b, loc, f32, r).getResult());
  }
  for (int64_t j = 0; j < h; ++j) {
    Value sum = arith::MulFOp::create(b, loc, weights[j], yv);
    for (int64_t i = 0; i < h; ++i)
      sum = arith::AddFOp::create(
          b, loc, sum,
          arith::MulFOp::create(b, loc, weights[h + i * h + j], sources[i]));
    if (types.y != f32)
      sum = arith::TruncFOp::create(b, loc, types.y, sum);
    memref::StoreOp::create(b, loc, sum, y, ValueRange{row, idx(j), col});
  }
}

/// The body of a kernel with a decode form: `if (size <= threshold)
/// decode() else tiles()`, size being argument 0's rows times `perRow` (a
/// block-uniform branch; both forms' loops stay inside their region).
static void branchOnStepSize(OpBuilder &builder, Location loc,
                             gpu::GPUFuncOp func, int64_t perRow,
                             int64_t threshold,
                             llvm::function_ref<void()> decode,
                             llvm::function_ref<void()> tiles) {
  Value size = memref::DimOp::create(builder, loc, func.getArgument(0), 0);
  if (perRow != 1)
    size = arith::MulIOp::create(
        builder, loc, size,
        arith::ConstantIndexOp::create(builder, loc, perRow));
  auto small = scf::IfOp::create(
      builder, loc,
      arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ule, size,
          arith::ConstantIndexOp::create(builder, loc, threshold)),
      /*withElseRegion=*/true);
  builder.setInsertionPoint(small.thenBlock()->getTerminator());
  decode();
  builder.setInsertionPoint(small.elseBlock()->getTerminator());
  tiles();
  builder.setInsertionPointAfter(small);
}

namespace {
/// A kernel's row tiles: the unstaged ones, and the staged ones (when the
/// problem has them) for steps of at least `minRows` rows of argument 0 (a
/// block-uniform branch; 0: every step that reaches the row tiles).
class RowTiles {
public:
  RowTiles(OpBuilder &b, Location loc, gpu::GPUFuncOp func,
           MatmulKernelBuilder &plain, MatmulKernelBuilder *staged,
           int64_t minRows)
      : b(b), loc(loc), func(func), plain(plain), staged(staged),
        minRows(minRows) {}

  void build(ValueRange args, const DenseMatmul &dense) {
    emit([&](MatmulKernelBuilder &kb) { kb.build(args, dense); });
  }
  void buildGroupedKernel(ValueRange args, const GroupedExperts &e) {
    emit([&](MatmulKernelBuilder &kb) { kb.buildGroupedKernel(args, e); });
  }
  /// The kernel's i8 workgroup arena, large enough for a decode form's fp32
  /// partial sums of `partialShape` and the staged tiles of `weights`
  /// weights (the forms run in exclusive branches), given to the latter.
  /// The staged tiles run in steps whose rows x `perRow` pass `smallSteps`
  /// (default: below minRows rows they do not run); a dynamic arena records
  /// that the smaller steps need only the partial sums' bytes
  /// (recordSmallStepBytes).
  Value addArena(ArrayRef<int64_t> partialShape, int64_t weights,
                 int64_t perRow = 1, int64_t smallSteps = -1) {
    int64_t partialBytes = 4;
    for (int64_t extent : partialShape)
      partialBytes *= extent;
    int64_t stagedBytes = staged ? staged->stagedArenaBytes(weights) : 0;
    int64_t bytes = std::max(partialBytes, stagedBytes);
    bool dynamic = staged && staged->ring();
    Value arena = dynamic
                      ? addDynamicWorkgroupArena(func, loc, bytes)
                      : addWorkgroupBuffer(func, loc, {bytes}, b.getI8Type());
    if (staged)
      staged->stageArena = arena;
    if (smallSteps < 0)
      smallSteps = minRows - 1;
    if (dynamic && smallSteps > 0)
      recordSmallStepBytes(func, perRow, smallSteps, partialBytes);
    return arena;
  }

  /// The staged tiles' builder (null without staged tiles).
  MatmulKernelBuilder *stagedBuilder() const { return staged; }

private:
  void emit(llvm::function_ref<void(MatmulKernelBuilder &)> body) {
    if (!staged) {
      body(plain);
      return;
    }
    if (minRows <= 1) {
      body(*staged);
      return;
    }
    branchOnStepSize(
        b, loc, func, 1, minRows - 1, [&] { body(plain); },
        [&] { body(*staged); });
    // Without decode forms (no addArena) the steps below minRows take the
    // plain tiles, which need no dynamic workgroup memory.
    if (staged->ring() && !func->hasAttr(kSmallStepSharedMemoryAttrName))
      recordSmallStepBytes(func, 1, minRows - 1, 0);
  }

  OpBuilder &b;
  Location loc;
  gpu::GPUFuncOp func;
  MatmulKernelBuilder &plain;
  MatmulKernelBuilder *staged;
  int64_t minRows;
};
} // namespace

bool mlir::strata::isWideColumnProblem(const MatmulProblem &problem) {
  return problem.n / 128 >= kStagedWideColumnTiles;
}

int64_t mlir::strata::stagedTileRows(const MatmulTiling &tiling,
                                     const MatmulProblem &problem) {
  return tiling.targetHasWarpgroupMma && isWideColumnProblem(problem)
             ? kStagedWideTileRows
             : kStagedTileRows;
}

int64_t mlir::strata::stagedMinRows(const MatmulTiling &staged,
                                    const MatmulProblem &problem,
                                    int64_t batches) {
  int64_t columnTiles =
      std::max<int64_t>(problem.n / staged.tileN(), 1) * batches;
  if (columnTiles >= kStagedWideColumnTiles)
    return staged.tileM() == kStagedWideTileRows ? staged.mma.m + 1
                                                 : staged.tileM();
  return std::max<int64_t>(
      kStagedMinRows,
      staged.tileM() * llvm::divideCeil(kStagedMinTiles, columnTiles));
}

/// MatmulTiling::rasterRows of the staged tiles (MatmulTiling.h's
/// kDenseRasterRows, kGroupedRasterRows).
static void setRasterOrder(MatmulTiling &staged, bool grouped,
                           int64_t weights) {
  if (!grouped) {
    staged.rasterRows = kDenseRasterRows;
    return;
  }
  if (weights == 1) {
    staged.rasterRows = kGroupedRasterRows;
    staged.rasterMinRows = kGroupedRasterMinSlots;
  }
}

/// `gpu.func @name(argTypes)` (the existing one if `module` has it), a
/// kernel with the tiling's block size and launch attributes (rows and
/// columns per workgroup, the instruction) whose body `build` fills, then
/// the return. The row tiles given to `build`: staged tiles of `stagedRows`
/// rows (chooseStagedTiling, recorded as `strata.staged_tile` with the steps
/// they take, `strata.staged_min_rows`) where the problem has them
/// (stagedRows > 0) for steps of at least stagedMinRows rows (every step
/// that reaches the row tiles when `grouped`), the tiling's below; where
/// the problem declines them, kUnstagedAttrName with the reason. `batches`:
/// the matmuls of one grid (MLA's heads), for stagedMinRows.
static gpu::GPUFuncOp
buildMatmulFunc(OpBuilder &builder, Location loc, gpu::GPUModuleOp module,
                StringRef name, TypeRange argTypes, const MatmulTiling &tiling,
                const MatmulProblem &problem, const MatmulTypes &types,
                int64_t weights, int64_t stagedRows, bool grouped,
                llvm::function_ref<void(RowTiles &, gpu::GPUFuncOp)> build,
                int64_t batches = 1) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, tiling.threads(),
      tiling.mma.mnemonic, [&](gpu::GPUFuncOp func) {
        func->setAttr("strata.tile", builder.getDenseI64ArrayAttr(
                                         {tiling.tileM(), tiling.tileN()}));
        std::string why;
        std::optional<MatmulTiling> staged;
        // f32 activations (MLA's heads) are rounded on the way in: the two
        // register-staged buffers, not the ring (nor its wgmma form); bf16
        // rows and e4m3 codes (ScaledActivations) are copied as stored.
        Type xElement = cast<MemRefType>(argTypes[0]).getElementType();
        bool bf16Activations =
            xElement.isBF16() || isa<Float8E4M3FNType>(xElement);
        if (stagedRows > 0)
          staged = chooseStagedTiling(tiling, problem, weights, stagedRows,
                                      why, bf16Activations);
        if (stagedRows > 0 && !staged)
          func->setAttr(kUnstagedAttrName, builder.getStringAttr(why));
        if (staged && !bf16Activations)
          staged->stages = 2;
        int64_t minRows = 0;
        if (staged) {
          setRasterOrder(*staged, grouped, weights);
          minRows = grouped ? 0 : stagedMinRows(*staged, problem, batches);
          func->setAttr("strata.staged_tile",
                        builder.getDenseI64ArrayAttr(
                            {staged->tileM(), staged->tileN()}));
          func->setAttr("strata.staged_min_rows",
                        builder.getI64IntegerAttr(minRows));
          func->setAttr("strata.staged_stages",
                        builder.getI64IntegerAttr(staged->stages));
          func->setAttr("strata.staged_raster_rows",
                        builder.getI64IntegerAttr(staged->rasterRows));
          if (staged->wgmma)
            func->setAttr("strata.staged_wgmma", builder.getUnitAttr());
        }
        MatmulKernelBuilder plain(builder, loc, tiling, problem, types);
        std::optional<MatmulKernelBuilder> stagedKb;
        if (staged)
          stagedKb.emplace(builder, loc, *staged, problem, types);
        RowTiles kb(builder, loc, func, plain,
                    stagedKb ? &*stagedKb : nullptr, minRows);
        build(kb, func);
        gpu::ReturnOp::create(builder, loc);
      });
}

int64_t mlir::strata::decodeFormsMaxRows(const MatmulTiling &tiling,
                                         const MatmulProblem &problem,
                                         bool decodeForms) {
  if (!decodeForms)
    return 0;
  int64_t multiSplits = 0, maxRows = 0;
  if (chooseMultiRowDecodeSplitK(tiling, problem, multiSplits, maxRows))
    return maxRows;
  return tiling.mma.m;
}

namespace {
/// The K splits over the grid of a linear kernel's forms (1: none) and what
/// they share: the arrival counters' and the scratch's arguments, and the
/// workgroup word telling a block it arrived last.
struct KernelGridSplits {
  int64_t oneRow = 1, multiRow = 1;
  /// The row tiles' splits in order of their steps: the plain tiles', then
  /// (sm_90a) the staged ring's (GridSplitK::staged).
  SmallVector<GridSplitK, 2> tiles;
  /// The first step that takes the staged ring's split tiles (0: none).
  int64_t stagedFirstRow() const {
    for (const GridSplitK &t : tiles)
      if (t.staged)
        return t.minRows;
    return 0;
  }
  Value counters, scratch, lastFlag;
  GridSplitArgs args(int64_t splits) const {
    return {splits, counters, scratch, lastFlag};
  }
};
} // namespace

/// The grid splits of `func`'s forms: the one-row and multi-row decode forms
/// (chooseDecodeGridSplits; `split` and `splits` as chooseDecodeSplitK gave
/// them, null without decode forms) and the plain row tiles
/// (chooseGridSplitK, above the decode forms' steps and below the staged
/// tiles' strata.staged_min_rows); where any splits, the arrival counters'
/// and the scratch's arguments appended to `func` (kGpuCountersAttrName: the
/// most counters a form's largest step needs, one per tile;
/// kGpuScratchAttrName: per block, the splitting form's tile of fp32 for
/// steps in its range, none for the others), recorded as
/// `strata.decode_grid_splits` = [oneRow, multiRow] and
/// `strata.grid_split_k` = [splits, minRows, maxRows] (row tiles).
static KernelGridSplits addGridSplits(OpBuilder &builder, Location loc,
                                      gpu::GPUFuncOp func,
                                      const MatmulTiling &tiling,
                                      const MatmulProblem &problem,
                                      const MatmulTiling *split, int64_t splits,
                                      const MatmulTiling *staged) {
  KernelGridSplits gs;
  int64_t multiSplits = 0, multiMax = 0;
  std::optional<MatmulTiling> multi =
      split ? chooseMultiRowDecodeSplitK(tiling, problem, multiSplits, multiMax)
            : std::nullopt;
  if (split)
    gs.oneRow = chooseDecodeGridSplits(*split, problem, splits);
  if (multi)
    gs.multiRow = chooseDecodeGridSplits(*multi, problem, splits);
  auto minRows = func->getAttrOfType<IntegerAttr>("strata.staged_min_rows");
  int64_t decodeMax = decodeFormsMaxRows(tiling, problem, split);
  int64_t stagedMin = minRows ? minRows.getInt() : 0;
  std::optional<GridSplitK> plainSplit =
      chooseGridSplitK(tiling, problem, decodeMax, stagedMin);
  // The staged ring's split: fp8 weights, and bf16 ones without a plain
  // split. bf16 weights keep their plain split where they have one: on an
  // H100 the bf16 KDA o_proj (N = 4096, K = 8192) at 128 rows took 83 us on
  // the plain split's 512 blocks and 89-97 us on the ring's 128
  // (docs/bench/h200-matrix/h100-grid-split-gap-tiles-prefetch.txt); fp8
  // weights gain from the ring (the MLA o_proj 165 -> 120 us), and so does a
  // bf16 linear without a plain split (kda.qkv_proj 166 -> 122 us).
  bool ringSplit = staged && (problem.fp8Weight || !plainSplit);
  std::optional<GridSplitK> stagedSplit =
      ringSplit
          ? chooseGridSplitK(tiling, problem,
                             std::max(decodeMax, kGridSplitKStagedMinRows - 1),
                             stagedMin, staged)
          : std::nullopt;
  // The plain split keeps the steps below the staged one's.
  if (plainSplit && stagedSplit)
    plainSplit->maxRows =
        std::min(plainSplit->maxRows, stagedSplit->minRows - 1);
  if (plainSplit && plainSplit->maxRows >= plainSplit->minRows)
    gs.tiles.push_back(*plainSplit);
  if (stagedSplit)
    gs.tiles.push_back(*stagedSplit);
  // Steps [first, last] of each splitting form, its scratch bytes per
  // block, and the counters of its largest step.
  struct Range {
    int64_t first, last, bytes;
  };
  SmallVector<Range> ranges;
  int64_t counters = 0;
  auto add = [&](int64_t first, int64_t last, int64_t tileM, int64_t tileN) {
    ranges.push_back({first, last, tileM * tileN * 4});
    counters = std::max(counters, int64_t(llvm::divideCeil(last, tileM)) *
                                      (problem.n / tileN));
  };
  if (gs.oneRow > 1)
    add(1, tiling.mma.m, split->tileM(), split->tileN());
  if (gs.multiRow > 1)
    add(tiling.mma.m + 1, multiMax, multi->tileM(), multi->tileN());
  for (const GridSplitK &t : gs.tiles)
    add(t.minRows, t.maxRows, t.tileM, t.tileN);
  if (ranges.empty())
    return gs;
  unsigned numArgs = func.getNumArguments();
  auto dynamic = [&](Type elem) {
    return MemRefType::get({ShapedType::kDynamic}, elem);
  };
  if (failed(func.insertArgument(numArgs, dynamic(builder.getI32Type()), {},
                                 loc)) ||
      failed(func.insertArgument(numArgs + 1, dynamic(builder.getI8Type()), {},
                                 loc)))
    return KernelGridSplits();
  gs.counters = func.getArgument(numArgs);
  gs.scratch = func.getArgument(numArgs + 1);
  gs.lastFlag = addWorkgroupBuffer(func, loc, {1}, builder.getI32Type());
  auto op = [&](ScratchOp code, ArrayRef<int64_t> operands = {}) {
    SmallVector<int64_t> entry = {static_cast<int64_t>(code)};
    llvm::append_range(entry, operands);
    return builder.getDenseI64ArrayAttr(entry);
  };
  // Sum over the ranges of bytes x (first - 1 < M) x (M < last + 1).
  SmallVector<Attribute> program;
  for (auto [i, r] : llvm::enumerate(ranges)) {
    program.append({op(ScratchOp::Constant, {r.bytes}),
                    op(ScratchOp::Constant, {r.first - 1}),
                    op(ScratchOp::Extent, {0, 0}), op(ScratchOp::Less),
                    op(ScratchOp::Mul), op(ScratchOp::Extent, {0, 0}),
                    op(ScratchOp::Constant, {r.last + 1}), op(ScratchOp::Less),
                    op(ScratchOp::Mul)});
    if (i > 0)
      program.push_back(op(ScratchOp::Add));
  }
  func->setAttr(kGpuScratchAttrName, builder.getArrayAttr(program));
  func->setAttr(kGpuCountersAttrName, builder.getI64IntegerAttr(counters));
  func->setAttr("strata.decode_grid_splits",
                builder.getDenseI64ArrayAttr({gs.oneRow, gs.multiRow}));
  SmallVector<int64_t> recorded;
  for (const GridSplitK &t : gs.tiles)
    recorded.append({t.splits, t.minRows, t.maxRows, t.tileM, t.tileN});
  if (!recorded.empty())
    func->setAttr("strata.grid_split_k",
                  builder.getDenseI64ArrayAttr(recorded));
  return gs;
}

/// The body of a plain linear or dense projection with decode forms:
/// steps of at most mma.m rows take `split` (one row fragment), steps of at
/// most the multi-row form's rows that form where the problem has one
/// (chooseMultiRowDecodeSplitK), the others the row tiles of `kb`. Both decode
/// forms share one workgroup buffer of partial sums.
static void
buildWithDecodeForms(OpBuilder &builder, Location loc, gpu::GPUFuncOp func,
                     RowTiles &kb, const MatmulTiling &tiling,
                     const MatmulTiling &split, int64_t splits,
                     const MatmulProblem &problem, const MatmulTypes &types,
                     const DenseMatmul &dense,
                     llvm::function_ref<void(RowTiles &)> rowTiles = nullptr,
                     const KernelGridSplits *gridSplits = nullptr) {
  // Both decode forms split K over the same subgroups (`splits`).
  int64_t multiSplits = 0, maxRows = 0;
  std::optional<MatmulTiling> multi =
      chooseMultiRowDecodeSplitK(tiling, problem, multiSplits, maxRows);
  int64_t weights = dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1;
  int64_t rows = multi ? multi->tileM() : split.tileM();
  SmallVector<int64_t> partialShape = {splits, weights, rows, split.tileN()};
  // Steps that split the staged ring's tiles over the grid need the ring's
  // bytes too.
  int64_t smallSteps = -1;
  if (gridSplits && gridSplits->stagedFirstRow() > 0)
    smallSteps = gridSplits->stagedFirstRow() - 1;
  Value arena = kb.addArena(partialShape, weights, /*perRow=*/1, smallSteps);
  Value partial = viewWorkgroupArena(builder, loc, arena, 0, partialShape,
                                     builder.getF32Type());
  MatmulKernelBuilder decode(builder, loc, split, problem, types);
  // The decode forms' grid splits (splits 1: none, buildSplitK's own path).
  GridSplitArgs oneRowGrid, multiRowGrid;
  if (gridSplits) {
    oneRowGrid = gridSplits->args(gridSplits->oneRow);
    multiRowGrid = gridSplits->args(gridSplits->multiRow);
  }
  auto oneRow = [&] {
    if (takesWeightGemv(tiling, problem, splits, dense))
      decode.buildWeightGemv(func.getArguments(), partial, splits, dense);
    else
      decode.buildSplitK(func.getArguments(), partial, splits, dense,
                         gridSplits ? &oneRowGrid : nullptr);
  };
  auto tiles = [&] {
    if (rowTiles)
      rowTiles(kb);
    else
      kb.build(func.getArguments(), dense);
  };
  if (!multi) {
    branchOnStepSize(builder, loc, func, 1, tiling.mma.m, oneRow, tiles);
    return;
  }
  MatmulKernelBuilder multiRow(builder, loc, *multi, problem, types);
  branchOnStepSize(builder, loc, func, 1, tiling.mma.m, oneRow, [&] {
    branchOnStepSize(
        builder, loc, func, 1, maxRows,
        [&] {
          multiRow.buildSplitK(func.getArguments(), partial, splits, dense,
                               gridSplits ? &multiRowGrid : nullptr);
        },
        tiles);
  });
}

SmallVector<KernelRole> mlir::strata::linearMatmulRoles(bool fp8Weight,
                                                        int64_t hcMult) {
  SmallVector<KernelRole> roles = {KernelRole::X, KernelRole::Weight};
  if (fp8Weight)
    roles.push_back(KernelRole::WeightScales);
  if (hcMult > 0)
    roles.append(
        {KernelRole::Streams, KernelRole::StreamPost, KernelRole::StreamComb});
  roles.push_back(KernelRole::Out);
  return roles;
}

gpu::GPUFuncOp mlir::strata::buildMatmulKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    const MatmulTiling &tiling, const MatmulProblem &problem,
    const MatmulTypes &types, int64_t hcMult) {
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type> argTypes = {
      MemRefType::get({dyn, problem.k}, types.x),
      MemRefType::get({problem.n, problem.k}, types.weight)};
  if (problem.fp8Weight)
    argTypes.push_back(MemRefType::get(
        {llvm::divideCeilSigned(problem.n, problem.scaleBlockN),
         llvm::divideCeilSigned(problem.k, problem.scaleBlockK)},
        builder.getF32Type()));
  if (hcMult > 0) {
    Type f32 = builder.getF32Type();
    argTypes.push_back(MemRefType::get({dyn, hcMult, problem.n}, types.y));
    argTypes.push_back(MemRefType::get({dyn, hcMult}, f32));
    argTypes.push_back(MemRefType::get({dyn, hcMult, hcMult}, f32));
    argTypes.push_back(MemRefType::get({dyn, hcMult, problem.n}, types.y));
  } else {
    argTypes.push_back(MemRefType::get({dyn, problem.n}, types.y));
  }
  return buildLinearMatmulKernelFunc(
      builder, loc, module, name, argTypes,
      linearMatmulRoles(problem.fp8Weight, hcMult), tiling, problem, types,
      hcMult);
}

gpu::GPUFuncOp mlir::strata::buildLinearMatmulKernelFunc(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<KernelRole> roles, const MatmulTiling &tiling,
    const MatmulProblem &problem, const MatmulTypes &types, int64_t hcMult,
    bool gridSplit) {
  DenseMatmul epilogue;
  epilogue.hcMult = hcMult;
  epilogue.roles.assign(roles.begin(), roles.end());
  // Grid (ceil(M / tileM), N / tileN, 1).
  return buildMatmulFunc(
      builder, loc, module, name, argTypes, tiling, problem, types,
      /*weights=*/1, stagedTileRows(tiling, problem), /*grouped=*/false,
      [&](RowTiles &kb, gpu::GPUFuncOp func) {
        int64_t splits = 0;
        std::optional<MatmulTiling> split =
            chooseDecodeSplitK(tiling, problem, splits);
        KernelGridSplits gridSplits;
        MatmulKernelBuilder *stagedKb = kb.stagedBuilder();
        if (gridSplit)
          gridSplits = addGridSplits(builder, loc, func, tiling, problem,
                                     split ? &*split : nullptr, splits,
                                     stagedKb ? &stagedKb->tiling() : nullptr);
        // Steps of a few row tiles split K over the grid
        // (gridSplits.tiles), the others take the row tiles as they are.
        auto splitTiles = [&](const GridSplitK &gs) {
          MatmulKernelBuilder kb(builder, loc,
                                 gs.staged ? stagedKb->tiling() : tiling,
                                 problem, types);
          if (gs.staged)
            kb.stageArena = stagedKb->stageArena;
          kb.buildGridSplit(func.getArguments(), epilogue,
                            gridSplits.args(gs.splits));
        };
        // Each split's steps (ascending), then the unsplit row tiles; steps
        // between the decode forms' (or the previous split's) and a split's
        // first take the unsplit row tiles too (kda.qkv_proj: no plain
        // split, the ring's from 65 rows).
        std::function<void(RowTiles &, size_t, int64_t)> rowTilesFrom =
            [&](RowTiles &tiles, size_t i, int64_t covered) {
              if (i == gridSplits.tiles.size()) {
                tiles.build(func.getArguments(), epilogue);
                return;
              }
              const GridSplitK &next = gridSplits.tiles[i];
              if (next.minRows > covered + 1) {
                // Below the staged tiles' first step (hundreds of rows):
                // the plain tiles, built afresh (a builder's tile values
                // belong to the branch it built them in).
                branchOnStepSize(
                    builder, loc, func, 1, next.minRows - 1,
                    [&] {
                      MatmulKernelBuilder(builder, loc, tiling, problem, types)
                          .build(func.getArguments(), epilogue);
                    },
                    [&] { rowTilesFrom(tiles, i, next.minRows - 1); });
                return;
              }
              branchOnStepSize(
                  builder, loc, func, 1, next.maxRows,
                  [&] { splitTiles(next); },
                  [&] { rowTilesFrom(tiles, i + 1, next.maxRows); });
            };
        int64_t decodeMax =
            decodeFormsMaxRows(tiling, problem, split.has_value());
        auto rowTiles = [&](RowTiles &tiles) {
          rowTilesFrom(tiles, 0, decodeMax);
        };
        if (!split) {
          // Without decode forms every step of the staged ring's grid
          // split needs the ring's bytes.
          if (gridSplits.stagedFirstRow() > 0)
            recordSmallStepBytes(func, 1, gridSplits.stagedFirstRow() - 1, 0);
          rowTiles(kb);
          return;
        }
        // Decode steps split K over the block's subgroups (one row
        // fragment, or tileM rows: the multi-row form); larger
        // ones take the row tiles.
        buildWithDecodeForms(builder, loc, func, kb, tiling, *split, splits,
                             problem, types, epilogue, rowTiles, &gridSplits);
      });
}

gpu::GPUFuncOp mlir::strata::buildDenseMatmulKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, const MatmulTiling &tiling,
    const MatmulProblem &problem, const MatmulTypes &types,
    const DenseMatmul &dense) {
  // W^T is staged by the ring only (chooseStagedTiling).
  int64_t stagedRows = kStagedTileRows;
  return buildMatmulFunc(
      builder, loc, module, name, argTypes, tiling, problem, types,
      dense.epilogue == MatmulEpilogue::Swiglu ? 2 : 1, stagedRows,
      /*grouped=*/false,
      [&](RowTiles &kb, gpu::GPUFuncOp func) {
        int64_t splits = 0;
        std::optional<MatmulTiling> split =
            chooseDecodeSplitK(tiling, problem, splits);
        // A projection pair's matrix form that takes every step size
        // (min_rows 0, no heads): steps of at most one instruction's rows
        // split K over the subgroups, as the linears do.
        if (!split || !takesDecodeForm(dense)) {
          kb.build(func.getArguments(), dense);
          return;
        }
        buildWithDecodeForms(builder, loc, func, kb, tiling, *split, splits,
                             problem, types, dense);
      },
      std::max<int64_t>(dense.heads, 1));
}

MatmulKernelBuilder::Grouped
MatmulKernelBuilder::bindGroupedArgs(ValueRange args, const GroupedExperts &e) {
  Grouped g;
  g.up = e.up;
  g.topK = e.topK;
  g.experts = e.experts;
  g.minSlots = e.minSlots;
  g.rankExperts = e.rankExperts;
  g.limit = e.limit;
  // moe_up: x, chosen, order, starts[, ep coordinate], gate[, scales],
  // up[, scales], act; moe_down: act, chosen, weights, order, starts[, ep
  // coordinate], down[, scales], routed; `chosen` is not read (the grouping
  // already holds it).
  KernelArguments roles(e.roles);
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  x = at(KernelRole::X);
  xScales = at(KernelRole::XScales);
  g.routeWeights = at(KernelRole::RouteWeights);
  g.order = at(KernelRole::SlotOrder);
  g.starts = at(KernelRole::ExpertStarts);
  g.coordinate = at(KernelRole::ExpertCoordinate);
  w = at(KernelRole::Weight);
  scales = at(KernelRole::WeightScales);
  w2 = at(KernelRole::UpWeight);
  scales2 = at(KernelRole::UpScales);
  y = at(KernelRole::Out);
  return g;
}

void MatmulKernelBuilder::buildGroupedKernel(ValueRange args,
                                             const GroupedExperts &e) {
  buildGrouped(bindGroupedArgs(args, e));
}

Value MatmulKernelBuilder::expertTiles(const ExpertTiles &table, Value e) {
  Value experts = idx(grouped->experts);
  Value valid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, e, experts);
  Value at = minu(e, idx(grouped->experts - 1));
  auto start = [&](Value v) {
    return toIndex(memref::LoadOp::create(b, loc, grouped->starts, v));
  };
  Value count = arith::SubIOp::create(b, loc, start(add(at, 1)), start(at));
  Value tiles = arith::CeilDivUIOp::create(b, loc, count, idx(table.tileRows));
  return arith::SelectOp::create(b, loc, valid, tiles, idx(0));
}

MatmulKernelBuilder::ExpertTiles
MatmulKernelBuilder::scanExpertTiles(int64_t tileRows) {
  auto func =
      b.getInsertionBlock()->getParent()->getParentOfType<gpu::GPUFuncOp>();
  int64_t threads = func.getKnownBlockSizeAttr()[0];
  int64_t subgroups = threads / t.subgroupSize;
  ExpertTiles table;
  table.tileRows = tileRows;
  table.perThread = llvm::divideCeil(grouped->experts, threads);
  table.tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  table.firstExpert = mul(table.tid, table.perThread);
  Value tiles = idx(0);
  for (int64_t i = 0; i < table.perThread; ++i)
    tiles = add(tiles, expertTiles(table, add(table.firstExpert, i)));
  table.tiles = tiles;

  // Inclusive scan of the tile counts over the subgroup (shuffles up), then
  // over the subgroups through workgroup memory.
  Type i32 = b.getI32Type();
  Value lane32 = arith::IndexCastOp::create(
      b, loc, i32,
      arith::RemUIOp::create(b, loc, table.tid, idx(t.subgroupSize)));
  Value sg = arith::DivUIOp::create(b, loc, table.tid, idx(t.subgroupSize));
  Value v = arith::IndexCastOp::create(b, loc, i32, tiles);
  for (int64_t d = 1; d < t.subgroupSize; d *= 2) {
    auto up = gpu::ShuffleOp::create(b, loc, v, ci32(d), ci32(t.subgroupSize),
                                     gpu::ShuffleMode::UP);
    Value take = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                       lane32, ci32(d));
    v = arith::SelectOp::create(
        b, loc, take, arith::AddIOp::create(b, loc, v, up.getShuffleResult()),
        v);
  }
  Value totals = addWorkgroupBuffer(func, loc, {subgroups}, i32);
  table.found = addWorkgroupBuffer(func, loc, {2}, i32);
  auto last =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              lane32, ci32(t.subgroupSize - 1)),
                        false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(last.thenBlock()->getTerminator());
    memref::StoreOp::create(b, loc, v, totals, ValueRange{sg});
  }
  gpu::BarrierOp::create(b, loc);
  Value before = ci32(0);
  for (int64_t w = 0; w + 1 < subgroups; ++w) {
    Value total = memref::LoadOp::create(b, loc, totals, ValueRange{idx(w)});
    Value earlier =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx(w), sg);
    before = arith::AddIOp::create(
        b, loc, before,
        arith::SelectOp::create(b, loc, earlier, total, ci32(0)));
  }
  Value inclusive = toIndex(arith::AddIOp::create(b, loc, before, v));
  table.firstTile = arith::SubIOp::create(b, loc, inclusive, tiles);
  return table;
}

std::pair<Value, Value>
MatmulKernelBuilder::findTileExpert(const ExpertTiles &table, Value tile) {
  Type i32 = b.getI32Type();
  auto store = [&](Value v, int64_t at) {
    memref::StoreOp::create(b, loc, arith::IndexCastOp::create(b, loc, i32, v),
                            table.found, ValueRange{idx(at)});
  };
  auto ifThen = [&](Value cond, llvm::function_ref<void()> body) {
    auto op = scf::IfOp::create(b, loc, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    body();
  };
  auto ult = [&](Value l, Value r) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, l, r);
  };
  // The previous tile's readers are done; thread 0 sets "past the last".
  gpu::BarrierOp::create(b, loc);
  ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, table.tid,
                               idx(0)),
         [&] {
           store(idx(grouped->experts), 0);
           store(idx(0), 1);
         });
  gpu::BarrierOp::create(b, loc);
  // The thread whose experts hold the tile names the expert.
  Value mineEnd = add(table.firstTile, table.tiles);
  Value holds = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, tile,
                            table.firstTile),
      ult(tile, mineEnd));
  ifThen(holds, [&] {
    Value begin = table.firstTile;
    for (int64_t i = 0; i < table.perThread; ++i) {
      Value e = add(table.firstExpert, i);
      Value end = add(begin, expertTiles(table, e));
      Value hit = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, tile, begin),
          ult(tile, end));
      Value local = arith::SubIOp::create(b, loc, tile, begin);
      ifThen(hit, [&] {
        store(e, 0);
        store(local, 1);
      });
      begin = end;
    }
  });
  gpu::BarrierOp::create(b, loc);
  return {
      toIndex(memref::LoadOp::create(b, loc, table.found, ValueRange{idx(0)})),
      toIndex(memref::LoadOp::create(b, loc, table.found, ValueRange{idx(1)}))};
}

void MatmulKernelBuilder::buildGroupedSplitKKernel(ValueRange args,
                                                   const GroupedExperts &e,
                                                   Value arena,
                                                   int64_t splits) {
  grouped = bindGroupedArgs(args, e);
  Value tid, bx, sg, colBase;
  std::tie(tid, bx, sg, colBase) = placeSplitSubgroup(splits);
  rowBases.push_back(idx(0));
  int64_t numWeights = grouped->up ? 2 : 1;
  Value partial = viewWorkgroupArena(
      b, loc, arena, 0, {splits, numWeights, mi.m, t.tileN()}, f32);

  // Tiles of mma.m slots: at most ceil(slots / m) + min(experts, slots),
  // over the grid with a grid stride; none below minSlots (the `_rows`
  // kernel's steps).
  Value slots = mul(memref::DimOp::create(b, loc, x, 0), grouped->topK);
  ExpertTiles table = scanExpertTiles(mi.m);
  scf::ForOp tileLoop =
      createTileLoop(bx, groupedTiles(slots, mi.m), slots, grouped->minSlots);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(tileLoop.getBody()->getTerminator());
  auto [found, local] = findTileExpert(table, tileLoop.getInductionVar());
  // The tile is the block's: the branch is uniform, its barriers too.
  auto ifValid = scf::IfOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, found,
                            idx(grouped->experts)),
      false);
  b.setInsertionPoint(ifValid.thenBlock()->getTerminator());
  auto start = [&](Value v) {
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, grouped->starts, v));
  };
  rowStart = add(start(found), mul(local, mi.m));
  rowEnd = start(add(found, 1));
  bindTileExpert(found);

  // Another rank's expert: no products (an empty K range); its elements
  // store 0 (rankValue).
  storePartials(partial, sg, splits, numWeights);
  // Each thread adds up some of the tile's elements, subgroup by subgroup,
  // and writes them through the epilogue.
  int64_t threads = splits * t.subgroupsN * t.subgroupSize;
  for (int64_t i = 0; i < mi.m * t.tileN() / threads; ++i) {
    Value at = add(tid, i * threads);
    Value row = arith::DivUIOp::create(b, loc, at, idx(t.tileN()));
    Value col = arith::RemUIOp::create(b, loc, at, idx(t.tileN()));
    Value pos = add(rowStart, row);
    auto inRange = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, pos, rowEnd),
        false);
    OpBuilder::InsertionGuard rowGuard(b);
    b.setInsertionPoint(inRange.thenBlock()->getTerminator());
    SmallVector<Value> sums = sumPartials(partial, splits, numWeights, row, col);
    storeGroupedElement(pos, add(colBase, col), sums[0],
                        grouped->up ? sums[1] : Value());
  }
  // The next tile of this block overwrites the partial sums.
  gpu::BarrierOp::create(b, loc);
}

void MatmulKernelBuilder::buildGrouped(Grouped g) {
  grouped = g;
  auto [bx, rowBase] = placeSubgroup();
  OpBuilder::InsertionGuard columnGuard(b);
  guardColumnBlock();
  for (int64_t i = 0; i < t.fragsM; ++i)
    rowBases.push_back(add(rowBase, i * t.fragmentRowStride()));

  // Tiles: at most ceil(slots / tileM) + min(experts, slots) (one partial
  // tile per expert with slots), over the grid with a grid stride.
  Value slots = mul(memref::DimOp::create(b, loc, x, 0), g.topK);
  ExpertTiles table = scanExpertTiles(t.tileM());
  scf::ForOp tileLoop =
      createTileLoop(bx, groupedTiles(slots, t.tileM()), slots, g.minSlots);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(tileLoop.getBody()->getTerminator());
  Value tile = tileLoop.getInductionVar();
  auto start = [&](Value e) {
    return arith::IndexCastOp::create(
        b, loc, b.getIndexType(),
        memref::LoadOp::create(b, loc, g.starts, e));
  };
  auto [found, local] = findTileExpert(table, tile);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                      found, idx(g.experts));
  auto ifValid = scf::IfOp::create(b, loc, valid, false);
  b.setInsertionPointToStart(ifValid.thenBlock());
  rowStart = add(start(found), mul(local, t.tileM()));
  rowEnd = start(add(found, 1));
  tileRow = idx(0);
  bindTileExpert(found);

  storeGroupedResults(accumulateRankExpert(g.up ? 2 : 1));
}

void MatmulKernelBuilder::bindTileExpert(Value found) {
  expert = found;
  tileOwned = Value();
  if (!grouped->coordinate)
    return;
  // Unsigned: an expert below the rank's first wraps past rankExperts.
  Value first = mul(toIndex(grouped->coordinate), grouped->rankExperts);
  Value index = arith::SubIOp::create(b, loc, found, first);
  tileOwned = ult(index, idx(grouped->rankExperts));
  // Another rank's expert reads no weights; index 0 keeps every address
  // inside the rank's.
  expert = arith::SelectOp::create(b, loc, tileOwned, index, idx(0));
}

SmallVector<Value> MatmulKernelBuilder::accumulateRankExpert(int64_t weights) {
  if (!tileOwned)
    return accumulate(weights);
  // The accumulators' types are the form's (plain, staged, wgmma): built
  // first inside a result-less branch (so that the builders see the
  // kernel around them), then moved into the branch that yields them.
  auto built = scf::IfOp::create(b, loc, tileOwned, /*withElseRegion=*/false);
  SmallVector<Value> accs;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(built.thenBlock()->getTerminator());
    accs = accumulate(weights);
  }
  SmallVector<Type> types;
  for (Value acc : accs)
    types.push_back(acc.getType());
  auto ifOwned = scf::IfOp::create(b, loc, types, tileOwned,
                                   /*withElseRegion=*/true);
  Block *then = ifOwned.thenBlock();
  then->getOperations().splice(then->end(),
                               built.thenBlock()->getOperations(),
                               built.thenBlock()->begin(),
                               std::prev(built.thenBlock()->end()));
  built.erase();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(then);
  scf::YieldOp::create(b, loc, accs);
  b.setInsertionPointToEnd(ifOwned.elseBlock());
  SmallVector<Value> zeros;
  for (Type type : types)
    zeros.push_back(arith::ConstantOp::create(b, loc, b.getZeroAttr(type)));
  scf::YieldOp::create(b, loc, zeros);
  return SmallVector<Value>(ifOwned.getResults());
}

Value MatmulKernelBuilder::rankValue(Value v) {
  if (!tileOwned)
    return v;
  return arith::SelectOp::create(
      b, loc, tileOwned, v,
      arith::ConstantOp::create(b, loc, b.getZeroAttr(v.getType())));
}

void MatmulKernelBuilder::storeGroupedResults(ValueRange accs) {
  int64_t weights = grouped->up ? 2 : 1;
  if (storesThroughArena(weights)) {
    storeThroughArena(accs, weights, rowStart, rowEnd,
                      [&](Value pos, Value col, ArrayRef<Value> run,
                          ArrayRef<Value> upRun) {
                        storeGroupedRun(pos, col, run, upRun);
                      });
    return;
  }
  int64_t perWeight = t.fragsM * t.fragsN;
  for (int64_t i = 0; i < t.fragsM; ++i)
    for (int64_t j = 0; j < t.fragsN; ++j) {
      int64_t e = 0;
      for (auto piece : mi.c.pieces) {
        Value pos = add(rowStart, add(add(rowBases[i], cLane.outer), piece[0]));
        Value inRange = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, pos, rowEnd);
        auto ifOp = scf::IfOp::create(b, loc, inRange, false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        for (int64_t c = 0; c < mi.c.count; ++c, ++e) {
          Value col = add(add(colBases[j], cLane.inner), piece[1] + c);
          Value acc =
              vector::ExtractOp::create(b, loc, accs[i * t.fragsN + j], e);
          Value upAcc;
          if (grouped->up)
            upAcc = vector::ExtractOp::create(
                b, loc, accs[perWeight + i * t.fragsN + j], e);
          storeGroupedElement(pos, col, acc, upAcc);
        }
      }
    }
}

void MatmulKernelBuilder::storeGroupedElement(Value pos, Value col, Value acc,
                                              Value upAcc) {
  Type act = types.y;
  Value slot = slotAt(pos);
  Value k = idx(grouped->topK);
  Value tok = arith::DivUIOp::create(b, loc, slot, k);
  Value slotInToken = arith::RemUIOp::create(b, loc, slot, k);
  Value v;
  if (grouped->up) {
    v = swiglu(acc, upAcc, grouped->limit);
  } else {
    // round(w * round(acc)).
    Value routeWeight = memref::LoadOp::create(
        b, loc, grouped->routeWeights, ValueRange{tok, slotInToken});
    v = arith::MulFOp::create(b, loc, routeWeight, roundTo(acc, act));
  }
  v = arith::TruncFOp::create(b, loc, act, rankValue(v));
  memref::StoreOp::create(b, loc, v, y, ValueRange{tok, slotInToken, col});
}

gpu::GPUFuncOp mlir::strata::buildGroupedExpertKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, const MatmulTiling &tiling,
    const MatmulProblem &problem, const MatmulTypes &types,
    const GroupedExperts &experts) {
  int64_t weights = experts.up ? 2 : 1;
  // A block of two warpgroups (widenForWarpgroups) takes their wide tiles.
  int64_t stagedRows = tiling.warpgroups > 1 ? kGroupedWarpgroupTileRows
                                             : kGroupedStagedTileRows;
  return buildMatmulFunc(
      builder, loc, module, name, argTypes, tiling, problem, types, weights,
      stagedRows, /*grouped=*/true,
      [&](RowTiles &kb, gpu::GPUFuncOp func) {
        int64_t splits = 0;
        std::optional<MatmulTiling> split =
            chooseGroupedDecodeSplitK(tiling, problem, splits);
        if (!split) {
          kb.buildGroupedKernel(func.getArguments(), experts);
          return;
        }
        // Steps of at most kGroupedSplitKMaxSlots slots (decode: a few
        // slots per expert) take the split form, larger ones the row tiles;
        // the split form's partial sums and the staged tiles share one
        // workgroup buffer.
        Value arena =
            kb.addArena({splits, weights, split->mma.m, split->tileN()},
                        weights, experts.topK, kGroupedSplitKMaxSlots);
        MatmulKernelBuilder decode(builder, loc, *split, problem, types);
        branchOnStepSize(
            builder, loc, func, experts.topK, kGroupedSplitKMaxSlots,
            [&] {
              decode.buildGroupedSplitKKernel(func.getArguments(), experts,
                                              arena, splits);
            },
            [&] { kb.buildGroupedKernel(func.getArguments(), experts); });
      });
}
