//===- KdaOps.cpp - Kimi delta attention to kernels -----------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.kda_attention becomes three kernels. `kda_prepare`, one row per
// (token, head): the short causal depthwise conv + SiLU of q, k and v
// (history from the conv state, zero at position 0), per-head L2
// normalisation, log-decay g and write strength beta, into f32 [T, H*d]
// (beta [T, H]) buffers. `kda_attention`, rows (request, head, part): walks
// the request's tokens in order, the delta-rule update of the head's fp32
// [d_k, d_v] scratch state and the read-out. The delta rule updates every
// value column of the state on its own, so a head's d_v columns are split
// over `parts` blocks, each reading the prepared key side and writing its
// columns of the f32 read-out and of the final state (slot dst_slots[r]).
// `kda_output`, one row per (token, head), applies the gated output RMSNorm
// (it needs all of a head's columns) and, in the row of a request's last
// token, writes the last K-1 pre-conv inputs of the head's q, k and v
// channels to the conv state (after kda_prepare has read the old ones).
// State and conv state are updated in place (the op's cache results are
// the operands' buffers).
//
// `recurrent` mode updates the state token by token. `chunked` mode walks
// chunks of `chunk_size` tokens per head in the WY form (coefficients of the
// chunk's keys, forward substitution for the delta rows, outputs and the
// end-of-chunk state from the chunk start state), the prefill algorithm;
// its kernel carries kKdaChunkAttrName, with which a GPU target rebuilds it
// on the matrix units (LLMToGPU/KdaChunkKernel.cpp).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The pre-conv inputs of one request: channel `c` (of 3P, [q|k|v]) at
/// token offset `off` (index, may be negative: then the conv state row of
/// slot `srcSlot`, zero for a request at position 0).
struct PreConvInputs {
  Value q, k, v, conv, t0, srcSlot, fresh;
  int64_t p, kTaps;

  Value at(KernelBuilder &kb, Value off, Value c) const {
    Type f32 = kb.builder().getF32Type();
    Value zero = kb.f32(0.0);
    return kb.ifElse(
        kb.ige(off, kb.idx(0)), f32,
        [&] {
          Value t = kb.iadd(t0, off);
          Value which = kb.idiv(c, kb.idx(p));
          Value ch = kb.irem(c, kb.idx(p));
          return kb.ifElse(
              kb.ieq(which, kb.idx(0)), f32, [&] { return kb.load(q, {t, ch}); },
              [&] {
                return kb.ifElse(
                    kb.ieq(which, kb.idx(1)), f32,
                    [&] { return kb.load(k, {t, ch}); },
                    [&] { return kb.load(v, {t, ch}); });
              });
        },
        [&] {
          return kb.ifElse(fresh, f32, [&] { return zero; },
                           [&] {
                             Value row = kb.iadd(kb.idx(kTaps - 1), off);
                             return kb.load(conv, {srcSlot, row, c});
                           });
        });
  }
};

struct KdaAttentionToKernel : OpConversionPattern<llm::KdaAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::KdaAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t heads = op.getHeads(), d = op.getHeadDim();
    int64_t p = heads * d, kTaps = op.getConvKernel();
    // Value columns per block of the attention kernel.
    int64_t parts = d % 32 == 0 ? d / 32 : 1, dp = d / parts;
    Type f32 = rewriter.getF32Type();
    MemRefType rawType = MemRefType::get({ShapedType::kDynamic, p}, f32);
    MemRefType betaType = MemRefType::get({ShapedType::kDynamic, heads}, f32);
    double lower = op.getGateLowerBound().convertToFloat();
    double l2Eps = op.getL2Eps().convertToFloat();
    double qScale = op.getQScale().convertToFloat();
    double normEps = op.getNormEps().convertToFloat();
    bool chunkedMode = op.getMode() == llm::KdaMode::Chunked;
    int64_t chunk = op.getChunkSize();
    ValueRange operands = adaptor.getOperands();
    auto tokenSizes = [&](MemRefType type) {
      return dynamicSizesLike(rewriter, loc, adaptor.getQ(), type);
    };

    // kda_prepare, one row per (token, head): the key side of every token
    // (conv + SiLU, L2 norms, log-decay g and write strength beta), which
    // the attention kernel's blocks of a head share.
    KernelCall prepare;
    for (unsigned i : {0u, 1u, 2u, 3u, 4u, 6u, 7u, 8u, 9u, 10u, 13u, 14u, 15u,
                       16u})
      prepare.addInput(operands[i]);
    unsigned qOut = prepare.addResult(rawType, tokenSizes(rawType));
    prepare.addResult(rawType, tokenSizes(rawType));
    prepare.addResult(rawType, tokenSizes(rawType));
    prepare.addResult(rawType, tokenSizes(rawType));
    prepare.addResult(betaType, tokenSizes(betaType));
    auto prepared = prepare.emit(rewriter, op, "kda_prepare",
                                 [&](KernelBuilder &kb, ValueRange a) {
      Value q = a[0], k = a[1], v = a[2], f = a[3], b = a[4];
      Value qConv = a[5], kConv = a[6], vConv = a[7], aLog = a[8];
      Value dtBias = a[9], conv = a[10], positions = a[11], starts = a[12];
      Value src = a[13];
      Value qn = a[qOut], kn = a[qOut + 1], vn = a[qOut + 2];
      Value gl = a[qOut + 3], betaOut = a[qOut + 4];
      Value zero = kb.f32(0.0);
      forEachTokenHeadRow(kb, starts, q, heads, [&](Value r, Value t, Value h) {
        Value base = kb.imul(h, kb.idx(d));
        Value t0 = kb.loadIndex(starts, r);
        Value srcSlot = kb.loadIndex(src, r);
        Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
        PreConvInputs inputs{q, k, v, conv, t0, srcSlot, fresh, p, kTaps};
        Value i = kb.isub(t, t0);
        // silu(sum_j w[c, 0, j] * z_{i-K+1+j}[c]) for channel ch of `which`.
        auto convolve = [&](Value weights, int64_t which, Value ch) {
          Value c = kb.iadd(kb.idx(which * p), ch);
          Value sum = kb.reduce(0, kTaps, zero, [&](Value j, Value acc) {
            Value off = kb.iadd(kb.isub(i, kb.idx(kTaps - 1)), j);
            return kb.add(acc, kb.mul(kb.load(weights, {ch, kb.idx(0), j}),
                                      inputs.at(kb, off, c)));
          });
          return kb.silu(sum);
        };
        Value rate = kb.exp(kb.load(aLog, h));
        kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
          kb.store(convolve(qConv, 0, ch), qn, {t, ch});
          kb.store(convolve(kConv, 1, ch), kn, {t, ch});
          kb.store(convolve(vConv, 2, ch), vn, {t, ch});
          Value g = kb.mul(
              kb.f32(lower),
              kb.sigmoid(kb.mul(rate, kb.add(kb.load(f, {t, ch}),
                                             kb.load(dtBias, ch)))));
          kb.store(g, gl, {t, ch});
        });
        auto l2 = [&](Value m, double scale) {
          Value ss = kb.reduce(0, d, zero, [&](Value c, Value acc) {
            Value x = kb.load(m, {t, kb.iadd(base, c)});
            return kb.add(acc, kb.mul(x, x));
          });
          Value factor =
              kb.div(kb.f32(scale), kb.sqrt(kb.add(ss, kb.f32(l2Eps))));
          kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
            kb.store(kb.mul(kb.load(m, {t, ch}), factor), m, {t, ch});
          });
        };
        l2(qn, qScale);
        l2(kn, 1.0);
        kb.store(kb.sigmoid(kb.load(b, {t, h})), betaOut, {t, h});
      });
    });

    KernelCall call;
    for (Value v : prepared)
      call.addInput(v);
    for (unsigned i : {12u, 14u, 15u, 16u, 17u})
      call.addInput(operands[i]);
    unsigned out = call.addResult(rawType, tokenSizes(rawType));
    if (chunkedMode)
      call.attributes.push_back(rewriter.getNamedAttr(
          kKdaChunkAttrName,
          rewriter.getDictionaryAttr(
              {rewriter.getNamedAttr("gate_lower_bound",
                                     op.getGateLowerBoundAttr())})));
    auto results = call.emit(rewriter, op, "kda_attention",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value qn = a[0], kn = a[1], vn = a[2], gl = a[3], betas = a[4];
      Value state = a[5], positions = a[6], starts = a[7], src = a[8];
      Value dst = a[9];
      Value raw = a[out];
      // The block's columns of the state and (chunked mode) of the chunk's D
      // rows, [., dp], first: on the GPU the first scratch buffers that fit
      // the private budget go to workgroup memory.
      int64_t cRows = chunkedMode ? chunk : 1;
      Value s = kb.scratch({d, dp});
      Value cd = kb.scratch({cRows, dp});
      Value ov = kb.scratch({dp});
      // Chunk scratch (chunked mode only): the cumulative log-decay, the
      // [C, C] key and query coefficients; the decayed rows q exp(B) and
      // k exp(B) (the latter reused for k exp(B_last - B)), each computed
      // once per chunk instead of once per output column.
      Value cb, ca, caq, cqe, cke;
      if (chunkedMode) {
        cb = kb.scratch({chunk, d});
        ca = kb.scratch({chunk, chunk});
        caq = kb.scratch({chunk, chunk});
        cqe = kb.scratch({chunk, d});
        cke = kb.scratch({chunk, d});
      }
      Value zero = kb.f32(0.0);
      Value numRequests = kb.isub(kb.dim(starts, 0), kb.idx(1));
      kb.parallelRows({kb.idx(0), kb.idx(0), kb.idx(0)},
                      {numRequests, kb.idx(heads), kb.idx(parts)},
                      [&](ValueRange rhp) {
        Value r = rhp[0], h = rhp[1];
        // This block's value columns [lo, hi) of the head.
        Value lo = kb.imul(rhp[2], kb.idx(dp)), hi = kb.iadd(lo, kb.idx(dp));
        Value base = kb.imul(h, kb.idx(d));
        Value t0 = kb.loadIndex(starts, r);
        Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
        Value srcSlot = kb.loadIndex(src, r);
        Value dstSlot = kb.loadIndex(dst, r);
        Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
        // Initial state: zero at position 0, else the source slot (s holds
        // the block's columns: s[i, j] is column lo + j of the head).
        kb.loop(0, d, [&](Value i) {
          kb.loop(0, dp, [&](Value j) {
            Value old = kb.ifElse(fresh, kb.builder().getF32Type(),
                                  [&] { return zero; },
                                  [&] {
                                    return kb.load(state, {srcSlot, h, i,
                                                           kb.iadd(lo, j)});
                                  });
            kb.store(old, s, {i, j});
          });
        });
        // The prepared rows of the head: channel c of token t.
        auto at = [&](Value m, Value t, Value c) {
          return kb.load(m, {t, kb.iadd(base, c)});
        };
        auto recurrentBody = [&] {
        kb.loop(t0, t1, [&](Value t) {
          Value beta = kb.load(betas, {t, h});
          // S' = diag(alpha) S (this block's columns), alpha = exp(g).
          kb.loop(0, d, [&](Value ii) {
            Value al = kb.exp(at(gl, t, ii));
            kb.loop(0, dp, [&](Value j) {
              kb.store(kb.mul(al, kb.load(s, {ii, j})), s, {ii, j});
            });
          });
          // delta = beta (v - S'^T k); S += k delta^T; o = S^T q, per column
          // j of the block (the loop's own index for S and ov, so the GPU
          // threads share it), then ov to the head's output columns.
          kb.loop(0, dp, [&](Value j) {
            Value pred = kb.reduce(0, d, zero, [&](Value ii, Value acc) {
              return kb.add(acc, kb.mul(kb.load(s, {ii, j}), at(kn, t, ii)));
            });
            Value delta = kb.mul(
                beta, kb.sub(at(vn, t, kb.iadd(lo, j)), pred));
            Value out = kb.reduce(0, d, zero, [&](Value ii, Value acc) {
              Value updated =
                  kb.add(kb.load(s, {ii, j}), kb.mul(at(kn, t, ii), delta));
              kb.store(updated, s, {ii, j});
              return kb.add(acc, kb.mul(updated, at(qn, t, ii)));
            });
            kb.store(out, ov, j);
          });
          Value chLo = kb.iadd(base, lo);
          kb.loop(chLo, kb.iadd(chLo, kb.idx(dp)), [&](Value ch) {
            kb.store(kb.load(ov, kb.isub(ch, chLo)), raw, {t, ch});
          });
        });
        };

        // Chunked (WY) form, per head and chunk of C tokens with in-chunk
        // cumulative log-decay B (B[i] = sum_{j<=i} g_j):
        //   A[i][j]  = sum_c K[i,c] K[j,c] exp(B[i,c] - B[j,c])       j < i
        //   D[i]     = beta_i (V[i] - S0^T (exp(B[i]) K[i]) - sum_{j<i} A[i][j] D[j])
        //   o[i]     = S0^T (exp(B[i]) Q[i]) + sum_{j<=i} D[j] (K[j] exp(B[i]-B[j]) . Q[i])
        //   S_end    = diag(exp(B[C-1])) S0 + sum_j diag(exp(B[C-1]-B[j])) K[j] D[j]^T
        auto chunkedBody = [&] {
          Value n = kb.isub(t1, t0);
          scf::ForOp chunks = scf::ForOp::create(kb.builder(), kb.getLoc(),
                                                 kb.idx(0), n, kb.idx(chunk));
          OpBuilder::InsertionGuard guard(kb.builder());
          kb.builder().setInsertionPoint(chunks.getBody()->getTerminator());
          Value cs = chunks.getInductionVar();
          Value len = kb.imin(kb.idx(chunk), kb.isub(n, cs));
          Value tc = kb.iadd(t0, cs);
          // Row i of the chunk: token tc + i.
          auto Q = [&](Value i, Value c) { return at(qn, kb.iadd(tc, i), c); };
          auto K = [&](Value i, Value c) { return at(kn, kb.iadd(tc, i), c); };
          // Cumulative decay, then the decayed rows.
          kb.loop(kb.idx(0), len, [&](Value i) {
            kb.loop(0, d, [&](Value c) {
              Value g = at(gl, kb.iadd(tc, i), c);
              Value prev = kb.ifElse(
                  kb.ieq(i, kb.idx(0)), kb.builder().getF32Type(),
                  [&] { return zero; },
                  [&] { return kb.load(cb, {kb.isub(i, kb.idx(1)), c}); });
              kb.store(kb.add(prev, g), cb, {i, c});
            });
            kb.loop(0, d, [&](Value c) {
              Value decay = kb.exp(kb.load(cb, {i, c}));
              kb.store(kb.mul(Q(i, c), decay), cqe, {i, c});
              kb.store(kb.mul(K(i, c), decay), cke, {i, c});
            });
          });
          // The chunk's key and query coefficients of every pair at once
          // (they do not depend on D, so all (i, j) are independent):
          // ca[i][j] = sum_c K[i,c] K[j,c] exp(B[i,c] - B[j,c]) (j < i) and
          // caq[i][j] the same with Q[i] (j <= i), both sums sharing the
          // pair's decay factors.
          kb.loop(kb.idx(0), len, [&](Value i) {
            kb.loop(kb.idx(0), len, [&](Value j) {
              kb.ifThen(kb.ige(i, j), [&] {
                SmallVector<Value> sums = kb.loopCarry(
                    kb.idx(0), kb.idx(d), {zero, zero},
                    [&](Value c, ValueRange acc) -> SmallVector<Value> {
                      Value w = kb.exp(kb.sub(kb.load(cb, {i, c}),
                                              kb.load(cb, {j, c})));
                      Value kj = K(j, c);
                      return {kb.add(acc[0], kb.mul(kb.mul(K(i, c), kj), w)),
                              kb.add(acc[1], kb.mul(kb.mul(Q(i, c), kj), w))};
                    });
                kb.ifThen(kb.ilt(j, i), [&] { kb.store(sums[0], ca, {i, j}); });
                kb.store(sums[1], caq, {i, j});
              });
            });
          });
          // The state's part of every delta row, S0^T (exp(B[i]) K[i]),
          // for all (i, e) at once (it does not depend on D) into cd, whose
          // row i the substitution then overwrites with D[i].
          kb.loop(kb.idx(0), len, [&](Value i) {
            kb.loop(0, dp, [&](Value e) {
              Value fromState = kb.reduce(0, d, zero, [&](Value c, Value acc) {
                return kb.add(acc, kb.mul(kb.load(s, {c, e}),
                                          kb.load(cke, {i, c})));
              });
              kb.store(fromState, cd, {i, e});
            });
          });
          // D rows by forward substitution.
          kb.loop(kb.idx(0), len, [&](Value i) {
            Value t = kb.iadd(tc, i);
            Value beta = kb.load(betas, {t, h});
            kb.loop(0, dp, [&](Value e) {
              Value rhs = kb.reduce(
                  kb.idx(0), i,
                  kb.sub(at(vn, t, kb.iadd(lo, e)), kb.load(cd, {i, e})),
                  [&](Value j, Value acc) {
                    return kb.sub(acc, kb.mul(kb.load(ca, {i, j}),
                                              kb.load(cd, {j, e})));
                  });
              kb.store(kb.mul(beta, rhs), cd, {i, e});
            });
          });
          // Outputs of every (token, column) of the chunk at once, over the
          // stored token and output column (the loops' own indices, so the
          // GPU threads share the whole nest).
          Value chLo = kb.iadd(base, lo), chHi = kb.iadd(base, hi);
          kb.loop(tc, kb.iadd(tc, len), [&](Value t) {
            kb.loop(chLo, chHi, [&](Value ch) {
              Value i = kb.isub(t, tc);
              Value e = kb.isub(ch, chLo);
              Value fromState = kb.reduce(0, d, zero, [&](Value c, Value acc) {
                return kb.add(acc, kb.mul(kb.load(s, {c, e}),
                                          kb.load(cqe, {i, c})));
              });
              Value out = kb.reduce(kb.idx(0), kb.iadd(i, kb.idx(1)), fromState,
                                    [&](Value j, Value acc) {
                                      return kb.add(acc, kb.mul(kb.load(caq, {i, j}),
                                                                kb.load(cd, {j, e})));
                                    });
              kb.store(out, raw, {t, ch});
            });
          });
          // State at the end of the chunk: k exp(B_last - B) into cke
          // (k exp(B) is no longer read), then the update.
          Value last = kb.isub(len, kb.idx(1));
          kb.loop(kb.idx(0), len, [&](Value j) {
            kb.loop(0, d, [&](Value c) {
              Value w = kb.exp(kb.sub(kb.load(cb, {last, c}),
                                      kb.load(cb, {j, c})));
              kb.store(kb.mul(w, K(j, c)), cke, {j, c});
            });
          });
          kb.loop(0, d, [&](Value c) {
            Value bl = kb.load(cb, {last, c});
            kb.loop(0, dp, [&](Value e) {
              Value upd = kb.reduce(kb.idx(0), len, zero, [&](Value j, Value acc) {
                return kb.add(acc, kb.mul(kb.load(cke, {j, c}),
                                          kb.load(cd, {j, e})));
              });
              kb.store(kb.add(kb.mul(kb.exp(bl), kb.load(s, {c, e})), upd),
                       s, {c, e});
            });
          });
        };
        if (chunkedMode)
          chunkedBody();
        else
          recurrentBody();
        // Final state (this block's columns) to the destination slot.
        kb.loop(0, d, [&](Value i) {
          kb.loop(lo, hi, [&](Value j) {
            kb.store(kb.load(s, {i, kb.isub(j, lo)}), state,
                     {dstSlot, h, i, j});
          });
        });
      });
      for (Value m : {s, cd, ov, cb, ca, caq, cqe, cke})
        if (m)
          kb.dealloc(m);
    });
    // kda_output: the gated norm per (token, head), then the conv state.
    MemRefType resultType = getKernelMemRefType(op.getResult().getType());
    KernelCall output;
    for (Value v : {results[0], operands[5], operands[11], operands[0],
                    operands[1], operands[2], operands[13], operands[14],
                    operands[15], operands[16], operands[17]})
      output.addInput(v);
    unsigned o = output.addResult(
        resultType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), resultType));
    auto normed = output.emit(rewriter, op, "kda_output",
                              [&](KernelBuilder &kb, ValueRange a) {
      Value raw = a[0], gate = a[1], oNorm = a[2], q = a[3], k = a[4];
      Value v = a[5], conv = a[6], positions = a[7], starts = a[8];
      Value src = a[9], dst = a[10];
      Value zero = kb.f32(0.0);
      forEachTokenHeadRow(kb, starts, raw, heads,
                          [&](Value r, Value t, Value h) {
        Value base = kb.imul(h, kb.idx(d));
        // o[t, head] = rmsnorm(read-out) * o_norm * sigmoid(gate).
        Value ss = kb.reduce(0, d, zero, [&](Value j, Value acc) {
          Value x = kb.load(raw, {t, kb.iadd(base, j)});
          return kb.add(acc, kb.mul(x, x));
        });
        Value inv = kb.rsqrt(kb.add(
            kb.div(ss, kb.f32(static_cast<double>(d))), kb.f32(normEps)));
        kb.loop(base, kb.iadd(base, kb.idx(d)), [&](Value ch) {
          Value j = kb.isub(ch, base);
          Value y = kb.mul(kb.mul(kb.mul(kb.load(raw, {t, ch}), inv),
                                  kb.load(oNorm, j)),
                           kb.sigmoid(kb.load(gate, {t, ch})));
          kb.store(y, a[o], {t, ch});
        });
        // The request's last token: conv state row w = token offset
        // n - (K-1) + w, the head's q, k and v channels; rows are written in
        // ascending order, which only reads higher (older-unwritten) rows
        // when src == dst.
        Value t0 = kb.loadIndex(starts, r);
        Value t1 = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
        kb.ifThen(kb.ieq(kb.iadd(t, kb.idx(1)), t1), [&] {
          Value srcSlot = kb.loadIndex(src, r);
          Value dstSlot = kb.loadIndex(dst, r);
          Value fresh = kb.ieq(kb.loadIndex(positions, t0), kb.idx(0));
          PreConvInputs inputs{q, k, v, conv, t0, srcSlot, fresh, p, kTaps};
          Value n = kb.isub(t1, t0);
          kb.loop(0, kTaps - 1, [&](Value w) {
            Value off = kb.iadd(kb.isub(n, kb.idx(kTaps - 1)), w);
            // The q, k and v channels of the head, each a loop over the
            // channel itself (threads share it on the GPU).
            for (int64_t which = 0; which < 3; ++which) {
              Value c0 = kb.iadd(kb.idx(which * p), base);
              kb.loop(c0, kb.iadd(c0, kb.idx(d)), [&](Value c) {
                Value x = kb.ifElse(
                    kb.ige(off, kb.idx(0)), kb.builder().getF32Type(),
                    [&] { return inputs.at(kb, off, c); },
                    [&] {
                      return kb.ifElse(fresh, kb.builder().getF32Type(),
                                       [&] { return zero; },
                                       [&] {
                                         return kb.load(
                                             conv, {srcSlot, kb.iadd(w, n), c});
                                       });
                    });
                kb.store(x, conv, {dstSlot, w, c});
              });
            }
          });
        });
      });
    });
    // o, then the caches (updated in place).
    rewriter.replaceOp(op, {normed[0], adaptor.getState(),
                            adaptor.getConvState()});
    return success();
  }
};

} // namespace

void mlir::strata::populateKdaToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<KdaAttentionToKernel>(converter, patterns.getContext());
}
