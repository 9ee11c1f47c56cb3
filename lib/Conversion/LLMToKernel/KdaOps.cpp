//===- KdaOps.cpp - Kimi delta attention to kernels -----------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.kda_attention becomes one kernel for short requests and four for the
// others.
//
// `kda_decode`, one row per (request, head), does all of a request of at
// most kKdaDecodeMaxTokens tokens (decode steps, MTP verification; every
// request in `recurrent` mode): token by token the short causal depthwise
// conv + SiLU of the head's q, k and v channels (history from the conv
// state, zero at position 0), per-head L2 norms, log-decay g and write
// strength beta, the delta-rule update of the head's fp32 [d_k, d_v] state
// in the cache (read from slot src_slots[r] for the first token, then from
// the slot the previous token wrote: dst_slots[r], or token_slots[t - 1]
// with per-token slots; a value column per thread on the GPU), the read-out
// and the gated output RMSNorm; then the last K-1 pre-conv inputs of the
// head's channels to the conv state (with per-token slots: after every
// token whose slot the next token does not share).
//
// Longer requests (chunked mode), in chunks of `chunk_size` tokens from the
// request's first (the WY form): `kda_prepare`, one row per (token, head):
// the conv + SiLU, L2 norms, g and beta into [T, H*d] (beta [T, H])
// buffers: q, k and v rounded to bf16 in bf16-activation models (once each,
// after the norms; the reference rounds the conv outputs to bf16 and fla
// keeps the normalised rows in bf16), f32 otherwise; g and beta f32.
// `kda_coefficients`, one row per (token, head), a row whose token starts a
// chunk writing what of the chunk does not depend on the state: the query
// coefficients A_q and the delta weights T = (I + diag(beta) A_k)^-1 diag(beta)
// (forward substitution), [T, H*chunk_size] each. `kda_attention`, rows
// (request, head, part): walks the request's chunks from the state, D = T (V -
// (K e^B) S0), the outputs (Q e^B) S0 + A_q D and the end-of-chunk state,
// writing its value columns of the f32 read-out and of the final state (slot
// dst_slots[r]): the delta rule updates every value column of the state on its
// own, so a head's d_v columns are split over `parts` blocks. The two carry
// #llm.kda_chunk (kKdaCoefficientsAttrName, kKdaChunkAttrName), with which a
// GPU target rebuilds them on the matrix units (LLMToGPU/KdaChunkKernel.cpp).
// `kda_output`, one row per (token, head), applies the gated output RMSNorm (it
// needs all of a head's columns) and, in the row of a request's last token,
// writes the conv state (after kda_prepare has read the old one). The four work
// only in steps of more than kKdaDecodeMaxTokens tokens (outside, their row
// loops are empty and a GPU launches one block each) and skip the requests
// kda_decode does; they carry kMinRequestTokensAttrName, so decode plans (one
// token per request) leave them out.
//
// State and conv state are updated in place (the op's cache results are
// the operands' buffers); every kernel writes the same o.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The pre-conv inputs of one request: channel `ch` of q (which 0), k (1)
/// or v (2) at token offset `off` (index, may be negative: then the conv
/// state row of slot `srcSlot`, zero for a request at position 0).
struct PreConvInputs {
  Value q, k, v, conv, t0, srcSlot, fresh;
  int64_t p, kTaps;

  /// Both candidates are loaded at clamped (in-range) indices and one is
  /// selected, without branches, so that a GPU thread issues the loads of
  /// several taps at once. Offsets run from -(K-1) to the request's last
  /// token; slot srcSlot is always a valid slot.
  Value at(KernelBuilder &kb, Value off, int64_t which, Value ch) const {
    Value input = which == 0 ? q : which == 1 ? k : v;
    Value fromInput =
        kb.load(input, {kb.iadd(t0, kb.imax(off, kb.idx(0))), ch});
    if (kTaps == 1)
      return fromInput;
    Value row = kb.imin(kb.iadd(kb.idx(kTaps - 1), off), kb.idx(kTaps - 2));
    Value c = kb.iadd(kb.idx(which * p), ch);
    Value history = kb.select(fresh, kb.f32(0.0),
                              kb.load(conv, {srcSlot, row, c}));
    return kb.select(kb.ige(off, kb.idx(0)), fromInput, history);
  }

  /// silu(sum_j w[ch, 0, j] * z_{i-K+1+j}[c]), c = which * P + ch: the conv
  /// output of channel ch of q (which 0), k (1) or v (2) at token offset i.
  Value convolve(KernelBuilder &kb, Value weights, int64_t which, Value ch,
                 Value i) const {
    Value sum = kb.reduce(0, kTaps, kb.f32(0.0), [&](Value j, Value acc) {
      Value off = kb.iadd(kb.isub(i, kb.idx(kTaps - 1)), j);
      return kb.add(acc, kb.mul(kb.load(weights, {ch, kb.idx(0), j}),
                                at(kb, off, which, ch)));
    });
    return kb.silu(sum);
  }
};

/// Requests of at most this many tokens (decode steps, MTP verification of
/// up to three draft tokens) run kda_decode in chunked mode; the recurrence
/// then costs less than the chunk kernels' four dispatches.
constexpr int64_t kKdaDecodeMaxTokens = 4;

/// kda_decode keeps a state column of at most this many rows while it
/// updates it (a GPU thread's registers: 128 of them at head_dim 128), so
/// that each state element is read once per token instead of twice.
constexpr int64_t kKdaHeldColumnRows = 128;

/// log-decay g = lower * sigmoid(rate * (f[t, ch] + dt_bias[ch])) of
/// channel ch of token t, rate = exp(A_log[head]).
Value logDecay(KernelBuilder &kb, double lower, Value rate, Value f,
               Value dtBias, Value t, Value ch) {
  return kb.mul(kb.f32(lower),
                kb.sigmoid(kb.mul(
                    rate, kb.add(kb.load(f, {t, ch}), kb.load(dtBias, ch)))));
}

/// The slot holding a request's state after token t: token_slots[t] with
/// per-token slots, else dst_slots[r] for every token.
struct StateSlotsAfter {
  Value tokenSlots, dstSlot;
  Value at(KernelBuilder &kb, Value t) const {
    return tokenSlots ? kb.loadIndex(tokenSlots, t) : dstSlot;
  }
};

/// Writes the conv state after a request's `n` tokens: row w of slot
/// `dstSlot` is the pre-conv input at token offset n - (K-1) + w (the old
/// conv state's row for offsets below 0), for the d channels from `base` of
/// q, k and v each. Rows go in ascending order, which only reads higher
/// (not yet written) rows when the source slot is `dstSlot`.
void writeConvState(KernelBuilder &kb, const PreConvInputs &inputs,
                    Value dstSlot, Value n, Value base, int64_t d) {
  kb.loop(0, inputs.kTaps - 1, [&](Value w) {
    Value off = kb.iadd(kb.isub(n, kb.idx(inputs.kTaps - 1)), w);
    // The q, k and v channels of the head, each a loop over the channel
    // itself (threads share it on the GPU).
    for (int64_t which = 0; which < 3; ++which) {
      Value c0 = kb.iadd(kb.idx(which * inputs.p), base);
      kb.loop(c0, kb.iadd(c0, kb.idx(d)), [&](Value c) {
        Value ch = kb.isub(c, kb.idx(which * inputs.p));
        kb.store(inputs.at(kb, off, which, ch), inputs.conv, {dstSlot, w, c});
      });
    }
  });
}

/// The gated output norm of one (token t, head) of kda_decode and
/// kda_output: o[t, base + j] = rmsnorm(x)[j] * o_norm[j] * sigmoid(gate[t,
/// base + j]) for the head's d read-out values x(j) = readOut(j).
void storeGatedNorm(KernelBuilder &kb, llvm::function_ref<Value(Value)> readOut,
                    Value gate, Value oNorm, Value out, Value t, Value base,
                    int64_t d, double eps) {
  Value ss = kb.reduce(0, d, kb.f32(0.0), [&](Value j, Value acc) {
    Value x = readOut(j);
    return kb.add(acc, kb.mul(x, x));
  });
  Value inv = kb.rsqrt(
      kb.add(kb.div(ss, kb.f32(static_cast<double>(d))), kb.f32(eps)));
  // Over the output channel itself (GPU threads share the loop).
  kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
    Value j = kb.isub(ch, base);
    Value y = kb.mul(kb.mul(kb.mul(readOut(j), inv), kb.load(oNorm, j)),
                     kb.sigmoid(kb.load(gate, {t, ch})));
    kb.store(y, out, {t, ch});
  });
}

struct KdaAttentionToKernel : OpConversionPattern<llm::KdaAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::KdaAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t heads = op.getHeads(), d = op.getHeadDim();
    int64_t p = heads * d, kTaps = op.getConvKernel();
    // Value columns per block of the attention kernel.
    int64_t parts = kdaAttentionParts(d), dp = d / parts;
    Type f32 = rewriter.getF32Type();
    MemRefType rawType = MemRefType::get({ShapedType::kDynamic, p}, f32);
    // The prepared q, k and v rows: bf16 for bf16-activation models (half
    // the bytes kda_prepare writes and both chunk kernels read; fla keeps
    // them bf16 too), f32 otherwise. The log-decays stay f32 (their sums
    // are the decays' exponents).
    bool bf16Activations = getElementTypeOrSelf(op.getQ().getType()).isBF16();
    Type preparedElement = bf16Activations ? Type(rewriter.getBF16Type()) : f32;
    MemRefType preparedType =
        MemRefType::get({ShapedType::kDynamic, p}, preparedElement);
    MemRefType betaType = MemRefType::get({ShapedType::kDynamic, heads}, f32);
    MemRefType resultType = getKernelMemRefType(op.getResult().getType());
    double lower = op.getGateLowerBound().convertToFloat();
    double l2Eps = op.getL2Eps().convertToFloat();
    double qScale = op.getQScale().convertToFloat();
    double normEps = op.getNormEps().convertToFloat();
    bool chunkedMode = op.getMode() == llm::KdaMode::Chunked;
    bool perTokenSlots = static_cast<bool>(op.getTokenSlots());
    int64_t chunk = op.getChunkSize();
    ValueRange operands = adaptor.getOperands();
    auto tokenSizes = [&](MemRefType type) {
      return dynamicSizesLike(rewriter, loc, adaptor.getQ(), type);
    };
    // Whether a request of tokens [t0, t1) is left to the chunk path:
    // more than kKdaDecodeMaxTokens tokens (chunked mode only).
    auto isLong = [&](KernelBuilder &kb, Value t0, Value t1) {
      return kb.ige(kb.isub(t1, t0), kb.idx(kKdaDecodeMaxTokens + 1));
    };
    // The row bound of a chunk-path kernel: `rows` in steps of more than
    // kKdaDecodeMaxTokens tokens (`tokens` rows), else 0 (every request is
    // then kda_decode's).
    auto longStepRows = [&](KernelBuilder &kb, Value rows, Value tokens) {
      Value size = kb.dim(tokens, 0);
      return kb.rowsIfStepSize(rows, size, kKdaDecodeMaxTokens + 1, true);
    };

    // The chunk path's kernels do nothing unless a request has more than
    // kKdaDecodeMaxTokens tokens: decode plans leave them out.
    NamedAttribute longRequestsOnly = rewriter.getNamedAttr(
        kMinRequestTokensAttrName,
        rewriter.getI64IntegerAttr(kKdaDecodeMaxTokens + 1));

    // kda_decode, one row per (request, head) with the threads of a GPU
    // block on the head's channels and value columns; its contract and
    // #llm.kda_decode let a GPU target rebuild it (LLMToGPU
    // buildKdaDecodeKernelFunction).
    using llm::KernelRole;
    KernelCall decode;
    for (auto [v, role] : llvm::zip_first(operands, kKdaDecodeInputRoles))
      decode.addInput(v, role);
    unsigned o =
        decode.addResult(resultType, tokenSizes(resultType), KernelRole::Out);
    decode.attributes.push_back(rewriter.getNamedAttr(
        kKdaDecodeAttrName,
        llm::KdaDecodeAttr::get(rewriter.getContext(),
                                op.getGateLowerBoundAttr(), op.getL2EpsAttr(),
                                op.getQScaleAttr(), op.getNormEpsAttr(),
                                chunkedMode ? kKdaDecodeMaxTokens : 0)));
    SmallVector<Value> decoded = decode.emit(
        rewriter, op, "kda_decode", [&](KernelBuilder &kb, ValueRange a) {
          Value q = a[0], k = a[1], v = a[2], f = a[3], b = a[4], gate = a[5];
          Value qConv = a[6], kConv = a[7], vConv = a[8], aLog = a[9];
          Value dtBias = a[10], oNorm = a[11], state = a[12], conv = a[13];
          Value positions = a[14], starts = a[15], src = a[16], dst = a[17];
          Value tokenSlots = perTokenSlots ? a[18] : Value();
          Value out = a[o];
          Value zero = kb.f32(0.0);
          // One token's conv outputs (q and k L2-normalised), decays exp(g) and
          // read-out, per channel or value column of the head.
          Value qs = kb.scratch({d}), ks = kb.scratch({d}),
                vs = kb.scratch({d});
          Value alphas = kb.scratch({d}), ov = kb.scratch({d});
          // A column of at most kKdaHeldColumnRows rows is loaded once and
          // kept for its update (below). The update reads k from a copy of
          // its row: with one row, a compiler keeps the first pass's loads
          // of k for the update too (nothing stores to the row in between),
          // a second column's worth of registers (on sm_90: 255 and spills).
          const bool held = d <= kKdaHeldColumnRows;
          Value kUpdate = held ? kb.scratch({d}) : ks;
          Value numRequests = kb.isub(kb.dim(starts, 0), kb.idx(1));
          kb.parallelRows(
              {kb.idx(0), kb.idx(0)}, {numRequests, kb.idx(heads)},
              [&](ValueRange rh) {
                Value r = rh[0], h = rh[1];
                Value base = kb.imul(h, kb.idx(d));
                Value t0 = kb.loadIndex(starts, r);
                Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
                auto request = [&] {
                  Value srcSlot = kb.loadIndex(src, r);
                  StateSlotsAfter after{tokenSlots, kb.loadIndex(dst, r)};
                  Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
                  PreConvInputs inputs{q,       k,     v, conv, t0,
                                       srcSlot, fresh, p, kTaps};
                  Value rate = kb.exp(kb.load(aLog, h));
                  kb.loop(t0, t1, [&](Value t) {
                    Value i = kb.isub(t, t0);
                    kb.loop(0, d, [&](Value c) {
                      Value ch = kb.iadd(base, c);
                      kb.store(inputs.convolve(kb, qConv, 0, ch, i), qs, c);
                      kb.store(inputs.convolve(kb, kConv, 1, ch, i), ks, c);
                      kb.store(inputs.convolve(kb, vConv, 2, ch, i), vs, c);
                      kb.store(
                          kb.exp(logDecay(kb, lower, rate, f, dtBias, t, ch)),
                          alphas, c);
                    });
                    auto l2 = [&](Value m, double scale) {
                      Value ss = kb.reduce(0, d, zero, [&](Value c, Value acc) {
                        Value x = kb.load(m, c);
                        return kb.add(acc, kb.mul(x, x));
                      });
                      Value factor = kb.div(kb.f32(scale),
                                            kb.sqrt(kb.add(ss, kb.f32(l2Eps))));
                      kb.loop(0, d, [&](Value c) {
                        kb.store(kb.mul(kb.load(m, c), factor), m, c);
                      });
                    };
                    l2(qs, qScale);
                    l2(ks, 1.0);
                    if (held)
                      kb.loop(0, d, [&](Value c) {
                        kb.store(kb.load(ks, c), kUpdate, c);
                      });
                    Value beta = kb.sigmoid(kb.load(b, {t, h}));
                    // The state before this token: slot src (zero at position
                    // 0) for the request's first token, then the slot the
                    // previous token wrote (its index clamped for the first).
                    Value first = kb.ieq(t, t0);
                    Value previous = kb.imax(kb.isub(t, kb.idx(1)), t0);
                    Value readSlot =
                        kb.select(first, srcSlot, after.at(kb, previous));
                    Value writeSlot = after.at(kb, t);
                    Value fromZero = kb.andi(first, fresh);
                    // Per value column j: S' = diag(alpha) S, delta = beta (v -
                    // S'^T k), S = S' + k delta^T into slot dst, o = S^T q.
                    // A held column is loaded once, all of its loads first
                    // (unconditional: a zero state selects 0), and kept for
                    // the update (a GPU thread's registers): the state is read
                    // once. A longer one is walked `unroll` rows at a time,
                    // twice. The sums stay in row order either way.
                    int64_t unroll = held          ? d
                                     : d % 32 == 0 ? 32
                                     : d % 8 == 0  ? 8
                                                   : 1;
                    kb.loop(0, d, [&](Value j) {
                      auto decayedRows = [&](Value i0) {
                        SmallVector<Value> rows;
                        for (int64_t u = 0; u < unroll; ++u)
                          rows.push_back(kb.load(
                              state,
                              {readSlot, h, kb.iadd(i0, kb.idx(u)), j}));
                        for (int64_t u = 0; u < unroll; ++u)
                          rows[u] = kb.mul(
                              kb.load(alphas, kb.iadd(i0, kb.idx(u))),
                              kb.select(fromZero, zero, rows[u]));
                        return rows;
                      };
                      SmallVector<Value> column;
                      if (held)
                        column = decayedRows(kb.idx(0));
                      auto rowsFrom = [&](Value i0) {
                        return held ? column : decayedRows(i0);
                      };
                      Value pred = kb.reduce(
                          0, d / unroll, zero, [&](Value block, Value acc) {
                            Value i0 = kb.imul(block, kb.idx(unroll));
                            SmallVector<Value> rows = rowsFrom(i0);
                            for (int64_t u = 0; u < unroll; ++u)
                              acc = kb.add(
                                  acc,
                                  kb.mul(rows[u],
                                         kb.load(ks, kb.iadd(i0, kb.idx(u)))));
                            return acc;
                          });
                      Value delta = kb.mul(beta, kb.sub(kb.load(vs, j), pred));
                      Value read = kb.reduce(
                          0, d / unroll, zero, [&](Value block, Value acc) {
                            Value i0 = kb.imul(block, kb.idx(unroll));
                            SmallVector<Value> rows = rowsFrom(i0);
                            for (int64_t u = 0; u < unroll; ++u) {
                              Value ii = kb.iadd(i0, kb.idx(u));
                              Value updated = kb.add(
                                  rows[u], kb.mul(kb.load(kUpdate, ii), delta));
                              kb.store(updated, state,
                                       {writeSlot, h, ii, j});
                              acc = kb.add(acc,
                                           kb.mul(updated, kb.load(qs, ii)));
                            }
                            return acc;
                          });
                      kb.store(read, ov, j);
                    });
                    storeGatedNorm(
                        kb, [&](Value j) { return kb.load(ov, j); }, gate,
                        oNorm, out, t, base, d, normEps);
                  });
                  Value n = kb.isub(t1, t0);
                  if (!tokenSlots) {
                    writeConvState(kb, inputs, after.dstSlot, n, base, d);
                  } else {
                    // Last token first: every write reads the source slot's
                    // rows, and only the first token's slot may be the
                    // source (written last, in place, in ascending rows).
                    // A token whose slot the next token shares is skipped.
                    kb.loop(kb.idx(0), n, [&](Value back) {
                      Value i = kb.isub(kb.isub(n, kb.idx(1)), back);
                      Value t = kb.iadd(t0, i);
                      Value last = kb.ieq(back, kb.idx(0));
                      Value next = kb.imin(kb.iadd(t, kb.idx(1)),
                                           kb.isub(t1, kb.idx(1)));
                      Value slot = after.at(kb, t);
                      Value nextSlot =
                          kb.select(last, kb.idx(-1), after.at(kb, next));
                      kb.ifThen(kb.ine(slot, nextSlot), [&] {
                        writeConvState(kb, inputs, slot,
                                       kb.iadd(i, kb.idx(1)), base, d);
                      });
                    });
                  }
                };
                if (chunkedMode)
                  kb.ifThen(
                      kb.ilt(kb.isub(t1, t0), kb.idx(kKdaDecodeMaxTokens + 1)),
                      request);
                else
                  request();
              });
          for (Value m : {qs, ks, vs, alphas, ov})
            kb.dealloc(m);
          if (held)
            kb.dealloc(kUpdate);
        });
    Value result = decoded[0];
    if (!chunkedMode) {
      rewriter.replaceOp(op,
                         {result, adaptor.getState(), adaptor.getConvState()});
      return success();
    }

    // kda_prepare, one row per (token, head) of the long requests: the key
    // side of every token (conv + SiLU, L2 norms, log-decay g and write
    // strength beta), which the attention kernel's blocks of a head share.
    // Its contract and #llm.kda_prepare let a GPU target rebuild it with a
    // subgroup per (token, head) (LLMToGPU buildKdaPrepareKernelFunction).
    KernelCall prepare;
    const unsigned prepareOperands[] = {0u, 1u, 2u,  3u,  4u,  6u,  7u,
                                        8u, 9u, 10u, 13u, 14u, 15u, 16u};
    for (auto [i, role] : llvm::zip_first(prepareOperands, kKdaPrepareRoles))
      prepare.addInput(operands[i], role);
    ArrayRef<KernelRole> resultRoles =
        ArrayRef(kKdaPrepareRoles).drop_front(std::size(prepareOperands));
    unsigned qOut = prepare.addResult(preparedType, tokenSizes(preparedType),
                                      resultRoles[0]);
    for (KernelRole role : resultRoles.slice(1, 2))
      prepare.addResult(preparedType, tokenSizes(preparedType), role);
    prepare.addResult(rawType, tokenSizes(rawType), resultRoles[3]);
    prepare.addResult(betaType, tokenSizes(betaType), resultRoles[4]);
    prepare.attributes.push_back(longRequestsOnly);
    prepare.attributes.push_back(rewriter.getNamedAttr(
        kKdaPrepareAttrName,
        llm::KdaPrepareAttr::get(rewriter.getContext(),
                                 op.getGateLowerBoundAttr(), op.getL2EpsAttr(),
                                 op.getQScaleAttr(), kKdaDecodeMaxTokens)));
    auto prepared = prepare.emit(rewriter, op, "kda_prepare",
                                 [&](KernelBuilder &kb, ValueRange a) {
      Value q = a[0], k = a[1], v = a[2], f = a[3], b = a[4];
      Value qConv = a[5], kConv = a[6], vConv = a[7], aLog = a[8];
      Value dtBias = a[9], conv = a[10], positions = a[11], starts = a[12];
      Value src = a[13];
      Value qn = a[qOut], kn = a[qOut + 1], vn = a[qOut + 2];
      Value gl = a[qOut + 3], betaOut = a[qOut + 4];
      Value zero = kb.f32(0.0);
      // The row's convolved q and k channels in f32 until their norms have
      // scaled them (the rows may be bf16).
      Value qs = kb.scratch({d}), ks = kb.scratch({d});
      auto row = [&](Value r, Value t, Value h) {
        Value t0 = kb.loadIndex(starts, r);
        Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
        kb.ifThen(isLong(kb, t0, t1), [&] {
          Value base = kb.imul(h, kb.idx(d));
          Value srcSlot = kb.loadIndex(src, r);
          Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
          PreConvInputs inputs{q, k, v, conv, t0, srcSlot, fresh, p, kTaps};
          Value i = kb.isub(t, t0);
          Value rate = kb.exp(kb.load(aLog, h));
          // (Two loops: each indexes what it stores by its induction
          // variable, so a GPU block's threads share their iterations.)
          kb.loop(0, d, [&](Value c) {
            Value ch = kb.iadd(base, c);
            kb.store(inputs.convolve(kb, qConv, 0, ch, i), qs, c);
            kb.store(inputs.convolve(kb, kConv, 1, ch, i), ks, c);
          });
          kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
            kb.store(inputs.convolve(kb, vConv, 2, ch, i), vn, {t, ch});
            kb.store(logDecay(kb, lower, rate, f, dtBias, t, ch), gl, {t, ch});
          });
          auto l2 = [&](Value unnormed, Value m, double scale) {
            Value ss = kb.reduce(0, d, zero, [&](Value c, Value acc) {
              Value x = kb.load(unnormed, c);
              return kb.add(acc, kb.mul(x, x));
            });
            Value factor =
                kb.div(kb.f32(scale), kb.sqrt(kb.add(ss, kb.f32(l2Eps))));
            kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
              Value x = kb.load(unnormed, kb.isub(ch, base));
              kb.store(kb.mul(x, factor), m, {t, ch});
            });
          };
          l2(qs, qn, qScale);
          l2(ks, kn, 1.0);
          kb.store(kb.sigmoid(kb.load(b, {t, h})), betaOut, {t, h});
        });
      };
      forEachTokenHeadRow(kb, starts, q, heads, row,
                          longStepRows(kb, kb.dim(q, 0), q));
      kb.dealloc(qs);
      kb.dealloc(ks);
    });

    // The chunk kernels' #llm.kda_chunk. bf16 activations: the chunk
    // products may round to tf32 (their inputs were bf16; fla's chunk
    // kernels multiply on tf32 too).
    auto chunkInfo = llm::KdaChunkAttr::get(
        rewriter.getContext(), op.getGateLowerBoundAttr(), kKdaDecodeMaxTokens,
        bf16Activations);
    Value qPrepared = prepared[0], kPrepared = prepared[1];
    Value vPrepared = prepared[2], gPrepared = prepared[3];
    Value betaPrepared = prepared[4];

    // kda_coefficients, rows (token, head) of the long requests; a row whose
    // token starts a chunk of its request (every `chunk` tokens from the
    // request's first) writes that chunk's in-chunk coefficients, which do
    // not depend on the state: with B the in-chunk cumulative log-decay
    // (B[i] = sum_{t<=i} g_t) and rows i, j of the chunk,
    //   A_q[i][j] = sum_c Q[i,c] K[j,c] e^(B[i,c] - B[j,c])   (j <= i)
    //   A_k[i][j] = sum_c K[i,c] K[j,c] e^(B[i,c] - B[j,c])   (j < i)
    //   T = (I + diag(beta) A_k)^-1 diag(beta)   (forward substitution)
    // into [T, H * chunk] f32 (row i of the chunk at its token, head h's
    // columns from h * chunk; zero above the diagonal).
    MemRefType coefficientType =
        MemRefType::get({ShapedType::kDynamic, heads * chunk}, f32);
    KernelCall coefficients;
    Value coefficientInputs[] = {qPrepared, kPrepared, gPrepared, betaPrepared,
                                 operands[15]};
    for (auto [v, role] :
         llvm::zip_first(coefficientInputs, kKdaCoefficientsRoles))
      coefficients.addInput(v, role);
    unsigned aqOut =
        coefficients.addResult(coefficientType, tokenSizes(coefficientType),
                               KernelRole::QueryCoefficients);
    coefficients.addResult(coefficientType, tokenSizes(coefficientType),
                           KernelRole::DeltaWeights);
    coefficients.attributes.push_back(longRequestsOnly);
    coefficients.attributes.push_back(
        rewriter.getNamedAttr(kKdaCoefficientsAttrName, chunkInfo));
    auto chunkCoefficients = coefficients.emit(
        rewriter, op, "kda_coefficients", [&](KernelBuilder &kb, ValueRange a) {
          Value qn = a[0], kn = a[1], gl = a[2], betas = a[3], starts = a[4];
          Value aq = a[aqOut], tw = a[aqOut + 1];
          Value cb = kb.scratch({chunk, d});
          Value ca = kb.scratch({chunk, chunk});
          Value ct = kb.scratch({chunk, chunk});
          Value zero = kb.f32(0.0);
          auto row = [&](Value r, Value tc, Value h) {
            Value t0 = kb.loadIndex(starts, r);
            Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
            Value startsChunk =
                kb.ieq(kb.irem(kb.isub(tc, t0), kb.idx(chunk)), kb.idx(0));
            kb.ifThen(kb.andi(isLong(kb, t0, t1), startsChunk), [&] {
              Value base = kb.imul(h, kb.idx(d));
              Value col0 = kb.imul(h, kb.idx(chunk));
              Value len = kb.imin(kb.idx(chunk), kb.isub(t1, tc));
              auto at = [&](Value m, Value i, Value c) {
                return kb.load(m, {kb.iadd(tc, i), kb.iadd(base, c)});
              };
              // Cumulative decay.
              kb.loop(kb.idx(0), len, [&](Value i) {
                kb.loop(0, d, [&](Value c) {
                  Value prev = kb.ifElse(
                      kb.ieq(i, kb.idx(0)), f32, [&] { return zero; },
                      [&] {
                        return kb.load(cb, {kb.isub(i, kb.idx(1)), c});
                      });
                  kb.store(kb.add(prev, at(gl, i, c)), cb, {i, c});
                });
              });
              // Every pair's key and query coefficients (independent), the
              // query ones straight to the result (zero above the diagonal).
              kb.loop(kb.idx(0), len, [&](Value i) {
                Value next = kb.iadd(i, kb.idx(1));
                Value tq = kb.iadd(tc, i);
                kb.loop(0, chunk, [&](Value j) {
                  kb.ifThen(kb.ilt(j, next), [&] {
                    SmallVector<Value> sums = kb.loopCarry(
                        kb.idx(0), kb.idx(d), {zero, zero},
                        [&](Value c, ValueRange acc) -> SmallVector<Value> {
                          Value w = kb.exp(
                              kb.sub(kb.load(cb, {i, c}), kb.load(cb, {j, c})));
                          Value kj = at(kn, j, c);
                          return {kb.add(acc[0],
                                         kb.mul(kb.mul(at(kn, i, c), kj), w)),
                                  kb.add(acc[1],
                                         kb.mul(kb.mul(at(qn, i, c), kj), w))};
                        });
                    kb.store(kb.select(kb.ilt(j, i), sums[0], zero), ca,
                             {i, j});
                    kb.store(sums[1], aq, {tq, kb.iadd(col0, j)});
                  });
                  kb.ifThen(kb.ige(j, next), [&] {
                    kb.store(zero, ca, {i, j});
                    kb.store(zero, aq, {tq, kb.iadd(col0, j)});
                  });
                });
              });
              // T by forward substitution, column by column of the identity:
              // T[i][c] = beta_i ([i == c] - sum_{j<i} A_k[i][j] T[j][c]).
              kb.loop(kb.idx(0), len, [&](Value i) {
                Value beta = kb.load(betas, {kb.iadd(tc, i), h});
                kb.loop(0, chunk, [&](Value c) {
                  Value identity = kb.select(kb.ieq(i, c), kb.f32(1.0), zero);
                  Value rhs = kb.reduce(
                      kb.idx(0), i, identity, [&](Value j, Value acc) {
                        return kb.sub(acc, kb.mul(kb.load(ca, {i, j}),
                                                  kb.load(ct, {j, c})));
                      });
                  Value tic = kb.mul(beta, rhs);
                  kb.store(tic, ct, {i, c});
                  kb.store(tic, tw, {kb.iadd(tc, i), kb.iadd(col0, c)});
                });
              });
            });
          };
          forEachTokenHeadRow(kb, starts, qn, heads, row,
                              longStepRows(kb, kb.dim(qn, 0), qn));
          for (Value m : {cb, ca, ct})
            kb.dealloc(m);
        });

    // kda_attention, rows (request, head, part) of the long requests.
    KernelCall call;
    Value attentionInputs[] = {qPrepared,
                               kPrepared,
                               vPrepared,
                               gPrepared,
                               chunkCoefficients[0],
                               chunkCoefficients[1],
                               operands[12],
                               operands[14],
                               operands[15],
                               operands[16],
                               operands[17]};
    for (auto [v, role] : llvm::zip_first(attentionInputs, kKdaAttentionRoles))
      call.addInput(v, role);
    unsigned out =
        call.addResult(rawType, tokenSizes(rawType), KernelRole::Out);
    call.attributes.push_back(longRequestsOnly);
    call.attributes.push_back(
        rewriter.getNamedAttr(kKdaChunkAttrName, chunkInfo));
    auto results = call.emit(
        rewriter, op, "kda_attention", [&](KernelBuilder &kb, ValueRange a) {
          Value qn = a[0], kn = a[1], vn = a[2], gl = a[3], aq = a[4],
                tw = a[5];
          Value state = a[6], positions = a[7], starts = a[8], src = a[9];
          Value dst = a[10];
          Value raw = a[out];
          // The block's columns of the state, the chunk's residuals V - (K e^B)
          // S0 and its delta rows, [., dp], first: on the GPU the first scratch
          // buffers that fit the private budget go to workgroup memory.
          Value s = kb.scratch({d, dp});
          Value cr = kb.scratch({chunk, dp});
          Value cd = kb.scratch({chunk, dp});
          // The cumulative log-decay; the decayed rows q exp(B) and k exp(B)
          // (the latter reused for k exp(B_last - B)), each computed once per
          // chunk instead of once per output column.
          Value cb = kb.scratch({chunk, d});
          Value cqe = kb.scratch({chunk, d});
          Value cke = kb.scratch({chunk, d});
          Value zero = kb.f32(0.0);
          Value numRequests = kb.isub(kb.dim(starts, 0), kb.idx(1));
          kb.parallelRows(
              {kb.idx(0), kb.idx(0), kb.idx(0)},
              {longStepRows(kb, numRequests, qn), kb.idx(heads), kb.idx(parts)},
              [&](ValueRange rhp) {
                Value r = rhp[0], h = rhp[1];
                // This block's value columns [lo, hi) of the head.
                Value lo = kb.imul(rhp[2], kb.idx(dp)),
                      hi = kb.iadd(lo, kb.idx(dp));
                Value base = kb.imul(h, kb.idx(d));
                Value col0 = kb.imul(h, kb.idx(chunk));
                Value t0 = kb.loadIndex(starts, r);
                Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
                // The prepared rows of the head: channel c of token t.
                auto at = [&](Value m, Value t, Value c) {
                  return kb.load(m, {t, kb.iadd(base, c)});
                };

                // Chunked (WY) form, per head and chunk of C tokens with the
                // chunk's coefficients A_q and delta weights T
                // (kda_coefficients) and the state S0 at its start:
                //   D      = T (V - (K e^B) S0)
                //   o[i]   = S0^T (Q[i] e^B[i]) + sum_{j<=i} A_q[i][j] D[j]
                //   S_end  = diag(e^B[C-1]) S0 + sum_j diag(e^(B[C-1]-B[j]))
                //            K[j] D[j]^T
                auto chunkedBody = [&] {
                  Value n = kb.isub(t1, t0);
                  scf::ForOp chunks = scf::ForOp::create(
                      kb.builder(), kb.getLoc(), kb.idx(0), n, kb.idx(chunk));
                  OpBuilder::InsertionGuard guard(kb.builder());
                  kb.builder().setInsertionPoint(
                      chunks.getBody()->getTerminator());
                  Value cs = chunks.getInductionVar();
                  Value len = kb.imin(kb.idx(chunk), kb.isub(n, cs));
                  Value tc = kb.iadd(t0, cs);
                  // Cumulative decay, then the decayed rows.
                  kb.loop(kb.idx(0), len, [&](Value i) {
                    kb.loop(0, d, [&](Value c) {
                      Value g = at(gl, kb.iadd(tc, i), c);
                      Value prev = kb.ifElse(
                          kb.ieq(i, kb.idx(0)), kb.builder().getF32Type(),
                          [&] { return zero; },
                          [&] { return kb.load(cb, {kb.isub(i, kb.idx(1)), c});
                          });
                      kb.store(kb.add(prev, g), cb, {i, c});
                    });
                    kb.loop(0, d, [&](Value c) {
                      Value decay = kb.exp(kb.load(cb, {i, c}));
                      Value t = kb.iadd(tc, i);
                      kb.store(kb.mul(at(qn, t, c), decay), cqe, {i, c});
                      kb.store(kb.mul(at(kn, t, c), decay), cke, {i, c});
                    });
                  });
                  // The residuals V - S0^T (exp(B[i]) K[i]) of every (i, e).
                  kb.loop(kb.idx(0), len, [&](Value i) {
                    Value t = kb.iadd(tc, i);
                    kb.loop(0, dp, [&](Value e) {
                      Value fromState =
                          kb.reduce(0, d, zero, [&](Value c, Value acc) {
                            return kb.add(acc, kb.mul(kb.load(s, {c, e}),
                                                      kb.load(cke, {i, c})));
                          });
                      kb.store(kb.sub(at(vn, t, kb.iadd(lo, e)), fromState), cr,
                               {i, e});
                    });
                  });
                  // init + sum_{j<=i} W[i][j] rows[j][e] for the chunk's
                  // lower-triangular coefficient rows W (A_q or T) of row i
                  // (token t).
                  auto lowerRowSum = [&](Value w, Value t, Value i, Value e,
                                         Value init, Value rows) {
                    return kb.reduce(
                        kb.idx(0), kb.iadd(i, kb.idx(1)), init,
                        [&](Value j, Value acc) {
                          Value wij = kb.load(w, {t, kb.iadd(col0, j)});
                          return kb.add(acc,
                                        kb.mul(wij, kb.load(rows, {j, e})));
                        });
                  };
                  // The delta rows D = T R (T is lower triangular).
                  kb.loop(kb.idx(0), len, [&](Value i) {
                    Value t = kb.iadd(tc, i);
                    kb.loop(0, dp, [&](Value e) {
                      kb.store(lowerRowSum(tw, t, i, e, zero, cr), cd, {i, e});
                    });
                  });
                  // Outputs of every (token, column) of the chunk at once, over
                  // the stored token and output column (the loops' own indices,
                  // so the GPU threads share the whole nest).
                  Value chLo = kb.iadd(base, lo), chHi = kb.iadd(base, hi);
                  kb.loop(tc, kb.iadd(tc, len), [&](Value t) {
                    kb.loop(chLo, chHi, [&](Value ch) {
                      Value i = kb.isub(t, tc);
                      Value e = kb.isub(ch, chLo);
                      Value fromState =
                          kb.reduce(0, d, zero, [&](Value c, Value acc) {
                            return kb.add(acc, kb.mul(kb.load(s, {c, e}),
                                                      kb.load(cqe, {i, c})));
                          });
                      kb.store(lowerRowSum(aq, t, i, e, fromState, cd), raw,
                               {t, ch});
                    });
                  });
                  // State at the end of the chunk: k exp(B_last - B) into cke
                  // (k exp(B) is no longer read), then the update.
                  Value last = kb.isub(len, kb.idx(1));
                  kb.loop(kb.idx(0), len, [&](Value j) {
                    kb.loop(0, d, [&](Value c) {
                      Value w = kb.exp(
                          kb.sub(kb.load(cb, {last, c}), kb.load(cb, {j, c})));
                      kb.store(kb.mul(w, at(kn, kb.iadd(tc, j), c)), cke,
                               {j, c});
                    });
                  });
                  kb.loop(0, d, [&](Value c) {
                    Value bl = kb.load(cb, {last, c});
                    kb.loop(0, dp, [&](Value e) {
                      Value upd = kb.reduce(
                          kb.idx(0), len, zero, [&](Value j, Value acc) {
                            return kb.add(acc, kb.mul(kb.load(cke, {j, c}),
                                                      kb.load(cd, {j, e})));
                          });
                      kb.store(
                          kb.add(kb.mul(kb.exp(bl), kb.load(s, {c, e})), upd),
                          s, {c, e});
                    });
                  });
                };
                kb.ifThen(isLong(kb, t0, t1), [&] {
                  Value srcSlot = kb.loadIndex(src, r);
                  Value dstSlot = kb.loadIndex(dst, r);
                  Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
                  // Initial state: zero at position 0, else the source slot (s
                  // holds the block's columns: s[i, j] is column lo + j of the
                  // head).
                  kb.loop(0, d, [&](Value i) {
                    kb.loop(0, dp, [&](Value j) {
                      Value old = kb.ifElse(
                          fresh, f32, [&] { return zero; },
                          [&] {
                            return kb.load(state,
                                           {srcSlot, h, i, kb.iadd(lo, j)});
                          });
                      kb.store(old, s, {i, j});
                    });
                  });
                  chunkedBody();
                  // Final state (this block's columns) to the destination slot.
                  kb.loop(0, d, [&](Value i) {
                    kb.loop(lo, hi, [&](Value j) {
                      kb.store(kb.load(s, {i, kb.isub(j, lo)}), state,
                               {dstSlot, h, i, j});
                    });
                  });
                });
              });
          for (Value m : {s, cr, cd, cb, cqe, cke})
            kb.dealloc(m);
        });

    // kda_output, one row per (token, head) of the long requests: the gated
    // norm, then the conv state; into kda_decode's o.
    // Its contract and #llm.kda_output let a GPU target rebuild it with a
    // subgroup per (token, head) (LLMToGPU buildKdaOutputKernelFunction).
    KernelCall output;
    Value outputInputs[] = {results[0],   operands[5],  operands[11],
                            operands[0],  operands[1],  operands[2],
                            operands[13], operands[14], operands[15],
                            operands[16], operands[17], result};
    for (auto [v, role] : llvm::zip_equal(outputInputs, kKdaOutputRoles))
      output.addInput(v, role);
    output.attributes.push_back(longRequestsOnly);
    output.attributes.push_back(rewriter.getNamedAttr(
        kKdaOutputAttrName,
        llm::KdaOutputAttr::get(rewriter.getContext(), op.getNormEpsAttr(),
                                kKdaDecodeMaxTokens)));
    output.emit(
        rewriter, op, "kda_output", [&](KernelBuilder &kb, ValueRange a) {
          Value raw = a[0], gate = a[1], oNorm = a[2], q = a[3], k = a[4];
          Value v = a[5], conv = a[6], positions = a[7], starts = a[8];
          Value src = a[9], dst = a[10], o = a[11];
          auto row = [&](Value r, Value t, Value h) {
            Value t0 = kb.loadIndex(starts, r);
            Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
            Value isLongRequest = isLong(kb, t0, t1);
            Value base = kb.imul(h, kb.idx(d));
            kb.ifThen(isLongRequest, [&] {
              storeGatedNorm(
                  kb,
                  [&](Value j) { return kb.load(raw, {t, kb.iadd(base, j)}); },
                  gate, oNorm, o, t, base, d, normEps);
            });
            // The request's last token: the conv state.
            kb.ifThen(
                kb.andi(isLongRequest, kb.ieq(kb.iadd(t, kb.idx(1)), t1)), [&] {
                  Value srcSlot = kb.loadIndex(src, r);
                  Value dstSlot = kb.loadIndex(dst, r);
                  Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
                  PreConvInputs inputs{q,       k,     v, conv, t0,
                                       srcSlot, fresh, p, kTaps};
                  writeConvState(kb, inputs, dstSlot, kb.isub(t1, t0), base, d);
                });
          };
          forEachTokenHeadRow(kb, starts, raw, heads, row,
                              longStepRows(kb, kb.dim(raw, 0), raw));
        });
    // o, then the caches (updated in place).
    rewriter.replaceOp(op,
                       {result, adaptor.getState(), adaptor.getConvState()});
    return success();
  }
};

} // namespace

void mlir::strata::populateKdaToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<KdaAttentionToKernel>(converter, patterns.getContext());
}
