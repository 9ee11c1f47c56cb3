//===- KpoolScoresKernel.cpp - indexer pool scores on the matrix units ----===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKpoolScoresKernel: the GPU form of IndexerOps.cpp's kpool_scores,
// score[t, p] = scale * sum_h w[t, h] relu(q[t, h] . K_p) over the visible
// pools p of token t (bf16 queries and a bf16 index pool), with the token's
// heads as the rows of the matrix instruction, so every key row it reads
// serves all heads at once.
//
// A block takes one work item (grid x = tokens + kKpoolScoreItems, grid
// stride): a step of T tokens gives each token P = clamp(kKpoolScoreItems /
// T, 1, kKpoolScoreMaxParts) items, of which the token uses U = min(P,
// ceil(groups / kKpoolScoreMinGroups)), item (t, part < U) taking every
// U-th group of 4 x n pools from group `part` on (small steps spread a long
// context's pools over several blocks; large ones keep one block per token,
// which loads the token's queries once; a short context keeps a few groups
// per block for the queries each block loads). Its heads are ceil(H / m)
// row tiles of the instruction (heads past H clamped on load, weight 0);
// their A fragments (q[t], bf16) stay in registers for the token. Per group
// of 4 x n pools, subgroup w takes the n pools from (4 g + w) n: the
// products q . K_p over the head dimension (B fragments read straight from
// the paged index pool, the pool's row found through the block table,
// contiguous along the head dimension; pools past the visible ones clamped
// to the last; where the instruction allows K runs, each lane reads its row
// in 16-byte runs, the queries' fragments permuted alike, and the loop over
// groups carries the next group's keys, loaded before this group's
// products), then w[t, h] relu(.) added per column (pool) in the lane's
// registers over the row tiles and fragment pieces, and across the lanes
// holding the column's other rows by XOR shuffles over the row bits of the
// C layout; the lanes of row 0 store the score times scale. No workgroup
// memory and no barrier. The dot products are fp32 accumulations of exact
// bf16 products in the instruction's order; the head sum's order is the
// lanes' tree (not the generic kernel's head order: the scores may differ
// from it in the last bits).
//
// fp8 index pages (KpoolScores::fp8: Hadamard-rotated e4m3 keys, one f32
// power-of-two scale per row) take the same matrix instruction: a key
// element decoded from e4m3 and multiplied by its row's scale is a bf16
// value exactly, so the B fragments are the keys as the generic kernel
// reads them. The generic kernel rotates the queries in f32 instead of
// quantising them; here the work item rotates its token's queries once, in
// workgroup memory (a fast Walsh-Hadamard transform, log2(dim) butterfly
// passes with a barrier each, then the orthonormal factor), and splits each
// rotated element into bf16 high and low parts (hi = bf16(x), lo = bf16(x -
// hi): 16 of f32's 24 bits) whose two products are added in the same f32
// accumulator: the scores match the generic kernel's to ~1e-5 of the
// terms' magnitudes, not the ~4e-3 of a query rounded to bf16.
//
// Only what FragmentLayout describes depends on the target: mma.sync on
// sm_90, MFMA on gfx942 / gfx950.
//
//===----------------------------------------------------------------------===//

#include <cmath>
#include <map>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Subgroups per block; each takes n pools of a group.
constexpr int64_t kSubgroups = 4;
/// fp8 pages: the most workgroup memory the rotated queries take (bytes).
constexpr int64_t kKpoolScoreMaxRotated = 32 * 1024;

class KpoolScoresBuilder : LaneArith {
public:
  KpoolScoresBuilder(OpBuilder &b, Location loc, const KpoolScores &shape,
                     const MatrixInstruction &mi, int64_t subgroupSize)
      : LaneArith(b, loc), s(shape), mi(mi), subgroupSize(subgroupSize) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    rowTiles = (s.heads + mi.m - 1) / mi.m;
    runSteps = chooseRunSteps();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  /// (page, row in page) of index pool row `p` of the token's request.
  std::pair<Value, Value> poolRow(Value p) {
    Value rows = idx(s.rowsPerPage);
    Value page = toIndex(memref::LoadOp::create(
        b, loc, blockTable,
        ValueRange{request, arith::DivUIOp::create(b, loc, p, rows)}));
    return {page, arith::RemUIOp::create(b, loc, p, rows)};
  }

  void buildToken();
  void buildTokenGroups();
  /// qFrags of bf16 queries read as they are.
  void loadQueryFragments();
  /// fp8 pages: qFrags / qLowFrags, the high and low bf16 parts of the
  /// token's queries rotated in `rotated`.
  void rotateQueryFragments();
  /// The fast Walsh-Hadamard transform of each head's row of `rotated`
  /// (unnormalised), one barrier per butterfly pass.
  void buildHadamardPasses();
  /// The scores of this subgroup's pools in `group`: from the B fragments
  /// `keyFrags` (K runs), else read here in the instruction's order.
  void buildGroup(Value group, ArrayRef<Value> runFrags = {});
  /// The B fragment (bf16) of k step `ks` of pool row (page, row): read as
  /// it is, or decoded from fp8 times the row's `scale`.
  Value keyFragment(int64_t ks, std::pair<Value, Value> pageRow, Value scale,
                    ArrayRef<int64_t> piece);
  /// fp8 pages: the f32 scale of row (page, row).
  Value rowScale(std::pair<Value, Value> pageRow);
  /// Threads [0, n) over the block's threads: body(i) for each of this
  /// thread's.
  void forEachBlockIndex(int64_t n, llvm::function_ref<void(Value)> body);

  /// K runs (supportsKRuns): the instruction steps whose K positions a
  /// lane reads as one contiguous run of each of its rows (16 bytes of
  /// keys), A and B permuted alike; 0 reads the instruction's own order.
  int64_t chooseRunSteps() const;
  /// Elements of a lane's run of one row of layout `l`.
  int64_t runLength(const FragmentLayout &l) const {
    return getKRunGroups(l).perStep * runSteps;
  }
  /// The first K position of this lane's run in K block `kb` (blocks of
  /// runSteps instruction steps).
  Value runColumn(const FragmentLayout &l, int64_t kb) {
    Value group = laneMap({l.inner.div, l.inner.mod, 1});
    return add(idx(kb * runSteps * mi.k), mul(group, runLength(l)));
  }
  /// The fragments of the block's runSteps instruction steps from this
  /// lane's runs (one per row group of `l`, in getKRunGroups order).
  SmallVector<Value> runFragments(const FragmentLayout &l,
                                  ArrayRef<Value> runs);
  /// The bytes every key run's address is a multiple of.
  int64_t keyRunAlignment() const;
  /// K runs: the raw key runs of this subgroup's pools in `group` (per K
  /// block, one per row group of B: bf16 values or fp8 bytes), then, for
  /// fp8 pages, each row's scale. The loop over groups carries the next
  /// group's, loaded before this group's products.
  SmallVector<Value> loadGroupKeys(Value group);
  /// K runs: the B fragments (bf16) of loadGroupKeys' values.
  SmallVector<Value> keyRunFragments(ArrayRef<Value> loaded);
  /// The first pool of this subgroup's n in `group`.
  Value groupPool(Value group) {
    return mul(add(mul(group, kSubgroups), warp), mi.n);
  }

  const KpoolScores &s;
  const MatrixInstruction &mi;
  int64_t subgroupSize, rowTiles, runSteps = 0;
  Type f32, bf16;
  // Arguments.
  Value q, weights, pool, positions, starts, blockTable, scores;
  // fp8 pages: the token's rotated queries [heads, headDim] f32.
  Value rotated;
  // Per thread.
  Value tid, warp;
  // Parts per token (per kernel), the work item's token and part.
  Value parts, used, t, part;
  // Per work item.
  Value request, visible, groups;
  SmallVector<Value> qFrags, qLowFrags;
};

} // namespace

void KpoolScoresBuilder::build(gpu::GPUFuncOp func,
                               const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  q = at(KernelRole::X);
  weights = at(KernelRole::HeadWeights);
  pool = at(KernelRole::IndexPool);
  positions = at(KernelRole::Positions);
  starts = at(KernelRole::SeqStarts);
  blockTable = at(KernelRole::BlockTable);
  scores = at(KernelRole::Scores);
  if (s.fp8())
    rotated = addWorkgroupBuffer(func, loc, {s.heads, s.headDim}, f32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));

  // P parts per token, T * P work items over the grid.
  Value tokens = memref::DimOp::create(b, loc, q, 0);
  parts = arith::MaxUIOp::create(
      b, loc,
      minu(arith::DivUIOp::create(
               b, loc, idx(kKpoolScoreItems),
               arith::MaxUIOp::create(b, loc, tokens, idx(1))),
           idx(kKpoolScoreMaxParts)),
      idx(1));
  forEachGridToken(arith::MulIOp::create(b, loc, tokens, parts),
                   [&](Value item) {
    t = arith::DivUIOp::create(b, loc, item, parts);
    part = arith::RemUIOp::create(b, loc, item, parts);
    buildToken();
  });
  gpu::ReturnOp::create(b, loc);
}

void KpoolScoresBuilder::buildToken() {
  Value x = toIndex(memref::LoadOp::create(b, loc, positions, t));
  visible = arith::DivUIOp::create(b, loc, add(x, 1), idx(s.kpool));
  groups = arith::CeilDivUIOp::create(b, loc, visible,
                                      idx(kSubgroups * mi.n));
  // The token's parts in use: at least kKpoolScoreMinGroups groups each;
  // the others skip it (uniform within the block).
  used = minu(parts, arith::CeilDivUIOp::create(b, loc, groups,
                                                idx(kKpoolScoreMinGroups)));
  ifThen(ult(part, used), [&] { buildTokenGroups(); });
}

void KpoolScoresBuilder::buildTokenGroups() {
  request = requestOfToken(starts, t);
  // q[t]'s A fragments, one per (row tile, k step), for the whole token.
  if (s.fp8())
    rotateQueryFragments();
  else
    loadQueryFragments();

  // Groups of kSubgroups x n pools, this part's from `part` in steps of
  // U; every thread runs the same trip count (the barriers inside are
  // uniform).
  if (!runSteps) {
    auto loop = scf::ForOp::create(b, loc, part, groups, used);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    buildGroup(loop.getInductionVar());
    return;
  }
  // K runs: the next group's keys are loaded before this group's products
  // (the last group loads itself again).
  Value lastGroup = arith::SubIOp::create(b, loc, groups, idx(1));
  scf::ForOp::create(b, loc, part, groups, used, loadGroupKeys(part),
                     [&](OpBuilder &, Location, Value group, ValueRange keys) {
                       SmallVector<Value> next =
                           loadGroupKeys(minu(add(group, used), lastGroup));
                       buildGroup(group,
                                  keyRunFragments(SmallVector<Value>(keys)));
                       scf::YieldOp::create(b, loc, next);
                     });
}

void KpoolScoresBuilder::loadQueryFragments() {
  Value lastHead = idx(s.heads - 1);
  qFrags.clear();
  if (runSteps) {
    KRunGroups g = getKRunGroups(mi.a);
    int64_t run = runLength(mi.a);
    Value aOuter = laneMap(mi.a.outer);
    for (int64_t mt = 0; mt < rowTiles; ++mt)
      for (int64_t kb = 0; kb < s.headDim / (runSteps * mi.k); ++kb) {
        Value c = runColumn(mi.a, kb);
        SmallVector<Value> runs;
        for (int64_t outer : g.outer) {
          Value h = minu(add(aOuter, mt * mi.m + outer), lastHead);
          auto load = vector::LoadOp::create(
              b, loc, VectorType::get({run}, bf16), q, ValueRange{t, h, c});
          load.setAlignment(uint64_t(std::min<int64_t>(run * 2, 16)));
          runs.push_back(load);
        }
        llvm::append_range(qFrags, runFragments(mi.a, runs));
      }
    return;
  }
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
  for (int64_t mt = 0; mt < rowTiles; ++mt) {
    for (int64_t ks = 0; ks < s.headDim / mi.k; ++ks) {
      SmallVector<Value> parts;
      for (auto piece : mi.a.pieces) {
        Value h = minu(add(aOuter, mt * mi.m + piece[0]), lastHead);
        Value c = add(aInner, ks * mi.k + piece[1]);
        parts.push_back(vector::LoadOp::create(
            b, loc, VectorType::get({mi.a.count}, bf16), q,
            ValueRange{t, h, c}));
      }
      qFrags.push_back(concat(parts, mi.a, bf16));
    }
  }
}

void KpoolScoresBuilder::forEachBlockIndex(
    int64_t n, llvm::function_ref<void(Value)> body) {
  auto loop =
      scf::ForOp::create(b, loc, tid, idx(n), idx(kSubgroups * subgroupSize));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

int64_t KpoolScoresBuilder::chooseRunSteps() const {
  if (!supportsKRuns(mi))
    return 0;
  int64_t keyBytes = s.fp8() ? 1 : 2;
  int64_t steps =
      std::max<int64_t>(16 / (getKRunGroups(mi.b).perStep * keyBytes), 1);
  while (steps > 1 && (s.headDim / mi.k) % steps)
    steps /= 2;
  return steps;
}

SmallVector<Value> KpoolScoresBuilder::runFragments(const FragmentLayout &l,
                                                    ArrayRef<Value> runs) {
  Value second = runs.size() > 1 ? runs[1] : runs[0];
  SmallVector<Value> frags;
  for (int64_t step = 0; step < runSteps; ++step)
    frags.push_back(vector::ShuffleOp::create(
        b, loc, runs[0], second, kRunStepMask(l, runLength(l), step)));
  return frags;
}

int64_t KpoolScoresBuilder::keyRunAlignment() const {
  int64_t keyBytes = s.fp8() ? 1 : 2;
  int64_t align = std::min<int64_t>(runLength(mi.b) * keyBytes, 16);
  // fp8 pages are byte rows of one [pages, page bytes] buffer: a run is at
  // page * pageBytes + row * headDim + column.
  while (s.fp8() && align > 1 && (s.fp8PageBytes % align || s.headDim % align))
    align /= 2;
  return align;
}

SmallVector<Value> KpoolScoresBuilder::loadGroupKeys(Value group) {
  // Pools past the visible ones read the last visible pool's row (their
  // scores are never stored).
  Value p0 = groupPool(group);
  Value lastPool = arith::SubIOp::create(b, loc, visible, idx(1));
  Value bOuter = laneMap(mi.b.outer);
  SmallVector<std::pair<Value, Value>> rows;
  for (int64_t outer : getKRunGroups(mi.b).outer)
    rows.push_back(poolRow(minu(add(add(p0, bOuter), outer), lastPool)));
  int64_t run = runLength(mi.b);
  Type element = s.fp8() ? Type(b.getI8Type()) : bf16;
  SmallVector<Value> loaded;
  for (int64_t kb = 0; kb < s.headDim / (runSteps * mi.k); ++kb) {
    Value c = runColumn(mi.b, kb);
    for (auto [page, row] : rows) {
      auto load = vector::LoadOp::create(
          b, loc, VectorType::get({run}, element), pool,
          s.fp8() ? ValueRange{page, add(mul(row, s.headDim), c)}
                  : ValueRange{page, row, c});
      load.setAlignment(uint64_t(keyRunAlignment()));
      loaded.push_back(load);
    }
  }
  if (s.fp8())
    for (auto pageRow : rows)
      loaded.push_back(rowScale(pageRow));
  return loaded;
}

SmallVector<Value> KpoolScoresBuilder::keyRunFragments(ArrayRef<Value> loaded) {
  size_t rowGroups = getKRunGroups(mi.b).outer.size();
  int64_t blocks = s.headDim / (runSteps * mi.k);
  int64_t run = runLength(mi.b);
  SmallVector<Value> keyFrags;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    SmallVector<Value> runs;
    for (size_t i = 0; i < rowGroups; ++i) {
      Value raw = loaded[kb * rowGroups + i];
      if (!s.fp8()) {
        runs.push_back(raw);
        continue;
      }
      // e4m3 times a power of two: a bf16 value exactly.
      auto f32Run = VectorType::get({run}, f32);
      Value scale = loaded[blocks * rowGroups + i];
      Value key = arith::MulFOp::create(
          b, loc, decodeE4M3ToF32(raw),
          vector::BroadcastOp::create(b, loc, f32Run, scale));
      runs.push_back(
          arith::TruncFOp::create(b, loc, VectorType::get({run}, bf16), key));
    }
    llvm::append_range(keyFrags, runFragments(mi.b, runs));
  }
  return keyFrags;
}

void KpoolScoresBuilder::buildHadamardPasses() {
  int64_t half = s.headDim / 2;
  for (int64_t span = 1; span < s.headDim; span *= 2) {
    // Pair i of the pass: head i / half, the pair's first element
    // (j / span) 2 span + j % span with j = i % half, the second span on.
    forEachBlockIndex(s.heads * half, [&](Value i) {
      Value h = arith::DivUIOp::create(b, loc, i, idx(half));
      Value j = arith::RemUIOp::create(b, loc, i, idx(half));
      Value first =
          add(mul(arith::DivUIOp::create(b, loc, j, idx(span)), 2 * span),
              arith::RemUIOp::create(b, loc, j, idx(span)));
      Value second = add(first, span);
      Value x = memref::LoadOp::create(b, loc, rotated, ValueRange{h, first});
      Value y = memref::LoadOp::create(b, loc, rotated, ValueRange{h, second});
      memref::StoreOp::create(b, loc, arith::AddFOp::create(b, loc, x, y),
                              rotated, ValueRange{h, first});
      memref::StoreOp::create(b, loc, arith::SubFOp::create(b, loc, x, y),
                              rotated, ValueRange{h, second});
    });
    barrier();
  }
}

void KpoolScoresBuilder::rotateQueryFragments() {
  // The previous work item's fragments are read: q[t] replaces them.
  barrier();
  forEachBlockIndex(s.heads * s.headDim, [&](Value i) {
    Value h = arith::DivUIOp::create(b, loc, i, idx(s.headDim));
    Value c = arith::RemUIOp::create(b, loc, i, idx(s.headDim));
    Value v = memref::LoadOp::create(b, loc, q, ValueRange{t, h, c});
    memref::StoreOp::create(b, loc, arith::ExtFOp::create(b, loc, f32, v),
                            rotated, ValueRange{h, c});
  });
  barrier();
  buildHadamardPasses();

  Value lastHead = idx(s.heads - 1);
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
  double norm = 1.0 / std::sqrt(double(s.headDim));
  // n rotated elements of head h from column c, times the orthonormal
  // factor, as bf16 high and low parts (hi = bf16(x), lo = bf16(x - hi)).
  auto rotatedParts = [&](Value h, Value c, int64_t n) {
    auto f32s = VectorType::get({n}, f32);
    auto bf16s = VectorType::get({n}, bf16);
    Value x = arith::MulFOp::create(
        b, loc, vector::LoadOp::create(b, loc, f32s, rotated, ValueRange{h, c}),
        vector::BroadcastOp::create(b, loc, f32s, cf32(norm)));
    Value high = arith::TruncFOp::create(b, loc, bf16s, x);
    Value rest = arith::SubFOp::create(
        b, loc, x, arith::ExtFOp::create(b, loc, f32s, high));
    return std::make_pair(high,
                          Value(arith::TruncFOp::create(b, loc, bf16s, rest)));
  };
  qFrags.clear();
  qLowFrags.clear();
  if (runSteps) {
    KRunGroups g = getKRunGroups(mi.a);
    for (int64_t mt = 0; mt < rowTiles; ++mt)
      for (int64_t kb = 0; kb < s.headDim / (runSteps * mi.k); ++kb) {
        Value c = runColumn(mi.a, kb);
        SmallVector<Value> highs, lows;
        for (int64_t outer : g.outer) {
          auto [high, low] =
              rotatedParts(minu(add(aOuter, mt * mi.m + outer), lastHead), c,
                           runLength(mi.a));
          highs.push_back(high);
          lows.push_back(low);
        }
        llvm::append_range(qFrags, runFragments(mi.a, highs));
        llvm::append_range(qLowFrags, runFragments(mi.a, lows));
      }
    return;
  }
  for (int64_t mt = 0; mt < rowTiles; ++mt) {
    for (int64_t ks = 0; ks < s.headDim / mi.k; ++ks) {
      SmallVector<Value> highs, lows;
      for (auto piece : mi.a.pieces) {
        auto [high, low] =
            rotatedParts(minu(add(aOuter, mt * mi.m + piece[0]), lastHead),
                         add(aInner, ks * mi.k + piece[1]), mi.a.count);
        highs.push_back(high);
        lows.push_back(low);
      }
      qFrags.push_back(concat(highs, mi.a, bf16));
      qLowFrags.push_back(concat(lows, mi.a, bf16));
    }
  }
}

Value KpoolScoresBuilder::rowScale(std::pair<Value, Value> pageRow) {
  auto i8 = b.getI8Type();
  auto bytes = vector::LoadOp::create(
      b, loc, VectorType::get({4}, i8), pool,
      ValueRange{pageRow.first,
                 add(mul(pageRow.second, 4), s.fp8ScaleOffset())});
  bytes.setAlignment(uint64_t(4));
  return vector::ExtractOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({1}, f32), bytes),
      int64_t(0));
}

Value KpoolScoresBuilder::keyFragment(int64_t ks,
                                      std::pair<Value, Value> pageRow,
                                      Value scale, ArrayRef<int64_t> piece) {
  Value bInner = laneMap(mi.b.inner);
  Value c = add(bInner, ks * mi.k + piece[1]);
  if (!s.fp8())
    return vector::LoadOp::create(b, loc, VectorType::get({mi.b.count}, bf16),
                                  pool,
                                  ValueRange{pageRow.first, pageRow.second, c});
  // e4m3 times a power of two: a bf16 value exactly.
  auto bytes = vector::LoadOp::create(
      b, loc, VectorType::get({mi.b.count}, b.getI8Type()), pool,
      ValueRange{pageRow.first, add(mul(pageRow.second, s.headDim), c)});
  bytes.setAlignment(uint64_t(mi.b.count));
  auto f32Piece = VectorType::get({mi.b.count}, f32);
  Value key = arith::MulFOp::create(
      b, loc, decodeE4M3ToF32(bytes),
      vector::BroadcastOp::create(b, loc, f32Piece, scale));
  return arith::TruncFOp::create(b, loc, VectorType::get({mi.b.count}, bf16),
                                 key);
}

void KpoolScoresBuilder::buildGroup(Value group, ArrayRef<Value> runFrags) {
  // This subgroup's n pools start at p0; pools past the visible ones read
  // the last visible pool's row (their scores are never stored).
  Value p0 = groupPool(group);
  Value cOuter = laneMap(mi.c.outer), cInner = laneMap(mi.c.inner);
  SmallVector<Value> keyFrags(runFrags);
  if (!runSteps) {
    Value lastPool = arith::SubIOp::create(b, loc, visible, idx(1));
    Value bOuter = laneMap(mi.b.outer);
    SmallVector<std::pair<Value, Value>> rows;
    SmallVector<Value> rowScales;
    for (auto piece : mi.b.pieces) {
      rows.push_back(poolRow(minu(add(add(p0, bOuter), piece[0]), lastPool)));
      rowScales.push_back(s.fp8() ? rowScale(rows.back()) : Value());
    }
    for (int64_t ks = 0; ks < s.headDim / mi.k; ++ks) {
      SmallVector<Value> parts;
      for (auto [i, piece] : llvm::enumerate(mi.b.pieces))
        parts.push_back(keyFragment(ks, rows[i], rowScales[i], piece));
      keyFrags.push_back(concat(parts, mi.b, bf16));
    }
  }
  // w[t, h] relu(q . K) of this lane's elements added per column of the
  // tile (its pool), over the row tiles and pieces in order (head rows
  // past H weigh 0).
  std::map<int64_t, Value> columnSums;
  for (int64_t mt = 0; mt < rowTiles; ++mt) {
    Value acc = zeros(mi.c.size());
    for (int64_t ks = 0; ks < s.headDim / mi.k; ++ks) {
      int64_t a = mt * (s.headDim / mi.k) + ks;
      acc = emitMatrixInstruction(b, loc, mi, qFrags[a], keyFrags[ks], acc);
      if (s.fp8())
        acc =
            emitMatrixInstruction(b, loc, mi, qLowFrags[a], keyFrags[ks], acc);
    }
    int64_t e = 0;
    for (auto piece : mi.c.pieces) {
      Value h = add(cOuter, mt * mi.m + piece[0]);
      Value w = memref::LoadOp::create(
          b, loc, weights, ValueRange{t, minu(h, idx(s.heads - 1))});
      w = arith::SelectOp::create(b, loc, ult(h, idx(s.heads)), w, cf32(0.0));
      for (int64_t c = 0; c < mi.c.count; ++c, ++e) {
        Value dot = vector::ExtractOp::create(b, loc, acc, e);
        Value v = arith::MulFOp::create(
            b, loc, w, arith::MaximumFOp::create(b, loc, dot, cf32(0.0)));
        auto [it, fresh] = columnSums.try_emplace(piece[1] + c, v);
        if (!fresh)
          it->second = arith::AddFOp::create(b, loc, it->second, v);
      }
    }
  }
  // The lanes holding other rows of the same columns differ in the bits
  // of the row map (c.outer): a butterfly over them, then the lanes of row
  // offset 0 store their columns' scores.
  const LaneMap &rowMap = mi.c.outer;
  for (auto &[column, sum] : columnSums)
    for (int64_t offset = rowMap.div; offset < rowMap.div * rowMap.mod;
         offset *= 2)
      sum = arith::AddFOp::create(
          b, loc, sum,
          gpu::ShuffleOp::create(b, loc, sum, ci32(offset),
                                 ci32(subgroupSize), gpu::ShuffleMode::XOR)
              .getShuffleResult());
  ifThen(ieq(cOuter, idx(0)), [&] {
    for (auto &[column, sum] : columnSums) {
      Value p = add(add(p0, cInner), column);
      Value score = arith::MulFOp::create(b, loc, sum, cf32(s.scale));
      ifThen(ult(p, visible), [&] {
        Value rowsPerPage = idx(s.rowsPerPage);
        memref::StoreOp::create(
            b, loc, score, scores,
            ValueRange{t, arith::DivUIOp::create(b, loc, p, rowsPerPage),
                       arith::RemUIOp::create(b, loc, p, rowsPerPage)});
      });
    }
  });
}

gpu::GPUFuncOp mlir::strata::buildKpoolScoresKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const KpoolScores &shape, const MatrixInstruction &mi,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kSubgroups * subgroupSize,
      mi.mnemonic, [&](gpu::GPUFuncOp func) {
        KpoolScoresBuilder(builder, loc, shape, mi, subgroupSize)
            .build(func, KernelArguments(roles));
      });
}

FailureOr<const MatrixInstruction *>
mlir::strata::chooseKpoolScoresInstruction(const TargetInfo &target,
                                           const KpoolScores &shape,
                                           std::string &why) {
  const MatrixInstruction *best =
      pickMatrixInstruction(target, /*wantFp8=*/false);
  if (!best) {
    why = "the target has no bf16 matrix instruction";
    return failure();
  }
  if (shape.headDim % best->k || shape.kpool <= 0) {
    why = "the index head dimension does not tile";
    return failure();
  }
  // fp8 pages: the queries' Walsh-Hadamard transform in workgroup memory.
  if (shape.fp8() &&
      (!llvm::isPowerOf2_64(shape.headDim) ||
       shape.heads * shape.headDim * 4 > kKpoolScoreMaxRotated)) {
    why = "the fp8 index pages' rotated queries take a power-of-two head "
          "dimension and at most 32 KiB";
    return failure();
  }
  // The sums of a group (kSubgroups x n) take one thread each.
  if (best->n > target.getSubgroupSize()) {
    why = "too many pools per group";
    return failure();
  }
  return best;
}
