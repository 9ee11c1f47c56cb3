//===- KdaChunkKernel.cpp - KDA chunked prefill on the matrix units -------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKdaChunkKernel: the GPU form of KdaOps.cpp's chunked kda_attention,
// the WY form of the delta rule with every chunk product on the matrix
// units (f32 operands: on sm_90 each product as three tf32 mma.sync
// (hi*hi + hi*lo + lo*hi, the "3xTF32" split, about fp32 accuracy), on
// gfx942 / gfx950 v_mfma_f32_16x16x4_f32).
//
// A block takes one (request, head, part): 32 value columns of the head's
// fp32 state, kept in workgroup memory, and walks the request's tokens in
// chunks of kChunk = 32 rows (the op's chunk_size is the generic kernel's;
// the chunked form is an exact re-association of the recurrence for any
// chunk length, so only rounding differs). Per chunk, with B the in-chunk
// cumulative log-decay (B[i] = sum_{t<=i} g_t), K, Q, V, g, beta the rows
// kda_prepare wrote and S0 the state at the chunk start:
//   0. B and beta into workgroup memory (thread c scans channel c);
//   1. key / query coefficients A[i][j] = sum_c X[i,c] K[j,c] e^(B[i,c] -
//      B[j,c]), X = K (j < i) and Q (j <= i), as matmuls of 16-row blocks:
//      for the block of row i starting at r, e^(B_i - B_j) = e^(B_i - B_r) *
//      e^(B_r - B_j), the first factor on the left operand, the second on
//      the right (both bounded: |B_r - B_j| <= |gate bound| * 15 for the
//      entries kept, at most 80: other bounds keep the generic kernel; the
//      exponent clamped at 80 for the masked ones);
//   2. the state's part of the delta rows, (K e^B) S0, and of the outputs,
//      (Q e^B) S0; V - (K e^B) S0 to workgroup memory, (Q e^B) S0 to the
//      read-out rows;
//   3. the delta rows D[i] = beta_i (V[i] - (K e^B S0)[i] - sum_{j<i}
//      A[i][j] D[j]) by forward substitution (one lane per value column, in
//      the first subgroup), while the other subgroups scale the staged K
//      rows to K e^(B_last - B) in place (each element's exp once, not once
//      per state tile that reads it);
//   4. outputs o = (Q e^B) S0 + A_q D, added to the read-out rows;
//   5. the end-of-chunk state S = e^(B_last) S0 + (K e^(B_last - B))^T D.
// Rows past the request's last token are zero (g = 0 there, so B_last is
// the last real row's). The chunk's K and Q rows are copied once per chunk
// into workgroup memory (16-byte loads, every thread's in flight at once),
// so the phases' fragments read them there instead of walking L2 per
// instruction step; Q stays in global memory where the target's workgroup
// memory has no room for it (gfx942: 64 KiB). The values are the same, so
// are the results. The V rows of phase 2 are loaded into registers at the
// chunk's start, and the read-out rows of phase 2 stay in registers until
// phase 4 adds A_q D to them.
//
// With `tf32_products` (bf16-activation models) each product on sm_90 is
// one tf32 mma.sync of operands rounded to tf32 instead of the 3xTF32
// split: about 2^-11 relative per product, as fla's chunk kernels multiply.
//
// Only FragmentLayout and emitMatrixInstruction depend on the target.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
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

/// Chunk rows of the matrix-unit kernel.
constexpr int64_t kChunk = 32;
/// Subgroups per block: the widest of kSubgroupChoices that every phase's
/// tile count divides (subgroupsFor), so that each phase takes the fewest
/// rounds of tiles (its latency) with no idle subgroup.
constexpr int64_t kSubgroupChoices[] = {8, 4};
/// Row padding (f32 elements) of the workgroup buffers whose fragment reads
/// take rows from lane / 4 and columns from lane % 4 (the tf32 A layout: B
/// in the coefficients' and products' fragments, A_q in the outputs'; 4 banks
/// apart, 8 rows x 4 columns hit 32 banks), and of those read with rows from
/// lane % 4 and columns from lane / 4 (B fragments of the delta rows D: 8
/// banks apart). Unpadded, every such read was an 8- or 4-way bank conflict
/// (ncu on the H200: 80 % of the kernel's shared wavefronts were excess, L1
/// 95 % busy). A_k (read as broadcasts in the substitution) and the state
/// part (B reads, 4-way) stay unpadded: padding them spilled registers
/// (A_k) or would take the kernel past 48 KiB (the state).
constexpr int64_t kPadRowsByLane = 4;
constexpr int64_t kPadRowsByQuad = 8;
/// Largest exponent of the coefficients' right factor e^(B_r - B_j): the
/// entries kept have at most |gate bound| * (m - 1) (5 * 15 for GLM's -5 and
/// 16-row blocks; chooseKdaChunkInstruction refuses bounds past this); the
/// masked ones are clamped so that no product overflows fp32 (e^88).
constexpr double kMaxRightExponent = 80.0;
/// Blocks a multiprocessor keeps on NVIDIA (the static buffers and staged
/// rows, ~82 KB a block, admit two of sm_90's 227 KB), set as the kernel's
/// minimum so that ptxas fits their registers (128 a thread at 256 threads).
constexpr int32_t kNvidiaBlocksPerSM = 2;

/// The static workgroup buffers (f32) for head dimension `d` split in
/// columns of `dp`, in KdaChunkBuilder::build's order: the state part
/// [d, dp], B [C, d], A_k [C, C], A_q [C, C], the delta rows [C, dp], beta
/// [C]. Rows padded so that the fragments' lane patterns hit distinct banks
/// (kPadRowsByLane, kPadRowsByQuad); the indices are unchanged.
SmallVector<SmallVector<int64_t, 2>, 6> staticBufferShapes(int64_t d,
                                                            int64_t dp) {
  return {{d, dp},
          {kChunk, d + kPadRowsByLane},
          {kChunk, kChunk},
          {kChunk, kChunk + kPadRowsByLane},
          {kChunk, dp + kPadRowsByQuad},
          {kChunk}};
}
/// Bytes of the static workgroup buffers (staticBufferShapes).
int64_t staticBufferBytes(int64_t d, int64_t dp) {
  int64_t bytes = 0;
  for (ArrayRef<int64_t> shape : staticBufferShapes(d, dp))
    bytes += 4 * llvm::product_of(shape, int64_t(1));
  return bytes;
}
/// The shape of one array of staged chunk rows (K or Q) and its bytes.
SmallVector<int64_t, 2> stagedRowsShape(int64_t d) {
  return {kChunk, d + kPadRowsByLane};
}
int64_t stagedRowsBytes(int64_t d) {
  return 4 * llvm::product_of(stagedRowsShape(d), int64_t(1));
}

/// The tile counts of the kernel's phases for instruction `mi`: the
/// coefficients [C, C], the state parts [C, dp] and the state [d, dp].
SmallVector<int64_t> phaseTiles(const MatrixInstruction &mi, int64_t d,
                                int64_t dp) {
  return {(kChunk / mi.m) * (kChunk / mi.n), (kChunk / mi.m) * (dp / mi.n),
          (d / mi.m) * (dp / mi.n)};
}
/// Subgroups per block (kSubgroupChoices), 0 when none divides the phases.
int64_t subgroupsFor(const MatrixInstruction &mi, int64_t d, int64_t dp) {
  for (int64_t subgroups : kSubgroupChoices)
    if (llvm::all_of(phaseTiles(mi, d, dp),
                     [&](int64_t tiles) { return tiles % subgroups == 0; }))
      return subgroups;
  return 0;
}

class KdaChunkBuilder : LaneArith {
public:
  KdaChunkBuilder(OpBuilder &b, Location loc, const KdaChunk &shape,
                  const MatrixInstruction &mi, int64_t subgroupSize,
                  int64_t subgroups, bool stageQueries)
      : LaneArith(b, loc), s(shape), mi(mi), subgroupSize(subgroupSize),
        dp(shape.headDim / shape.parts), subgroups(subgroups),
        stageQueries(stageQueries) {
    f32 = b.getF32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  Value load(Value m, ValueRange at) {
    return memref::LoadOp::create(b, loc, m, at);
  }
  void store(Value v, Value m, ValueRange at) {
    memref::StoreOp::create(b, loc, v, m, at);
  }
  Value ule(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, x, y);
  }
  Value uge(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, x, y);
  }
  /// A loop over [lo, hi) with step `step`, the body at the induction
  /// variable.
  void forLoop(Value lo, Value hi, Value step,
               llvm::function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lo, hi, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// Accumulators `accs` carried through a loop over k0 = 0, step, ..,
  /// < extent (an scf.for, so the compiler keeps one step's fragments live).
  SmallVector<Value>
  kLoop(int64_t extent, int64_t step, ValueRange accs,
        llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, loc, idx(0), idx(extent), idx(step),
                                   accs);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      scf::YieldOp::create(
          b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    }
    return loop.getResults();
  }
  /// Operand fragment of `layout` whose element at (outer, inner) is
  /// `elem(outer, inner)`, the tile's origin at (outerBase, innerBase).
  Value fragment(const FragmentLayout &layout, Value outerBase,
                 Value innerBase,
                 llvm::function_ref<Value(Value, Value)> elem) {
    Value o = add(laneMap(layout.outer), outerBase);
    Value in = add(laneMap(layout.inner), innerBase);
    SmallVector<Value> elems;
    for (auto piece : layout.pieces)
      for (int64_t e = 0; e < layout.count; ++e)
        elems.push_back(elem(add(o, piece[0]), add(in, piece[1] + e)));
    return vector::FromElementsOp::create(
        b, loc, VectorType::get({layout.size()}, f32), elems);
  }
  /// Calls `fn(row, col, element index)` for each element of a C fragment
  /// whose tile starts at (rowBase, colBase).
  void forEachC(Value rowBase, Value colBase,
                llvm::function_ref<void(Value, Value, int64_t)> fn) {
    Value o = add(laneMap(mi.c.outer), rowBase);
    Value in = add(laneMap(mi.c.inner), colBase);
    int64_t e = 0;
    for (auto piece : mi.c.pieces)
      for (int64_t c = 0; c < mi.c.count; ++c, ++e)
        fn(add(o, piece[0]), add(in, piece[1] + c), e);
  }
  Value element(Value frag, int64_t e) {
    return vector::ExtractOp::create(b, loc, frag, e);
  }
  Value mma(Value a, Value bv, Value acc) {
    return emitMatrixInstruction(b, loc, mi, a, bv, acc,
                                 s.tf32Products ? F32Products::Tf32
                                                : F32Products::Exact);
  }

  /// Chunk row i of the request: (row i exists, its token clamped into the
  /// request).
  std::pair<Value, Value> chunkRow(Value i) {
    Value valid = ult(i, len);
    Value t = minu(add(tc, i), lastToken);
    return {valid, t};
  }
  /// Channel c of prepared row i of the chunk (0 past the request).
  Value prepared(Value m, Value i, Value c) {
    std::pair<Value, Value> row = chunkRow(i);
    Value valid = row.first, t = row.second;
    Value v = load(m, ValueRange{t, add(base, c)});
    return select(valid, v, cf32(0.0));
  }
  /// Channel c of the chunk's key / query row i (0 past the request): from
  /// the rows stageChunkRows copied.
  Value key(Value i, Value c) { return load(keys, ValueRange{i, c}); }
  Value query(Value i, Value c) {
    return stageQueries ? load(queries, ValueRange{i, c})
                        : prepared(qn, i, c);
  }
  /// Copies the chunk's rows of the head's channels of `from` (K or Q) into
  /// `to` [C, d + pad], zero past the request: every thread's 16-byte
  /// loads first, then the stores.
  void stageChunkRows(Value from, Value to);
  /// The origin (row0, col0) of this subgroup's tile in round `round` of a
  /// phase over tiles `cols` wide: tile w + subgroups * round, row-major.
  std::pair<Value, Value> tileOrigin(int64_t round, int64_t cols);
  /// The instruction tiles of a phase, `rows` x `cols` of m x n: tile
  /// w + subgroups * r (row-major) to subgroup w in round r (every count
  /// here is a multiple of subgroups); `body(round, row0, col0)` at the
  /// tile's origin. With `liveRows` a tile starting past the request's end
  /// is skipped (decode steps).
  void forEachTile(int64_t rows, int64_t cols, bool liveRows,
                   llvm::function_ref<void(int64_t, Value, Value)> body);
  /// forEachTile over live rows, each tile's `body` giving one C fragment
  /// (zeros for a skipped tile): the fragments by round.
  SmallVector<Value>
  mapLiveTiles(int64_t rows, int64_t cols,
               llvm::function_ref<Value(int64_t, Value, Value)> body);
  /// The V elements phase 2 subtracts from, for this lane's C fragment
  /// elements of each of its tiles (loaded at the chunk's start so that
  /// the loads overlap phases 0 and 1).
  SmallVector<Value> loadValueRows();

  /// The tile at (row0, col0) of (K_i e^x(i,c)) R and (Q_i e^x(i,c)) R over
  /// the head's channels c: the A fragments are chunk rows i of K and Q times
  /// e^exponent(i, c) (one exp for both), B's element (n, c) is right(n, c).
  std::pair<Value, Value>
  keyQueryProducts(Value row0, Value col0,
                   llvm::function_ref<Value(Value, Value)> exponent,
                   llvm::function_ref<Value(Value, Value)> right);
  /// The block's request, if it is the chunk path's (buildRequest).
  void buildBlock();
  /// The block's part of the request of tokens [t0, t1).
  void buildRequest(Value t0, Value t1);
  void buildChunk();

  const KdaChunk &s;
  const MatrixInstruction &mi;
  int64_t subgroupSize, dp, subgroups;
  bool stageQueries;
  Type f32;
  // Arguments.
  Value qn, kn, vn, gl, betas, state, positions, starts, src, dst, raw;
  // Workgroup buffers: the state part [d, dp], B [C, d], A_k and A_q
  // [C, C], the delta rows [C, dp], beta [C]; in the dynamic arena the
  // chunk's K (and Q) rows [C, d].
  Value ss, bs, akk, aqk, ds, betaS, keys, queries;
  // Per thread / block.
  Value tid, warp, request, head, lo, base, colBase;
  // Per chunk.
  Value tc, len, lastToken;
};

} // namespace

void KdaChunkBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  qn = at(KernelRole::X);
  kn = at(KernelRole::Key);
  vn = at(KernelRole::Value);
  gl = at(KernelRole::Decay);
  betas = at(KernelRole::Beta);
  state = at(KernelRole::RecurrentState);
  positions = at(KernelRole::Positions);
  starts = at(KernelRole::SeqStarts);
  src = at(KernelRole::SourceSlots);
  dst = at(KernelRole::DestSlots);
  raw = at(KernelRole::Out);
  int64_t d = s.headDim;
  SmallVector<Value> buffers;
  for (ArrayRef<int64_t> shape : staticBufferShapes(d, dp))
    buffers.push_back(addWorkgroupBuffer(func, loc, shape, f32));
  ss = buffers[0];
  bs = buffers[1];
  akk = buffers[2];
  aqk = buffers[3];
  ds = buffers[4];
  betaS = buffers[5];
  // The staged rows pass sm_90's 48 KiB of static shared memory: dynamic.
  int64_t rowsBytes = stagedRowsBytes(d);
  Value arena = addDynamicWorkgroupArena(func, loc,
                                         (stageQueries ? 2 : 1) * rowsBytes);
  keys = viewWorkgroupArena(b, loc, arena, 0, stagedRowsShape(d), f32);
  if (stageQueries)
    queries =
        viewWorkgroupArena(b, loc, arena, rowsBytes, stagedRowsShape(d), f32);

  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  request = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  lo = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::z), dp);
  base = mul(head, d);
  colBase = add(base, lo);
  // The grid has one block per seq_starts entry; the last has no request.
  Value numRequests = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, starts, 0), idx(1));
  ifThen(ult(request, numRequests), [&] { buildBlock(); });
  gpu::ReturnOp::create(b, loc);
}

void KdaChunkBuilder::buildBlock() {
  Value t0 = toIndex(load(starts, request));
  Value t1 = toIndex(load(starts, add(request, 1)));
  // Requests of at most decodeMaxTokens tokens are kda_decode's.
  Value n = arith::SubIOp::create(b, loc, t1, t0);
  ifThen(ult(idx(s.decodeMaxTokens), n), [&] { buildRequest(t0, t1); });
}

void KdaChunkBuilder::buildRequest(Value t0, Value t1) {
  int64_t d = s.headDim, threads = subgroups * subgroupSize;
  Value srcSlot = toIndex(load(src, request));
  Value dstSlot = toIndex(load(dst, request));
  Value fresh = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      toIndex(load(positions, t0)), idx(0));
  lastToken = arith::SubIOp::create(b, loc, t1, idx(1));
  // Initial state: zero at position 0, else the source slot's columns.
  forLoop(tid, idx(d * dp), idx(threads), [&](Value e) {
    Value i = arith::DivUIOp::create(b, loc, e, idx(dp));
    Value j = arith::RemUIOp::create(b, loc, e, idx(dp));
    auto pick = scf::IfOp::create(b, loc, TypeRange{f32}, fresh, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(pick.thenBlock());
      scf::YieldOp::create(b, loc, ValueRange{cf32(0.0)});
      b.setInsertionPointToStart(pick.elseBlock());
      scf::YieldOp::create(
          b, loc,
          ValueRange{load(state, ValueRange{srcSlot, head, i, add(lo, j)})});
    }
    store(pick.getResult(0), ss, ValueRange{i, j});
  });
  barrier();
  Value n = arith::SubIOp::create(b, loc, t1, t0);
  forLoop(idx(0), n, idx(kChunk), [&](Value cs) {
    tc = add(t0, cs);
    len = minu(idx(kChunk), arith::SubIOp::create(b, loc, n, cs));
    buildChunk();
  });
  // Final state (this block's columns) to the destination slot.
  forLoop(tid, idx(d * dp), idx(threads), [&](Value e) {
    Value i = arith::DivUIOp::create(b, loc, e, idx(dp));
    Value j = arith::RemUIOp::create(b, loc, e, idx(dp));
    store(load(ss, ValueRange{i, j}), state,
          ValueRange{dstSlot, head, i, add(lo, j)});
  });
}

std::pair<Value, Value> KdaChunkBuilder::keyQueryProducts(
    Value row0, Value col0, llvm::function_ref<Value(Value, Value)> exponent,
    llvm::function_ref<Value(Value, Value)> right) {
  Value zero = zeros(mi.c.size());
  SmallVector<Value> accs = kLoop(
      s.headDim, mi.k, {zero, zero},
      [&](Value kOff, ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> weights;
        Value aK = fragment(mi.a, row0, kOff, [&](Value i, Value c) {
          Value w = fexp(exponent(i, c));
          weights.push_back(w);
          return fmul(key(i, c), w);
        });
        int64_t at = 0;
        Value aQ = fragment(mi.a, row0, kOff, [&](Value i, Value c) {
          return fmul(query(i, c), weights[at++]);
        });
        Value bv = fragment(mi.b, col0, kOff, right);
        return {mma(aK, bv, acc[0]), mma(aQ, bv, acc[1])};
      });
  return {accs[0], accs[1]};
}

void KdaChunkBuilder::stageChunkRows(Value from, Value to) {
  int64_t d = s.headDim, threads = subgroups * subgroupSize;
  constexpr int64_t kVector = 4;
  int64_t pieces = kChunk * d / kVector;
  auto vecType = VectorType::get({kVector}, f32);
  SmallVector<std::pair<Value, Value>> at;
  SmallVector<Value> rows;
  for (int64_t e0 = 0; e0 < pieces; e0 += threads) {
    Value e = add(tid, idx(e0));
    Value i = arith::DivUIOp::create(b, loc, e, idx(d / kVector));
    Value c = mul(arith::RemUIOp::create(b, loc, e, idx(d / kVector)), kVector);
    std::pair<Value, Value> row = chunkRow(i);
    auto piece = vector::LoadOp::create(b, loc, vecType, from,
                                        ValueRange{row.second, add(base, c)});
    piece.setAlignment(uint64_t(kVector * 4));
    rows.push_back(select(row.first, piece.getResult(), zeros(kVector)));
    at.push_back({i, c});
  }
  for (auto [row, where] : llvm::zip(rows, at)) {
    auto store = vector::StoreOp::create(b, loc, row, to,
                                         ValueRange{where.first, where.second});
    store.setAlignment(uint64_t(kVector * 4));
  }
}

std::pair<Value, Value> KdaChunkBuilder::tileOrigin(int64_t round,
                                                    int64_t cols) {
  Value tile = add(warp, round * subgroups);
  Value rowTile = arith::DivUIOp::create(b, loc, tile, idx(cols));
  Value colTile = arith::RemUIOp::create(b, loc, tile, idx(cols));
  return {mul(rowTile, mi.m), mul(colTile, mi.n)};
}

void KdaChunkBuilder::forEachTile(
    int64_t rows, int64_t cols, bool liveRows,
    llvm::function_ref<void(int64_t, Value, Value)> body) {
  for (int64_t r = 0; r < rows * cols / subgroups; ++r) {
    std::pair<Value, Value> origin = tileOrigin(r, cols);
    Value row0 = origin.first, col0 = origin.second;
    if (liveRows)
      ifThen(ult(row0, len), [&] { body(r, row0, col0); });
    else
      body(r, row0, col0);
  }
}

SmallVector<Value> KdaChunkBuilder::mapLiveTiles(
    int64_t rows, int64_t cols,
    llvm::function_ref<Value(int64_t, Value, Value)> body) {
  SmallVector<Value> results;
  Type fragType = VectorType::get({mi.c.size()}, f32);
  for (int64_t r = 0; r < rows * cols / subgroups; ++r) {
    std::pair<Value, Value> origin = tileOrigin(r, cols);
    Value row0 = origin.first, col0 = origin.second;
    auto live =
        scf::IfOp::create(b, loc, TypeRange{fragType}, ult(row0, len), true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(live.thenBlock());
    scf::YieldOp::create(b, loc, ValueRange{body(r, row0, col0)});
    b.setInsertionPointToStart(live.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{zeros(mi.c.size())});
    results.push_back(live.getResult(0));
  }
  return results;
}

SmallVector<Value> KdaChunkBuilder::loadValueRows() {
  SmallVector<Value> values;
  forEachTile(kChunk / mi.m, dp / mi.n, /*liveRows=*/false,
              [&](int64_t, Value row0, Value col0) {
                forEachC(row0, col0, [&](Value i, Value e, int64_t) {
                  values.push_back(load(
                      vn, ValueRange{chunkRow(i).second, add(colBase, e)}));
                });
              });
  return values;
}

void KdaChunkBuilder::buildChunk() {
  int64_t d = s.headDim;
  // The V elements of phase 2 and the chunk's K (and Q) rows first, all
  // loads independent of the state.
  SmallVector<Value> values = loadValueRows();
  stageChunkRows(kn, keys);
  if (stageQueries)
    stageChunkRows(qn, queries);
  // 0. B (thread c scans channel c; its loads are independent) and beta.
  ifThen(ult(tid, idx(d)), [&] {
    SmallVector<Value> g;
    for (int64_t i = 0; i < kChunk; ++i)
      g.push_back(prepared(gl, idx(i), tid));
    Value sum = cf32(0.0);
    for (int64_t i = 0; i < kChunk; ++i) {
      sum = fadd(sum, g[i]);
      store(sum, bs, ValueRange{idx(i), tid});
    }
  });
  ifThen(ult(tid, idx(kChunk)), [&] {
    std::pair<Value, Value> row = chunkRow(tid);
    Value valid = row.first, t = row.second;
    store(select(valid, load(betas, ValueRange{t, head}), cf32(0.0)), betaS,
          ValueRange{tid});
  });
  barrier();

  // 1. Coefficients: 16-row block I (reference row r = I m) against column
  // tile J; the masks zero what is not kept, and a tile wholly above the
  // diagonal (its first column past its last row) is zeros without products.
  int64_t rowTiles = kChunk / mi.m, colTiles = kChunk / mi.n;
  forEachTile(
      rowTiles, colTiles, /*liveRows=*/true,
      [&](int64_t, Value row0, Value col0) {
        Value above = uge(col0, add(row0, idx(mi.m)));
        auto branch = scf::IfOp::create(b, loc, TypeRange{}, above, true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(branch.thenBlock());
        forEachC(row0, col0, [&](Value i, Value j, int64_t) {
          store(cf32(0.0), akk, ValueRange{i, j});
          store(cf32(0.0), aqk, ValueRange{i, j});
        });
        b.setInsertionPointToStart(branch.elseBlock());
        // e^(B_i - B_j) = e^(B_i - B_r) e^(B_r - B_j), the second factor on
        // K_j.
        std::pair<Value, Value> products = keyQueryProducts(
            row0, col0,
            [&](Value i, Value c) {
              return fsub(load(bs, ValueRange{i, c}),
                          load(bs, ValueRange{row0, c}));
            },
            [&](Value j, Value c) {
              Value x = fsub(load(bs, ValueRange{row0, c}),
                             load(bs, ValueRange{j, c}));
              x = arith::MinimumFOp::create(b, loc, x, cf32(kMaxRightExponent));
              return fmul(key(j, c), fexp(x));
            });
        Value accK = products.first, accQ = products.second;
        forEachC(row0, col0, [&](Value i, Value j, int64_t e) {
          store(select(ult(j, i), element(accK, e), cf32(0.0)), akk,
                ValueRange{i, j});
          store(select(ule(j, i), element(accQ, e), cf32(0.0)), aqk,
                ValueRange{i, j});
        });
      });

  // 2. (K e^B) S0 and (Q e^B) S0, [C, dp] each: V - (K e^B) S0 to the delta
  // rows, (Q e^B) S0 kept in registers for phase 4.
  int64_t outCols = dp / mi.n;
  int64_t perTile = mi.c.size();
  SmallVector<Value> readOut = mapLiveTiles(
      rowTiles, outCols, [&](int64_t r, Value row0, Value col0) {
        std::pair<Value, Value> products = keyQueryProducts(
            row0, col0,
            [&](Value i, Value c) { return load(bs, ValueRange{i, c}); },
            [&](Value e, Value c) { return load(ss, ValueRange{c, e}); });
        Value accK = products.first;
        forEachC(row0, col0, [&](Value i, Value e, int64_t el) {
          Value valid = chunkRow(i).first;
          Value v = values[r * perTile + el];
          store(select(valid, fsub(v, element(accK, el)), cf32(0.0)), ds,
                ValueRange{i, e});
        });
        return products.second;
      });
  barrier();

  // 3. Forward substitution, one lane per value column, rows unrolled; the
  // other subgroups meanwhile turn the staged K rows into phase 5's operand
  // K e^(B_last - B), in place (phases 3 and 4 do not read K).
  Value lastRow = idx(kChunk - 1);
  ifThen(uge(tid, idx(subgroupSize)), [&] {
    forLoop(arith::SubIOp::create(b, loc, tid, idx(subgroupSize)),
            idx(kChunk * d), idx(subgroups * subgroupSize - subgroupSize),
            [&](Value e) {
              Value j = arith::DivUIOp::create(b, loc, e, idx(d));
              Value c = arith::RemUIOp::create(b, loc, e, idx(d));
              Value w = fexp(fsub(load(bs, ValueRange{lastRow, c}),
                                  load(bs, ValueRange{j, c})));
              store(fmul(key(j, c), w), keys, ValueRange{j, c});
            });
  });
  ifThen(ult(tid, idx(dp)), [&] {
    SmallVector<Value> rows;
    for (int64_t i = 0; i < kChunk; ++i) {
      Value acc = load(ds, ValueRange{idx(i), tid});
      for (int64_t j = 0; j < i; ++j)
        acc = fsub(acc, fmul(load(akk, ValueRange{idx(i), idx(j)}), rows[j]));
      // Rows past the request's end are zero (their coefficients and v - KS
      // rows may be stale: a select, not a product with beta = 0).
      Value di = select(ult(idx(i), len),
                        fmul(load(betaS, ValueRange{idx(i)}), acc), cf32(0.0));
      store(di, ds, ValueRange{idx(i), tid});
      rows.push_back(di);
    }
  });
  barrier();

  // 4. Outputs: the read-out rows plus A_q D (the K steps past the tile's
  // last row multiply zeros of A_q: skipped).
  forEachTile(rowTiles, outCols, /*liveRows=*/true, [&](int64_t r, Value row0,
                                                        Value col0) {
    Value acc = zeros(mi.c.size());
    for (int64_t k0 = 0; k0 < kChunk; k0 += mi.k) {
      Value kOff = idx(k0);
      auto step = scf::IfOp::create(b, loc, TypeRange{acc.getType()},
                                    ult(kOff, add(row0, idx(mi.m))), true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(step.thenBlock());
      Value a = fragment(mi.a, row0, kOff, [&](Value i, Value j) {
        return load(aqk, ValueRange{i, j});
      });
      Value bD = fragment(mi.b, col0, kOff, [&](Value e, Value j) {
        return load(ds, ValueRange{j, e});
      });
      scf::YieldOp::create(b, loc, ValueRange{mma(a, bD, acc)});
      b.setInsertionPointToStart(step.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{acc});
      acc = step.getResult(0);
    }
    forEachC(row0, col0, [&](Value i, Value e, int64_t el) {
      std::pair<Value, Value> row = chunkRow(i);
      Value valid = row.first, t = row.second;
      ifThen(valid, [&] {
        store(fadd(element(readOut[r], el), element(acc, el)), raw,
              ValueRange{t, add(colBase, e)});
      });
    });
  });

  // 5. End-of-chunk state: e^(B_last) S0 + (K e^(B_last - B))^T D (the
  // staged rows hold K e^(B_last - B) since phase 3); each lane reads and
  // writes only its own elements of the state.
  int64_t stateRows = d / mi.m;
  forEachTile(stateRows, outCols, /*liveRows=*/false, [&](int64_t, Value row0,
                                                          Value col0) {
    SmallVector<Value> init;
    forEachC(row0, col0, [&](Value c, Value e, int64_t) {
      init.push_back(fmul(fexp(load(bs, ValueRange{lastRow, c})),
                          load(ss, ValueRange{c, e})));
    });
    Value acc = vector::FromElementsOp::create(
        b, loc, VectorType::get({mi.c.size()}, f32), init);
    for (int64_t k0 = 0; k0 < kChunk; k0 += mi.k) {
      Value kOff = idx(k0);
      Value a = fragment(mi.a, row0, kOff,
                         [&](Value c, Value j) { return key(j, c); });
      Value bD = fragment(mi.b, col0, kOff, [&](Value e, Value j) {
        return load(ds, ValueRange{j, e});
      });
      acc = mma(a, bD, acc);
    }
    forEachC(row0, col0, [&](Value c, Value e, int64_t el) {
      store(element(acc, el), ss, ValueRange{c, e});
    });
  });
  // The next chunk rewrites B, beta, the staged rows and reads the state.
  barrier();
}

gpu::GPUFuncOp mlir::strata::buildKdaChunkKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const KdaChunk &shape,
    const MatrixInstruction &mi, int64_t subgroupSize,
    int64_t workgroupMemoryBytes) {
  int64_t d = shape.headDim, dp = d / shape.parts;
  bool stageQueries =
      staticBufferBytes(d, dp) + 2 * stagedRowsBytes(d) <= workgroupMemoryBytes;
  int64_t subgroups = subgroupsFor(mi, d, dp);
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, subgroups * subgroupSize,
      mi.mnemonic, [&](gpu::GPUFuncOp func) {
        // Registers for two blocks a multiprocessor, which the workgroup
        // memory admits (ptxas would otherwise take ~156 with single tf32
        // products: one block).
        if (mi.family == MatrixFamily::MmaSync)
          func->setAttr("nvvm.minctasm",
                        builder.getI32IntegerAttr(kNvidiaBlocksPerSM));
        KdaChunkBuilder(builder, loc, shape, mi, subgroupSize, subgroups,
                        stageQueries)
            .build(func, KernelArguments(roles));
      });
}

FailureOr<const MatrixInstruction *>
mlir::strata::chooseKdaChunkInstruction(const TargetInfo &target,
                                        const KdaChunk &shape,
                                        std::string &why) {
  const MatrixInstruction *best = nullptr;
  for (const MatrixInstruction &mi : target.getMatrixInstructions())
    if (mi.operands == MatrixElement::F32 && mi.subgroups == 1 &&
        !mi.a.pieces.empty() && (!best || mi.m < best->m))
      best = &mi;
  if (!best) {
    why = "the target has no f32 matrix instruction";
    return failure();
  }
  int64_t subgroupSize = target.getSubgroupSize();
  int64_t d = shape.headDim, dp = shape.parts ? d / shape.parts : 0;
  int64_t threads = dp ? subgroupsFor(*best, d, dp) * subgroupSize : 0;
  if (!dp || d % shape.parts || d % best->m || d % best->k || dp % best->n ||
      kChunk % best->m || kChunk % best->n || kChunk % best->k || !threads ||
      d > threads || dp > subgroupSize || (kChunk * d / 4) % threads) {
    why = "the head does not tile";
    return failure();
  }
  if (staticBufferBytes(d, dp) + stagedRowsBytes(d) >
      target.getSharedMemoryBytes()) {
    why = "the chunk buffers do not fit the target's workgroup memory";
    return failure();
  }
  if (!(shape.gateLowerBound < 0) ||
      -shape.gateLowerBound * double(best->m - 1) > kMaxRightExponent) {
    why = "the gate's lower bound lets a 16-row block's decay overflow fp32";
    return failure();
  }
  return best;
}
