//===- KdaChunkKernel.cpp - KDA chunked prefill on the matrix units -------===//
//
// Part of strata, under the Apache License v2.0.
//
// The GPU forms of KdaOps.cpp's chunked kda_attention: the WY form of the
// delta rule with every chunk product on the matrix units (f32 operands: on
// sm_90 each product as three tf32 mma.sync (hi*hi + hi*lo + lo*hi, the
// "3xTF32" split, about fp32 accuracy), on gfx942 / gfx950
// v_mfma_f32_16x16x4_f32), in chunks of kChunk = 32 rows (the op's
// chunk_size, which the coefficient arrays' widths carry). Per chunk, with B
// the in-chunk cumulative log-decay (B[i] = sum_{t<=i} g_t), K, Q, V, g,
// beta the rows kda_prepare wrote and S0 the state at the chunk start, two
// kernels:
//
// buildKdaCoefficientsKernel (kda_coefficients): what does not depend on
// the state, every chunk of the step at once. A block takes the chunks that
// start in its 32-token window of the step (one per request crossing it)
// for one head:
//   0. B and beta into workgroup memory (thread c scans channel c);
//   1. key / query coefficients A[i][j] = sum_c X[i,c] K[j,c] e^(B[i,c] -
//      B[j,c]), X = K (j < i) and Q (j <= i), as matmuls of 16-row blocks:
//      for the block of row i starting at r, e^(B_i - B_j) = e^(B_i - B_r) *
//      e^(B_r - B_j), the first factor on the left operand, the second on
//      the right (both bounded: |B_r - B_j| <= |gate bound| * 15 for the
//      entries kept, at most 80: other bounds keep the generic kernel; the
//      exponent clamped at 80 for the masked ones); A_q to its result rows;
//   2. the delta weights T = (I + diag(beta) A_k)^-1 diag(beta) in 16-row
//      blocks: the diagonal blocks by forward substitution on the
//      identity's columns (a lane per column), the block below them as
//      -T22 (A_k21 T11) by the block's threads (solveDeltaWeights).
//
// buildKdaChunkKernel (kda_attention): a block takes one (request, head,
// part): 32 value columns of the head's fp32 state, held in registers (each
// subgroup its tiles of the state phase) with a copy in workgroup memory as
// the products' B operand, and walks the request's chunks:
//   0. the chunk's A_q and T rows into workgroup memory; the operands K e^B,
//      Q e^B and K e^(B_last - B) beside them (ChunkOperands::Scaled: a
//      channel's rows scanned by neighbouring lanes, each element's two
//      exponentials once), or B and the raw K rows where the target's
//      workgroup memory has no room for that (Formed: gfx942's 64 KiB);
//   1. the state's part of the residuals and of the outputs, (K e^B) S0 and
//      (Q e^B) S0; V - (K e^B) S0 to workgroup memory, (Q e^B) S0 kept in
//      registers;
//   2. the delta rows D = T (V - (K e^B) S0) (Scaled: into rows of their
//      own, stored as soon as a subgroup has its tiles; Formed: over the
//      residuals once every subgroup has read them, the staged K rows scaled
//      in place to K e^(B_last - B) meanwhile);
//   3. outputs o = (Q e^B) S0 + A_q D;
//   4. the end-of-chunk state S = e^(B_last) S0 + (K e^(B_last - B))^T D.
// The serial walk thus has only products whose operands wait in workgroup
// memory; the forward substitution and the coefficients' products, most of
// a chunk's instructions, run in parallel over the chunks.
//
// Rows past the request's last token are zero (g = 0 there, so B_last is
// the last real row's). The chunk's rows are read once per chunk into
// workgroup memory, so the fragments read them there instead of walking L2
// per instruction step; Formed's Q stays in global memory where the
// target's workgroup memory has no room for it. The values are the same, so
// are the results.
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

#include <cmath>

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Chunk rows of the matrix-unit kernels.
constexpr int64_t kChunk = 32;
/// Subgroups per block: the widest of kSubgroupChoices that every phase's
/// tile count divides (subgroupsFor), so that each phase takes the fewest
/// rounds of tiles (its latency) with no idle subgroup.
constexpr int64_t kSubgroupChoices[] = {8, 4};
/// Row padding (f32 elements) of the workgroup buffers whose fragment reads
/// take rows from lane / 4 and columns from lane % 4 (the tf32 A layout: B
/// in the coefficients' and products' fragments, A_q and T in the deltas'
/// and outputs'; 4 banks apart, 8 rows x 4 columns hit 32 banks), and of
/// those read with rows from lane % 4 and columns from lane / 4 (B
/// fragments of the residual and delta rows: 8 banks apart). Unpadded, every
/// such read was an 8- or 4-way bank conflict (ncu on the H200: 80 % of the
/// kernel's shared wavefronts were excess, L1 95 % busy). A_k (read as
/// broadcasts in the substitution) and the state part (B reads, 4-way) stay
/// unpadded: the state padded would take the static buffers past 48 KiB.
constexpr int64_t kPadRowsByLane = 4;
constexpr int64_t kPadRowsByQuad = 8;
/// The kernels keep B in base 2 (B log2(e), summed from g log2(e)), so that
/// every decay factor e^x is one exp2 instruction.
constexpr double kLog2E = M_LOG2E;
/// Largest exponent of the coefficients' right factor e^(B_r - B_j): the
/// entries kept have at most |gate bound| * (m - 1) (5 * 15 for GLM's -5 and
/// 16-row blocks; chooseKdaChunkInstruction refuses bounds past this); the
/// masked ones are clamped so that no product overflows fp32 (e^88).
constexpr double kMaxRightExponent = 80.0;
/// Blocks a multiprocessor keeps on NVIDIA (the static buffers and staged
/// rows, ~82 KB a block, admit two of sm_90's 227 KB), set as the state
/// kernel's minimum so that ptxas fits their registers (128 a thread at 256
/// threads).
constexpr int32_t kNvidiaBlocksPerSM = 2;
/// The same for the coefficient kernel (~63 KB of workgroup memory a block
/// admit three): ptxas then fits it in 80 registers a thread with ~100
/// bytes of spills, 10 % faster on an H100 than two blocks of 128 registers
/// without (docs/bench/h200-matrix.md).
constexpr int32_t kNvidiaCoefficientBlocksPerSM = 3;

using Shapes = SmallVector<SmallVector<int64_t, 2>, 5>;

/// Where the state kernel's chunk operands K e^B, Q e^B (the products with
/// S0) and K e^(B_last - B) (the state update) come from.
enum class ChunkOperands {
  /// Formed once a chunk into workgroup memory by the decay scan
  /// (scaleChunkOperands), each element's exponentials computed once.
  Scaled,
  /// For targets with less workgroup memory than that takes (gfx942's 64
  /// KiB): B and the raw K rows staged, K e^B and Q e^B formed in each
  /// product's fragments (Q from global memory unless staged too), K
  /// e^(B_last - B) in place of K once the products have read it.
  Formed,
};

/// Bytes of f32 buffers of `shapes`.
int64_t bufferBytes(const Shapes &shapes) {
  int64_t bytes = 0;
  for (ArrayRef<int64_t> shape : shapes)
    bytes += 4 * llvm::product_of(shape, int64_t(1));
  return bytes;
}

/// The state kernel's workgroup buffers (f32) for head dimension `d` split
/// in columns of `dp`: static ones, the state's B-operand copy [d, dp], B
/// [C, d] (Formed only), T and A_q [C, C], the residual / delta rows [C,
/// dp], e^(B_last) [d]; in the dynamic arena (past sm_90's 48 KiB of static
/// shared memory) Scaled's K e^B, Q e^B, K e^(B_last - B) [C, d] or
/// Formed's K (and Q) rows. Rows padded so that the fragments' lane
/// patterns hit distinct banks (kPadRowsByLane, kPadRowsByQuad); the
/// indices are unchanged. Formed's state copy stays unpadded: gfx942's 64
/// KiB hold no more.
struct StateBuffers {
  SmallVector<int64_t, 2> state, decays, deltaWeights, queryCoefficients, rows,
      deltas, lastDecays;
  Shapes arena;

  StateBuffers(int64_t d, int64_t dp, ChunkOperands operands,
               bool stageQueries) {
    bool scaled = operands == ChunkOperands::Scaled;
    state = {d, dp + (scaled ? kPadRowsByQuad : 0)};
    if (!scaled)
      decays = {kChunk, d + kPadRowsByLane};
    deltaWeights = queryCoefficients = {kChunk, kChunk + kPadRowsByLane};
    rows = {kChunk, dp + kPadRowsByQuad};
    // Scaled: the delta rows D beside the residuals R, so that D's stores
    // need not wait for every subgroup's reads of R (one barrier fewer a
    // chunk); Formed writes D over R (gfx942's 64 KiB hold no more).
    if (scaled)
      deltas = rows;
    lastDecays = {d};
    // K e^B and Q e^B read as A fragments (rows from lane / 4), K e^(B_last
    // - B) transposed (rows from lane % 4).
    arena.push_back({kChunk, d + kPadRowsByLane});
    if (scaled || stageQueries)
      arena.push_back({kChunk, d + kPadRowsByLane});
    if (scaled)
      arena.push_back({kChunk, d + kPadRowsByQuad});
  }
  int64_t bytes() const {
    Shapes statics = {state, deltaWeights, queryCoefficients, rows, lastDecays};
    for (const SmallVector<int64_t, 2> &optional : {decays, deltas})
      if (!optional.empty())
        statics.push_back(optional);
    return bufferBytes(statics) + bufferBytes(arena);
  }
};

/// Rows of the diagonal blocks of the coefficient kernel's blocked
/// substitution (two a chunk).
constexpr int64_t kSolveBlock = kChunk / 2;

/// The coefficient kernel's static workgroup buffers (f32), in
/// KdaChunkBuilder::build's order: B [C, d], A_k [C, C] (rows padded so that
/// the two diagonal blocks' broadcasts hit different banks), beta [C], A_q
/// and T [C, C] (their rows copied out whole), the substitution's
/// off-diagonal product [C / 2, C / 2].
Shapes coefficientBufferShapes(int64_t d) {
  return {{kChunk, d + kPadRowsByLane},
          {kChunk, kChunk + kPadRowsByLane},
          {kChunk},
          {kChunk, kChunk},
          {kChunk, kChunk},
          {kSolveBlock, kSolveBlock}};
}
/// The shape of one array of staged chunk rows (K or Q) and its bytes.
SmallVector<int64_t, 2> stagedRowsShape(int64_t d) {
  return {kChunk, d + kPadRowsByLane};
}
int64_t stagedRowsBytes(int64_t d) {
  return 4 * llvm::product_of(stagedRowsShape(d), int64_t(1));
}
/// Whether a kernel whose static buffers take `staticBytes` stages the
/// chunk's query rows too within `workgroupMemoryBytes`.
bool stagesQueries(int64_t staticBytes, int64_t d,
                   int64_t workgroupMemoryBytes) {
  return staticBytes + 2 * stagedRowsBytes(d) <= workgroupMemoryBytes;
}

/// How a chunk kernel takes its chunk operands (the coefficient kernel's
/// are always Formed).
struct ChunkOperandPlan {
  ChunkOperands operands;
  bool stageQueries;
};
/// Scaled where its buffers fit `workgroupMemoryBytes` and the decay scan's
/// lanes divide the channels (threads / d lanes a channel, neighbours in a
/// subgroup), else Formed, with the query rows staged where they fit too;
/// nullopt when not even Formed's buffers fit.
std::optional<ChunkOperandPlan> chooseStatePlan(int64_t d, int64_t dp,
                                                int64_t threads,
                                                int64_t subgroupSize,
                                                int64_t workgroupMemoryBytes) {
  int64_t lanes = threads / d;
  bool scanFits = threads % d == 0 && llvm::isPowerOf2_64(lanes) &&
                  lanes <= subgroupSize && kChunk % lanes == 0;
  if (scanFits && StateBuffers(d, dp, ChunkOperands::Scaled, false).bytes() <=
                      workgroupMemoryBytes)
    return ChunkOperandPlan{ChunkOperands::Scaled, false};
  for (bool stageQueries : {true, false})
    if (StateBuffers(d, dp, ChunkOperands::Formed, stageQueries).bytes() <=
        workgroupMemoryBytes)
      return ChunkOperandPlan{ChunkOperands::Formed, stageQueries};
  return std::nullopt;
}

/// The tile counts of the kernels' phases for instruction `mi`: the
/// coefficients [C, C], the residual, delta and output rows [C, dp] and the
/// state [d, dp].
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

/// Which of the two chunk kernels a KdaChunkBuilder builds.
enum class ChunkKernel { Coefficients, State };

class KdaChunkBuilder : LaneArith {
public:
  KdaChunkBuilder(OpBuilder &b, Location loc, const KdaChunk &shape,
                  const MatrixInstruction &mi, int64_t subgroupSize,
                  int64_t subgroups, ChunkOperandPlan plan)
      : LaneArith(b, loc), s(shape), mi(mi), subgroupSize(subgroupSize),
        dp(shape.headDim / shape.parts), subgroups(subgroups),
        operands(plan.operands), stageQueries(plan.stageQueries),
        roundedOperands(shape.tf32Products &&
                        mi.family == MatrixFamily::MmaSync &&
                        plan.operands == ChunkOperands::Scaled) {
    f32 = b.getF32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles,
             ChunkKernel kind);

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
  Value threads() { return idx(subgroups * subgroupSize); }
  /// A loop over [lo, hi) with step `step`, the body at the induction
  /// variable.
  void forLoop(Value lo, Value hi, Value step,
               llvm::function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lo, hi, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// Values `carried` through a loop over [lo, hi) with step `step`:
  /// `body(induction variable, values)` gives the next values.
  SmallVector<Value>
  carryLoop(Value lo, Value hi, Value step, ValueRange carried,
            llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, loc, lo, hi, step, carried);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      scf::YieldOp::create(
          b, loc, body(loop.getInductionVar(), loop.getRegionIterArgs()));
    }
    return loop.getResults();
  }
  /// Accumulators `accs` carried through a loop over k0 = 0, step, ..,
  /// < extent (an scf.for, so the compiler keeps one step's fragments live).
  SmallVector<Value>
  kLoop(int64_t extent, int64_t step, ValueRange accs,
        llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return carryLoop(idx(0), idx(extent), idx(step), accs, body);
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
    F32Products products = !s.tf32Products   ? F32Products::Exact
                           : roundedOperands ? F32Products::Tf32Rounded
                                             : F32Products::Tf32;
    return emitMatrixInstruction(b, loc, mi, a, bv, acc, products);
  }
  /// `x` as it is stored for a product's fragments: rounded to tf32 where
  /// the kernel's operands all are (roundedOperands).
  Value operand(Value x) {
    return roundedOperands ? roundToTf32(b, loc, x) : x;
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
    Value v = loadF32(m, ValueRange{t, add(base, c)});
    return select(valid, v, cf32(0.0));
  }
  /// Channel c of the chunk's key / query row i (0 past the request): from
  /// the rows stageChunkRows copied.
  Value key(Value i, Value c) { return load(keys, ValueRange{i, c}); }
  Value query(Value i, Value c) {
    return stageQueries ? load(queries, ValueRange{i, c})
                        : prepared(qn, i, c);
  }
  /// Views of `shapes` one after another in the dynamic workgroup arena.
  SmallVector<Value> addArena(gpu::GPUFuncOp func, const Shapes &shapes);
  /// The coefficient kernel's workgroup arena for the staged K (and Q)
  /// rows, their views.
  void addStagedRows(gpu::GPUFuncOp func);
  /// The state kernel's workgroup buffers (StateBuffers).
  void addStateBuffers(gpu::GPUFuncOp func);
  /// Channel c of the chunk's K e^B and Q e^B rows i: staged (Scaled) or
  /// formed from the staged K (and Q) rows and B, one exponential for both.
  std::pair<Value, Value> scaledKeyQuery(Value i, Value c);
  /// Channel c of the chunk's K e^(B_last - B) row j (staged, or scaled in
  /// place of K by scaleKeysToLast).
  Value lastScaledKey(Value j, Value c) {
    return load(operands == ChunkOperands::Scaled ? lastKeys : keys,
                ValueRange{j, c});
  }
  /// Copies the chunk's rows of `rowElements` from `from` (row i at token tc
  /// + i, columns from `col0`) into `to` [C, .] as f32, zero past the
  /// request, in 16-byte pieces (4 f32 or 8 bf16): every thread's loads
  /// first, then the stores (the block's threads divide the pieces).
  void copyChunkRows(Value from, Value col0, Value to, int64_t rowElements);
  /// Copies rows [0, len) of `from` [C, .] in workgroup memory, `rowPieces`
  /// 4-wide pieces each, to the chunk's tokens' rows of `to` (columns from
  /// `col0`) with 16-byte stores.
  void storeChunkRows(Value from, Value to, Value col0, int64_t rowPieces);
  /// Copies the chunk's rows of the head's channels of `from` (K or Q) into
  /// `to` [C, d + pad].
  void stageChunkRows(Value from, Value to) {
    copyChunkRows(from, base, to, s.headDim);
  }
  /// B into bs (thread c scans channel c; its loads are independent); in
  /// the state kernel e^(B_last) into lastDecays too.
  void scanDecays();
  /// Scaled: K e^B, Q e^B, K e^(B_last - B) and e^(B_last) into workgroup
  /// memory, threads / d neighbouring lanes scanning a channel's rows in
  /// runs, their run sums combined by XOR shuffles.
  void scaleChunkOperands();
  /// Formed: the staged K rows scaled in place to K e^(B_last - B).
  void scaleKeysToLast();
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
  /// The V elements phase 1 subtracts from, for this lane's C fragment
  /// elements of each of its tiles (loaded at the chunk's start so that
  /// the loads overlap phase 0).
  SmallVector<Value> loadValueRows();

  /// The tile at (row0, col0) of X_K R and X_Q R over the head's channels
  /// c: left(i, c) gives the A fragments' elements (X_K[i, c], X_Q[i, c]),
  /// right(n, c) B's element (n, c).
  std::pair<Value, Value> keyQueryProducts(
      Value row0, Value col0,
      llvm::function_ref<std::pair<Value, Value>(Value, Value)> left,
      llvm::function_ref<Value(Value, Value)> right);
  /// The tile at (row0, col0) of L X for a lower-triangular [C, C] `lower`
  /// and the [C, dp] rows `rows` in workgroup memory (the K steps past the
  /// tile's last row multiply zeros of L: skipped).
  Value lowerTriangularProduct(Value lower, Value rows, Value row0, Value col0);

  /// kda_coefficients: the chunks starting in the block's token window.
  void buildWindow();
  /// The chunk of request [t0, t1) starting at tc: A_q and T.
  void buildCoefficients();
  /// T = (I + diag(beta) A_k)^-1 diag(beta) from A_k and beta in workgroup
  /// memory, by 16-row blocks.
  void solveDeltaWeights();
  /// kda_attention: the block's request, if it is the chunk path's.
  void buildBlock();
  /// The block's part of the request of tokens [t0, t1).
  void buildRequest(Value t0, Value t1);
  /// The state tiles this subgroup keeps in registers (the C fragments of
  /// the state phase's tiles, by round) at the request's start: zero at
  /// position 0, else the source slot's; copied to ss as B operand.
  SmallVector<Value> loadInitialState(Value fresh, Value srcSlot);
  /// One chunk: the state tiles at its start to those at its end.
  SmallVector<Value> buildChunk(ValueRange state);

  const KdaChunk &s;
  const MatrixInstruction &mi;
  int64_t subgroupSize, dp, subgroups;
  ChunkOperands operands;
  bool stageQueries;
  /// Single-tf32 products on NVIDIA with every operand from workgroup
  /// memory (Scaled): the operands stored rounded to tf32 (operand()), so
  /// that no fragment element takes a conversion.
  bool roundedOperands;
  Type f32;
  // Arguments.
  Value qn, kn, vn, gl, betas, aqRows, tRows, state, positions, starts, src,
      dst, raw;
  // Workgroup buffers. State kernel: StateBuffers (ss the state part, bs
  // B, tws T, aqk A_q, ds the residual rows, deltaRows the delta rows (ds
  // itself in Formed), lastDecays e^(B_last);
  // Scaled: scaledKeys, scaledQueries, lastKeys; Formed: keys (and
  // queries)); coefficient kernel: B, A_k [C, C], beta [C], A_q and T [C,
  // C]; in the dynamic arena the chunk's K (and Q) rows [C, d].
  Value ss, bs, tws, akk, aqk, ds, deltaRows, betaS, keys, queries, lastDecays,
      scaledKeys, scaledQueries, lastKeys, offDiagonal;
  // Per thread / block.
  Value tid, warp, request, head, lo, base, colBase, coefCol0;
  // Per chunk.
  Value tc, len, lastToken;
};

} // namespace

void KdaChunkBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles,
                            ChunkKernel kind) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  qn = at(KernelRole::X);
  kn = at(KernelRole::Key);
  gl = at(KernelRole::Decay);
  starts = at(KernelRole::SeqStarts);
  aqRows = at(KernelRole::QueryCoefficients);
  tRows = at(KernelRole::DeltaWeights);
  int64_t d = s.headDim;
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  head = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  base = mul(head, d);
  coefCol0 = mul(head, kChunk);
  if (kind == ChunkKernel::Coefficients) {
    // Every argument before the buffers: workgroup attributions are
    // arguments of the body too, and `args` may move as they are added.
    betas = at(KernelRole::Beta);
    SmallVector<Value> buffers;
    for (ArrayRef<int64_t> shape : coefficientBufferShapes(d))
      buffers.push_back(addWorkgroupBuffer(func, loc, shape, f32));
    addStagedRows(func);
    bs = buffers[0];
    akk = buffers[1];
    betaS = buffers[2];
    aqk = buffers[3];
    tws = buffers[4];
    offDiagonal = buffers[5];
    buildWindow();
    gpu::ReturnOp::create(b, loc);
    return;
  }
  vn = at(KernelRole::Value);
  state = at(KernelRole::RecurrentState);
  positions = at(KernelRole::Positions);
  src = at(KernelRole::SourceSlots);
  dst = at(KernelRole::DestSlots);
  raw = at(KernelRole::Out);
  addStateBuffers(func);
  request = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  lo = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::z), dp);
  colBase = add(base, lo);
  // The grid has one block per seq_starts entry; the last has no request.
  Value numRequests = sub(memref::DimOp::create(b, loc, starts, 0), idx(1));
  ifThen(ult(request, numRequests), [&] { buildBlock(); });
  gpu::ReturnOp::create(b, loc);
}

SmallVector<Value> KdaChunkBuilder::addArena(gpu::GPUFuncOp func,
                                             const Shapes &shapes) {
  Value arena = addDynamicWorkgroupArena(func, loc, bufferBytes(shapes));
  SmallVector<Value> views;
  int64_t offset = 0;
  for (ArrayRef<int64_t> shape : shapes) {
    views.push_back(viewWorkgroupArena(b, loc, arena, offset, shape, f32));
    offset += bufferBytes({SmallVector<int64_t, 2>(shape)});
  }
  return views;
}

void KdaChunkBuilder::addStagedRows(gpu::GPUFuncOp func) {
  // The staged rows pass sm_90's 48 KiB of static shared memory: dynamic.
  Shapes rows(stageQueries ? 2 : 1, stagedRowsShape(s.headDim));
  SmallVector<Value> views = addArena(func, rows);
  keys = views[0];
  if (stageQueries)
    queries = views[1];
}

void KdaChunkBuilder::addStateBuffers(gpu::GPUFuncOp func) {
  StateBuffers shapes(s.headDim, dp, operands, stageQueries);
  auto buffer = [&](ArrayRef<int64_t> shape) {
    return addWorkgroupBuffer(func, loc, shape, f32);
  };
  ss = buffer(shapes.state);
  if (!shapes.decays.empty())
    bs = buffer(shapes.decays);
  tws = buffer(shapes.deltaWeights);
  aqk = buffer(shapes.queryCoefficients);
  ds = buffer(shapes.rows);
  deltaRows = shapes.deltas.empty() ? ds : buffer(shapes.deltas);
  lastDecays = buffer(shapes.lastDecays);
  SmallVector<Value> views = addArena(func, shapes.arena);
  if (operands == ChunkOperands::Scaled) {
    scaledKeys = views[0];
    scaledQueries = views[1];
    lastKeys = views[2];
    return;
  }
  keys = views[0];
  if (stageQueries)
    queries = views[1];
}

void KdaChunkBuilder::buildWindow() {
  // Window x holds tokens [32 x, 32 x + 32) of the step; the chunks that
  // start there: one of the request holding its first token (if a chunk of
  // it starts there), one of each request that starts inside it.
  Value w0 = mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::x), kChunk);
  Value w1 = add(w0, kChunk);
  Value numTokens = memref::DimOp::create(b, loc, qn, 0);
  Value numRequests = sub(memref::DimOp::create(b, loc, starts, 0), idx(1));
  ifThen(ult(w0, numTokens), [&] {
    Value first = requestOfToken(starts, w0);
    forLoop(first, numRequests, idx(1), [&](Value r) {
      Value t0 = toIndex(load(starts, r));
      Value t1 = toIndex(load(starts, add(r, 1)));
      // The request's first chunk start at or after w0.
      Value from = sub(arith::MaxUIOp::create(b, loc, w0, t0), t0);
      Value cs = mul(
          arith::DivUIOp::create(b, loc, add(from, kChunk - 1), idx(kChunk)),
          kChunk);
      tc = add(t0, cs);
      Value n = sub(t1, t0);
      Value isChunk = arith::AndIOp::create(
          b, loc, ult(idx(s.decodeMaxTokens), n),
          arith::AndIOp::create(b, loc, ult(tc, t1), ult(tc, w1)));
      ifThen(isChunk, [&] {
        len = minu(idx(kChunk), sub(t1, tc));
        lastToken = sub(t1, idx(1));
        buildCoefficients();
      });
    });
  });
}

void KdaChunkBuilder::buildCoefficients() {
  stageChunkRows(kn, keys);
  if (stageQueries)
    stageChunkRows(qn, queries);
  scanDecays();
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
              Value w = fexp2(fsub(load(bs, ValueRange{i, c}),
                                   load(bs, ValueRange{row0, c})));
              return std::pair{fmul(key(i, c), w), fmul(query(i, c), w)};
            },
            [&](Value j, Value c) {
              Value x = fsub(load(bs, ValueRange{row0, c}),
                             load(bs, ValueRange{j, c}));
              x = arith::MinimumFOp::create(b, loc, x,
                                            cf32(kMaxRightExponent * kLog2E));
              return fmul(key(j, c), fexp2(x));
            });
        Value accK = products.first, accQ = products.second;
        forEachC(row0, col0, [&](Value i, Value j, int64_t e) {
          store(select(ult(j, i), element(accK, e), cf32(0.0)), akk,
                ValueRange{i, j});
          store(select(ule(j, i), element(accQ, e), cf32(0.0)), aqk,
                ValueRange{i, j});
        });
      });
  barrier();

  // 2. T = (I + diag(beta) A_k)^-1 diag(beta).
  solveDeltaWeights();
  // The request's rows of A_q and T to their tokens' result rows.
  storeChunkRows(aqk, aqRows, coefCol0, kChunk / 4);
  storeChunkRows(tws, tRows, coefCol0, kChunk / 4);
  // The next chunk rewrites B, beta, A_k, A_q, T and the staged rows.
  barrier();
}

void KdaChunkBuilder::solveDeltaWeights() {
  // T's rows solve T[i] = beta_i (e_i - sum_{j<i} A_k[i][j] T[j]). With L =
  // I + diag(beta) A_k in 16-row blocks, T = L^-1 diag(beta) is
  //   T11 = L11^-1 diag(beta1), T22 = L22^-1 diag(beta2), T12 = 0,
  //   T21 = -L22^-1 L21 L11^-1 diag(beta1) = -T22 (A_k21 T11),
  // so a lane per column solves its diagonal block by forward substitution
  // (rows unrolled, the earlier rows read back from workgroup memory), 16
  // rows deep instead of 32, and the block's threads form T21 with two
  // products. Rows past the request's end are zero (their coefficients may
  // be a previous chunk's: a select, not a product with beta = 0), and so
  // are T22's rows and T21's there.
  constexpr int64_t m = kSolveBlock;
  ifThen(ult(tid, idx(kChunk)), [&] {
    Value first = mul(arith::DivUIOp::create(b, loc, tid, idx(m)), m);
    for (int64_t r = 0; r < m; ++r) {
      Value i = add(first, r);
      Value acc = select(ieq(tid, i), cf32(1.0), cf32(0.0));
      for (int64_t q = 0; q < r; ++q) {
        Value j = add(first, q);
        acc = fsub(acc, fmul(load(akk, ValueRange{i, j}),
                             load(tws, ValueRange{j, tid})));
      }
      Value ti =
          select(ult(i, len), fmul(load(betaS, ValueRange{i}), acc), cf32(0.0));
      store(ti, tws, ValueRange{i, tid});
    }
  });
  barrier();
  // Thread (i, c) of the 16 x 16 off-diagonal elements: X = A_k21 T11, then
  // T21 = -T22 X (T11's and T22's upper parts are the lanes' zeros) and
  // T12 = 0.
  auto forEachOffDiagonal = [&](llvm::function_ref<void(Value, Value)> body) {
    forLoop(tid, idx(m * m), threads(), [&](Value e) {
      body(arith::DivUIOp::create(b, loc, e, idx(m)),
           arith::RemUIOp::create(b, loc, e, idx(m)));
    });
  };
  forEachOffDiagonal([&](Value i, Value c) {
    Value acc = cf32(0.0);
    for (int64_t k = 0; k < m; ++k)
      acc = fadd(acc, fmul(load(akk, ValueRange{add(i, m), idx(k)}),
                           load(tws, ValueRange{idx(k), c})));
    store(acc, offDiagonal, ValueRange{i, c});
  });
  barrier();
  forEachOffDiagonal([&](Value i, Value c) {
    Value acc = cf32(0.0);
    for (int64_t k = 0; k < m; ++k)
      acc = fsub(acc, fmul(load(tws, ValueRange{add(i, m), idx(m + k)}),
                           load(offDiagonal, ValueRange{idx(k), c})));
    store(acc, tws, ValueRange{add(i, m), c});
    store(cf32(0.0), tws, ValueRange{i, add(c, m)});
  });
  barrier();
}

void KdaChunkBuilder::buildBlock() {
  Value t0 = toIndex(load(starts, request));
  Value t1 = toIndex(load(starts, add(request, 1)));
  // Requests of at most decodeMaxTokens tokens are kda_decode's.
  Value n = sub(t1, t0);
  ifThen(ult(idx(s.decodeMaxTokens), n), [&] { buildRequest(t0, t1); });
}

void KdaChunkBuilder::buildRequest(Value t0, Value t1) {
  Value srcSlot = toIndex(load(src, request));
  Value dstSlot = toIndex(load(dst, request));
  Value fresh = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      toIndex(load(positions, t0)), idx(0));
  lastToken = sub(t1, idx(1));
  SmallVector<Value> initial = loadInitialState(fresh, srcSlot);
  barrier();
  Value n = sub(t1, t0);
  SmallVector<Value> final =
      carryLoop(idx(0), n, idx(kChunk), initial,
                [&](Value cs, ValueRange tiles) -> SmallVector<Value> {
                  tc = add(t0, cs);
                  len = minu(idx(kChunk), sub(n, cs));
                  return buildChunk(tiles);
                });
  // Final state (this subgroup's tiles) to the destination slot.
  forEachTile(s.headDim / mi.m, dp / mi.n, /*liveRows=*/false,
              [&](int64_t r, Value row0, Value col0) {
                forEachC(row0, col0, [&](Value c, Value e, int64_t el) {
                  store(element(final[r], el), state,
                        ValueRange{dstSlot, head, c, add(lo, e)});
                });
              });
}

SmallVector<Value> KdaChunkBuilder::loadInitialState(Value fresh,
                                                     Value srcSlot) {
  SmallVector<Value> tiles;
  forEachTile(s.headDim / mi.m, dp / mi.n, /*liveRows=*/false,
              [&](int64_t, Value row0, Value col0) {
                SmallVector<Value> elems;
                forEachC(row0, col0, [&](Value c, Value e, int64_t) {
                  auto pick =
                      scf::IfOp::create(b, loc, TypeRange{f32}, fresh, true);
                  {
                    OpBuilder::InsertionGuard guard(b);
                    b.setInsertionPointToStart(pick.thenBlock());
                    scf::YieldOp::create(b, loc, ValueRange{cf32(0.0)});
                    b.setInsertionPointToStart(pick.elseBlock());
                    scf::YieldOp::create(
                        b, loc,
                        ValueRange{load(
                            state, ValueRange{srcSlot, head, c, add(lo, e)})});
                  }
                  elems.push_back(pick.getResult(0));
                  store(operand(pick.getResult(0)), ss, ValueRange{c, e});
                });
                tiles.push_back(vector::FromElementsOp::create(
                    b, loc, VectorType::get({mi.c.size()}, f32), elems));
              });
  return tiles;
}

std::pair<Value, Value> KdaChunkBuilder::scaledKeyQuery(Value i, Value c) {
  if (operands == ChunkOperands::Scaled)
    return {load(scaledKeys, ValueRange{i, c}),
            load(scaledQueries, ValueRange{i, c})};
  Value w = fexp2(load(bs, ValueRange{i, c}));
  return {fmul(key(i, c), w), fmul(query(i, c), w)};
}

std::pair<Value, Value> KdaChunkBuilder::keyQueryProducts(
    Value row0, Value col0,
    llvm::function_ref<std::pair<Value, Value>(Value, Value)> left,
    llvm::function_ref<Value(Value, Value)> right) {
  Value zero = zeros(mi.c.size());
  SmallVector<Value> accs =
      kLoop(s.headDim, mi.k, {zero, zero},
            [&](Value kOff, ValueRange acc) -> SmallVector<Value> {
              SmallVector<Value> queryElems;
              Value aK = fragment(mi.a, row0, kOff, [&](Value i, Value c) {
                std::pair<Value, Value> elems = left(i, c);
                queryElems.push_back(elems.second);
                return elems.first;
              });
              int64_t at = 0;
              Value aQ = fragment(mi.a, row0, kOff, [&](Value i, Value c) {
                return queryElems[at++];
              });
              Value bv = fragment(mi.b, col0, kOff, right);
              return {mma(aK, bv, acc[0]), mma(aQ, bv, acc[1])};
            });
  return {accs[0], accs[1]};
}

Value KdaChunkBuilder::lowerTriangularProduct(Value lower, Value rows,
                                              Value row0, Value col0) {
  Value acc = zeros(mi.c.size());
  for (int64_t k0 = 0; k0 < kChunk; k0 += mi.k) {
    Value kOff = idx(k0);
    auto step = scf::IfOp::create(b, loc, TypeRange{acc.getType()},
                                  ult(kOff, add(row0, idx(mi.m))), true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(step.thenBlock());
    Value a = fragment(mi.a, row0, kOff, [&](Value i, Value j) {
      return load(lower, ValueRange{i, j});
    });
    Value bv = fragment(mi.b, col0, kOff, [&](Value e, Value j) {
      return load(rows, ValueRange{j, e});
    });
    scf::YieldOp::create(b, loc, ValueRange{mma(a, bv, acc)});
    b.setInsertionPointToStart(step.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{acc});
    acc = step.getResult(0);
  }
  return acc;
}

void KdaChunkBuilder::copyChunkRows(Value from, Value col0, Value to,
                                    int64_t rowElements) {
  int64_t threadCount = subgroups * subgroupSize;
  // 16-byte pieces: 4 f32 or 8 bf16 (the prepared q, k), widened to f32.
  Type fromElement = cast<MemRefType>(from.getType()).getElementType();
  int64_t kVector = 128 / fromElement.getIntOrFloatBitWidth();
  int64_t rowPieces = rowElements / kVector;
  int64_t pieces = kChunk * rowPieces;
  auto vecType = VectorType::get({kVector}, f32);
  auto loadType = VectorType::get({kVector}, fromElement);
  SmallVector<std::pair<Value, Value>> at;
  SmallVector<Value> rows;
  for (int64_t e0 = 0; e0 < pieces; e0 += threadCount) {
    Value e = add(tid, idx(e0));
    Value i = arith::DivUIOp::create(b, loc, e, idx(rowPieces));
    Value c = mul(arith::RemUIOp::create(b, loc, e, idx(rowPieces)), kVector);
    std::pair<Value, Value> row = chunkRow(i);
    auto piece = vector::LoadOp::create(b, loc, loadType, from,
                                        ValueRange{row.second, add(col0, c)});
    piece.setAlignment(16);
    Value rowPiece = piece.getResult();
    if (!fromElement.isF32())
      rowPiece = arith::ExtFOp::create(b, loc, vecType, rowPiece);
    if (roundedOperands) {
      SmallVector<Value> elems;
      for (int64_t e = 0; e < kVector; ++e)
        elems.push_back(operand(element(rowPiece, e)));
      rowPiece = vector::FromElementsOp::create(b, loc, vecType, elems);
    }
    rows.push_back(select(row.first, rowPiece, zeros(kVector)));
    at.push_back({i, c});
  }
  for (auto [row, where] : llvm::zip(rows, at)) {
    auto store = vector::StoreOp::create(b, loc, row, to,
                                         ValueRange{where.first, where.second});
    store.setAlignment(16);
  }
}

void KdaChunkBuilder::storeChunkRows(Value from, Value to, Value col0,
                                     int64_t rowPieces) {
  int64_t threadCount = subgroups * subgroupSize;
  constexpr int64_t kVector = 4;
  auto vecType = VectorType::get({kVector}, f32);
  for (int64_t e0 = 0; e0 < kChunk * rowPieces; e0 += threadCount) {
    Value e = add(tid, idx(e0));
    Value i = arith::DivUIOp::create(b, loc, e, idx(rowPieces));
    Value c = mul(arith::RemUIOp::create(b, loc, e, idx(rowPieces)), kVector);
    std::pair<Value, Value> row = chunkRow(i);
    ifThen(row.first, [&] {
      auto piece =
          vector::LoadOp::create(b, loc, vecType, from, ValueRange{i, c});
      piece.setAlignment(uint64_t(kVector * 4));
      auto store = vector::StoreOp::create(
          b, loc, piece.getResult(), to, ValueRange{row.second, add(col0, c)});
      store.setAlignment(uint64_t(kVector * 4));
    });
  }
}

void KdaChunkBuilder::scanDecays() {
  ifThen(ult(tid, idx(s.headDim)), [&] {
    SmallVector<Value> g;
    for (int64_t i = 0; i < kChunk; ++i)
      g.push_back(prepared(gl, idx(i), tid));
    Value sum = cf32(0.0);
    for (int64_t i = 0; i < kChunk; ++i) {
      sum = fadd(sum, fmul(g[i], cf32(kLog2E)));
      store(sum, bs, ValueRange{idx(i), tid});
    }
    if (lastDecays)
      store(fexp2(sum), lastDecays, ValueRange{tid});
  });
}

void KdaChunkBuilder::scaleChunkOperands() {
  // Lane h of the `lanes` neighbours of channel c scans rows [h run, (h +
  // 1) run); the runs' sums before it give its offset, all of them B_last.
  int64_t lanes = subgroups * subgroupSize / s.headDim, run = kChunk / lanes;
  Value c = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  Value h = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  Value first = mul(h, run);
  SmallVector<Value> g, k, q;
  for (int64_t r = 0; r < run; ++r) {
    Value i = add(first, r);
    g.push_back(prepared(gl, i, c));
    k.push_back(prepared(kn, i, c));
    q.push_back(prepared(qn, i, c));
  }
  SmallVector<Value> partial;
  Value sum = cf32(0.0);
  for (int64_t r = 0; r < run; ++r)
    partial.push_back(sum = fadd(sum, fmul(g[r], cf32(kLog2E))));
  // XOR-shuffle scan of the run sums: `total` over the aligned groups of
  // 1, 2, 4, .. lanes, `offset` over the group's lanes below h.
  Value total = sum, offset = cf32(0.0);
  for (int64_t bit = 1; bit < lanes; bit *= 2) {
    Value other =
        gpu::ShuffleOp::create(b, loc, total, ci32(bit), ci32(subgroupSize),
                               gpu::ShuffleMode::XOR)
            .getShuffleResult();
    Value above = ieq(arith::AndIOp::create(b, loc, h, idx(bit)), idx(bit));
    offset = select(above, fadd(offset, other), offset);
    total = fadd(total, other);
  }
  for (int64_t r = 0; r < run; ++r) {
    Value i = add(first, r);
    Value decay = fadd(offset, partial[r]);
    Value w = fexp2(decay);
    store(operand(fmul(k[r], w)), scaledKeys, ValueRange{i, c});
    store(operand(fmul(q[r], w)), scaledQueries, ValueRange{i, c});
    store(operand(fmul(k[r], fexp2(fsub(total, decay)))), lastKeys,
          ValueRange{i, c});
  }
  ifThen(ieq(h, idx(0)),
         [&] { store(fexp2(total), lastDecays, ValueRange{c}); });
}

void KdaChunkBuilder::scaleKeysToLast() {
  int64_t d = s.headDim;
  Value lastRow = idx(kChunk - 1);
  forLoop(tid, idx(kChunk * d), threads(), [&](Value e) {
    Value j = arith::DivUIOp::create(b, loc, e, idx(d));
    Value c = arith::RemUIOp::create(b, loc, e, idx(d));
    Value w = fexp2(
        fsub(load(bs, ValueRange{lastRow, c}), load(bs, ValueRange{j, c})));
    store(fmul(key(j, c), w), keys, ValueRange{j, c});
  });
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
                  values.push_back(loadF32(
                      vn, ValueRange{chunkRow(i).second, add(colBase, e)}));
                });
              });
  return values;
}

SmallVector<Value> KdaChunkBuilder::buildChunk(ValueRange state) {
  bool scaled = operands == ChunkOperands::Scaled;
  // 0. The V elements of phase 1, A_q and T first, all loads independent of
  // the state; the chunk's operands (Scaled) or B and the staged K (and Q)
  // rows (Formed); e^(B_last).
  SmallVector<Value> values = loadValueRows();
  copyChunkRows(aqRows, coefCol0, aqk, kChunk);
  copyChunkRows(tRows, coefCol0, tws, kChunk);
  if (scaled) {
    scaleChunkOperands();
  } else {
    stageChunkRows(kn, keys);
    if (stageQueries)
      stageChunkRows(qn, queries);
    scanDecays();
  }
  barrier();

  // 1. (K e^B) S0 and (Q e^B) S0, [C, dp] each: the residuals V - (K e^B)
  // S0 to ds, (Q e^B) S0 kept in registers for phase 3.
  int64_t rowTiles = kChunk / mi.m, outCols = dp / mi.n;
  int64_t perTile = mi.c.size();
  SmallVector<Value> readOut =
      mapLiveTiles(rowTiles, outCols, [&](int64_t r, Value row0, Value col0) {
        std::pair<Value, Value> products = keyQueryProducts(
            row0, col0, [&](Value i, Value c) { return scaledKeyQuery(i, c); },
            [&](Value e, Value c) {
              return load(ss, ValueRange{c, e});
            });
        Value accK = products.first;
        forEachC(row0, col0, [&](Value i, Value e, int64_t el) {
          Value valid = chunkRow(i).first;
          Value v = values[r * perTile + el];
          store(operand(select(valid, fsub(v, element(accK, el)), cf32(0.0))),
                ds, ValueRange{i, e});
        });
        return products.second;
      });
  barrier();

  // 2. The delta rows D = T R (rows past the request's end zero: so are
  // T's); Formed scales the staged K rows to phase 4's operand K e^(B_last -
  // B) in place meanwhile (phases 2 and 3 do not read K). D goes to its own
  // rows (Scaled), or replaces R in ds once every subgroup has read R.
  if (!scaled)
    scaleKeysToLast();
  SmallVector<Value> deltas =
      mapLiveTiles(rowTiles, outCols, [&](int64_t, Value row0, Value col0) {
        return lowerTriangularProduct(tws, ds, row0, col0);
      });
  if (deltaRows == ds)
    barrier();
  forEachTile(
      rowTiles, outCols, /*liveRows=*/false,
      [&](int64_t r, Value row0, Value col0) {
        forEachC(row0, col0, [&](Value i, Value e, int64_t el) {
          store(operand(element(deltas[r], el)), deltaRows, ValueRange{i, e});
        });
      });
  barrier();

  // 3. Outputs: the read-out rows plus A_q D.
  forEachTile(rowTiles, outCols, /*liveRows=*/true,
              [&](int64_t r, Value row0, Value col0) {
                Value acc = lowerTriangularProduct(aqk, deltaRows, row0, col0);
                forEachC(row0, col0, [&](Value i, Value e, int64_t el) {
                  std::pair<Value, Value> row = chunkRow(i);
                  Value valid = row.first, t = row.second;
                  ifThen(valid, [&] {
                    store(fadd(element(readOut[r], el), element(acc, el)), raw,
                          ValueRange{t, add(colBase, e)});
                  });
                });
              });

  // 4. End-of-chunk state: e^(B_last) S0 + (K e^(B_last - B))^T D on the
  // subgroup's tiles in registers, copied to ss as the next chunk's B
  // operand (no subgroup reads ss between phase 1 and the next chunk).
  SmallVector<Value> next;
  forEachTile(s.headDim / mi.m, outCols, /*liveRows=*/false,
              [&](int64_t r, Value row0, Value col0) {
                SmallVector<Value> init;
                forEachC(row0, col0, [&](Value c, Value, int64_t el) {
                  init.push_back(fmul(load(lastDecays, ValueRange{c}),
                                      element(state[r], el)));
                });
                Value acc = vector::FromElementsOp::create(
                    b, loc, VectorType::get({mi.c.size()}, f32), init);
                for (int64_t k0 = 0; k0 < kChunk; k0 += mi.k) {
                  Value kOff = idx(k0);
                  Value a = fragment(mi.a, row0, kOff, [&](Value c, Value j) {
                    return lastScaledKey(j, c);
                  });
                  Value bD = fragment(mi.b, col0, kOff, [&](Value e, Value j) {
                    return load(deltaRows, ValueRange{j, e});
                  });
                  acc = mma(a, bD, acc);
                }
                forEachC(row0, col0, [&](Value c, Value e, int64_t el) {
                  store(operand(element(acc, el)), ss, ValueRange{c, e});
                });
                next.push_back(acc);
              });
  // The next chunk rewrites B, A_q, T, the operands and reads ss.
  barrier();
  return next;
}

/// The subgroups of both chunk kernels' blocks for `shape` on `mi`.
static int64_t chunkSubgroups(const KdaChunk &shape,
                              const MatrixInstruction &mi) {
  int64_t d = shape.headDim;
  return subgroupsFor(mi, d, d / shape.parts);
}

gpu::GPUFuncOp mlir::strata::buildKdaChunkKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const KdaChunk &shape,
    const MatrixInstruction &mi, int64_t subgroupSize,
    int64_t workgroupMemoryBytes) {
  int64_t d = shape.headDim, dp = d / shape.parts;
  int64_t subgroups = chunkSubgroups(shape, mi);
  // chooseKdaChunkInstruction checked that a plan fits.
  ChunkOperandPlan plan = *chooseStatePlan(d, dp, subgroups * subgroupSize,
                                           subgroupSize, workgroupMemoryBytes);
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, subgroups * subgroupSize,
      mi.mnemonic, [&](gpu::GPUFuncOp func) {
        // Registers for two blocks a multiprocessor, which the workgroup
        // memory admits (ptxas would otherwise take more: one block).
        if (mi.family == MatrixFamily::MmaSync)
          func->setAttr("nvvm.minctasm",
                        builder.getI32IntegerAttr(kNvidiaBlocksPerSM));
        KdaChunkBuilder(builder, loc, shape, mi, subgroupSize, subgroups, plan)
            .build(func, KernelArguments(roles), ChunkKernel::State);
      });
}

gpu::GPUFuncOp mlir::strata::buildKdaCoefficientsKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const KdaChunk &shape,
    const MatrixInstruction &mi, int64_t subgroupSize,
    int64_t workgroupMemoryBytes) {
  int64_t d = shape.headDim;
  bool stageQueries = stagesQueries(bufferBytes(coefficientBufferShapes(d)), d,
                                    workgroupMemoryBytes);
  int64_t subgroups = chunkSubgroups(shape, mi);
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, subgroups * subgroupSize,
      mi.mnemonic, [&](gpu::GPUFuncOp func) {
        if (mi.family == MatrixFamily::MmaSync)
          func->setAttr("nvvm.minctasm", builder.getI32IntegerAttr(
                                             kNvidiaCoefficientBlocksPerSM));
        KdaChunkBuilder(builder, loc, shape, mi, subgroupSize, subgroups,
                        ChunkOperandPlan{ChunkOperands::Formed, stageQueries})
            .build(func, KernelArguments(roles), ChunkKernel::Coefficients);
      });
}

int64_t mlir::strata::kdaChunkRows() { return kChunk; }

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
      d > threads || dp > subgroupSize || kChunk > subgroupSize ||
      (kChunk * d / 4) % threads || (kChunk * kChunk / 4) % threads) {
    why = "the head does not tile";
    return failure();
  }
  int64_t memory = target.getSharedMemoryBytes();
  if (!chooseStatePlan(d, dp, threads, subgroupSize, memory) ||
      bufferBytes(coefficientBufferShapes(d)) + stagedRowsBytes(d) > memory) {
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
