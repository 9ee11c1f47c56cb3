//===- MatmulTiling.h - the shared GPU matmul tiling description -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// One description of how a GPU matmul y[M, N] = x[M, K] * W[N, K]^T is
// tiled, parameterised only by TargetInfo: the matrix instruction, the
// subgroup grid of a workgroup, the instruction tiles per subgroup and the
// K block after which block scales are applied. chooseMatmulTiling picks it
// for one problem; buildMatmulKernel (MatmulKernel.cpp) turns it into a
// gpu.func for any target whose MatrixFamily it knows.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_MATMULTILING_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_MATMULTILING_H

#include <optional>
#include <string>

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

/// How an fp8 block-scaled weight enters the matrix unit.
enum class Fp8Mode {
  /// bf16 weights: no block scales.
  None,
  /// x is quantised per row and per K block to the target's fp8 format
  /// inside the kernel (amax over the block, scale = amax / fp8_max), the
  /// fp8 instruction runs on fp8 x and fp8 W, and both scales are applied
  /// to the fp32 block accumulator.
  QuantizeActivations,
  /// The fp8 weight bytes are decoded to bf16 in registers (exact: every
  /// e4m3 value is a bf16 value), the bf16 instruction runs, and the weight
  /// block scale is applied to the fp32 block accumulator (x unquantised).
  DecodeWeights,
  /// x arrives quantised (llm.moe_ffn's fp8_expert_activations): e4m3
  /// codes with one fp32 scale per row and scaleBlockK-wide K group (the
  /// kernel's x_scales argument). The warpgroup ring (sm_90a) multiplies
  /// the codes of x and W on the fp8 instruction straight from workgroup
  /// memory, one K block per scale group; the register forms decode both
  /// to bf16 (exact) for the bf16 instruction. x's and W's scales are
  /// applied to the fp32 block accumulator.
  ScaledActivations,
};

/// What is multiplied: `n` outputs, `k` inputs, bf16 or fp8 weights with
/// `scaleBlockN x scaleBlockK` block scales, or fp32 weights (the MoE
/// router's): each fp32 weight value w is split into three bf16 terms hi +
/// mid + lo = w exactly (hi: w's top 16 bits, mid: the remainder's, lo: what
/// is left, at most 8 significant bits), so three bf16 instructions give
/// the fp32 dot product of bf16 activations with fp32 weights (every
/// product exact, fp32 accumulation) on the matrix units.
struct MatmulProblem {
  int64_t n = 0, k = 0;
  bool fp8Weight = false;
  bool f32Weight = false;
  int64_t scaleBlockN = 0, scaleBlockK = 0;
  /// The weight is stored [K, N] (W^T: MLA's absorb reads W_UK so).
  bool transposedWeight = false;
  /// x is e4m3 codes with per-row scales of scaleBlockK-wide K groups
  /// (Fp8Mode::ScaledActivations; fp8 weights only).
  bool fp8Input = false;
};

/// The tiling of one matmul kernel. A workgroup of subgroupsM x subgroupsN
/// subgroups computes a tileM() x tileN() block of y; each subgroup a
/// fragsM x fragsN grid of instruction tiles (mma.m x mma.n), accumulating
/// over K in steps of mma.k, blockK at a time.
struct MatmulTiling {
  MatrixInstruction mma;
  Fp8Mode fp8Mode = Fp8Mode::None;
  /// With QuantizeActivations: the target's bf16 instruction, on which the
  /// decode split forms (chooseDecodeSplitK) run in DecodeWeights mode
  /// instead. A decode step is bound by the weight's bytes, not by the
  /// instruction's rate, and needs no activation scales (no per-row amax
  /// over a K block before its product).
  std::optional<MatrixInstruction> decodeMma;
  int64_t subgroupSize = 0;
  int64_t subgroupsM = 0, subgroupsN = 0;
  int64_t fragsM = 0, fragsN = 0;
  int64_t blockK = 0;
  int64_t scaleBlockN = 0, scaleBlockK = 0;
  /// Each lane reads, per row of its A and B fragments, one contiguous run
  /// of the K block (wide loads) instead of the instruction's own K order;
  /// A and B are permuted alike (supportsKRuns), so every product is the
  /// same, only the instruction step that adds it differs.
  bool kRuns = false;
  /// The A fragments are read one instruction step at a time (in the K-run
  /// order of the B fragments when kRuns) instead of a whole K block at a
  /// time: the multi-row decode form holds several row fragments, whose
  /// whole-block A would not fit in registers beside W's block.
  bool stepwiseA = false;
  /// The row-tile form of chooseStagedTiling: each K block (kStageK) of the
  /// tile's rows of x and columns of W is copied once into workgroup memory
  /// (two buffers: the next block's global loads are in flight while the
  /// subgroups multiply the current one), and the subgroups read their
  /// fragments from there.
  bool staged = false;
  /// The staged form reads its fragments with ldmatrix (nvgpu.ldmatrix,
  /// four 8 x 8 tiles per lane group: the instruction's own register order,
  /// no K runs) from stage rows whose 16-byte chunks are swizzled (chunk
  /// c of row r at c ^ ((r / 2) mod 4)), so that the 8 rows of a tile hit
  /// distinct banks; mma.sync m16n8k16 with an even fragsN.
  bool ldmatrix = false;
  /// The staged form copies bf16 operand rows into workgroup memory with
  /// asynchronous copies (nvgpu.device_async_copy: cp.async, sm_80+), which
  /// hold no registers while in flight; fp8 weight rows, which are decoded
  /// on the way, still go through registers (two stages).
  bool asyncCopy = false;
  /// K blocks in flight of the staged form. 2: the two buffers above. More
  /// (asyncCopy with bf16 x, kAsyncStages): a ring of `stages` K blocks of
  /// x and of the raw weight rows (fp8 bytes as stored), every one copied
  /// asynchronously, `stages - 1` blocks ahead of the one multiplied; fp8
  /// blocks are decoded from the ring into two bf16 buffers by the thread
  /// that copied them, one block ahead (stagedBufferBytes; the arena is
  /// dynamic workgroup memory).
  int64_t stages = 2;
  /// K elements of one staged block (a stage row of stageK bf16): kStageK,
  /// or kWideStageK for the wgmma ring of weights read as stored (bf16, or
  /// fp8 decoded into the two bf16 buffers; chooseWarpgroupTiling), whose
  /// 128-byte rows take the 128-byte swizzle and halve the blocks, so the
  /// barrier, the copy issue and the wait of each block are paid once per
  /// 64 K instead of per 32.
  int64_t stageK = 32;
  /// The staged weight blocks are W^T's K rows of N values
  /// (MatmulProblem::transposedWeight), each thread's 8-column chunks of a
  /// K row stored as column K of 8 stage rows, so the products read K-major
  /// rows as for any other weight: with the ring, copied as stored (the
  /// slot's 16-byte chunks swizzled by the row) and transposed into the two
  /// bf16 buffers the fp8 blocks are decoded into, one block ahead; with the
  /// two buffers, on their way through registers.
  bool transposedWeight = false;
  /// The target has a warpgroup instruction with bf16 operands (wgmma on
  /// sm_90a) that chooseStagedTiling may give the ring.
  bool targetHasWarpgroupMma = false;
  /// The ring's blocks are multiplied by the warpgroup instruction (wgmma
  /// m64nNk16, N = weights x tileN) straight from workgroup memory: one
  /// warpgroup (four subgroups of 16 rows: subgroupsM 4, fragsN tileN / 8,
  /// the accumulators in the mma.sync m16n8 layout per 8 columns) and one
  /// instruction per 64 rows of the tile (fragsM: 1 or 2; see
  /// fragmentRowStride), operands read through 64-byte-swizzle descriptors
  /// of the stage rows (the same swizzle as ldmatrix's), issued
  /// asynchronously so the next block's fp8 decode overlaps the product.
  bool wgmma = false;

  /// Warpgroups of the wgmma form: 1, or 2 for the grouped experts' wide
  /// tiles (widenForWarpgroups), which split the tile's rows (warpgroup g
  /// the rows 64 g .. of each 128, subgroupsM 8, fragsM 1) and share the
  /// staged (decoded) weight blocks: half the weight bytes per product.
  /// In the kernel's plain tiling: its block's warpgroups, which the decode
  /// split form (chooseDecodeSplitK) gives a column group each (subgroupsN
  /// of the split tiling), splitting K over each one's subgroups.
  int64_t warpgroups = 1;
  /// Block order of the staged row tiles: 0, blockIdx.x is the row tile
  /// and y the column tile (the hardware starts blocks x first, so a wave
  /// of blocks takes every row tile's A rows and a few weight columns);
  /// r > 0, the blocks are renumbered (x first) into groups of r row tiles
  /// whose columns come next to each other (rasterTile), so that a wave
  /// reads a few row tiles' A rows and sweeps the weight columns, each
  /// column block read again by the group's next row tile while it is
  /// still in L2.
  int64_t rasterRows = 0;
  /// The renumbering of rasterRows applies to steps of at least this many
  /// rows (the grouped experts: slots); smaller ones keep blockIdx.x.
  int64_t rasterMinRows = 0;
  /// The staged form's ring of asynchronous copies (stages > 2).
  bool ring() const { return staged && stages > 2; }
  /// Bytes of one staged value of x: e4m3 codes (ScaledActivations) or
  /// bf16.
  int64_t stageElementBytes() const {
    return fp8Mode == Fp8Mode::ScaledActivations ? 1 : 2;
  }
  /// Bytes of one stage row (stageK values of x, or of a weight as the
  /// products read it).
  int64_t stageRowBytes() const { return stageK * stageElementBytes(); }

  int64_t tileM() const { return subgroupsM * fragsM * mma.m; }
  /// Rows between a subgroup's row fragments: the instruction's m, or with
  /// wgmma one warpgroup's 64 (fragment i of subgroup s holds rows
  /// 64 i + 16 s ..).
  int64_t fragmentRowStride() const {
    return wgmma ? subgroupsM * mma.m : mma.m;
  }
  /// Where subgroup s's first row is: s x this.
  int64_t subgroupRows() const { return wgmma ? mma.m : fragsM * mma.m; }
  int64_t tileN() const { return subgroupsN * fragsN * mma.n; }
  int64_t threads() const { return subgroupsM * subgroupsN * subgroupSize; }
};

/// The register-layout instruction of `target` for bf16 operands (or, with
/// `wantFp8`, fp8 ones whose A rows lanes can shuffle), the smallest m and
/// then the largest k; null when there is none.
const MatrixInstruction *pickMatrixInstruction(const TargetInfo &target,
                                               bool wantFp8);

/// A layout's K positions in K-run order (MatmulTiling::kRuns): the
/// distinct row offsets (piece[0]) of its pieces in order of appearance,
/// each piece's row group and rank within the group, and the elements of
/// one row a lane holds per instruction step.
struct KRunGroups {
  llvm::SmallVector<int64_t, 2> outer;
  llvm::SmallVector<int64_t, 4> group, rank;
  int64_t perStep = 0;
};
KRunGroups getKRunGroups(const FragmentLayout &l);

/// The vector.shuffle mask that takes instruction step `step`'s fragment of
/// layout `l` from a lane's runs of `run` elements per row group (the first
/// group's run, then the second's, as the shuffle's two operands).
llvm::SmallVector<int64_t> kRunStepMask(const FragmentLayout &l, int64_t run,
                                        int64_t step);

/// True when A and B of `mi` can be read in K runs: at most two row groups
/// of equal size per lane, the lanes of a row together hold the
/// instruction's k positions once, and A and B assign every k position to
/// the same (inner lane group, place in the lane's row) so that permuting
/// K the same way for both keeps each product's operands paired.
bool supportsKRuns(const MatrixInstruction &mi);

/// Chooses the tiling of `problem` on `target`: the register-layout
/// instruction for the operand type (fp8 if the target has one for fp8
/// weights, else bf16) with the smallest m (decode steps have few rows) and
/// then the largest k; a 64x64 workgroup tile of 2x2 subgroups, narrowed
/// along N until it divides `problem.n`. Fails with `why` when the target
/// has no usable instruction or the shape does not tile.
FailureOr<MatmulTiling> chooseMatmulTiling(const TargetInfo &target,
                                           const MatmulProblem &problem,
                                           std::string &why);

/// Columns of a block of the decode forms (chooseDecodeSplitK).
inline constexpr int64_t kDecodeTileColumns = 16;

/// Columns of a block of the fp32-weight GEMV (buildWeightGemv) and the fp32
/// values of one of its 16-byte weight loads.
inline constexpr int64_t kWeightGemvColumns = 2;
inline constexpr int64_t kWeightGemvRun = 4;


/// The multi-row decode form (chooseMultiRowDecodeSplitK) re-reads the
/// step's rows for every 16-column block: rows / 16 times the weight's bytes
/// again from L2. Measured on the H200 (glm5-slice-fp8, docs/bench/
/// h200-matrix.md): it beats the row tiles at 17..64 rows for N up to 16384
/// (kda.qkv_proj 78 -> 52 us at 32 rows, the fp8 o_proj 207 -> 93 us) but
/// not for lm_head's N = 154880 (551 -> 666 us at 32 rows, 963 -> 1727 us
/// at 128), whose row tiles already fill the GPU; at 65..128 rows (two row
/// blocks) it wins only for N up to 2048 (q_a_proj 59 -> 50 us, kv_a_proj
/// 56 -> 37 us; qkv_proj 85 -> 109 us; nor for the o_projs' long K, with
/// the row tiles' grid by form: kda 111 -> 178 us, mla 245 -> 323 us).
inline constexpr int64_t kMultiRowDecodeMaxColumns = 16384;
inline constexpr int64_t kMultiRowDecodeMaxRows = 128;
inline constexpr int64_t kMultiRowDecodeTwoBlockMaxColumns = 2048;
/// Wider linears whose row tiles fill the GPU with one row block (N /
/// tileN >= kGridSplitKIdleBlocks) or split K over the grid (K >= 2 x
/// kGridSplitKMinK) take the multi-row form up to this many rows and the
/// row tiles above. On an H100 (slice, docs/bench/h200-matrix.md) at 40 /
/// 48 / 64 rows: kda.qkv_proj x 3 196 / 207 / 246 -> 160 / 166 / 173 us,
/// the o_projs 88 / 89 / 112 -> 62 / 66 / 72 and 118 / 131 / 168 -> 91 / 95
/// / 103, q_b_proj 55 / 59 / 74 -> 35 / 38 / 43; but moe_shared_down (N =
/// 4096, K = 2048: 64 unsplit tiles) 60 / 65 / 77 -> 98 / 103 / 119.
inline constexpr int64_t kMultiRowDecodeWideMaxRows = 32;

/// The tiling of the decode forms (MatmulKernelBuilder::buildSplitK,
/// buildGroupedSplitKKernel): `rowFrags` rows of instruction tiles
/// (rowFrags x mma.m rows) across `columns` (kDecodeTileColumns, or the row
/// tiles' tileN for the grouped experts) columns per subgroup, the K loop
/// split over `splits` = the workgroup's subgroups; with rowFrags > 1 the
/// A fragments are read step by step (stepwiseA). None for fp8 with
/// activation quantisation (its row scales assume the tiled layout) or when
/// K does not split into whole K blocks.
std::optional<MatmulTiling>
chooseDecodeSplitK(const MatmulTiling &tiling, const MatmulProblem &problem,
                   int64_t &splits, int64_t columns = kDecodeTileColumns,
                   int64_t rowFrags = 1);

/// The multi-row decode form of a plain linear or dense projection: the
/// decode split with tiling.tileM() rows per block (rowFrags = tileM /
/// mma.m), so that it covers the row tiles' grid x (ceil(M / tileM)); each
/// block streams its 16 columns of the weight once for tileM rows. Taken
/// by steps of more than mma.m and at most `maxRows` rows: tileM,
/// kMultiRowDecodeMaxRows for N <= kMultiRowDecodeTwoBlockMaxColumns, or
/// kMultiRowDecodeWideMaxRows for the wide linears whose row tiles do
/// better above it; none for N > kMultiRowDecodeMaxColumns.
std::optional<MatmulTiling>
chooseMultiRowDecodeSplitK(const MatmulTiling &tiling,
                           const MatmulProblem &problem, int64_t &splits,
                           int64_t &maxRows);

/// The largest step (rows) a linear's decode forms take: the multi-row
/// form's maxRows where the problem has one, else one instruction's rows;
/// 0 without decode forms.
int64_t decodeFormsMaxRows(const MatmulTiling &tiling,
                           const MatmulProblem &problem, bool decodeForms);

/// K split over the grid (MatmulKernelBuilder::buildGridSplit): the plain
/// row tiles of a linear whose steps of a few row tiles leave most of the
/// GPU idle (an o_proj of N = 4096 at 128 rows: 2 x 64 tiles of 64 x 64,
/// each walking K = 16384) take `splits` blocks along grid z per tile, each
/// over a 1/splits share of K; the blocks store their fp32 tiles into the
/// dispatch's global scratch, and the last of a tile's blocks to arrive (a
/// per-tile counter, left at zero for the next dispatch) adds them in split
/// order and runs the epilogue.
struct GridSplitK {
  int64_t splits = 0;
  /// The steps (rows) the split tiles take: (minRows - 1 .. maxRows].
  int64_t minRows = 0, maxRows = 0;
  /// The split tiles are the staged wgmma ring's (`staged` of
  /// chooseGridSplitK) rather than the plain tiling's.
  bool staged = false;
  int64_t tileM = 0, tileN = 0;
};
/// Measured on an H100 (the slice's linears, docs/bench/h200-matrix.md "K
/// split over the grid"): the split pays where the unsplit tiles of the
/// largest step are at most kGridSplitKIdleBlocks (fewer than the SMs: the
/// o_projs' 2 x 64 tiles at 128 rows, 241 -> 172 us and 118 -> 91 us) and
/// costs where they already fill the GPU (kda.qkv_proj's 2 x 128 tiles, 60
/// -> 67 us; 256-row steps, 4 x 64 tiles, no gain). Only steps of at most
/// kGridSplitKMaxRows rows split.
inline constexpr int64_t kGridSplitKMaxRows = 128;
inline constexpr int64_t kGridSplitKIdleBlocks = 128;
/// The staged ring's 128 x 128 tiles split where the largest step has at
/// most this many (the slice's o_projs: 32, kda.qkv_proj: 64); a problem of
/// ~128 such tiles (one per streaming multiprocessor) keeps them whole.
inline constexpr int64_t kGridSplitKStagedIdleBlocks = 64;
/// ... and take steps from this many rows on (the plain split, where the
/// kernel has one, the smaller ones): on an H100 at 128 rows kda.qkv_proj
/// 167 -> 124 us, the fp8 MLA o_proj 163 -> 111 us (the bf16 KDA o_proj 83
/// -> 89 us), at 64 rows all three slower (155 -> 171, 95 -> 104, 64 -> 74
/// us: a 128-row tile half empty).
inline constexpr int64_t kGridSplitKStagedMinRows = 65;
/// Splits double while the tiles x splits stay within this many blocks...
inline constexpr int64_t kGridSplitKTargetBlocks = 512;
inline constexpr int64_t kGridSplitKMaxSplits = 4;
/// ... and a split's share of K stays at least this: each block writes and
/// the last one reads tileM x tileN fp32 partial sums, which must stay
/// small against the block's weight bytes (tileN x K / splits).
inline constexpr int64_t kGridSplitKMinK = 2048;

/// The decode forms' K split over the grid (buildSplitK with a
/// GridSplitArgs): a block of `split` (the one-row or multi-row decode
/// tiling, N / split.tileN() column blocks) walks a 1/z share of K with its
/// `splits` subgroups. Only for at most kDecodeGridSplitKMaxColumnBlocks
/// column blocks (N <= 512: the narrow projections, on an H100 at 32 rows
/// 23-26 -> 14-17 us; wider ones, N = 1536 or 4096 with 96-256 blocks, got
/// slower); z doubles while the column blocks x z stay within
/// kDecodeGridSplitKTargetBlocks, the share splits into whole K blocks (and
/// fp8 scale blocks) per subgroup and stays at least kDecodeGridSplitKMinK.
/// 1: no split.
inline constexpr int64_t kDecodeGridSplitKMaxColumnBlocks = 32;
inline constexpr int64_t kDecodeGridSplitKTargetBlocks = 256;
inline constexpr int64_t kDecodeGridSplitKMaxSplits = 8;
inline constexpr int64_t kDecodeGridSplitKMinK = 512;
int64_t chooseDecodeGridSplits(const MatmulTiling &split,
                               const MatmulProblem &problem, int64_t splits);

/// The grid split of the row tiles of `problem` for steps above
/// `decodeMaxRows` (the decode forms' largest step, 0 without them) that
/// still take the plain tiles (below `stagedMinRows`, 0: no staged tiles),
/// or none: f32 weights, a K that does not split into whole K blocks (and
/// fp8 scale blocks), or tiles enough without. The split tiles are the
/// plain tiling's, or where `staged` is the wgmma ring (sm_90a: 128 x 128
/// tiles multiplied from workgroup memory, GridSplitK::staged) its tiles:
/// the o_projs at 128 rows then split 32 tiles 4 ways instead of 128 plain
/// 64 x 64 tiles, each reading its weight columns once per 128 rows. None
/// when `staged` is given but is not that ring.
std::optional<GridSplitK>
chooseGridSplitK(const MatmulTiling &plain, const MatmulProblem &problem,
                 int64_t decodeMaxRows, int64_t stagedMinRows,
                 const MatmulTiling *staged = nullptr);

/// K elements per stage of the staged row tiles (chooseStagedTiling): rows
/// of 64 bytes in workgroup memory, which the lanes' 16-byte K runs read
/// without bank conflicts.
inline constexpr int64_t kStageK = 32;

/// K blocks of the staged form's ring (MatmulTiling::stages with
/// asynchronous copies): three in flight while one is multiplied. On the
/// H200 a streaming multiprocessor needs ~32 KiB in flight to cover the
/// memory latency at full bandwidth; two blocks of 64-row grouped-expert
/// tiles with two buffers had ~8 KiB (Nsight Compute, moe_up at 2048
/// tokens: 1.08 TB/s).
inline constexpr int64_t kAsyncStages = 4;

/// MatmulTiling::stageK of the wgmma ring over weights read as stored,
/// with kWideStageStages blocks in the ring: 96 KiB for a 128 x 128 tile of
/// a bf16 weight (104 KiB for an fp8 one: a third less ring, two decoded
/// bf16 blocks), two blocks of 64 K in flight while one is multiplied, and
/// two workgroups per streaming multiprocessor. Tiles of one warpgroup's 64
/// rows (lm_head's, kStagedWideTileRows) take kWideStageStagesDeep blocks,
/// also 96 KiB (on an H100, lm_head at 32 rows 462 -> 452 us against 3
/// blocks; even at 64 and 128 rows), and so do blocks of two warpgroups
/// (moe_up's, one per streaming multiprocessor by their registers): 192 KiB
/// for fp8 weights; on an H100 moe_up at 8192 prefill tokens 12.6 -> 11.8 ms
/// against 3 blocks.
inline constexpr int64_t kWideStageK = 64;
/// K values of one staged block of the fp8 ring (ScaledActivations): one
/// 128-wide scale group, 128-byte rows of e4m3 codes (the wide stage's
/// bytes and swizzle).
inline constexpr int64_t kFp8StageK = 128;
inline constexpr int64_t kWideStageStages = 3;
inline constexpr int64_t kWideStageStagesDeep = 4;
/// The fewest K for 64-wide blocks: long K loops are where a block's fixed
/// cost counts; a loop of 8 wide blocks (the tiny model's K = 512 MTP
/// projection) spilled registers in ptxas (28-40 bytes at 255 registers).
inline constexpr int64_t kWideStageMinK = 1024;

/// The staged row-tile form of `tiling` (MatmulTiling::staged) for tiles of
/// `tileRows` rows: 2 x 2 subgroups, kStageK-wide K blocks through
/// workgroup memory, as many columns (128 or 64) as keep `weights` x the
/// subgroup's accumulators within 128 fp32 registers per lane, on the bf16
/// instruction. fp8 weights (DecodeWeights: sm_90) are decoded and
/// multiplied by their block scale once per element while staging, rounded
/// to bf16 (the reference's bf16 dequantisation, round(q * scale)). None
/// for fp32 weights, fp8 instructions on quantised activations (gfx942 /
/// gfx950 fp8 weights keep their row tiles), transposed weights without
/// the ring (MatmulTiling::transposedWeight), or shapes that do not tile
/// (`why` says which).
/// Where the target has a bf16 warpgroup instruction and `allowWarpgroup`
/// (bf16 activations: the ring), the tiles are the wgmma form
/// (MatmulTiling::wgmma) of `tileRows` rows and up to 256 columns x
/// weights.
std::optional<MatmulTiling> chooseStagedTiling(const MatmulTiling &tiling,
                                               const MatmulProblem &problem,
                                               int64_t weights,
                                               int64_t tileRows,
                                               std::string &why,
                                               bool allowWarpgroup = true);

/// Rows of the staged tiles of the plain linears and dense projections
/// (prefill steps of thousands of rows), and of the grouped experts (a
/// 2048-token prefill routes ~57 slots to each of 288 experts).
inline constexpr int64_t kStagedTileRows = 128;
inline constexpr int64_t kGroupedStagedTileRows = 64;
/// Rows of the wgmma tiles (MatmulTiling::wgmma): one warpgroup's m64.
inline constexpr int64_t kWarpgroupRows = 64;
/// Threads of one warpgroup (four subgroups of 32).
inline constexpr int64_t kWarpgroupThreads = 128;
/// Rows of the grouped experts' staged tiles with two warpgroups
/// (widenForWarpgroups): a prefill of 8192 tokens routes ~228 slots to
/// each of 288 experts, so a tile of 128 slots reads each expert's weight
/// columns about half as often as tiles of 64.
inline constexpr int64_t kGroupedWarpgroupTileRows = 128;

/// MatmulTiling::rasterRows of the staged tiles, measured on the H200
/// (glm5-slice-fp8, sm_90a, three runs each, docs/bench/h200-matrix.md
/// "Block order"). The plain linears and dense projections: groups of 8
/// row tiles (linear_0 at 8192 rows 3.40 -> 2.79 ms; groups of 4: 3.04,
/// 16: 2.70 but mhc_post_linear_0 at 128 rows 113 -> 142 us). moe_down: one
/// row tile per group, i.e. every column of a tile (one expert's slots)
/// before the expert's next tile, from kGroupedRasterMinSlots slots on
/// (10.7 -> 8.6 ms at 8192 tokens, 4.1 -> 3.4 ms at 2048; at 1024 slots,
/// decode B = 128, 2 % slower). moe_up keeps blockIdx.x order: its
/// two-warpgroup tiles, one block per multiprocessor, measured 1-4 %
/// slower column first.
inline constexpr int64_t kDenseRasterRows = 8;
inline constexpr int64_t kGroupedRasterRows = 1;
inline constexpr int64_t kGroupedRasterMinSlots = 4096;

/// The grouped experts' kernel tiling with a block of two warpgroups
/// (8 subgroups: the plain tiling's 2 along M, 4 along N) on targets with
/// the warpgroup instruction, for moe_up (`weights` 2, whose gate and up
/// accumulators fill one warpgroup at 64 rows), where the staged tiles then
/// are the two warpgroups' wgmma form of kGroupedWarpgroupTileRows rows and
/// the decode split form (if the plain tiling has one) still exists, a
/// column group per warpgroup. None otherwise (one warpgroup).
std::optional<MatmulTiling> widenForWarpgroups(const MatmulTiling &tiling,
                                               const MatmulProblem &problem,
                                               int64_t weights);

/// The staged tiles of a plain linear or dense projection take steps of at
/// least stagedMinRows rows: kStagedMinRows, and enough rows for
/// kStagedMinTiles tiles (about two per streaming multiprocessor of the
/// H200: below, the unstaged 64 x 64 tiles keep more of the GPU busy;
/// measured on the H200, docs/bench/h200-matrix.md); for wide problems
/// (isWideColumnProblem) every step above the decode forms' rows with
/// kStagedWideTileRows-row tiles, else one tile of rows.
inline constexpr int64_t kStagedMinRows = 256;
inline constexpr int64_t kStagedMinTiles = 256;
/// A problem with at least this many 128-column tiles (lm_head's 1210) is
/// wide: its columns alone fill the GPU at any step size, so it takes the
/// staged tiles from one tile of rows on. On sm_90a (wgmma, and lm_head's
/// bf16 weight on the 64-wide K blocks, kWideStageK) the tiles have
/// kStagedWideTileRows rows (one wgmma m64) and start above the decode
/// forms' 16 rows: on an H100, lm_head at 32 rows 556 -> 482 us against the
/// unstaged 64 x 64 tiles, at 128 rows 511 -> 534 us against one 128-row
/// tile (two 64-row tiles read each weight column twice, the second time
/// mostly from L2); with 32-wide K blocks the 64-row tiles had been slower
/// at both (557 -> 664 us, 665 -> 716 us; docs/bench/h200-matrix.md).
inline constexpr int64_t kStagedWideColumnTiles = 4 * kStagedMinTiles;
inline constexpr int64_t kStagedWideTileRows = 64;
bool isWideColumnProblem(const MatmulProblem &problem);
/// Rows of the staged tiles of a plain linear: kStagedWideTileRows for wide
/// problems on targets with the warpgroup instruction, else kStagedTileRows.
int64_t stagedTileRows(const MatmulTiling &tiling,
                       const MatmulProblem &problem);
/// `batches` matmuls of the problem in one grid (MLA's heads: grid z) count
/// as that many times its column tiles.
int64_t stagedMinRows(const MatmulTiling &staged, const MatmulProblem &problem,
                      int64_t batches = 1);

/// Workgroup bytes of the staged form's buffers: two stage buffers, or the
/// ring of `stages` blocks of x and of the raw weight rows plus, for fp8
/// or transposed weights, two decoded bf16 blocks.
int64_t stagedBufferBytes(const MatmulTiling &staged, int64_t weights);

/// fence.proxy.async.shared::cta: orders this thread's generic-proxy writes of
/// workgroup memory before the async proxy's reads (wgmma operands).
void fenceSharedWritesForAsyncProxy(OpBuilder &b, Location loc);

/// An i8 arena of `bytes` in the dynamic workgroup memory of `func`
/// (gpu.dynamic_shared_memory at the body's start), recorded as
/// kDynamicSharedMemoryAttrName for the launch: a ring's buffers pass the
/// 48 KiB of static shared memory that sm_90 allows.
Value addDynamicWorkgroupArena(gpu::GPUFuncOp func, Location loc,
                               int64_t bytes);
/// Records on `func` that steps whose `dim(argument 0, 0) x perRow` is at
/// most `smallSteps` use only `bytes` of its dynamic workgroup memory (the
/// staged tiles' ring runs in larger steps only): kSmallStepSharedMemoryAttrName
/// = [perRow, smallSteps, bytes], which the artifact turns into a launch
/// size that follows the step (LaunchInfo.shared_memory), so that a decode
/// step's blocks do not reserve the ring's bytes they never touch.
void recordSmallStepBytes(gpu::GPUFuncOp func, int64_t perRow,
                          int64_t smallSteps, int64_t bytes);
inline constexpr llvm::StringLiteral kSmallStepSharedMemoryAttrName =
    "strata.small_step_shared_memory";
inline constexpr llvm::StringLiteral kDynamicSharedMemoryAttrName =
    "strata.dynamic_shared_memory_bytes";

/// Columns per block of the grouped experts' decode form (at most the row
/// tiles' tileN).
inline constexpr int64_t kGroupedDecodeColumns = 64;

/// The grouped experts' decode split (buildGroupedExpertKernel): tiles of
/// mma.m slots across kGroupedDecodeColumns columns, K split over the
/// subgroups (chooseDecodeSplitK).
std::optional<MatmulTiling>
chooseGroupedDecodeSplitK(const MatmulTiling &tiling,
                          const MatmulProblem &problem, int64_t &splits);

/// Column blocks (grid y) of a matmul kernel over `problem`: N / tileN, or
/// N / the decode form's columns when the kernel has one (`decodeForm` and
/// chooseDecodeSplitK gives one): the row-tile form then leaves the blocks
/// past N / tileN idle.
int64_t columnBlocks(const MatmulTiling &tiling, const MatmulProblem &problem,
                     bool decodeForm);

/// `gpu.func @name(argTypes)` at the end of `module`: a kernel of `threads`
/// threads per block (known_block_size) tagged with the matrix instruction
/// `mnemonic` (strata.mma); the builder is left at its body's start. Shared
/// by the matrix-unit kernel generators.
gpu::GPUFuncOp createMatrixKernelFunc(OpBuilder &builder, Location loc,
                                      gpu::GPUModuleOp module, StringRef name,
                                      TypeRange argTypes, int64_t threads,
                                      StringRef mnemonic);

/// The kernel `name` of `module` if it has one, else a new one
/// (createMatrixKernelFunc) whose body `build` fills; the builder's
/// insertion point is restored. Shared by the kernel generators' entry
/// points.
gpu::GPUFuncOp
getOrCreateMatrixKernel(OpBuilder &builder, Location loc,
                        gpu::GPUModuleOp module, StringRef name,
                        TypeRange argTypes, int64_t threads,
                        StringRef mnemonic,
                        llvm::function_ref<void(gpu::GPUFuncOp)> build);

/// A workgroup buffer memref<shape x elem> of `func`, 16-byte aligned (LLVM
/// merges neighbouring accesses into 16-byte ones).
Value addWorkgroupBuffer(gpu::GPUFuncOp func, Location loc,
                         ArrayRef<int64_t> shape, Type elem);

/// `memref<shape x elem>` in workgroup memory at byte `offset` of `arena`
/// (an i8 workgroup buffer): the forms of one kernel (decode forms' partial
/// sums, staged row tiles) run in exclusive branches and share one arena.
Value viewWorkgroupArena(OpBuilder &b, Location loc, Value arena,
                         int64_t offset, ArrayRef<int64_t> shape, Type elem);

/// How an f32 product runs on an instruction of tf32 operands (NVIDIA's
/// mma.sync .tf32): `Exact`, three instructions on a hi / lo split (about
/// fp32's accuracy); `Tf32`, one, the operands rounded to tf32 (10 mantissa
/// bits, nearest with ties away from zero); `Tf32Rounded`, one, the
/// operands already rounded so by the kernel (roundToTf32: their low 13 bits
/// zero), passed as they are. Instructions of true f32 operands (AMD's
/// v_mfma_*_f32) ignore it.
enum class F32Products { Exact, Tf32, Tf32Rounded };

/// `x` (f32) rounded to tf32 as F32Products::Tf32 rounds a product's
/// operands (cvt.rna.tf32.f32), as an f32: a kernel that stores its
/// operands so runs its products with F32Products::Tf32Rounded, the same
/// results without a conversion per fragment element.
Value roundToTf32(OpBuilder &b, Location loc, Value x);

/// acc + a * bv on the matrix unit: `a`, `bv` the A and B fragments (in the
/// FragmentLayout order of `mi`), `acc` the C fragment (vector of f32);
/// amdgpu.mfma on AMD, nvvm.mma.sync (bf16 pairs packed in i32) on NVIDIA.
Value emitMatrixInstruction(OpBuilder &b, Location loc,
                            const MatrixInstruction &mi, Value a, Value bv,
                            Value acc,
                            F32Products f32Products = F32Products::Exact);

/// Element types of a matmul kernel's operands.
struct MatmulTypes {
  Type x;      // bf16
  Type weight; // bf16 or f8E4M3FN
  Type y;      // bf16 or f32
};

/// The problem and element types of a linear y[M, N] = x[M, K] * W[N, K]^T
/// with `x`, `y` of rank 2, weight data `weight` [N, K] and, for an fp8
/// weight, its `blockN x blockK` block scales (both 0 for bf16 and f32
/// weights): fails with `why` unless x is bf16, the weight bf16, f32 (with
/// an f32 y: MatmulProblem::f32Weight) or f8E4M3FN and y bf16 or f32. Shared by
/// the llm.linear pattern (tensor types) and the kernel function path (memref
/// types), so both accept the same linears.
LogicalResult describeLinearMatmul(ShapedType x, ShapedType weight,
                                   int64_t blockN, int64_t blockK,
                                   ShapedType y, MatmulProblem &problem,
                                   MatmulTypes &types, std::string &why);

/// Builds `gpu.func @name` in `module`: arguments x memref<?xKxbf16>,
/// W memref<NxKxT>, [scales memref<ceil(N/bn)xceil(K/bk)xf32>,]
/// y memref<?xNxTy>; grid (ceil(M / tileM), N / tileN, 1), block
/// (threads, 1, 1) (`known_block_size`). With `hcMult` > 0 the result is
/// mHC's residual write (DenseMatmul::hcMult): (x, W[, scales], R, post,
/// comb, y memref<?xhcMultxNxTy>). Returns the existing function when `module`
/// already has one of that name.
gpu::GPUFuncOp buildMatmulKernel(OpBuilder &builder, Location loc,
                                 gpu::GPUModuleOp module, StringRef name,
                                 const MatmulTiling &tiling,
                                 const MatmulProblem &problem,
                                 const MatmulTypes &types,
                                 int64_t hcMult = 0);

/// The argument roles of buildMatmulKernel's function, in its order.
SmallVector<llm::KernelRole> linearMatmulRoles(bool fp8Weight, int64_t hcMult);

/// buildMatmulKernel over the arguments `argTypes` of a kernel function,
/// read by their `roles` (linearMatmulRoles in any order). With
/// `gridSplit`, steps of a few row tiles split K over the grid where the
/// problem has such a split (chooseGridSplitK): the function then takes
/// two more arguments, the arrival counters and the scratch (addGridSplitK),
/// which the artifact binds; buildMatmulKernel's direct launches have none.
gpu::GPUFuncOp buildLinearMatmulKernelFunc(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const MatmulTiling &tiling, const MatmulProblem &problem,
    const MatmulTypes &types, int64_t hcMult, bool gridSplit = false);

/// What a dense projection kernel (FfnOps.cpp, kDenseMatmulAttrName) does
/// with the matmul's rows.
enum class MatmulEpilogue {
  /// y = round(acc) (swiglu_down).
  Store,
  /// Two weights (gate, up) against the same x; y = SwiGLU of the rounded
  /// accumulators (swiglu_up, moe_shared_up).
  Swiglu,
  /// y = round(sum over the row's topK routed slots + round(acc))
  /// (moe_shared_down).
  AddSlotSum,
};

struct DenseMatmul {
  MatmulEpilogue epilogue = MatmulEpilogue::Store;
  /// The kernel works only when the step has at least this many rows;
  /// below, the `*_rows` kernel of the same op does.
  int64_t minRows = 0;
  /// AddSlotSum: slots per row of the routed buffer.
  int64_t topK = 0;
  /// Swiglu: swiglu_limit.
  double limit = 0;
  /// With hcMult > 0 the epilogue's value y (rounded) goes through mHC's
  /// residual write instead of a plain store: every stream j of the row gets
  /// round(post[row, j] * y + sum_i comb[row, i, j] * R[row, i, col]);
  /// arguments R memref<?xhcMultxNxT>, post memref<?xhcMultxf32>, comb
  /// memref<?xhcMultxhcMultxf32> follow the weights and the result is
  /// memref<?xhcMultxNxT> (mhc_post_linear; swiglu_down / moe_shared_down of
  /// an FFN in streams form).
  int64_t hcMult = 0;
  /// With `heads` > 0 the matmul is batched over heads (grid z): x
  /// memref<?xheadsxK>, y memref<?xheadsxN>, and head h multiplies the rows
  /// [h * weightRowStride + weightRowOffset, + N) of W (MLA's per-head W_UV
  /// inside kv_b).
  int64_t heads = 0;
  int64_t weightRowStride = 0, weightRowOffset = 0;
  /// Batched over heads with W^T: head h's [K, N] block is the rows
  /// [h * weightRowStride + weightRowOffset, + K) (MLA's W_UK^h: qa = q W_UK).
  bool transposedWeight = false;
  /// The kernel's argument roles (#llm.kernel), by which the kernel reads
  /// x, the weights and scales, the slot sum, the streams and y.
  SmallVector<llm::KernelRole> roles;
};

/// Whether a dense projection's matmul takes the decode form where its
/// tiling has one: not batched over heads, and working at every step size
/// (no `_rows` twin left doing the small steps).
inline bool takesDecodeForm(const DenseMatmul &dense) {
  return !dense.heads && !dense.minRows;
}

/// Steps of at most mma.m rows of a plain linear with an fp32 weight (the
/// MoE router: N = 288, K = 4096) take the GEMV instead of the one-row
/// decode form, whose 8-column blocks (36 for 288 experts) streamed the
/// 4.7 MB weight at ~0.25 TB/s on the H200: N / 2 blocks, each thread's
/// K elements of both columns in registers, loaded at once. `splits` is the
/// block's subgroups; K must split into 16-byte runs.
bool takesWeightGemv(const MatmulTiling &tiling, const MatmulProblem &problem,
                     int64_t splits, const DenseMatmul &dense);

/// Builds `gpu.func @name` with the arguments `argTypes` of a dense
/// projection kernel function: (x, W[, scales], y) for Store, (x, gate[,
/// scales], up[, scales], y) for Swiglu, (x, routed memref<?xtopKxNxbf16>,
/// W[, scales], y) for AddSlotSum; y memref<?xNxbf16> is written (with
/// hcMult, R, post and comb before y and y the streams). Grid
/// (ceil(M / tileM), N / tileN, 1) as for buildMatmulKernel.
gpu::GPUFuncOp buildDenseMatmulKernel(OpBuilder &builder, Location loc,
                                      gpu::GPUModuleOp module, StringRef name,
                                      TypeRange argTypes,
                                      const MatmulTiling &tiling,
                                      const MatmulProblem &problem,
                                      const MatmulTypes &types,
                                      const DenseMatmul &dense);

/// The shape of an mla_attend kernel function (MlaOps.cpp).
struct MlaAttend {
  /// Heads, latent width R, the pool's rows per page and row width (>= R).
  int64_t heads = 0, rank = 0, pageSize = 0, poolWidth = 0;
  double scale = 1.0;
  /// An fp8 latent pool (`#llm.mla_attend`'s `#llm.fp8_page`; 0 for bf16): the
  /// pool is [pages, page bytes] i8, a row's poolWidth e4m3 values at byte
  /// row * fp8RowBytes of its page, then one f32 scale per fp8GroupLanes
  /// values at fp8ScaleOffset into the row (Fp8PageLayout::rowInterleaved).
  int64_t fp8RowBytes = 0, fp8ScaleOffset = 0, fp8GroupLanes = 0;
  bool fp8() const { return fp8RowBytes > 0; }
};

/// The bf16 instruction buildMlaAttendKernel uses on `target` (smallest m,
/// then largest k); fails with `why` when there is none, the latent width
/// does not tile into 2 subgroup halves of it, the block does not fit the
/// target, or the latent rows do not copy into the workgroup tile in 16-byte
/// runs.
FailureOr<const MatrixInstruction *>
chooseMlaAttendInstruction(const TargetInfo &target, const MlaAttend &shape,
                           std::string &why);

/// Heads one block of buildMlaAttendKernel takes (grid y: ceil(H / this)).
int64_t mlaAttendHeadsPerBlock(const MlaAttend &shape,
                               const MatrixInstruction &mi,
                               const TargetInfo &target);

/// Builds `gpu.func @name` with the arguments `argTypes` of an mla_attend
/// kernel function (qa memref<?xHxRxf32>, the bf16 latent pool
/// memref<?xPxWxbf16> or an fp8 one memref<?xBxi8>, selection memref<?xSxi32>,
/// counts, sequence starts, block table, oh memref<?xHxRxf32>): one token (or
/// position range) and mlaAttendHeadsPerBlock heads per block, two subgroups
/// per m heads (MlaAttendKernel.cpp).
gpu::GPUFuncOp
buildMlaAttendKernel(OpBuilder &builder, Location loc, gpu::GPUModuleOp module,
                     StringRef name, TypeRange argTypes,
                     ArrayRef<llm::KernelRole> roles, const MlaAttend &shape,
                     const MatrixInstruction &mi, const TargetInfo &target);

/// The shape of an mla_combine kernel function (MlaOps.cpp): heads and the
/// latent width R of oh [T, H, R] and the parts buffer [kMlaSplitSlots, H,
/// R + 2].
struct MlaCombine {
  int64_t heads = 0, rank = 0;
};

/// Threads of a buildMlaCombineKernel block on `target` (4 subgroups).
int64_t mlaCombineThreads(const TargetInfo &target);

/// Steps of at most this many tokens give mla_combine R / threads column
/// blocks, a column per thread (MlaCombineKernel.cpp).
constexpr int64_t kMlaCombineNarrowMaxTokens = 2;

/// Fails with `why` where buildMlaCombineKernel cannot take `shape` on
/// `target`: each thread owns 1, 2 or 4 of the R columns in one column
/// block (and one in R / threads blocks).
LogicalResult checkMlaCombine(const MlaCombine &shape,
                              const TargetInfo &target, std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of an mla_combine
/// kernel function (oh memref<?xHxRxf32>, parts memref<128xHx(R+2)xf32>):
/// one (token, head, column block) per block in steps of at most
/// kMlaSplitMaxTokens tokens (grid (min(T, kMlaSplitMaxTokens), H, R /
/// threads or 1: its grid forms), every thread one column or R / threads
/// (MlaCombineKernel.cpp).
gpu::GPUFuncOp buildMlaCombineKernel(OpBuilder &builder, Location loc,
                                     gpu::GPUModuleOp module, StringRef name,
                                     TypeRange argTypes,
                                     ArrayRef<llm::KernelRole> roles,
                                     const MlaCombine &shape,
                                     const TargetInfo &target);

/// What a moe_select kernel function computes (FfnOps.cpp, one expert
/// group): the top `topK` of `experts` per token and their weights.
struct MoeSelect {
  int64_t experts = 0, topK = 0;
  bool normalize = true;
  double renormEps = 0, scaling = 1;
};

/// Builds `gpu.func @name` with the arguments `argTypes` of a moe_select
/// kernel function (logits memref<?xExf32>, correction bias memref<Exf32>,
/// chosen memref<?xKxi32>, weights memref<?xKxf32>): one token per block
/// (grid (T, 1, 1)), the top-k races over the block's threads
/// (MoeSelectKernel.cpp).
gpu::GPUFuncOp buildMoeSelectKernel(OpBuilder &builder, Location loc,
                                    gpu::GPUModuleOp module, StringRef name,
                                    TypeRange argTypes,
                                    ArrayRef<llm::KernelRole> roles,
                                    const MoeSelect &shape,
                                    const TargetInfo &target);

/// What a moe_group kernel function computes (FfnOps.cpp): the slots of
/// `topK` experts per token grouped by expert, of `experts`.
struct MoeGroup {
  int64_t experts = 0, topK = 0;
};

/// Bytes of workgroup memory buildMoeGroupKernel takes on `target`: a row
/// of i32 counts per subgroup and the experts' starts.
int64_t moeGroupWorkgroupBytes(const MoeGroup &shape, const TargetInfo &target);

/// Builds `gpu.func @name` with the arguments `argTypes` of a moe_group
/// kernel function (chosen memref<?xKxi32>, order memref<?xKxi32>, starts
/// memref<E+1xi32>): one block (grid (1, 1, 1)) that counts each subgroup's
/// share of the slots by expert, scans the counts and lists the slots
/// expert by expert in slot order (MoeGroupKernel.cpp).
gpu::GPUFuncOp buildMoeGroupKernel(OpBuilder &builder, Location loc,
                                   gpu::GPUModuleOp module, StringRef name,
                                   TypeRange argTypes,
                                   ArrayRef<llm::KernelRole> roles,
                                   const MoeGroup &shape,
                                   const TargetInfo &target);

/// The shape of a kpool_scores kernel function (IndexerOps.cpp): `heads`
/// query heads of `headDim`, pools of `kpool` tokens, index pool pages of
/// `rowsPerPage` rows: bf16 rows, or with `fp8PageBytes` set fp8 pages of
/// that many bytes (Fp8PageLayout::valuesThenScales: the rows' e4m3 values,
/// then one f32 power-of-two scale per row; Hadamard-rotated keys).
struct KpoolScores {
  int64_t heads = 0, headDim = 0, kpool = 0, rowsPerPage = 0;
  double scale = 1.0;
  int64_t fp8PageBytes = 0;
  bool fp8() const { return fp8PageBytes != 0; }
  /// fp8 pages: bytes from a page's start to row 0's scale.
  int64_t fp8ScaleOffset() const { return rowsPerPage * headDim; }
};

/// On a matmul gpu.func whose large steps keep the unstaged row tiles (no
/// staged tile for its problem): why, for select-kernel-strategy's remark.
inline constexpr llvm::StringLiteral kUnstagedAttrName = "strata.unstaged";

/// buildKpoolScoresKernel's work items: a step of T tokens splits each
/// token's pools over clamp(kKpoolScoreItems / T, 1, kKpoolScoreMaxParts)
/// blocks (grid x = T + kKpoolScoreItems): about 8 blocks of 128 threads per
/// multiprocessor of an H200 for any decode batch, a long context's pools
/// over up to 256 blocks at B = 1 (16 parts had left the 8 MB of keys at
/// ctx 131072 to 16 multiprocessors: 122 us, 69 GB/s). A token uses only
/// ceil(groups / kKpoolScoreMinGroups) of its parts, so that every block
/// reads at least 4 groups of keys (32 KB with mma.sync's n = 8) for the
/// token's queries it loads (16 KB at 64 heads x 128): one group a block
/// at B = 32, ctx 4096 read twice the keys' bytes in queries (35 us, 21
/// with 4 groups).
inline constexpr int64_t kKpoolScoreItems = 1024;
inline constexpr int64_t kKpoolScoreMaxParts = 256;
inline constexpr int64_t kKpoolScoreMinGroups = 4;

/// The bf16 instruction buildKpoolScoresKernel uses on `target`; fails with
/// `why` when there is none or the head dimension does not tile.
FailureOr<const MatrixInstruction *>
chooseKpoolScoresInstruction(const TargetInfo &target,
                             const KpoolScores &shape, std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of a kpool_scores
/// kernel function (q memref<?xHxDxbf16>, weights memref<?xHxf32>, the
/// index pool: bf16 memref<?xPxDxbf16> or fp8 pages memref<?xBxi8>,
/// positions, sequence starts, block table, scores memref<?x?xPxf32>): grid
/// (tokens + kKpoolScoreItems, 1, 1), a block taking a part of a token's
/// pools, the heads the instruction's rows, 4 subgroups
/// (KpoolScoresKernel.cpp).
gpu::GPUFuncOp buildKpoolScoresKernel(OpBuilder &builder, Location loc,
                                      gpu::GPUModuleOp module, StringRef name,
                                      TypeRange argTypes,
                                      ArrayRef<llm::KernelRole> roles,
                                      const KpoolScores &shape,
                                      const MatrixInstruction &mi,
                                      int64_t subgroupSize);

/// What a kpool_indexer selection kernel function computes (IndexerOps.cpp):
/// per token the top topk / kpool of its visible pools' scores (a plan
/// buffer with `rowsPerPage` pools per page row), expanded to kpool
/// positions each, then the open tail.
struct KpoolSelect {
  int64_t kpool = 0, topk = 0, rowsPerPage = 0;
};

/// Threads of buildKpoolSelectKernel's blocks (one token each).
inline constexpr int64_t kKpoolSelectThreads = 1024;

/// Builds `gpu.func @name` with the arguments `argTypes` of a kpool_indexer
/// selection kernel function (positions memref<?xi32>, scores
/// memref<?x?xRxf32>, selection memref<?xSxi32>, counts memref<?xi32>): one
/// token per block (grid (T, 1, 1)), a radix select over the block's threads
/// with workgroup histograms (KpoolSelectKernel.cpp).
gpu::GPUFuncOp buildKpoolSelectKernel(OpBuilder &builder, Location loc,
                                      gpu::GPUModuleOp module, StringRef name,
                                      TypeRange argTypes,
                                      ArrayRef<llm::KernelRole> roles,
                                      const KpoolSelect &shape,
                                      const TargetInfo &target);

/// The shape of an mhc_mix kernel function (HyperConnectionOps.cpp,
/// MhcMix.h): `hcMult` streams of `width` values, `mix` fp32 weight rows,
/// the streams' h * width values in `slices` slices.
struct MhcMix {
  int64_t hcMult = 0, width = 0, mix = 0, slices = 0;
};

/// Tokens per block of buildMhcMixKernel (grid x = ceil(T / kMhcMixTokens)).
inline constexpr int64_t kMhcMixTokens = 8;

/// Fails with `why` where buildMhcMixKernel cannot take `shape`: mix not a
/// multiple of its 4 subgroups, or an odd number of positions per slice (the
/// lanes read pairs).
LogicalResult checkMhcMix(const MhcMix &shape, std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of an mhc_mix
/// kernel function (streams, fn, parts): one (tile of kMhcMixTokens tokens,
/// slice) per block (grid (ceil(T / kMhcMixTokens), slices, 1)), 4
/// subgroups, fp32 FMA (MhcMixKernel.cpp).
gpu::GPUFuncOp buildMhcMixKernel(OpBuilder &builder, Location loc,
                                 gpu::GPUModuleOp module, StringRef name,
                                 TypeRange argTypes,
                                 ArrayRef<llm::KernelRole> roles,
                                 const MhcMix &shape, int64_t subgroupSize);

/// The shape of an mhc_pre kernel function (HyperConnectionOps.cpp):
/// `hcMult` bf16 streams of `width` values, mhc_mix's `slices`, the
/// op's constants, and whether it ends in the sub-layer's input RMSNorm
/// (`xNorm`: the norm weight follows the scales).
struct MhcPre {
  int64_t hcMult = 0, width = 0, slices = 0, sinkhornIters = 0;
  double hcEps = 0, normEps = 0, postMult = 0, xNormEps = 0;
  bool xNorm = false;
};

/// Fails with `why` where buildMhcPreKernel cannot take `shape` on
/// `target`: an h x h comb matrix past a subgroup's lanes, or streams not
/// in runs of 8 columns.
LogicalResult checkMhcPre(const TargetInfo &target, const MhcPre &shape,
                          std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of an mhc_pre kernel
/// function (streams, parts, base, scale[, norm weight], x, post, comb):
/// one token per block (grid (T, 1, 1)), 4 subgroups, Sinkhorn on subgroup
/// shuffles (MhcPreKernel.cpp).
gpu::GPUFuncOp buildMhcPreKernel(OpBuilder &builder, Location loc,
                                 gpu::GPUModuleOp module, StringRef name,
                                 TypeRange argTypes,
                                 ArrayRef<llm::KernelRole> roles,
                                 const MhcPre &shape, int64_t subgroupSize);

/// The shape of a chunked kda_attention kernel function (KdaOps.cpp):
/// `heads` heads of `headDim` key and value channels, the value columns
/// split over `parts` blocks.
struct KdaChunk {
  int64_t heads = 0, headDim = 0, parts = 0;
  /// The log-decay's lower bound (g > gateLowerBound, negative).
  double gateLowerBound = 0;
  /// Requests of at most this many tokens are left to kda_decode.
  int64_t decodeMaxTokens = 0;
  /// The chunk products may round their operands to tf32 (one tf32
  /// instruction a product where the target's f32 instruction is tf32).
  bool tf32Products = false;
};

/// The f32 instruction buildKdaChunkKernel and buildKdaCoefficientsKernel
/// use on `target` (smallest m);
/// fails with `why` when there is none, the head does not tile or the gate
/// bound lets a factored decay overflow fp32.
FailureOr<const MatrixInstruction *>
chooseKdaChunkInstruction(const TargetInfo &target, const KdaChunk &shape,
                          std::string &why);

/// Chunk rows of buildKdaChunkKernel / buildKdaCoefficientsKernel: the
/// chunk length their coefficient arrays' widths must carry (heads x it).
int64_t kdaChunkRows();

/// Builds `gpu.func @name` with the arguments `argTypes` of a chunked
/// kda_attention kernel function (kKdaAttentionRoles: q, k, v, g
/// memref<?xPxf32>, A_q and T memref<?x(H*C)xf32>, state
/// memref<?xHxdxdxf32>, positions, sequence starts, source and destination
/// slots, read-out memref<?xPxf32>): one (request, head, part) per block
/// (grid (requests + 1, H, parts)), 8 or 4 subgroups (KdaChunkKernel.cpp).
/// The chunk's query rows are staged in workgroup memory too where
/// `workgroupMemoryBytes` (the target's per block) holds them.
gpu::GPUFuncOp
buildKdaChunkKernel(OpBuilder &builder, Location loc, gpu::GPUModuleOp module,
                    StringRef name, TypeRange argTypes,
                    ArrayRef<llm::KernelRole> roles, const KdaChunk &shape,
                    const MatrixInstruction &mi, int64_t subgroupSize,
                    int64_t workgroupMemoryBytes);

/// Builds `gpu.func @name` with the arguments `argTypes` of a
/// kda_coefficients kernel function (kKdaCoefficientsRoles: q, k, g
/// memref<?xPxf32>, beta memref<?xHxf32>, sequence starts, A_q and T
/// memref<?x(H*C)xf32>): the chunks starting in a 32-token window of the
/// step per block, one head (grid (ceil(tokens / 32), H)), the subgroups of
/// buildKdaChunkKernel (KdaChunkKernel.cpp).
gpu::GPUFuncOp
buildKdaCoefficientsKernel(OpBuilder &builder, Location loc,
                           gpu::GPUModuleOp module, StringRef name,
                           TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
                           const KdaChunk &shape, const MatrixInstruction &mi,
                           int64_t subgroupSize, int64_t workgroupMemoryBytes);

/// The shape of a kda_prepare kernel function (KdaOps.cpp): `heads` heads
/// of `headDim` channels, a depthwise conv of `convTaps` taps, the op's
/// gate bound, L2 epsilon and query scale, and the largest request left to
/// kda_decode.
struct KdaPrepare {
  int64_t heads = 0, headDim = 0, convTaps = 0, decodeMaxTokens = 0;
  double gateLowerBound = 0, l2Eps = 0, qScale = 0;
};

/// The shape of a kda_output kernel function (KdaOps.cpp): `heads` heads
/// of `headDim` channels, a depthwise conv of `convTaps` taps, the op's
/// output-norm epsilon and the largest request left to kda_decode.
struct KdaOutput {
  int64_t heads = 0, headDim = 0, convTaps = 0, decodeMaxTokens = 0;
  double normEps = 0;
};

/// Subgroups of a buildKdaPrepareKernel / buildKdaOutputKernel block, each
/// one (token, head).
inline constexpr int64_t kKdaTokenHeadsPerBlock = 4;

/// Fails with `why` where buildKdaPrepareKernel / buildKdaOutputKernel
/// cannot take a model of `heads` heads of `headDim` channels and a
/// `convTaps`-tap conv on `target`: a head that is not 1, 2, 4 or 8
/// channels per lane.
LogicalResult checkKdaTokenRows(const TargetInfo &target, int64_t heads,
                                int64_t headDim, int64_t convTaps,
                                std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of a kda_prepare
/// kernel function (roles kKdaPrepareRoles): a subgroup per (token, head),
/// grid (tokens, ceil(heads / kKdaTokenHeadsPerBlock), 1)
/// (KdaTokenKernels.cpp).
gpu::GPUFuncOp buildKdaPrepareKernel(OpBuilder &builder, Location loc,
                                     gpu::GPUModuleOp module, StringRef name,
                                     TypeRange argTypes,
                                     ArrayRef<llm::KernelRole> roles,
                                     const KdaPrepare &shape,
                                     int64_t subgroupSize);

/// Builds `gpu.func @name` with the arguments `argTypes` of a kda_output
/// kernel function (roles kKdaOutputRoles): a subgroup per (token, head),
/// grid (tokens, ceil(heads / kKdaTokenHeadsPerBlock), 1)
/// (KdaTokenKernels.cpp).
gpu::GPUFuncOp buildKdaOutputKernel(OpBuilder &builder, Location loc,
                                    gpu::GPUModuleOp module, StringRef name,
                                    TypeRange argTypes,
                                    ArrayRef<llm::KernelRole> roles,
                                    const KdaOutput &shape,
                                    int64_t subgroupSize);

/// The shape of a group quantisation kernel function (FfnOps.cpp's
/// moe_quantize_x / moe_quantize_act): rows of `width` values in `groups`
/// groups of `block`, x of rank 2 ([T, width]: inner 0) or 3 ([T, inner,
/// width]).
struct GroupQuantize {
  int64_t block = 0, width = 0, groups = 0, inner = 0;
};

/// Fails with `why` where buildGroupQuantizeKernel cannot take `shape` on
/// `target`: a group that is not 1, 2, 4 or 8 values per lane, or a row
/// that is not whole groups.
LogicalResult checkGroupQuantize(const TargetInfo &target,
                                 const GroupQuantize &shape, std::string &why);

/// Blocks of buildGroupQuantizeKernel per index of x's first dimension (its
/// grid's y).
int64_t groupQuantizeBlocksPerRow(const GroupQuantize &shape);

/// Builds `gpu.func @name` with the arguments `argTypes` of a group
/// quantisation kernel function (x, codes, scales): a subgroup per group,
/// grid (T, groupQuantizeBlocksPerRow, 1) (GroupQuantizeKernel.cpp).
gpu::GPUFuncOp buildGroupQuantizeKernel(OpBuilder &builder, Location loc,
                                        gpu::GPUModuleOp module, StringRef name,
                                        TypeRange argTypes,
                                        ArrayRef<llm::KernelRole> roles,
                                        const GroupQuantize &shape,
                                        int64_t subgroupSize);

/// The longest state column buildKdaDecodeKernel holds in a thread's
/// registers (the model's head_dim is 128).
inline constexpr int64_t kKdaDecodeHeldRows = 128;

/// The shape of a kda_decode kernel function (KdaOps.cpp): `heads` heads of
/// `headDim` channels, a conv of `convTaps` taps, the op's constants, the
/// largest request it takes (0: every request, recurrent mode) and whether
/// each token has a state slot of its own (`tokenSlots`).
struct KdaDecode {
  int64_t heads = 0, headDim = 0, convTaps = 0, decodeMaxTokens = 0;
  double gateLowerBound = 0, l2Eps = 0, qScale = 0, normEps = 0;
  bool tokenSlots = false;
};

/// Fails with `why` where buildKdaDecodeKernel cannot take `shape` on
/// `target`: a head that is not whole subgroups, or a state column longer
/// than kKdaDecodeHeldRows.
LogicalResult checkKdaDecode(const TargetInfo &target, const KdaDecode &shape,
                             std::string &why);

/// Builds `gpu.func @name` with the arguments `argTypes` of a kda_decode
/// kernel function (KdaOps.cpp's operands in their roles): one (request,
/// head) per block (grid (requests + 1, H, 1)), a thread per channel and
/// state column, the column held in registers across the request's tokens
/// (KdaDecodeKernel.cpp).
gpu::GPUFuncOp buildKdaDecodeKernel(OpBuilder &builder, Location loc,
                                    gpu::GPUModuleOp module, StringRef name,
                                    TypeRange argTypes,
                                    ArrayRef<llm::KernelRole> roles,
                                    const KdaDecode &shape,
                                    int64_t subgroupSize);

/// What a grouped-expert kernel computes (moe_up / moe_down of FfnOps.cpp).
struct GroupedExperts {
  /// moe_up (gate and up weights, SwiGLU epilogue) or moe_down (routing
  /// weight epilogue).
  bool up = true;
  /// `experts`: the experts moe_group groups the slots by (all of the
  /// model's).
  int64_t topK = 0, experts = 0;
  /// Expert parallelism: the experts of the rank's stacked weights, global
  /// experts [coordinate * rankExperts, + rankExperts) (the coordinate is
  /// the kernel's i64 argument after `starts`); the slots of the others
  /// are stored as 0. 0: every expert is in the weights, no coordinate.
  int64_t rankExperts = 0;
  bool expertParallel() const { return rankExperts > 0; }
  /// Experts in the stacked weights.
  int64_t weightExperts() const {
    return expertParallel() ? rankExperts : experts;
  }
  /// The kernel works only when the step has at least this many slots
  /// (T * topK); below, the `*_rows` kernel of the same op does.
  int64_t minSlots = 0;
  /// swiglu_limit (moe_up).
  double limit = 0;
  /// Rows per tile of the decode form (mma.m), 0 without one.
  int64_t splitTileRows = 0;
  /// The kernel's argument roles (#llm.kernel), by which the kernel reads
  /// x, the routing, the weights and scales and y.
  SmallVector<llm::KernelRole> roles;
};

/// Steps of at most this many routed slots run the grouped kernel's decode
/// form (tiles of one instruction's rows, K split over the subgroups;
/// decode batches up to 256 tokens at top-8), larger ones its row tiles.
inline constexpr int64_t kGroupedSplitKMaxSlots = 2048;

/// Builds `gpu.func @name` with the arguments `argTypes` of the moe_up /
/// moe_down kernel function: the tiled matmul over each expert's routed
/// slots (MatmulKernel.cpp); `problem` is one expert's matrix (N, K). Where
/// the tiling has a decode split (chooseDecodeSplitK), steps of at most
/// kGroupedSplitKMaxSlots slots take tiles of mma.m slots with K split over
/// the subgroups instead. Grid (ceil(T * topK / tileM) + experts, N /
/// tileN, 1) for both (grid-stride over the tiles).
gpu::GPUFuncOp buildGroupedExpertKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, const MatmulTiling &tiling,
    const MatmulProblem &problem, const MatmulTypes &types,
    const GroupedExperts &experts);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_MATMULTILING_H
