//===- MoeSelectKernel.cpp - the routed experts' top-k per token ----------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMoeSelectKernel: the GPU form of FfnOps.cpp's moe_select for models
// with one expert group (GLM-5.3-Flash: n_group = 1): per token, the scores
// s_e = sigmoid(l_e), the top_k experts of s_e + bias_e (first index on
// ties, NaN never chosen, expert 0 when no value is above -inf), their
// weights s_e / (sum of the chosen s + eps) * scaling (or s_e * scaling
// without normalisation), the sum in the chosen order: the generic kernel's
// values exactly, without its thread-0 arg-max walks (top_k x E steps on one
// thread: 19 us per token at E = 288 on the H200).
//
// A block takes one token (grid (T, 1, 1)); each thread holds the biased
// scores of experts tid, tid + threads, ... in registers and the plain
// scores in workgroup memory. Each of the top_k rounds reduces (value,
// index) pairs over the subgroup with XOR shuffles, the subgroups' winners
// meet in a workgroup row of that round (one barrier per round, no
// overwrite), every thread reads the round's winner and the one holding it
// drops it from the race. Thread 0 writes the chosen ids and weights.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Subgroups per block.
constexpr int64_t kSubgroups = 4;

/// A candidate of the race: its biased score and expert index.
struct Candidate {
  Value value, index;
};

class MoeSelectBuilder : LaneArith {
public:
  MoeSelectBuilder(OpBuilder &b, Location loc, const MoeSelect &shape,
                   int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes),
        threads(kSubgroups * lanes) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  /// `other` wins over `best` with a larger value, or an equal one at a
  /// smaller index (NaN never wins: both comparisons are ordered).
  Candidate better(Candidate best, Candidate other) {
    Value larger = cmpf(arith::CmpFPredicate::OGT, other.value, best.value);
    Value tie = arith::AndIOp::create(
        b, loc, cmpf(arith::CmpFPredicate::OEQ, other.value, best.value),
        cmpi(arith::CmpIPredicate::slt, other.index, best.index));
    Value take = arith::OrIOp::create(b, loc, larger, tie);
    return {select(take, other.value, best.value),
            select(take, other.index, best.index)};
  }
  /// The subgroup's best candidate in every lane (XOR shuffles).
  Candidate subgroupBest(Candidate c) {
    for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
      auto shuffle = [&](Value v) {
        return gpu::ShuffleOp::create(b, loc, v, ci32(offset), ci32(lanes),
                                      gpu::ShuffleMode::XOR)
            .getShuffleResult();
      };
      c = better(c, {shuffle(c.value), shuffle(c.index)});
    }
    return c;
  }

  const MoeSelect &s;
  int64_t lanes, threads;
  Type f32, i32;
};

} // namespace

void MoeSelectBuilder::build(gpu::GPUFuncOp func,
                             const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  Value logits = roles.value(args, KernelRole::X);
  Value bias = roles.value(args, KernelRole::CorrectionBias);
  Value chosen = roles.value(args, KernelRole::Chosen);
  Value weights = roles.value(args, KernelRole::RouteWeights);
  Value scores = addWorkgroupBuffer(func, loc, {s.experts}, f32);
  Value roundValues = addWorkgroupBuffer(func, loc, {s.topK, kSubgroups}, f32);
  Value roundIndices = addWorkgroupBuffer(func, loc, {s.topK, kSubgroups}, i32);
  Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  Value tokens = memref::DimOp::create(b, loc, logits, 0);
  Value none = ci32(s.experts);
  // The token is the same for the whole block (barriers inside).
  ifThen(ult(t, tokens), [&] {
    // This thread's experts: biased scores in registers (-inf past E: they
    // never win), plain scores in workgroup memory.
    int64_t perThread = (s.experts + threads - 1) / threads;
    SmallVector<Value> biased, ids;
    for (int64_t j = 0; j < perThread; ++j) {
      Value e = add(tid, j * threads);
      Value in = ult(e, idx(s.experts));
      Value at = minu(e, idx(s.experts - 1));
      Value score =
          sigmoid(memref::LoadOp::create(b, loc, logits, ValueRange{t, at}));
      ifThen(in, [&] {
        memref::StoreOp::create(b, loc, score, scores, ValueRange{e});
      });
      Value c = fadd(score, memref::LoadOp::create(b, loc, bias, at));
      biased.push_back(select(in, c, cf32(-INFINITY)));
      ids.push_back(arith::IndexCastOp::create(b, loc, i32, e));
    }
    SmallVector<Value> picks;
    for (int64_t r = 0; r < s.topK; ++r) {
      // The thread's best (its experts ascend: strict > keeps the first),
      // the subgroup's, then the block's from the round's row.
      Candidate best{cf32(-INFINITY), none};
      for (int64_t j = 0; j < perThread; ++j) {
        Value larger = cmpf(arith::CmpFPredicate::OGT, biased[j], best.value);
        best = {select(larger, biased[j], best.value),
                select(larger, ids[j], best.index)};
      }
      best = subgroupBest(best);
      ifThen(ieq(lane, idx(0)), [&] {
               memref::StoreOp::create(b, loc, best.value, roundValues,
                                       ValueRange{idx(r), warp});
               memref::StoreOp::create(b, loc, best.index, roundIndices,
                                       ValueRange{idx(r), warp});
             });
      barrier();
      Candidate winner{cf32(-INFINITY), none};
      for (int64_t w = 0; w < kSubgroups; ++w)
        winner = better(
            winner,
            {memref::LoadOp::create(b, loc, roundValues,
                                    ValueRange{idx(r), idx(w)}),
             memref::LoadOp::create(b, loc, roundIndices,
                                    ValueRange{idx(r), idx(w)})});
      // No value above -inf: the generic arg-max keeps expert 0.
      Value pick = select(ieq(winner.index, none), ci32(0), winner.index);
      picks.push_back(pick);
      for (int64_t j = 0; j < perThread; ++j)
        biased[j] = select(ieq(ids[j], pick), cf32(-INFINITY), biased[j]);
    }
    // Thread 0: the chosen experts and their weights, summed in the chosen
    // order as the generic kernel does.
    ifThen(ieq(tid, idx(0)), [&] {
             SmallVector<Value> picked;
             Value sum = cf32(0.0);
             for (int64_t r = 0; r < s.topK; ++r) {
               Value e = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                    picks[r]);
               picked.push_back(
                   memref::LoadOp::create(b, loc, scores, ValueRange{e}));
               sum = fadd(sum, picked.back());
               memref::StoreOp::create(b, loc, picks[r], chosen,
                                       ValueRange{t, idx(r)});
             }
             Value denom = fadd(sum, cf32(s.renormEps));
             for (int64_t r = 0; r < s.topK; ++r) {
               Value w = s.normalize ? fdiv(picked[r], denom) : picked[r];
               memref::StoreOp::create(b, loc, fmul(w, cf32(s.scaling)),
                                       weights, ValueRange{t, idx(r)});
             }
           });
  });
  gpu::ReturnOp::create(b, loc);
}

gpu::GPUFuncOp mlir::strata::buildMoeSelectKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const MoeSelect &shape,
    const TargetInfo &target) {
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes,
                                 kSubgroups * target.getSubgroupSize(),
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   MoeSelectBuilder(builder, loc, shape,
                                                    target.getSubgroupSize())
                                       .build(func, KernelArguments(roles));
                                 });
}
