//===- MlaAttendKernel.cpp - sparse MLA attention on the matrix units -----===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMlaAttendKernel: the GPU form of MlaOps.cpp's mla_attend, oh[t, h] =
// softmax_j(scale * qa[t, h] . L_j) . L over the selected latent rows L_j of
// token t, with the heads of a block sharing every latent row it reads.
//
// A block takes one token, or in steps of at most 32 tokens one (token,
// position range) pair (MlaSplit.h: the selected positions split into 64 / T
// ranges, each range's partial softmax into the parts buffer for
// mla_combine), grid x grid-stride, and 16 heads (the instruction's m; grid
// y; heads past H are clamped on load and never stored). Its 4 subgroups split
// the latent width R: subgroup w owns columns [w R/4, (w + 1) R/4). Per chunk
// of 32 selected positions:
//   0. the block's threads copy the chunk's 32 latent rows (gathered through
//      the selection and the block table, 16 bytes per thread and copy) into
//      a workgroup tile whose rows are padded by 16 bytes (the 8 rows of a
//      fragment fall on different banks);
//   1. each subgroup multiplies its qa columns (rounded to bf16, held in
//      registers for the whole token) by the same columns of the tile's rows
//      (B fragments) and stores its partial 16 x 32 scores in workgroup
//      memory;
//   2. after a barrier every subgroup sums the 4 partials (lane pairs /
//      quads own a head row), masks positions past the range's end, and
//      runs the online softmax update (running max and sum in registers,
//      shuffles across the lanes of a row); p = exp(s - max) goes to its
//      own 16 x 32 bf16 tile and the rescale factor to a 16-entry row;
//   3. after a barrier it rescales its output accumulators and adds
//      P (A fragments from its tile) times its latent columns (B fragments
//      from the latent tile element by element: positions run along K).
// At the end acc / sum, stored f32 into oh or, split, into the parts buffer
// with the range's maximum and sum (0 for an empty range). Rounding points
// beyond the generic kernel's fp32: qa and p enter the matrix unit as bf16 (as
// in a bf16 flash attention); the max, sums and accumulators are fp32.
//
// Only what FragmentLayout describes depends on the target, so the same
// builder serves mma.sync (subgroups of 32: two lanes per head row) and
// MFMA (64: four lanes per row).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToKernel/MlaSplit.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Positions per chunk of the online softmax (the latent tile of a chunk,
/// 32 x (512 + 8) bf16, and the score tiles fit the 48 KiB of static
/// workgroup memory).
constexpr int64_t kChunk = 32;
/// bf16 elements per copy of a latent row into the tile (16 bytes).
constexpr int64_t kCopyElements = 8;
/// Padding of a tile row in bf16 elements (16 bytes: consecutive rows start
/// 4 banks apart).
constexpr int64_t kTilePad = 8;
/// Subgroups per block; each owns R / kSubgroups latent columns.
constexpr int64_t kSubgroups = 4;

class MlaAttendBuilder : LaneArith {
public:
  MlaAttendBuilder(OpBuilder &b, Location loc, const MlaAttend &shape,
                   const MatrixInstruction &mi, int64_t subgroupSize)
      : LaneArith(b, loc), s(shape), mi(mi), subgroupSize(subgroupSize) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    slice = s.rank / kSubgroups;
  }

  void build(gpu::GPUFuncOp func);

private:
  /// `v` combined over the `lanesPerRow` lanes of a head row.
  Value rowReduce(Value v, bool max) {
    for (int64_t g = 1; g < lanesPerRow; g *= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, loc, v, ci32(g),
                                            ci32(subgroupSize),
                                            gpu::ShuffleMode::XOR);
      Value o = shuffle.getShuffleResult();
      v = max ? arith::MaximumFOp::create(b, loc, v, o).getResult()
              : arith::AddFOp::create(b, loc, v, o).getResult();
    }
    return v;
  }
  /// (page, row in page) of the latent row of selected position `p`.
  std::pair<Value, Value> latentRow(Value p) {
    Value row = toIndex(memref::LoadOp::create(b, loc, rangeSel, p));
    Value rows = idx(s.pageSize);
    Value page = toIndex(memref::LoadOp::create(
        b, loc, blockTable,
        ValueRange{request, arith::DivUIOp::create(b, loc, row, rows)}));
    return {page, arith::RemUIOp::create(b, loc, row, rows)};
  }
  /// Position j0 + offset, clamped to the token's last selected one (masked
  /// positions read a written row, so no NaN reaches the products).
  Value position(Value j0, Value offset) {
    return minu(add(j0, offset), lastPos);
  }

  void buildItem();
  void storeOutputs(ValueRange chunkResults);
  SmallVector<Value> buildChunk(Value j0, ValueRange carried);
  void stageLatentRows(Value j0);

  const MlaAttend &s;
  const MatrixInstruction &mi;
  int64_t subgroupSize, slice;
  int64_t lanesPerRow = 0, colsPerLane = 0;
  Type f32, bf16;
  // Arguments.
  Value qa, cache, sel, counts, starts, blockTable, oh, parts;
  // Workgroup buffers: partial scores [4, m, chunk] f32, p [4, m, chunk]
  // bf16, per-row factors [4, m] f32, the chunk's latent rows [chunk, R +
  // pad] bf16.
  Value partial, probs, factors, tile;
  // Per thread.
  Value tid, warp, sliceBase, headBase, softRow, softCol;
  // Per block: the position ranges per token and whether there are several.
  Value splits, isSplit;
  // Per work item: the token, its range [j0, j1) and row of `parts`.
  // Positions are counted from the range's start: `rangeSel` is the token's
  // selection from there (for the tiny config's kernel a loop from 0 took
  // 168 registers, one from the range's start 228).
  Value t, request, rangeBegin, rangeLength, lastPos, slot, rangeSel;
  SmallVector<Value> qaFrags;
};

} // namespace

void MlaAttendBuilder::build(gpu::GPUFuncOp func) {
  ValueRange args = func.getArguments();
  qa = args[0];
  cache = args[1];
  sel = args[2];
  counts = args[3];
  starts = args[4];
  blockTable = args[5];
  oh = args[6];
  parts = args[7];
  partial = addWorkgroupBuffer(func, loc, {kSubgroups, mi.m, kChunk}, f32);
  probs = addWorkgroupBuffer(func, loc, {kSubgroups, mi.m, kChunk}, bf16);
  factors = addWorkgroupBuffer(func, loc, {kSubgroups, mi.m}, f32);
  tile = addWorkgroupBuffer(func, loc, {kChunk, s.rank + kTilePad}, bf16);

  lanesPerRow = subgroupSize / mi.m;
  colsPerLane = kChunk / lanesPerRow;
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  sliceBase = mul(warp, slice);
  headBase = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y), mi.m);
  softRow = arith::DivUIOp::create(b, loc, lane, idx(lanesPerRow));
  softCol = mul(arith::RemUIOp::create(b, loc, lane, idx(lanesPerRow)),
                colsPerLane);

  // S(T) ranges per token (MlaSplit.h), T * S work items over the grid.
  Value tokens = memref::DimOp::create(b, loc, qa, 0);
  splits = buildMlaSplitsPerToken(b, loc, tokens);
  isSplit =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, splits, idx(1));
  forEachGridToken(
      arith::MulIOp::create(b, loc, tokens, splits), [&](Value item) {
        t = arith::DivUIOp::create(b, loc, item, splits);
        Value range = arith::RemUIOp::create(b, loc, item, splits);
        slot = item;
        // Range `range`: L = ceil(count / S) rounded up to kMlaSplitAlign.
        Value count = toIndex(memref::LoadOp::create(b, loc, counts, t));
        Value perSplit = arith::CeilDivUIOp::create(b, loc, count, splits);
        Value len = mul(
            arith::CeilDivUIOp::create(b, loc, perSplit, idx(kMlaSplitAlign)),
            kMlaSplitAlign);
        rangeBegin = minu(arith::MulIOp::create(b, loc, range, len), count);
        rangeLength = arith::SubIOp::create(
            b, loc, minu(add(rangeBegin, len), count), rangeBegin);
        buildItem();
      });
  gpu::ReturnOp::create(b, loc);
}

void MlaAttendBuilder::buildItem() {
  request = requestOfToken(starts, t);
  lastPos = arith::SubIOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, rangeLength, idx(1)), idx(1));
  Value width = memref::DimOp::create(b, loc, sel, 1);
  rangeSel = memref::SubViewOp::create(
      b, loc,
      MemRefType::get(
          {ShapedType::kDynamic}, b.getI32Type(),
          StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1})),
      sel, ArrayRef<OpFoldResult>{t, rangeBegin},
      ArrayRef<OpFoldResult>{
          b.getIndexAttr(1),
          arith::SubIOp::create(b, loc, width, rangeBegin).getResult()},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});

  // qa's A fragments for this subgroup's columns, bf16, for every chunk.
  Value lastHead = idx(s.heads - 1);
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
  qaFrags.clear();
  for (int64_t ks = 0; ks < slice / mi.k; ++ks) {
    SmallVector<Value> parts;
    for (auto piece : mi.a.pieces) {
      Value h = minu(add(add(headBase, aOuter), piece[0]), lastHead);
      Value c = add(add(add(sliceBase, ks * mi.k), aInner), piece[1]);
      Value v = vector::LoadOp::create(
          b, loc, VectorType::get({mi.a.count}, f32), qa, ValueRange{t, h, c});
      parts.push_back(arith::TruncFOp::create(
          b, loc, VectorType::get({mi.a.count}, bf16), v));
    }
    qaFrags.push_back(concat(parts, mi.a, bf16));
  }

  // Chunks: carried running max and sum (of this lane's head row) and the
  // output accumulators.
  SmallVector<Value> init = {cf32(-INFINITY), cf32(0.0)};
  for (int64_t nf = 0; nf < slice / mi.n; ++nf)
    init.push_back(zeros(mi.c.size()));
  auto chunks = scf::ForOp::create(
      b, loc, idx(0), rangeLength, idx(kChunk), init,
      [&](OpBuilder &nb, Location, Value j0, ValueRange c) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::YieldOp::create(b, loc, buildChunk(j0, c));
      });

  // oh = acc / sum: the sums from the row owners through workgroup memory
  // (after the last chunk's reads of `factors`).
  gpu::BarrierOp::create(b, loc);
  Value isOwner = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, loc, lane, idx(lanesPerRow)), idx(0));
  {
    auto ifOwner = scf::IfOp::create(b, loc, isOwner, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOwner.thenBlock());
    memref::StoreOp::create(b, loc, chunks.getResult(1), factors,
                            ValueRange{warp, softRow});
  }
  gpu::BarrierOp::create(b, loc);
  storeOutputs(chunks.getResults());
  // The next work item rewrites `factors`.
  gpu::BarrierOp::create(b, loc);
}

void MlaAttendBuilder::storeOutputs(ValueRange chunkResults) {
  Value cOuter = laneMap(mi.c.outer), cInner = laneMap(mi.c.inner);
  // acc / sum of this lane's elements into oh[t] or, split, parts[slot]
  // (0 for an empty range: its sum is 0), one store path for both (two
  // paths cost the kernel 56 registers).
  auto dynamic = MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}, f32);
  Value target = arith::SelectOp::create(
      b, loc, isSplit, memref::CastOp::create(b, loc, dynamic, parts),
      memref::CastOp::create(b, loc, dynamic, oh));
  Value targetRow = arith::SelectOp::create(b, loc, isSplit, slot, t);
  for (int64_t nf = 0; nf < slice / mi.n; ++nf) {
    Value acc = chunkResults[2 + nf];
    int64_t e = 0;
    for (auto piece : mi.c.pieces) {
      Value row = add(cOuter, piece[0]);
      Value h = add(headBase, row);
      Value sum =
          memref::LoadOp::create(b, loc, factors, ValueRange{warp, row});
      Value nonEmpty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                             sum, cf32(0.0));
      auto inHeads = scf::IfOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, h,
                                idx(s.heads)),
          false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(inHeads.thenBlock());
      for (int64_t c = 0; c < mi.c.count; ++c, ++e) {
        Value col = add(add(add(sliceBase, nf * mi.n), cInner), piece[1] + c);
        Value v = arith::DivFOp::create(
            b, loc, vector::ExtractOp::create(b, loc, acc, e), sum);
        memref::StoreOp::create(
            b, loc, arith::SelectOp::create(b, loc, nonEmpty, v, cf32(0.0)),
            target, ValueRange{targetRow, h, col});
      }
    }
  }
  // Split: the range's maximum and sum, from subgroup 0's row owners.
  Value h = add(headBase, softRow);
  Value owner = arith::AndIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, softCol,
                                idx(0)),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, warp,
                                idx(0))),
      arith::AndIOp::create(b, loc, isSplit,
                            arith::CmpIOp::create(b, loc,
                                                  arith::CmpIPredicate::ult, h,
                                                  idx(s.heads))));
  auto ifOwner = scf::IfOp::create(b, loc, owner, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOwner.thenBlock());
  memref::StoreOp::create(b, loc, chunkResults[0], parts,
                          ValueRange{slot, h, idx(s.rank)});
  memref::StoreOp::create(b, loc, chunkResults[1], parts,
                          ValueRange{slot, h, idx(s.rank + 1)});
}

void MlaAttendBuilder::stageLatentRows(Value j0) {
  // The previous chunk's reads of the tile are done.
  gpu::BarrierOp::create(b, loc);
  int64_t perRow = s.rank / kCopyElements;
  int64_t threads = kSubgroups * subgroupSize;
  int64_t copies = kChunk * perRow / threads;
  // Loads first, then stores, a few at a time: the rows' gathers overlap.
  constexpr int64_t kInFlight = 8;
  auto type = VectorType::get({kCopyElements}, bf16);
  for (int64_t first = 0; first < copies; first += kInFlight) {
    SmallVector<std::pair<Value, Value>> targets;
    SmallVector<Value> values;
    for (int64_t i = first; i < std::min(copies, first + kInFlight); ++i) {
      Value piece = add(tid, i * threads);
      Value row = arith::DivUIOp::create(b, loc, piece, idx(perRow));
      Value col = mul(arith::RemUIOp::create(b, loc, piece, idx(perRow)),
                      kCopyElements);
      auto [page, pageRow] = latentRow(position(j0, row));
      auto load = vector::LoadOp::create(b, loc, type, cache,
                                         ValueRange{page, pageRow, col});
      load.setAlignment(uint64_t(16));
      values.push_back(load);
      targets.push_back({row, col});
    }
    for (auto [value, target] : llvm::zip_equal(values, targets)) {
      auto store = vector::StoreOp::create(
          b, loc, value, tile, ValueRange{target.first, target.second});
      store.setAlignment(uint64_t(16));
    }
  }
  gpu::BarrierOp::create(b, loc);
}

SmallVector<Value> MlaAttendBuilder::buildChunk(Value j0, ValueRange carried) {
  // 0. The chunk's latent rows into the tile.
  stageLatentRows(j0);
  // 1. Partial scores of this subgroup's columns: 16 heads x 32 positions.
  Value bOuter = laneMap(mi.b.outer), bInner = laneMap(mi.b.inner);
  Value cOuter = laneMap(mi.c.outer), cInner = laneMap(mi.c.inner);
  for (int64_t nf = 0; nf < kChunk / mi.n; ++nf) {
    Value acc = zeros(mi.c.size());
    for (int64_t ks = 0; ks < slice / mi.k; ++ks) {
      SmallVector<Value> parts;
      for (auto piece : mi.b.pieces) {
        Value row = add(add(bOuter, nf * mi.n), piece[0]);
        Value c = add(add(add(sliceBase, ks * mi.k), bInner), piece[1]);
        parts.push_back(
            vector::LoadOp::create(b, loc, VectorType::get({mi.b.count}, bf16),
                                   tile, ValueRange{row, c}));
      }
      acc = emitMatrixInstruction(b, loc, mi, qaFrags[ks], concat(parts, mi.b, bf16),
                                  acc);
    }
    int64_t e = 0;
    for (auto piece : mi.c.pieces)
      for (int64_t c = 0; c < mi.c.count; ++c, ++e)
        memref::StoreOp::create(
            b, loc, vector::ExtractOp::create(b, loc, acc, e), partial,
            ValueRange{warp, add(cOuter, piece[0]),
                       add(add(cInner, nf * mi.n), piece[1] + c)});
  }
  gpu::BarrierOp::create(b, loc);

  // 2. Online softmax: this lane's row, colsPerLane positions.
  Value runMax = carried[0], runSum = carried[1];
  SmallVector<Value> scores;
  Value chunkMax = cf32(-INFINITY);
  for (int64_t i = 0; i < colsPerLane; ++i) {
    Value col = add(softCol, i);
    Value sum = cf32(0.0);
    for (int64_t w = 0; w < kSubgroups; ++w)
      sum = arith::AddFOp::create(
          b, loc, sum,
          memref::LoadOp::create(b, loc, partial,
                                 ValueRange{idx(w), softRow, col}));
    Value score = arith::MulFOp::create(b, loc, sum, cf32(s.scale));
    Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                        add(j0, col), rangeLength);
    score = arith::SelectOp::create(b, loc, valid, score, cf32(-INFINITY));
    scores.push_back(score);
    chunkMax = arith::MaximumFOp::create(b, loc, chunkMax, score);
  }
  chunkMax = rowReduce(chunkMax, /*max=*/true);
  Value newMax = arith::MaximumFOp::create(b, loc, runMax, chunkMax);
  Value factor = math::ExpOp::create(
      b, loc, arith::SubFOp::create(b, loc, runMax, newMax));
  Value chunkSum = cf32(0.0);
  for (int64_t i = 0; i < colsPerLane; ++i) {
    Value p = math::ExpOp::create(
        b, loc, arith::SubFOp::create(b, loc, scores[i], newMax));
    chunkSum = arith::AddFOp::create(b, loc, chunkSum, p);
    memref::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, bf16, p),
                            probs, ValueRange{warp, softRow, add(softCol, i)});
  }
  chunkSum = rowReduce(chunkSum, /*max=*/false);
  Value newSum = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, runSum, factor), chunkSum);
  Value isOwner = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        softCol, idx(0));
  {
    auto ifOwner = scf::IfOp::create(b, loc, isOwner, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOwner.thenBlock());
    memref::StoreOp::create(b, loc, factor, factors,
                            ValueRange{warp, softRow});
  }
  gpu::BarrierOp::create(b, loc);

  // 3. Rescale the accumulators, add P x latent columns.
  SmallVector<Value> accs;
  for (int64_t nf = 0; nf < slice / mi.n; ++nf) {
    Value acc = carried[2 + nf];
    SmallVector<Value> perElement;
    for (auto piece : mi.c.pieces) {
      Value f = memref::LoadOp::create(
          b, loc, factors, ValueRange{warp, add(cOuter, piece[0])});
      for (int64_t c = 0; c < mi.c.count; ++c)
        perElement.push_back(f);
    }
    Value scale = vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.c.size()}, f32), perElement);
    accs.push_back(arith::MulFOp::create(b, loc, acc, scale));
  }
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
  for (int64_t ks = 0; ks < kChunk / mi.k; ++ks) {
    // Scalar workgroup loads (as run on the H200; vector loads from
    // workgroup memory lower too since the binary pipelines convert the GPU
    // dialect first).
    SmallVector<Value> pElems;
    for (auto piece : mi.a.pieces)
      for (int64_t e = 0; e < mi.a.count; ++e)
        pElems.push_back(memref::LoadOp::create(
            b, loc, probs,
            ValueRange{warp, add(aOuter, piece[0]),
                       add(add(aInner, ks * mi.k), piece[1] + e)}));
    Value pFrag = vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.a.size()}, bf16), pElems);
    // B (k = position, n = latent column): the tile rows of this lane's
    // positions, each element its own load.
    SmallVector<Value> rows;
    for (auto piece : mi.b.pieces)
      for (int64_t e = 0; e < mi.b.count; ++e)
        rows.push_back(add(add(bInner, ks * mi.k), piece[1] + e));
    for (int64_t nf = 0; nf < slice / mi.n; ++nf) {
      SmallVector<Value> elems;
      int64_t r = 0;
      for (auto piece : mi.b.pieces) {
        Value col = add(add(add(sliceBase, nf * mi.n), bOuter), piece[0]);
        for (int64_t e = 0; e < mi.b.count; ++e, ++r)
          elems.push_back(
              memref::LoadOp::create(b, loc, tile, ValueRange{rows[r], col}));
      }
      Value vFrag = vector::FromElementsOp::create(
          b, loc, VectorType::get({mi.b.size()}, bf16), elems);
      accs[nf] = emitMatrixInstruction(b, loc, mi, pFrag, vFrag, accs[nf]);
    }
  }

  SmallVector<Value> next = {newMax, newSum};
  next.append(accs);
  return next;
}

gpu::GPUFuncOp mlir::strata::buildMlaAttendKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, const MlaAttend &shape, const MatrixInstruction &mi,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kSubgroups * subgroupSize,
      mi.mnemonic, [&](gpu::GPUFuncOp func) {
        MlaAttendBuilder(builder, loc, shape, mi, subgroupSize).build(func);
      });
}

FailureOr<const MatrixInstruction *>
mlir::strata::chooseMlaAttendInstruction(const TargetInfo &target,
                                         const MlaAttend &shape,
                                         std::string &why) {
  const MatrixInstruction *best =
      pickMatrixInstruction(target, /*wantFp8=*/false);
  if (!best) {
    why = "the target has no bf16 matrix instruction";
    return failure();
  }
  int64_t subgroupSize = target.getSubgroupSize();
  int64_t slice = shape.rank / kSubgroups;
  if (shape.rank % kSubgroups || slice % best->k || slice % best->n ||
      kChunk % best->n || kChunk % best->k || subgroupSize % best->m ||
      kChunk % (subgroupSize / best->m)) {
    why = "the latent width does not tile";
    return failure();
  }
  // The tile copies: 16-byte runs of the pool's rows, as many per thread.
  if (shape.rank % kCopyElements || shape.poolWidth % kCopyElements ||
      (kChunk * shape.rank / kCopyElements) % (kSubgroups * subgroupSize)) {
    why = "the latent rows do not copy in 16-byte runs";
    return failure();
  }
  return best;
}
