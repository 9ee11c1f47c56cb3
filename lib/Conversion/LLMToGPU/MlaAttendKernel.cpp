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
// mla_combine), grid x grid-stride, and up to 64 heads: head tiles of the
// instruction's m rows (grid y covers the rest; heads past H are clamped on
// load and never stored). Each head tile has two subgroups, each owning half
// of the latent width R: for the scores it multiplies its half of qa (bf16:
// A fragments held in registers for the whole token, or with ldmatrix the
// block's qa rows in workgroup memory, read per chunk) by the same half of
// the latent rows, for the output it owns that half's columns. Per chunk of
// 32 selected positions:
//   0. the chunk's 32 latent rows (gathered through the selection and the
//      block table, 16 bytes per copy) are in a workgroup tile whose rows are
//      padded by 16 bytes (the 8 rows of a fragment fall on different
//      banks). With asynchronous copies (NVIDIA) two tiles alternate: the
//      next chunk's rows are copied while this one is multiplied; without
//      (AMD, and fp8 pools everywhere) the block copies each chunk before
//      using it. An fp8 pool's rows (MlaAttend::fp8: e4m3 values, one f32
//      scale per 128) are decoded on the way through registers: each 8-byte
//      run with its group's scale, round(value * scale) to bf16, the
//      rounding of a bf16 pool's element;
//   1. each subgroup's partial 16 x 32 scores go to its own rows of a
//      workgroup buffer;
//   2. after a barrier each subgroup adds its partner's partial scores to its
//      own in the accumulator layout (both subgroups of a head tile hold the
//      same sums: a + b = b + a), masks positions past the range's end and
//      runs the online softmax on its registers: a lane's rows are those of
//      its accumulator pieces, reduced over the lanes sharing a row by
//      shuffles; the running maxima and sums stay in registers. Base 2
//      (scores times scale log2(e), exp2); a row's maximum moves only past
//      a slack (kMaxSlack), so most chunks rescale nothing;
//   3. it rescales its output accumulators and adds P times its latent
//      columns. Where the accumulators of two instruction tiles are the A
//      operand of one k step (mma.sync m16n8k16), P goes from registers
//      into the instruction; otherwise it goes through the subgroup's own
//      workgroup rows (and a barrier).
// On mma.sync the latent fragments are read with ldmatrix (the scores' B
// operand as stored, the output's B operand transposed: positions run
// along K); elsewhere element by element. On sm_90a the warpgroup form
// (MlaAttendLayout::wgmma) multiplies on wgmma instead: two warpgroups of 64
// heads, one per half of R, reading qa's rows, the tile and P from 128-byte
// swizzled rows of workgroup memory; its accumulators are, per warp, the
// mma.sync m16n8 fragments, so steps 1-3 and the stores are shared. At the end
// acc / sum, stored f32 into oh or, split, into the parts buffer with the
// range's maximum and sum (0 for an empty range). Rounding points beyond the
// generic kernel's fp32: qa and p enter the matrix unit as bf16 (as in a bf16
// flash attention); the max, sums and accumulators are fp32.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/ScopeExit.h"

#include <cmath>

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToKernel/MlaSplit.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Positions per chunk of the online softmax.
constexpr int64_t kChunk = 32;
/// How far (in base-2 exponent units: scores are scaled by log2(e)) a
/// chunk's row maximum may exceed the running one before the running
/// maximum moves and the accumulators are rescaled: probabilities stay
/// below 2^11 (bf16 and f32 hold them; FlashAttention 4 keeps a stale
/// maximum the same way).
constexpr float kMaxSlack = 11.0f;
/// bf16 elements per copy of a latent row into the tile (16 bytes).
constexpr int64_t kCopyElements = 8;
/// Padding of a tile row in bf16 elements (16 bytes: consecutive rows start
/// 4 banks apart).
constexpr int64_t kTilePad = 8;
/// Padding of a row of the score and probability buffers, in elements.
constexpr int64_t kScorePad = 8;
/// Lanes that copy one latent row at least (a 128-byte run per pass); more
/// when the block has more threads than a chunk's rows need.
constexpr int64_t kMinLanesPerRow = 8;
/// Subgroups per head tile; each owns R / kColumnSplits latent columns.
constexpr int64_t kColumnSplits = 2;
/// Head tiles per block at most (64 heads with m = 16).
constexpr int64_t kMaxHeadTiles = 4;
/// The warpgroup form (MlaAttendLayout::wgmma): its instruction's rows (the
/// block's 64 heads), bf16 elements of a 128-byte swizzled row (the
/// operands' K blocks), the swizzle atom's bytes.
constexpr int64_t kWarpgroupHeads = kWarpgroupRows;
constexpr int64_t kSwizzleElements = 64;
constexpr int64_t kSwizzleAtomBytes = 1024;

bool sameLaneMap(const LaneMap &x, const LaneMap &y) {
  return x.div == y.div && x.mod == y.mod && x.mul == y.mul;
}

/// True when the accumulators of instruction tiles 2s and 2s + 1 (n columns
/// each), concatenated, are the A operand of k step s (mma.sync m16n8k16):
/// the softmax's probabilities then feed the next product from registers.
bool accumulatorsFormOperandA(const MatrixInstruction &mi) {
  const FragmentLayout &a = mi.a, &c = mi.c;
  if (mi.k != 2 * mi.n || a.count != c.count ||
      a.pieces.size() != 2 * c.pieces.size() ||
      !sameLaneMap(a.outer, c.outer) || !sameLaneMap(a.inner, c.inner))
    return false;
  size_t half = c.pieces.size();
  for (size_t i = 0; i < half; ++i)
    if (a.pieces[i] != c.pieces[i] ||
        a.pieces[half + i] !=
            std::array<int64_t, 2>{c.pieces[i][0], c.pieces[i][1] + mi.n})
      return false;
  return true;
}

/// ldmatrix reads (nvgpu.ldmatrix x4) for mma.sync m16n8k16 bf16.
bool readsWithLdmatrix(const MatrixInstruction &mi) {
  return mi.family == MatrixFamily::MmaSync && mi.m == 16 && mi.n == 8 &&
         mi.k == 16;
}

/// True when `target` has the bf16 warpgroup instruction (wgmma, sm_90a).
bool hasWarpgroupMma(const TargetInfo &target) {
  return llvm::any_of(target.getMatrixInstructions(),
                      [](const MatrixInstruction &w) {
                        return w.family == MatrixFamily::Wgmma &&
                               w.operands == MatrixElement::BF16;
                      });
}

/// How one target's kernel is laid out.
struct MlaAttendLayout {
  int64_t headTiles = 0, subgroups = 0, threads = 0;
  /// Latent tiles in workgroup memory (2 with asynchronous copies).
  int64_t stages = 1;
  bool asyncCopy = false, ldmatrix = false, registerProbs = false;
  /// The warpgroup form (sm_90a): two warpgroups of 64 heads each, one per
  /// half of the latent width; the scores and P x V on wgmma, whose
  /// operands are read from workgroup memory by the instruction itself (the
  /// block's qa rows, the latent tile and P in 128-byte swizzled rows, K
  /// blocks of 64 elements: kSwizzleElements); warp w holds heads 16 (w mod
  /// 4).. of the accumulators in mma.sync m16n8's fragment order, so the
  /// softmax, the partner's partial scores (warp w ^ 4) and the stores are
  /// the mma.sync form's.
  bool wgmma = false;
  /// fp8 rows of the warpgroup form: raw records ([rawStages, chunk, row
  /// bytes] i8) copied asynchronously rawStages - 1 chunks ahead, each
  /// chunk's decoded into the (single) bf16 tile after the previous chunk's
  /// products; 0 otherwise.
  int64_t rawStages = 0;
  int64_t rawOffset = 0;
  /// qa's rows of the block as bf16 in workgroup memory, read with ldmatrix
  /// per chunk (with ldmatrix: 64 registers a lane does not hold beside the
  /// 128 of its output accumulators); else A fragments in registers.
  bool queryInWorkgroup = false;
  /// Lanes that copy one latent row (16 bytes each per pass).
  int64_t lanesPerRow = kMinLanesPerRow;
  /// Byte offsets in the workgroup arena and its size.
  int64_t tileOffset = 0, partialOffset = 0, probsOffset = 0, queryOffset = 0,
          bytes = 0;
};

/// The warpgroup form applies: sm_90a's wgmma, mma.sync m16n8k16 fragments
/// (the accumulators' order), each half of the latent width whole K blocks
/// of kSwizzleElements and at most one instruction's 256 columns.
bool takesWarpgroupForm(const MlaAttend &s, const MatrixInstruction &mi,
                        bool warpgroupMma) {
  int64_t half = s.rank / kColumnSplits;
  return warpgroupMma && readsWithLdmatrix(mi) &&
         s.rank % (kColumnSplits * kSwizzleElements) == 0 && half <= 256 &&
         kMaxHeadTiles * mi.m == kWarpgroupHeads;
}

MlaAttendLayout layoutFor(const MlaAttend &s, const MatrixInstruction &mi,
                          int64_t subgroupSize, bool warpgroupMma) {
  MlaAttendLayout l;
  l.wgmma = takesWarpgroupForm(s, mi, warpgroupMma);
  // The warpgroup form always multiplies 64 head rows (heads past H
  // clamped on load, not stored).
  l.headTiles =
      l.wgmma ? kMaxHeadTiles
              : std::min(kMaxHeadTiles, llvm::divideCeilSigned(s.heads, mi.m));
  l.subgroups = l.headTiles * kColumnSplits;
  l.threads = l.subgroups * subgroupSize;
  // fp8 rows are decoded on their way into the tile: through registers, or
  // in the warpgroup form from raw records copied asynchronously.
  l.asyncCopy = mi.family == MatrixFamily::MmaSync && (!s.fp8() || l.wgmma);
  l.rawStages = l.wgmma && s.fp8() ? 2 : 0;
  // The warpgroup form's chunks take about the latency of a gather: its
  // bf16 copies run two chunks ahead (three tiles); the mma.sync form's
  // one.
  l.stages = l.rawStages ? 1 : l.asyncCopy ? (l.wgmma ? 3 : 2) : 1;
  l.lanesPerRow = std::max(kMinLanesPerRow, l.threads / kChunk);
  l.ldmatrix = !l.wgmma && readsWithLdmatrix(mi);
  l.registerProbs = !l.wgmma && accumulatorsFormOperandA(mi);
  l.queryInWorkgroup = l.ldmatrix || l.wgmma;
  // Swizzled rows are unpadded; their buffers start on a swizzle atom.
  int64_t pad = l.wgmma ? 0 : kTilePad;
  int64_t align = l.wgmma ? kSwizzleAtomBytes : 1;
  int64_t tileBytes = l.stages * kChunk * (s.rank + pad) * 2;
  int64_t partialBytes = l.subgroups * mi.m * (kChunk + kScorePad) * 4;
  // The warpgroup form's P: one [64 heads, kSwizzleElements] bf16 buffer per
  // warpgroup (K = the chunk's positions in the first kChunk columns).
  int64_t probsBytes =
      l.wgmma           ? kColumnSplits * kWarpgroupHeads * kSwizzleElements * 2
      : l.registerProbs ? 0
                        : l.subgroups * mi.m * (kChunk + kScorePad) * 2;
  int64_t queryBytes =
      l.queryInWorkgroup ? l.headTiles * mi.m * (s.rank + pad) * 2 : 0;
  l.tileOffset = 0;
  l.partialOffset = llvm::alignTo(tileBytes, align);
  l.probsOffset = llvm::alignTo(l.partialOffset + partialBytes, align);
  l.queryOffset = llvm::alignTo(l.probsOffset + probsBytes, align);
  l.rawOffset = llvm::alignTo(l.queryOffset + queryBytes, align);
  l.bytes = l.rawOffset + l.rawStages * kChunk * s.fp8RowBytes;
  return l;
}

class MlaAttendBuilder : LaneArith {
public:
  MlaAttendBuilder(OpBuilder &b, Location loc, const MlaAttend &shape,
                   const MatrixInstruction &mi, int64_t subgroupSize,
                   const MlaAttendLayout &layout)
      : LaneArith(b, loc), s(shape), mi(mi), subgroupSize(subgroupSize),
        l(layout) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    slice = s.rank / kColumnSplits;
    pieces = mi.c.pieces.size();
    scoreScale = s.scale * M_LOG2E;
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles,
             int64_t staticBytes);

private:
  /// Whether `cond` (i1) holds in any lane of the subgroup (every lane
  /// gets the answer).
  Value subgroupAny(Value cond);
  /// `accs` times `factorVec` where `cond` (uniform over the subgroup)
  /// holds, else `accs` as they are.
  SmallVector<Value> rescaledWhere(Value cond, ValueRange accs,
                                   Value factorVec);
  /// `v` combined over the lanes that hold the same accumulator rows.
  Value rowReduce(Value v, bool max) {
    const LaneMap &inner = mi.c.inner;
    for (int64_t g = inner.div; g < inner.div * inner.mod; g *= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, loc, v, ci32(g),
                                            ci32(subgroupSize),
                                            gpu::ShuffleMode::XOR);
      Value o = shuffle.getShuffleResult();
      v = max ? LLVM::MaxNumOp::create(b, loc, v, o).getResult()
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
  /// Position j0 + offset, clamped to the range's last selected one (masked
  /// positions read a written row, so no NaN reaches the products).
  Value position(Value j0, Value offset) {
    return minu(add(j0, offset), lastPos);
  }
  /// Lane group q = lane / 8 of an ldmatrix x4 addresses matrix q, row
  /// lane mod 8.
  Value ldmatrix(Value mem, Value buf, Value row, Value col, bool transpose) {
    return nvgpu::LdMatrixOp::create(b, loc, VectorType::get({4, 2}, bf16),
                                     mem, ValueRange{buf, row, col},
                                     transpose, /*numTiles=*/4);
  }
  /// Matrices `first`, `first` + 1 of an ldmatrix x4 result: one B operand.
  Value matrixPair(Value tiles, int64_t first) {
    auto part = vector::ExtractStridedSliceOp::create(
        b, loc, tiles, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{2},
        ArrayRef<int64_t>{1});
    return vector::ShapeCastOp::create(b, loc, VectorType::get({4}, bf16),
                                       part);
  }

  /// Instruction tile `j` (columns j n..) of an accumulator-layout vector
  /// into this subgroup's rows of `buffer` [subgroups, m, chunk + pad].
  void storeAccumulatorTile(Value acc, Value buffer, int64_t j) {
    for (auto [pi, piece] : llvm::enumerate(mi.c.pieces)) {
      Value v = vector::ExtractStridedSliceOp::create(
          b, loc, acc, ArrayRef<int64_t>{int64_t(pi) * mi.c.count},
          ArrayRef<int64_t>{mi.c.count}, ArrayRef<int64_t>{1});
      vector::StoreOp::create(
          b, loc, v, buffer,
          ValueRange{warp, add(cOuter, piece[0]),
                     add(add(cInner, j * mi.n), piece[1])});
    }
  }
  /// Column `col` (< kSwizzleElements) of swizzled row `row`: the hardware's
  /// 128-byte swizzle, 16-byte chunk c of row r at c ^ (r mod 8).
  Value swizzled(Value row, Value col) {
    Value chunk = arith::XOrIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, col, idx(8)),
        arith::AndIOp::create(b, loc, row, idx(7)));
    return add(mul(chunk, 8), arith::RemUIOp::create(b, loc, col, idx(8)));
  }
  /// Indices of latent element (row, col) of tile `buf`: [stage, row, col],
  /// or in the warpgroup form [stage, K block, row, swizzled column].
  SmallVector<Value> tileIndices(Value buf, Value row, Value col) {
    if (!l.wgmma)
      return {buf, row, col};
    Value inBlock = arith::RemUIOp::create(b, loc, col, idx(kSwizzleElements));
    return {buf, arith::DivUIOp::create(b, loc, col, idx(kSwizzleElements)),
            row, swizzled(row, inBlock)};
  }
  /// Indices of qa element (head row, col) in `query`: [row, col], or in the
  /// warpgroup form [K block, row, swizzled column].
  SmallVector<Value> queryIndices(Value row, Value col) {
    if (!l.wgmma)
      return {row, col};
    Value inBlock = arith::RemUIOp::create(b, loc, col, idx(kSwizzleElements));
    return {arith::DivUIOp::create(b, loc, col, idx(kSwizzleElements)), row,
            swizzled(row, inBlock)};
  }
  /// The wgmma descriptor of swizzled 128-byte rows at byte `offset` of the
  /// arena: 8-row groups 1024 bytes apart (stride byte offset), K blocks
  /// (K-major operands: unused, 16 by convention) or, for an MN-major
  /// operand, the next 64 columns `leadingBytes` apart.
  Value descriptor(Value offset, int64_t leadingBytes);
  /// `desc` for the operand `bytes` (a multiple of 16) further on: its
  /// start field plus bytes / 16 (no carry: the arena lies below 2^18
  /// bytes, the field's reach).
  Value advance(Value desc, int64_t bytes) {
    if (bytes == 0)
      return desc;
    return arith::AddIOp::create(
        b, loc, desc,
        arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(bytes / 16)));
  }
  /// Orders this thread's generic-proxy writes of workgroup memory (copies,
  /// qa rows, P) before the wgmma reads of the async proxy.
  void fenceForWarpgroup() { fenceSharedWritesForAsyncProxy(b, loc); }
  /// partialScores of the warpgroup form: this warpgroup's 64 heads x kChunk
  /// positions over its half of R, kChunk / 8 vectors in mma.sync m16n8's
  /// fragment order (this warp's 16 heads).
  SmallVector<Value> warpgroupScores(Value buf);
  /// The warpgroup form's P x V: `probsAcc` (this warp's rows of P, f32)
  /// through this warpgroup's P buffer as bf16, added to `accs`.
  SmallVector<Value> warpgroupProducts(SmallVector<Value> accs,
                                       ArrayRef<Value> probsAcc, Value buf);
  void addBuffers(gpu::GPUFuncOp func, int64_t staticBytes);
  /// Sets the thread's values (lane, subgroup, partner, columns, heads,
  /// accumulator lane coordinates) from thread id `threadId`.
  void deriveThreadValues(Value threadId);
  /// `v` (i64 or index) through a PTX move: the same value, which the
  /// compiler cannot hoist or fold.
  Value opaque(Value v);
  void buildItem();
  void loadQueryFragments();
  /// (page, row in page) of this thread's rows of the chunk at j0.
  SmallVector<std::pair<Value, Value>> locateRows(Value j0);
  /// Copies this thread's parts of `rows` into tile `buf`: the copies'
  /// group (asynchronous) or null (synchronous).
  Value copyRows(ArrayRef<std::pair<Value, Value>> rows, Value buf);
  /// The kCopyElements latent values at (page, row in page, column col) of a
  /// bf16 pool, as stored.
  Value loadBf16Run(Value page, Value pageRow, Value col);
  /// The same run of an fp8 pool: its value bytes and its group's scale bytes
  /// (vector<kCopyElements + 4 x i8>), decoded by decodeFp8Run after the
  /// loads in flight.
  Value loadFp8Run(Value page, Value pageRow, Value col);
  Value decodeFp8Run(Value raw);
  /// `bytes` (vector<n x i8> of e4m3 codes) as f32 through NVIDIA's pair
  /// conversion.
  Value decodeE4M3Pairs(Value bytes);
  /// copyRows when `cond`, an empty group otherwise (asynchronous only).
  Value
  copyRowsIf(Value cond,
             function_ref<SmallVector<std::pair<Value, Value>>()> rows,
             Value buf);
  /// Waits until at most `pending` of this thread's copy groups are in
  /// flight (the latest ones), then makes the block's copies visible.
  void waitForCopies(Value group, int64_t pending = 0);
  /// Calls `run(row group, tile row, column)` for each of this thread's
  /// 16-byte runs of a chunk (the row groups of locateRows).
  void forEachRun(function_ref<void(int64_t, Value, Value)> run);
  /// One run of the pool (raw fp8 bytes with its scale, or bf16).
  Value loadRun(Value page, Value pageRow, Value col);
  /// A run of loadRun (fp8 decoded) into tile `buf` at (row, col).
  void storeRun(Value value, Value buf, Value row, Value col);
  /// copyRows of the raw fp8 records into stage `raw` of rawRecords: each
  /// run of lanesPerRow lanes copies one record in 16-byte pieces.
  Value copyRawRecords(ArrayRef<std::pair<Value, Value>> rows, Value raw);
  /// Stages of the asynchronous copies: the tiles', or the raw records'.
  int64_t copyStages() const { return l.rawStages ? l.rawStages : l.stages; }
  /// The raw fp8 records of stage `raw` decoded into the tile (each thread
  /// its runs, as the synchronous copy's).
  void decodeRawRows(Value raw);
  SmallVector<Value> buildChunk(Value j0, ValueRange carried);
  SmallVector<Value> partialScores(Value buf);
  SmallVector<Value> probabilityOperands(ArrayRef<Value> probs);
  SmallVector<Value> addProducts(SmallVector<Value> accs,
                                 ArrayRef<Value> pFrags, Value buf);
  void storeOutputs(ValueRange chunkResults);

  const MlaAttend &s;
  const MatrixInstruction &mi;
  int64_t subgroupSize, slice, pieces;
  const MlaAttendLayout &l;
  Type f32, bf16;
  /// The attention scale times log2(e): scores in base-2 exponent units.
  double scoreScale;
  // Arguments.
  Value qa, cache, sel, counts, starts, blockTable, oh, parts;
  // Workgroup buffers: latent tiles [stages, chunk, R + pad] bf16, partial
  // scores [subgroups, m, chunk + pad] f32, probabilities (not in
  // registers) [subgroups, m, chunk + pad] bf16, the block's qa rows
  // (queryInWorkgroup) [heads, R + pad] bf16.
  Value tile, partial, probs, query;
  // The warpgroup form's raw fp8 records [rawStages, chunk, row bytes] i8.
  Value rawRecords;
  // The warpgroup form: the arena's shared address (i64), this thread's
  // warpgroup and its warp's first head row in it.
  Value arenaAddress, warpgroup, headRow;
  // arenaAddress as this chunk sees it (descriptors made from it stay in
  // the chunk: hoisted, qa's 16 would hold 32 registers for the whole item).
  Value chunkArena;
  // Per thread: subgroup, its head tile's partner, its latent columns, the
  // block's and its tile's first head, lane coordinates of the accumulator
  // layout.
  Value tid, warp, partner, sliceBase, blockHead, headBase, cOuter, cInner;
  // Per block: the position ranges per token and whether there are several.
  Value splits, isSplit;
  // Per work item: the token, its range [j0, j1) and row of `parts`.
  // Positions are counted from the range's start: `rangeSel` is the token's
  // selection from there.
  Value t, request, rangeBegin, rangeLength, lastPos, slot, rangeSel;
  SmallVector<Value> qaFrags;
};

} // namespace

void MlaAttendBuilder::addBuffers(gpu::GPUFuncOp func, int64_t staticBytes) {
  SmallVector<int64_t> tileShape = {l.stages, kChunk, s.rank + kTilePad};
  SmallVector<int64_t> scoreShape = {l.subgroups, mi.m, kChunk + kScorePad};
  SmallVector<int64_t> queryShape = {l.headTiles * mi.m, s.rank + kTilePad};
  if (l.wgmma) {
    // Swizzled K blocks of 64 columns; every buffer in the arena, whose
    // shared address the descriptors take.
    int64_t blocks = s.rank / kSwizzleElements;
    tileShape = {l.stages, blocks, kChunk, kSwizzleElements};
    queryShape = {blocks, kWarpgroupHeads, kSwizzleElements};
    Value arena = addDynamicWorkgroupArena(func, loc, l.bytes);
    tile = viewWorkgroupArena(b, loc, arena, l.tileOffset, tileShape, bf16);
    partial =
        viewWorkgroupArena(b, loc, arena, l.partialOffset, scoreShape, f32);
    probs = viewWorkgroupArena(
        b, loc, arena, l.probsOffset,
        {kColumnSplits, kWarpgroupHeads, kSwizzleElements}, bf16);
    query = viewWorkgroupArena(b, loc, arena, l.queryOffset, queryShape, bf16);
    if (l.rawStages)
      rawRecords = viewWorkgroupArena(b, loc, arena, l.rawOffset,
                                      {l.rawStages, kChunk, s.fp8RowBytes},
                                      b.getI8Type());
    arenaAddress = arith::IndexCastUIOp::create(
        b, loc, b.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arena));
    return;
  }
  if (l.bytes <= staticBytes) {
    tile = addWorkgroupBuffer(func, loc, tileShape, bf16);
    partial = addWorkgroupBuffer(func, loc, scoreShape, f32);
    if (!l.registerProbs)
      probs = addWorkgroupBuffer(func, loc, scoreShape, bf16);
    if (l.queryInWorkgroup)
      query = addWorkgroupBuffer(func, loc, queryShape, bf16);
    return;
  }
  Value arena = addDynamicWorkgroupArena(func, loc, l.bytes);
  tile = viewWorkgroupArena(b, loc, arena, l.tileOffset, tileShape, bf16);
  partial =
      viewWorkgroupArena(b, loc, arena, l.partialOffset, scoreShape, f32);
  if (!l.registerProbs)
    probs =
        viewWorkgroupArena(b, loc, arena, l.probsOffset, scoreShape, bf16);
  if (l.queryInWorkgroup)
    query =
        viewWorkgroupArena(b, loc, arena, l.queryOffset, queryShape, bf16);
}

void MlaAttendBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles,
                             int64_t staticBytes) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  qa = at(KernelRole::X);
  cache = at(KernelRole::LatentPool);
  sel = at(KernelRole::Selection);
  counts = at(KernelRole::SelectionCounts);
  starts = at(KernelRole::SeqStarts);
  blockTable = at(KernelRole::BlockTable);
  oh = at(KernelRole::Out);
  parts = at(KernelRole::SplitParts);
  addBuffers(func, staticBytes);

  blockHead = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                  l.headTiles * mi.m);
  deriveThreadValues(gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));

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

void MlaAttendBuilder::deriveThreadValues(Value threadId) {
  tid = threadId;
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  Value headTile;
  if (l.wgmma) {
    // Warpgroup g owns half g of R; warp w holds heads 16 (w mod 4)..,
    // sharing them with warp w ^ 4 of the other warpgroup.
    int64_t warps = kWarpgroupThreads / subgroupSize;
    warpgroup = arith::DivUIOp::create(b, loc, warp, idx(warps));
    partner = arith::XOrIOp::create(b, loc, warp, idx(warps));
    sliceBase = mul(warpgroup, slice);
    headTile = arith::RemUIOp::create(b, loc, warp, idx(warps));
    headRow = mul(headTile, mi.m);
  } else {
    // Subgroups 2i and 2i + 1 share head tile i.
    partner = arith::XOrIOp::create(b, loc, warp, idx(1));
    sliceBase =
        mul(arith::RemUIOp::create(b, loc, warp, idx(kColumnSplits)), slice);
    headTile = arith::DivUIOp::create(b, loc, warp, idx(kColumnSplits));
  }
  headBase = add(blockHead, mul(headTile, mi.m));
  cOuter = laneMap(mi.c.outer);
  cInner = laneMap(mi.c.inner);
}

Value MlaAttendBuilder::opaque(Value v) {
  Type i64 = b.getI64Type();
  bool isIndex = v.getType().isIndex();
  Value x = isIndex ? arith::IndexCastUIOp::create(b, loc, i64, v) : v;
  x = LLVM::InlineAsmOp::create(b, loc, i64, ValueRange{x}, "mov.b64 $0, $1;",
                                "=l,l", /*has_side_effects=*/true,
                                /*is_align_stack=*/false,
                                LLVM::tailcallkind::TailCallKind::None,
                                LLVM::AsmDialectAttr(), ArrayAttr())
          .getRes();
  return isIndex ? arith::IndexCastUIOp::create(b, loc, b.getIndexType(), x)
                 : x;
}

void MlaAttendBuilder::loadQueryFragments() {
  Value lastHead = idx(s.heads - 1);
  qaFrags.clear();
  if (l.queryInWorkgroup) {
    // The block's qa rows (heads past H clamped) as bf16, 4 columns per
    // load; read back per chunk (the barrier before the first chunk orders
    // them, the one ending the previous work item protects them).
    int64_t rows = l.headTiles * mi.m, perRow = s.rank / 4;
    for (int64_t i = 0; i < rows * perRow / l.threads; ++i) {
      Value piece = add(tid, i * l.threads);
      Value row = arith::DivUIOp::create(b, loc, piece, idx(perRow));
      Value col = mul(arith::RemUIOp::create(b, loc, piece, idx(perRow)), 4);
      auto load = vector::LoadOp::create(
          b, loc, VectorType::get({4}, f32), qa,
          ValueRange{t, minu(add(blockHead, row), lastHead), col});
      load.setAlignment(uint64_t(16));
      auto store = vector::StoreOp::create(
          b, loc,
          arith::TruncFOp::create(b, loc, VectorType::get({4}, bf16), load),
          query, queryIndices(row, col));
      store.setAlignment(uint64_t(8));
    }
    if (l.wgmma)
      fenceForWarpgroup();
    return;
  }
  // qa's A fragments for this subgroup's columns, bf16, for every chunk.
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
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
  loadQueryFragments();

  // The first chunks' rows (asynchronous copies: copyStages - 1 chunks
  // ahead, each its own group; wait for the first; raw fp8 records then
  // decoded into the tile).
  if (l.asyncCopy) {
    Value first;
    for (int64_t c = 0; c + 1 < copyStages(); ++c) {
      Value j = idx(c * kChunk);
      Value group = copyRowsIf(
          ult(j, rangeLength), [&] { return locateRows(j); }, idx(c));
      if (!first)
        first = group;
    }
    waitForCopies(first, copyStages() - 2);
  }
  if (l.rawStages) {
    decodeRawRows(idx(0));
    fenceForWarpgroup();
    barrier();
  }

  // Chunks: carried running max and sum per accumulator row piece, the
  // output accumulators.
  SmallVector<Value> init(pieces, cf32(-INFINITY));
  init.append(pieces, cf32(0.0));
  for (int64_t nf = 0; nf < slice / mi.n; ++nf)
    init.push_back(zeros(mi.c.size()));
  auto chunks = scf::ForOp::create(
      b, loc, idx(0), rangeLength, idx(kChunk), init,
      [&](OpBuilder &nb, Location, Value j0, ValueRange c) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        scf::YieldOp::create(b, loc, buildChunk(j0, c));
      });
  storeOutputs(chunks.getResults());
  // The next work item rewrites the tiles.
  barrier();
}

SmallVector<std::pair<Value, Value>>
MlaAttendBuilder::locateRows(Value j0) {
  // Each run of lanesPerRow lanes copies contiguous bytes of one row per
  // pass (128 or more): a thread keeps its row for every pass, one lookup
  // per row group.
  int64_t rowsAtOnce = l.threads / l.lanesPerRow;
  Value row = arith::DivUIOp::create(b, loc, tid, idx(l.lanesPerRow));
  SmallVector<std::pair<Value, Value>> rows;
  for (int64_t g = 0; g < kChunk / rowsAtOnce; ++g)
    rows.push_back(latentRow(position(j0, add(row, g * rowsAtOnce))));
  return rows;
}

Value MlaAttendBuilder::copyRows(ArrayRef<std::pair<Value, Value>> rows,
                                 Value buf) {
  auto copies = [&](auto &&copy) {
    forEachRun([&](int64_t g, Value r, Value col) {
      copy(r, col, rows[g].first, rows[g].second);
    });
  };
  if (l.rawStages)
    return copyRawRecords(rows, buf);
  if (l.asyncCopy) {
    auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
    SmallVector<Value> tokens;
    copies([&](Value r, Value col, Value page, Value pageRow) {
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          b, loc, token, tile, tileIndices(buf, r, col), cache,
          ValueRange{page, pageRow, col}, b.getIndexAttr(kCopyElements),
          Value(), b.getUnitAttr()));
    });
    return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, tokens);
  }
  // Loads first, then stores, a few at a time: the rows' gathers overlap.
  constexpr int64_t kInFlight = 8;
  SmallVector<std::pair<Value, Value>> targets;
  SmallVector<Value> values;
  auto flush = [&] {
    for (auto [value, target] : llvm::zip_equal(values, targets))
      storeRun(value, buf, target.first, target.second);
    values.clear();
    targets.clear();
  };
  copies([&](Value r, Value col, Value page, Value pageRow) {
    values.push_back(loadRun(page, pageRow, col));
    targets.push_back({r, col});
    if (int64_t(values.size()) == kInFlight)
      flush();
  });
  flush();
  return {};
}

void MlaAttendBuilder::forEachRun(
    function_ref<void(int64_t, Value, Value)> run) {
  int64_t rowsAtOnce = l.threads / l.lanesPerRow;
  int64_t passes = s.rank / (kCopyElements * l.lanesPerRow);
  Value row = arith::DivUIOp::create(b, loc, tid, idx(l.lanesPerRow));
  Value part = mul(arith::RemUIOp::create(b, loc, tid, idx(l.lanesPerRow)),
                   kCopyElements);
  for (int64_t g = 0; g < kChunk / rowsAtOnce; ++g)
    for (int64_t p = 0; p < passes; ++p)
      run(g, add(row, g * rowsAtOnce),
          add(part, p * kCopyElements * l.lanesPerRow));
}

Value MlaAttendBuilder::loadRun(Value page, Value pageRow, Value col) {
  return s.fp8() ? loadFp8Run(page, pageRow, col)
                 : loadBf16Run(page, pageRow, col);
}

void MlaAttendBuilder::storeRun(Value value, Value buf, Value row, Value col) {
  auto store =
      vector::StoreOp::create(b, loc, s.fp8() ? decodeFp8Run(value) : value,
                              tile, tileIndices(buf, row, col));
  store.setAlignment(uint64_t(16));
}

Value MlaAttendBuilder::copyRawRecords(ArrayRef<std::pair<Value, Value>> rows,
                                       Value raw) {
  constexpr int64_t kPieceBytes = 16;
  int64_t pieces = s.fp8RowBytes / kPieceBytes;
  int64_t rowsAtOnce = l.threads / l.lanesPerRow;
  Value row = arith::DivUIOp::create(b, loc, tid, idx(l.lanesPerRow));
  Value laneInRow = arith::RemUIOp::create(b, loc, tid, idx(l.lanesPerRow));
  auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
  SmallVector<Value> tokens;
  for (int64_t g = 0; g < int64_t(rows.size()); ++g) {
    Value r = add(row, g * rowsAtOnce);
    Value page = rows[g].first, record = mul(rows[g].second, s.fp8RowBytes);
    for (int64_t q = 0; q * l.lanesPerRow < pieces; ++q) {
      Value byte = mul(add(laneInRow, q * l.lanesPerRow), kPieceBytes);
      auto copy = [&] {
        return nvgpu::DeviceAsyncCopyOp::create(
            b, loc, token, rawRecords, ValueRange{raw, r, byte}, cache,
            ValueRange{page, add(record, byte)}, b.getIndexAttr(kPieceBytes),
            Value(), b.getUnitAttr());
      };
      if ((q + 1) * l.lanesPerRow <= pieces) {
        tokens.push_back(copy());
        continue;
      }
      // The record's last pieces (its scales): the group's commit takes
      // this thread's copy too.
      ifThen(ult(byte, idx(s.fp8RowBytes)), [&] { copy(); });
    }
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, tokens);
}

void MlaAttendBuilder::decodeRawRows(Value raw) {
  Type i8 = b.getI8Type();
  forEachRun([&](int64_t, Value row, Value col) {
    auto values =
        vector::LoadOp::create(b, loc, VectorType::get({kCopyElements}, i8),
                               rawRecords, ValueRange{raw, row, col});
    values.setAlignment(uint64_t(kCopyElements));
    Value group = arith::DivUIOp::create(b, loc, col, idx(s.fp8GroupLanes));
    auto scale = vector::LoadOp::create(
        b, loc, VectorType::get({4}, i8), rawRecords,
        ValueRange{raw, row, add(mul(group, 4), s.fp8ScaleOffset)});
    scale.setAlignment(uint64_t(4));
    storeRun(vector::ShuffleOp::create(
                 b, loc, values, scale,
                 llvm::to_vector(llvm::seq<int64_t>(0, kCopyElements + 4))),
             idx(0), row, col);
  });
}

Value MlaAttendBuilder::loadBf16Run(Value page, Value pageRow, Value col) {
  auto load =
      vector::LoadOp::create(b, loc, VectorType::get({kCopyElements}, bf16),
                             cache, ValueRange{page, pageRow, col});
  load.setAlignment(uint64_t(16));
  return load;
}

Value MlaAttendBuilder::loadFp8Run(Value page, Value pageRow, Value col) {
  // The run's kCopyElements value bytes and its group's f32 scale (4 bytes)
  // of the row's record, as one vector<kCopyElements + 4 x i8>.
  Type i8 = b.getI8Type();
  Value row = mul(pageRow, s.fp8RowBytes);
  auto values =
      vector::LoadOp::create(b, loc, VectorType::get({kCopyElements}, i8),
                             cache, ValueRange{page, add(row, col)});
  values.setAlignment(uint64_t(kCopyElements));
  Value group = arith::DivUIOp::create(b, loc, col, idx(s.fp8GroupLanes));
  auto scale = vector::LoadOp::create(
      b, loc, VectorType::get({4}, i8), cache,
      ValueRange{page, add(add(row, s.fp8ScaleOffset), mul(group, 4))});
  scale.setAlignment(uint64_t(4));
  return vector::ShuffleOp::create(
      b, loc, values, scale,
      llvm::to_vector(llvm::seq<int64_t>(0, kCopyElements + 4)));
}

Value MlaAttendBuilder::decodeE4M3Pairs(Value bytes) {
  // cvt.rn.f16x2.e4m3x2 (sm_89 on): every e4m3 value is an f16 value, so the
  // f32 it widens to equals decodeE4M3ToF32's (the pages hold no NaN code).
  int64_t n = cast<VectorType>(bytes.getType()).getNumElements();
  SmallVector<Value> halves;
  for (int64_t i = 0; i < n; i += 2) {
    Value pair = vector::ExtractStridedSliceOp::create(
        b, loc, bytes, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{2},
        ArrayRef<int64_t>{1});
    Value f16s = NVVM::ConvertF8x2ToF16x2Op::create(
        b, loc, VectorType::get({2}, b.getF16Type()), pair,
        b.getBoolAttr(false), TypeAttr::get(b.getType<Float8E4M3FNType>()));
    halves.push_back(
        arith::ExtFOp::create(b, loc, VectorType::get({2}, f32), f16s));
  }
  Value all = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(VectorType::get({n}, f32)));
  for (auto [i, h] : llvm::enumerate(halves))
    all = vector::InsertStridedSliceOp::create(
        b, loc, h, all, ArrayRef<int64_t>{2 * int64_t(i)},
        ArrayRef<int64_t>{1});
  return all;
}

Value MlaAttendBuilder::decodeFp8Run(Value raw) {
  // round(value * scale) to bf16: the bf16 pool's rounding of a latent
  // element (the generic kernel multiplies in f32).
  Value bytes = vector::ExtractStridedSliceOp::create(
      b, loc, raw, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{kCopyElements},
      ArrayRef<int64_t>{1});
  Value scaleBytes = vector::ExtractStridedSliceOp::create(
      b, loc, raw, ArrayRef<int64_t>{kCopyElements}, ArrayRef<int64_t>{4},
      ArrayRef<int64_t>{1});
  Value scale = vector::ExtractOp::create(
      b, loc,
      vector::BitCastOp::create(b, loc, VectorType::get({1}, f32), scaleBytes),
      int64_t(0));
  Value scaled = arith::MulFOp::create(
      b, loc, l.wgmma ? decodeE4M3Pairs(bytes) : decodeE4M3ToF32(bytes),
      vector::BroadcastOp::create(b, loc, VectorType::get({kCopyElements}, f32),
                                  scale));
  return arith::TruncFOp::create(b, loc, VectorType::get({kCopyElements}, bf16),
                                 scaled);
}

Value MlaAttendBuilder::copyRowsIf(Value cond,
                                   function_ref<SmallVector<std::pair<Value, Value>>()> rows,
                                   Value buf) {
  auto token = b.getType<nvgpu::DeviceAsyncTokenType>();
  auto op = scf::IfOp::create(b, loc, TypeRange{token}, cond, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(op.thenBlock());
  scf::YieldOp::create(b, loc, copyRows(rows(), buf));
  b.setInsertionPointToStart(op.elseBlock());
  // An empty group: waiting for it waits for nothing.
  scf::YieldOp::create(
      b, loc,
      nvgpu::DeviceAsyncCreateGroupOp::create(b, loc, token, ValueRange{})
          .getResult());
  return op.getResult(0);
}

void MlaAttendBuilder::waitForCopies(Value group, int64_t pending) {
  nvgpu::DeviceAsyncWaitOp::create(b, loc, group, b.getI32IntegerAttr(pending));
  if (l.wgmma)
    fenceForWarpgroup();
  barrier();
}

SmallVector<Value> MlaAttendBuilder::partialScores(Value buf) {
  if (l.wgmma)
    return warpgroupScores(buf);
  // kChunk / n accumulators: this subgroup's heads x positions over its half
  // of the latent width.
  int64_t tiles = kChunk / mi.n;
  SmallVector<Value> accs(tiles, zeros(mi.c.size()));
  if (l.ldmatrix) {
    // Matrices (positions 8j.., k 0-7), (8j.., k 8-15), (8(j+1).., k 0-7),
    // (8(j+1).., k 8-15): B of tiles j and j + 1.
    Value inGroup = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value q = arith::DivUIOp::create(b, loc, lane, idx(8));
    Value kHalf = mul(arith::RemUIOp::create(b, loc, q, idx(2)), 8);
    Value nextTile = mul(arith::DivUIOp::create(b, loc, q, idx(2)), mi.n);
    // A (queryInWorkgroup): matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7),
    // (rows 0-7, k 8-15), (rows 8-15, k 8-15) of this subgroup's heads.
    Value rowHalf = mul(arith::RemUIOp::create(b, loc, q, idx(2)), 8);
    Value colHalf = mul(arith::DivUIOp::create(b, loc, q, idx(2)), 8);
    Value aRow = add(add(arith::SubIOp::create(b, loc, headBase, blockHead),
                         inGroup),
                     rowHalf);
    for (int64_t ks = 0; ks < slice / mi.k; ++ks) {
      Value a = l.queryInWorkgroup
                    ? Value(vector::ShapeCastOp::create(
                          b, loc, VectorType::get({8}, bf16),
                          nvgpu::LdMatrixOp::create(
                              b, loc, VectorType::get({4, 2}, bf16), query,
                              ValueRange{aRow, add(add(sliceBase, ks * mi.k),
                                                   colHalf)},
                              /*transpose=*/false, /*numTiles=*/4)))
                    : qaFrags[ks];
      for (int64_t j = 0; j < tiles; j += 2) {
        Value row = add(add(nextTile, inGroup), j * mi.n);
        Value col = add(add(sliceBase, ks * mi.k), kHalf);
        Value m = ldmatrix(tile, buf, row, col, /*transpose=*/false);
        for (int64_t half = 0; half < 2; ++half)
          accs[j + half] = emitMatrixInstruction(
              b, loc, mi, a, matrixPair(m, 2 * half), accs[j + half]);
      }
    }
    return accs;
  }
  Value bOuter = laneMap(mi.b.outer), bInner = laneMap(mi.b.inner);
  for (int64_t ks = 0; ks < slice / mi.k; ++ks)
    for (int64_t j = 0; j < tiles; ++j) {
      SmallVector<Value> parts;
      for (auto piece : mi.b.pieces) {
        Value row = add(add(bOuter, j * mi.n), piece[0]);
        Value c = add(add(add(sliceBase, ks * mi.k), bInner), piece[1]);
        parts.push_back(vector::LoadOp::create(
            b, loc, VectorType::get({mi.b.count}, bf16), tile,
            ValueRange{buf, row, c}));
      }
      accs[j] = emitMatrixInstruction(b, loc, mi, qaFrags[ks],
                                      concat(parts, mi.b, bf16), accs[j]);
    }
  return accs;
}

SmallVector<Value>
MlaAttendBuilder::probabilityOperands(ArrayRef<Value> probsAcc) {
  // probsAcc: kChunk / n accumulator-layout vectors of p (f32).
  auto bf16Of = [&](Value v) {
    return arith::TruncFOp::create(
        b, loc, VectorType::get({mi.c.size()}, bf16), v);
  };
  SmallVector<Value> frags;
  if (l.registerProbs) {
    for (int64_t ks = 0; ks < kChunk / mi.k; ++ks) {
      Value frag = arith::ConstantOp::create(
          b, loc, b.getZeroAttr(VectorType::get({mi.a.size()}, bf16)));
      frag = vector::InsertStridedSliceOp::create(
          b, loc, bf16Of(probsAcc[2 * ks]), frag, ArrayRef<int64_t>{0},
          ArrayRef<int64_t>{1});
      frag = vector::InsertStridedSliceOp::create(
          b, loc, bf16Of(probsAcc[2 * ks + 1]), frag,
          ArrayRef<int64_t>{mi.c.size()}, ArrayRef<int64_t>{1});
      frags.push_back(frag);
    }
    return frags;
  }
  // Through this subgroup's rows of `probs`: stored in the accumulator
  // layout, read in the A layout after a barrier.
  for (auto [j, acc] : llvm::enumerate(probsAcc))
    storeAccumulatorTile(bf16Of(acc), probs, int64_t(j));
  barrier();
  Value aOuter = laneMap(mi.a.outer), aInner = laneMap(mi.a.inner);
  for (int64_t ks = 0; ks < kChunk / mi.k; ++ks) {
    SmallVector<Value> parts;
    for (auto piece : mi.a.pieces)
      parts.push_back(vector::LoadOp::create(
          b, loc, VectorType::get({mi.a.count}, bf16), probs,
          ValueRange{warp, add(aOuter, piece[0]),
                     add(add(aInner, ks * mi.k), piece[1])}));
    frags.push_back(concat(parts, mi.a, bf16));
  }
  return frags;
}

SmallVector<Value> MlaAttendBuilder::addProducts(SmallVector<Value> accs,
                                                 ArrayRef<Value> pFrags,
                                                 Value buf) {
  int64_t tiles = slice / mi.n;
  if (l.ldmatrix) {
    // Transposed matrices (positions 16ks.., columns of tile j),
    // (16ks + 8.., tile j), (16ks.., tile j + 1), (16ks + 8.., tile j + 1):
    // B of tiles j and j + 1 with positions along K.
    Value inGroup = arith::RemUIOp::create(b, loc, lane, idx(8));
    Value q = arith::DivUIOp::create(b, loc, lane, idx(8));
    Value kHalf = mul(arith::RemUIOp::create(b, loc, q, idx(2)), 8);
    Value nextTile = mul(arith::DivUIOp::create(b, loc, q, idx(2)), mi.n);
    for (int64_t ks = 0; ks < kChunk / mi.k; ++ks) {
      Value row = add(add(kHalf, inGroup), ks * mi.k);
      for (int64_t j = 0; j < tiles; j += 2) {
        Value col = add(add(sliceBase, nextTile), j * mi.n);
        Value m = ldmatrix(tile, buf, row, col, /*transpose=*/true);
        for (int64_t half = 0; half < 2; ++half)
          accs[j + half] = emitMatrixInstruction(
              b, loc, mi, pFrags[ks], matrixPair(m, 2 * half), accs[j + half]);
      }
    }
    return accs;
  }
  // B (k = position, n = latent column): the tile rows of this lane's
  // positions, each element its own load.
  Value bOuter = laneMap(mi.b.outer), bInner = laneMap(mi.b.inner);
  for (int64_t ks = 0; ks < kChunk / mi.k; ++ks) {
    SmallVector<Value> rows;
    for (auto piece : mi.b.pieces)
      for (int64_t e = 0; e < mi.b.count; ++e)
        rows.push_back(add(add(bInner, ks * mi.k), piece[1] + e));
    for (int64_t j = 0; j < tiles; ++j) {
      SmallVector<Value> elems;
      int64_t r = 0;
      for (auto piece : mi.b.pieces) {
        Value col = add(add(add(sliceBase, j * mi.n), bOuter), piece[0]);
        for (int64_t e = 0; e < mi.b.count; ++e, ++r)
          elems.push_back(memref::LoadOp::create(
              b, loc, tile, ValueRange{buf, rows[r], col}));
      }
      Value vFrag = vector::FromElementsOp::create(
          b, loc, VectorType::get({mi.b.size()}, bf16), elems);
      accs[j] = emitMatrixInstruction(b, loc, mi, pFrags[ks], vFrag, accs[j]);
    }
  }
  return accs;
}

SmallVector<Value> MlaAttendBuilder::buildChunk(Value j0, ValueRange carried) {
  // The warpgroup form derives the chunk's descriptors and its threads'
  // addresses from opaque copies of the arena address and the thread id:
  // hoisted out of the chunk loop, qa's 16 descriptors and the swizzled
  // addresses would hold their registers for the whole work item (the
  // 128 output accumulators leave none: spills).
  std::array<Value, 10> outer = {tid,     lane,      warp,    warpgroup,
                                 partner, sliceBase, headRow, headBase,
                                 cOuter,  cInner};
  if (l.wgmma) {
    chunkArena = opaque(arenaAddress);
    deriveThreadValues(opaque(tid));
  }
  llvm::scope_exit restore([&] {
    std::tie(tid, lane, warp, warpgroup, partner, sliceBase, headRow, headBase,
             cOuter, cInner) =
        std::make_tuple(outer[0], outer[1], outer[2], outer[3], outer[4],
                        outer[5], outer[6], outer[7], outer[8], outer[9]);
  });
  Value chunk = arith::DivUIOp::create(b, loc, j0, idx(kChunk));
  Value buf = arith::RemUIOp::create(b, loc, chunk, idx(l.stages));
  Value next = add(j0, kChunk);
  // The chunk copyStages - 1 ahead (the next one with two stages).
  Value ahead = add(j0, (copyStages() - 1) * kChunk);
  SmallVector<std::pair<Value, Value>> nextRows;
  if (l.asyncCopy) {
    // Its rows looked up now (positions past the range clamp to its last
    // one), copied after this chunk's scores are issued.
    nextRows = locateRows(ahead);
  } else {
    // The previous chunk's reads of the tile are done.
    barrier();
    copyRows(locateRows(j0), buf);
    if (l.wgmma)
      fenceForWarpgroup();
    barrier();
  }

  // 1. This subgroup's partial scores, to its rows of `partial`.
  SmallVector<Value> own = partialScores(buf);
  // The chunk ahead into its tile (last read in the previous chunk, which
  // every subgroup finished before the barrier that ended it).
  Value nextGroup;
  if (l.asyncCopy)
    nextGroup = copyRowsIf(
        ult(ahead, rangeLength), [&] { return nextRows; },
        arith::RemUIOp::create(b, loc, add(chunk, copyStages() - 1),
                               idx(copyStages())));
  for (auto [j, acc] : llvm::enumerate(own))
    storeAccumulatorTile(acc, partial, int64_t(j));
  barrier();

  // 2. Scores = own + partner's, masked past the range; online softmax per
  // row piece on registers, in base 2: scores times scale log2(e), then
  // exp2 (one ex2 instruction; exp's range reduction took ten more), the
  // maxima in the same units. Positions from the chunk's start as i32.
  Value remaining = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), arith::SubIOp::create(b, loc, rangeLength, j0));
  Value colBase = arith::IndexCastOp::create(b, loc, b.getI32Type(), cInner);
  SmallVector<Value> scores; // [j][piece * count + e]
  SmallVector<Value> chunkMax(pieces, cf32(-INFINITY));
  for (auto [j, acc] : llvm::enumerate(own)) {
    SmallVector<Value> elems;
    for (auto [pi, piece] : llvm::enumerate(mi.c.pieces)) {
      Value other = vector::LoadOp::create(
          b, loc, VectorType::get({mi.c.count}, f32), partial,
          ValueRange{partner, add(cOuter, piece[0]),
                     add(add(cInner, int64_t(j) * mi.n), piece[1])});
      for (int64_t e = 0; e < mi.c.count; ++e) {
        Value sum = arith::AddFOp::create(
            b, loc,
            vector::ExtractOp::create(b, loc, acc,
                                      int64_t(pi) * mi.c.count + e),
            vector::ExtractOp::create(b, loc, other, e));
        Value score = arith::MulFOp::create(b, loc, sum, cf32(scoreScale));
        Value col = arith::AddIOp::create(
            b, loc, colBase, ci32(int64_t(j) * mi.n + piece[1] + e));
        score = arith::SelectOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, col,
                                  remaining),
            score, cf32(-INFINITY));
        chunkMax[pi] = LLVM::MaxNumOp::create(b, loc, chunkMax[pi], score);
        elems.push_back(score);
      }
    }
    scores.push_back(vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.c.size()}, f32), elems));
  }
  // A row's running maximum moves only when the chunk's exceeds it by more
  // than kMaxSlack (always in the first chunk: from -inf); otherwise its
  // probabilities are exp2(s - m) <= 2^kMaxSlack against the kept m, the
  // same quotient acc / sum, and its factor is exactly 1.
  SmallVector<Value> newMax, factor, newSum;
  Value grows = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  for (int64_t pi = 0; pi < pieces; ++pi) {
    Value runMax = carried[pi];
    Value top = LLVM::MaxNumOp::create(b, loc, runMax,
                                       rowReduce(chunkMax[pi], /*max=*/true));
    Value grow = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OGT, top,
        arith::AddFOp::create(b, loc, runMax, cf32(kMaxSlack)));
    grows = arith::OrIOp::create(b, loc, grows, grow);
    newMax.push_back(arith::SelectOp::create(b, loc, grow, top, runMax));
    factor.push_back(arith::SelectOp::create(
        b, loc, grow,
        math::Exp2Op::create(b, loc,
                             arith::SubFOp::create(b, loc, runMax, top)),
        cf32(1.0)));
  }
  // Per-element row maxima and factors, in the accumulator layout.
  auto perElement = [&](ArrayRef<Value> perPiece) {
    SmallVector<Value> v;
    for (int64_t pi = 0; pi < pieces; ++pi)
      v.append(mi.c.count, perPiece[pi]);
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.c.size()}, f32), v);
  };
  Value maxVec = perElement(newMax), factorVec = perElement(factor);
  SmallVector<Value> probsAcc;
  SmallVector<Value> chunkSum(pieces, cf32(0.0));
  for (Value score : scores) {
    Value p = math::Exp2Op::create(
        b, loc, arith::SubFOp::create(b, loc, score, maxVec));
    probsAcc.push_back(p);
    for (int64_t pi = 0; pi < pieces; ++pi)
      for (int64_t e = 0; e < mi.c.count; ++e)
        chunkSum[pi] = arith::AddFOp::create(
            b, loc, chunkSum[pi],
            vector::ExtractOp::create(b, loc, p, pi * mi.c.count + e));
  }
  for (int64_t pi = 0; pi < pieces; ++pi)
    newSum.push_back(arith::AddFOp::create(
        b, loc, arith::MulFOp::create(b, loc, carried[pieces + pi], factor[pi]),
        rowReduce(chunkSum[pi], /*max=*/false)));

  // 3. Rescale the accumulators (only in a subgroup where some row's
  // maximum moved), add P x this subgroup's latent columns.
  SmallVector<Value> accs = rescaledWhere(
      subgroupAny(grows), carried.drop_front(2 * pieces), factorVec);
  accs = l.wgmma ? warpgroupProducts(accs, probsAcc, buf)
                 : addProducts(accs, probabilityOperands(probsAcc), buf);

  if (l.asyncCopy)
    waitForCopies(nextGroup, copyStages() - 2);
  if (l.rawStages) {
    // The next chunk's records (their copies waited for by every thread,
    // the tile's reads done: the barrier above) decoded into the tile.
    ifThen(ult(next, rangeLength), [&] {
      decodeRawRows(arith::RemUIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, next, idx(kChunk)),
          idx(l.rawStages)));
    });
    fenceForWarpgroup();
    barrier();
  }

  SmallVector<Value> results = newMax;
  results.append(newSum);
  results.append(accs);
  return results;
}

Value MlaAttendBuilder::subgroupAny(Value cond) {
  Value v =
      subgroupButterfly(arith::ExtUIOp::create(b, loc, b.getI32Type(), cond),
                        subgroupSize, [&](Value x, Value y) -> Value {
                          return arith::OrIOp::create(b, loc, x, y);
                        });
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, ci32(0));
}

SmallVector<Value> MlaAttendBuilder::rescaledWhere(Value cond, ValueRange accs,
                                                   Value factorVec) {
  auto rescale = scf::IfOp::create(b, loc, accs.getTypes(), cond,
                                   /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(rescale.thenBlock());
  SmallVector<Value> scaled;
  for (Value acc : accs)
    scaled.push_back(arith::MulFOp::create(b, loc, acc, factorVec));
  scf::YieldOp::create(b, loc, scaled);
  b.setInsertionPointToStart(rescale.elseBlock());
  scf::YieldOp::create(b, loc, accs);
  return SmallVector<Value>(rescale.getResults());
}

Value MlaAttendBuilder::descriptor(Value offset, int64_t leadingBytes) {
  auto i64 = b.getI64Type();
  auto constant = [&](uint64_t v) -> Value {
    return arith::ConstantOp::create(b, loc,
                                     b.getIntegerAttr(i64, APInt(64, v)));
  };
  Value address = arith::AddIOp::create(
      b, loc, chunkArena, arith::IndexCastUIOp::create(b, loc, i64, offset));
  // Bits 0-13: the address / 16 (18 bits of shared address); 16-29: the
  // leading byte offset / 16; 32-45: the stride byte offset / 16 (8 rows of
  // 128 bytes); 62-63: layout 1, the 128-byte swizzle.
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, address, constant(0x3ffff)),
      constant(4));
  uint64_t fixed = (uint64_t(leadingBytes / 16) << 16) |
                   (uint64_t(8 * kSwizzleElements * 2 / 16) << 32) |
                   (uint64_t(1) << 62);
  return arith::OrIOp::create(b, loc, start, constant(fixed));
}

/// `accs` (vectors of `perTile` f32, instruction tile j's at j) as the
/// warpgroup instruction's accumulator struct: register 4 j + e is element e
/// of tile j (mma.sync m16n8's fragment order per 8 columns).
static Value packAccumulators(OpBuilder &b, Location loc,
                              LLVM::LLVMStructType type, ArrayRef<Value> accs,
                              int64_t perTile) {
  Value packed = LLVM::PoisonOp::create(b, loc, type);
  for (auto [j, acc] : llvm::enumerate(accs))
    for (int64_t e = 0; e < perTile; ++e)
      packed = LLVM::InsertValueOp::create(
          b, loc, packed, vector::ExtractOp::create(b, loc, acc, e),
          int64_t(j) * perTile + e);
  return packed;
}

/// The inverse of packAccumulators for `tiles` tiles.
static SmallVector<Value> unpackAccumulators(OpBuilder &b, Location loc,
                                             Value packed, int64_t tiles,
                                             int64_t perTile) {
  SmallVector<Value> accs;
  for (int64_t j = 0; j < tiles; ++j) {
    SmallVector<Value> elems;
    for (int64_t e = 0; e < perTile; ++e)
      elems.push_back(
          LLVM::ExtractValueOp::create(b, loc, packed, j * perTile + e));
    accs.push_back(vector::FromElementsOp::create(
        b, loc, VectorType::get({perTile}, b.getF32Type()), elems));
  }
  return accs;
}

/// `count` chained wgmma m64 n k16 bf16 steps on `d`, the i-th reading A
/// and B through `descriptors(i)`, as one committed group, waited for.
static Value multiplyOnWarpgroup(
    OpBuilder &b, Location loc, Value d, int64_t n, int64_t count,
    NVVM::MMALayout layoutB,
    function_ref<std::pair<Value, Value>(int64_t)> descriptors) {
  auto shape = NVVM::MMAShapeAttr::get(b.getContext(), kWarpgroupHeads, n, 16);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t i = 0; i < count; ++i) {
    auto [descA, descB] = descriptors(i);
    d = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, d.getType(), d, descA, descB, shape, NVVM::WGMMATypes::bf16,
        NVVM::WGMMATypes::bf16, NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
        NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one, NVVM::MMALayout::row,
        layoutB, NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  return d;
}

SmallVector<Value> MlaAttendBuilder::warpgroupScores(Value buf) {
  // A: the block's qa rows (K block kb of this half at queryOffset + kb
  // 64 x 128 bytes); B: the tile's rows as stored (K-major); a K step of 16
  // bf16 is 32 bytes along the swizzled rows.
  int64_t blocks = slice / kSwizzleElements;
  int64_t perTile = mi.c.size(), tiles = kChunk / mi.n;
  auto type = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(tiles * perTile, f32));
  SmallVector<Value> zero(tiles, zeros(perTile));
  Value firstBlock = mul(warpgroup, blocks);
  Value stage = mul(buf, kChunk * s.rank * 2);
  int64_t steps = kSwizzleElements / 16;
  int64_t aBlockBytes = kWarpgroupHeads * kSwizzleElements * 2;
  int64_t bBlockBytes = kChunk * kSwizzleElements * 2;
  // The first step's descriptors; step i's lie a constant number of bytes
  // further (K block i / steps, 32 bytes a step within it).
  Value a0 = descriptor(add(mul(firstBlock, aBlockBytes), l.queryOffset), 16);
  Value b0 = descriptor(
      add(add(stage, mul(firstBlock, bBlockBytes)), l.tileOffset), 16);
  Value d = multiplyOnWarpgroup(
      b, loc, packAccumulators(b, loc, type, zero, perTile), kChunk,
      blocks * steps, NVVM::MMALayout::col, [&](int64_t i) {
        int64_t step = (i % steps) * 32;
        return std::make_pair(advance(a0, (i / steps) * aBlockBytes + step),
                              advance(b0, (i / steps) * bBlockBytes + step));
      });
  return unpackAccumulators(b, loc, d, tiles, perTile);
}

SmallVector<Value> MlaAttendBuilder::warpgroupProducts(SmallVector<Value> accs,
                                                       ArrayRef<Value> probsAcc,
                                                       Value buf) {
  // P into this warpgroup's buffer in the A layout of the instruction (K =
  // positions, swizzled 128-byte rows of which the first kChunk columns are
  // used): each lane's accumulator pieces as bf16 pairs.
  for (auto [j, acc] : llvm::enumerate(probsAcc))
    for (auto [pi, piece] : llvm::enumerate(mi.c.pieces)) {
      Value v = vector::ExtractStridedSliceOp::create(
          b, loc, acc, ArrayRef<int64_t>{int64_t(pi) * mi.c.count},
          ArrayRef<int64_t>{mi.c.count}, ArrayRef<int64_t>{1});
      Value row = add(add(headRow, cOuter), piece[0]);
      Value col = add(add(cInner, int64_t(j) * mi.n), piece[1]);
      auto store = vector::StoreOp::create(
          b, loc,
          arith::TruncFOp::create(b, loc, VectorType::get({mi.c.count}, bf16),
                                  v),
          probs, ValueRange{warpgroup, row, swizzled(row, col)});
      store.setAlignment(uint64_t(2 * mi.c.count));
    }
  fenceForWarpgroup();
  barrier();
  // B: the tile's rows read MN-major (positions along K, 16 rows a step;
  // this half's K blocks of 64 columns a tile of kChunk rows apart).
  int64_t perTile = mi.c.size(), tiles = slice / mi.n;
  auto type = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(tiles * perTile, f32));
  int64_t blockBytes = kChunk * kSwizzleElements * 2;
  Value half = add(add(mul(buf, kChunk * s.rank * 2),
                       mul(warpgroup, (slice / kSwizzleElements) * blockBytes)),
                   l.tileOffset);
  Value pBuffer = add(mul(warpgroup, kWarpgroupHeads * kSwizzleElements * 2),
                      l.probsOffset);
  Value a0 = descriptor(pBuffer, 16), b0 = descriptor(half, blockBytes);
  Value d = multiplyOnWarpgroup(
      b, loc, packAccumulators(b, loc, type, accs, perTile), slice, kChunk / 16,
      NVVM::MMALayout::row, [&](int64_t i) {
        return std::make_pair(advance(a0, i * 32),
                              advance(b0, i * 16 * kSwizzleElements * 2));
      });
  return unpackAccumulators(b, loc, d, tiles, perTile);
}

void MlaAttendBuilder::storeOutputs(ValueRange chunkResults) {
  // acc / sum of this lane's elements into oh[t] or, split, parts[slot]
  // (0 for an empty range: its sum is 0), one store path for both.
  auto dynamic = MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic}, f32);
  Value target = arith::SelectOp::create(
      b, loc, isSplit, memref::CastOp::create(b, loc, dynamic, parts),
      memref::CastOp::create(b, loc, dynamic, oh));
  Value targetRow = arith::SelectOp::create(b, loc, isSplit, slot, t);
  auto pieceType = VectorType::get({mi.c.count}, f32);
  for (int64_t pi = 0; pi < pieces; ++pi) {
    std::array<int64_t, 2> piece = mi.c.pieces[pi];
    Value sum = chunkResults[pieces + pi];
    Value h = add(add(headBase, cOuter), piece[0]);
    Value nonEmpty = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           sum, cf32(0.0));
    // One division a row, then products (within an ulp of dividing each).
    Value inverse = vector::BroadcastOp::create(
        b, loc, pieceType,
        arith::DivFOp::create(
            b, loc, cf32(1.0),
            arith::SelectOp::create(b, loc, nonEmpty, sum, cf32(1.0))));
    ifThen(ult(h, idx(s.heads)), [&] {
      for (int64_t nf = 0; nf < slice / mi.n; ++nf) {
        Value v = vector::ExtractStridedSliceOp::create(
            b, loc, chunkResults[2 * pieces + nf],
            ArrayRef<int64_t>{pi * mi.c.count}, ArrayRef<int64_t>{mi.c.count},
            ArrayRef<int64_t>{1});
        v = arith::MulFOp::create(b, loc, v, inverse);
        Value col = add(add(add(sliceBase, nf * mi.n), cInner), piece[1]);
        auto store = vector::StoreOp::create(b, loc, v, target,
                                             ValueRange{targetRow, h, col});
        store.setAlignment(uint64_t(4 * mi.c.count));
      }
    });
    // Split: the range's maximum and sum, from one lane per row of the
    // head tile's first subgroup.
    Value owner = arith::AndIOp::create(
        b, loc, arith::AndIOp::create(b, loc, ieq(cInner, idx(0)),
                                      ieq(sliceBase, idx(0))),
        arith::AndIOp::create(b, loc, isSplit, ult(h, idx(s.heads))));
    ifThen(owner, [&] {
      // The maximum back in natural-log units (mla_combine's contract).
      memref::StoreOp::create(
          b, loc, arith::MulFOp::create(b, loc, chunkResults[pi], cf32(M_LN2)),
          parts, ValueRange{slot, h, idx(s.rank)});
      memref::StoreOp::create(b, loc, sum, parts,
                              ValueRange{slot, h, idx(s.rank + 1)});
    });
  }
}

int64_t mlir::strata::mlaAttendHeadsPerBlock(const MlaAttend &shape,
                                             const MatrixInstruction &mi,
                                             const TargetInfo &target) {
  return layoutFor(shape, mi, target.getSubgroupSize(), hasWarpgroupMma(target))
             .headTiles *
         mi.m;
}

gpu::GPUFuncOp mlir::strata::buildMlaAttendKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const MlaAttend &shape,
    const MatrixInstruction &mi, const TargetInfo &target) {
  int64_t subgroupSize = target.getSubgroupSize();
  MlaAttendLayout layout =
      layoutFor(shape, mi, subgroupSize, hasWarpgroupMma(target));
  // The warpgroup form names its instruction (the scores' and P x V's
  // wgmma; the mma.sync fragment order is only its accumulators' layout).
  std::string mnemonic = mi.mnemonic;
  for (const MatrixInstruction &w : target.getMatrixInstructions())
    if (layout.wgmma && w.family == MatrixFamily::Wgmma &&
        w.operands == MatrixElement::BF16)
      mnemonic = w.mnemonic;
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, layout.threads, mnemonic,
      [&](gpu::GPUFuncOp func) {
        MlaAttendBuilder(builder, loc, shape, mi, subgroupSize, layout)
            .build(func, KernelArguments(roles),
                   target.getStaticSharedMemoryBytes());
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
  int64_t slice = shape.rank / kColumnSplits;
  // ldmatrix reads B of two instruction tiles at a time.
  int64_t tilePairs = readsWithLdmatrix(*best) ? 2 : 1;
  if (shape.rank % kColumnSplits || slice % best->k ||
      slice % (best->n * tilePairs) || kChunk % (best->n * tilePairs) ||
      kChunk % best->k || best->c.count > kScorePad) {
    why = "the latent width does not tile";
    return failure();
  }
  MlaAttendLayout layout =
      layoutFor(shape, *best, subgroupSize, hasWarpgroupMma(target));
  if (layout.threads > target.getMaxWorkgroupSize() ||
      layout.bytes > target.getSharedMemoryBytes()) {
    why = "the block's subgroups or workgroup memory do not fit the target";
    return failure();
  }
  // The tile copies: 16-byte runs of the pool's rows, as many per thread;
  // qa's rows (queryInWorkgroup) 4 columns at a time, as many per thread.
  if (shape.rank % (kCopyElements * layout.lanesPerRow) ||
      shape.poolWidth % kCopyElements || layout.threads % layout.lanesPerRow ||
      kChunk % (layout.threads / layout.lanesPerRow) ||
      (layout.headTiles * best->m * shape.rank / 4) % layout.threads) {
    why = "the latent rows do not copy in 16-byte runs";
    return failure();
  }
  return best;
}
