//===- MoeGroupKernel.cpp - the routed slots grouped by expert ------------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMoeGroupKernel: the GPU form of FfnOps.cpp's moe_group. From the
// chosen experts [T, k] it writes starts[e] (the slots routed to experts
// below e; starts[E] = T k) and order (the flat slot ids t k + j expert by
// expert, in slot order within an expert): the generic kernel's results
// exactly, without its pass over every slot per expert (E x T k reads: 240
// us at 8192 tokens x 8 slots and 288 experts on an H100).
//
// One block (grid (1, 1, 1)) of kThreads threads; subgroup w takes the
// slots [w P, (w + 1) P) (P: T k / subgroups rounded up to whole subgroup
// rows), so the subgroups' shares follow slot order:
//   1. counts[w][e]: the share's slots routed to e (workgroup atomics);
//   2. per expert, counts[w][e] becomes the count of shares before w and
//      first[e] the expert's total; subgroup 0 turns the totals into their
//      exclusive prefix (shuffle-up scans of a subgroup's row of experts)
//      and writes starts;
//   3. each subgroup walks its share a row of lanes at a time: a lane's
//      rank among the row's lanes of its expert (one index shuffle per lane
//      of the row) places its slot at first[e] + counts[w][e] + rank; the
//      row's last lane of each expert then adds the row's count to
//      counts[w][e] (block barriers around the update: every subgroup walks
//      as many rows).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Threads of the block: 16 subgroups on NVIDIA, 8 on AMD.
constexpr int64_t kThreads = 512;

class MoeGroupBuilder : LaneArith {
public:
  MoeGroupBuilder(OpBuilder &b, Location loc, const MoeGroup &shape,
                  int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes), subgroups(kThreads / lanes) {
    i32 = b.getI32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  Value divu(Value x, int64_t d) {
    return arith::DivUIOp::create(b, loc, x, idx(d));
  }
  Value remu(Value x, int64_t d) {
    return arith::RemUIOp::create(b, loc, x, idx(d));
  }
  Value asI32(Value v) { return arith::IndexCastOp::create(b, loc, i32, v); }
  Value load(Value m, ValueRange at) {
    return memref::LoadOp::create(b, loc, m, at);
  }
  void store(Value v, Value m, ValueRange at) {
    memref::StoreOp::create(b, loc, v, m, at);
  }
  /// `body(i)` for i = from, from + step, ... below `to`.
  void loop(Value from, Value to, int64_t step,
            llvm::function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, from, to, idx(step), ValueRange{},
                       [&](OpBuilder &nb, Location, Value i, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(nb.getInsertionBlock(),
                                             nb.getInsertionPoint());
                         body(i);
                         scf::YieldOp::create(b, loc);
                       });
  }
  /// Values carried through i = from, from + step, ... below `to`.
  SmallVector<Value>
  loopCarry(Value from, Value to, int64_t step, ValueRange inits,
            llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto op = scf::ForOp::create(
        b, loc, from, to, idx(step), inits,
        [&](OpBuilder &nb, Location, Value i, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, loc, body(i, carried));
        });
    return SmallVector<Value>(op.getResults());
  }
  Value shuffle(Value v, Value offset, gpu::ShuffleMode mode) {
    return gpu::ShuffleOp::create(b, loc, v, offset, ci32(lanes), mode)
        .getShuffleResult();
  }
  /// Chosen expert of flat slot `slot` (index).
  Value expertOf(Value slot) {
    return load(chosen, ValueRange{divu(slot, s.topK), remu(slot, s.topK)});
  }

  void countShares(Value begin, Value end);
  void prefixShares();
  void scanTotals(Value numSlots);
  void placeSlots(Value begin, Value end, Value rows);

  const MoeGroup &s;
  int64_t lanes, subgroups;
  Type i32;
  Value chosen, order, starts;
  /// Workgroup memory: counts [subgroups, E] and first [E] (i32).
  Value counts, first;
  Value tid, subgroup;
};

} // namespace

/// Step 1: counts[w][e] = the share's slots routed to e.
void MoeGroupBuilder::countShares(Value begin, Value end) {
  loop(tid, idx(subgroups * s.experts), kThreads, [&](Value i) {
    store(ci32(0), counts, ValueRange{divu(i, s.experts), remu(i, s.experts)});
  });
  barrier();
  loop(add(begin, lane), end, lanes, [&](Value slot) {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, ci32(1),
                                counts,
                                ValueRange{subgroup, toIndex(expertOf(slot))});
  });
  barrier();
}

/// Step 2a: per expert, counts[w][e] = the count of the shares before w, and
/// first[e] = the expert's total.
void MoeGroupBuilder::prefixShares() {
  loop(tid, idx(s.experts), kThreads, [&](Value e) {
    Value total = loopCarry(idx(0), idx(subgroups), 1, ValueRange{ci32(0)},
                            [&](Value w, ValueRange c) -> SmallVector<Value> {
                              Value n = load(counts, ValueRange{w, e});
                              store(c[0], counts, ValueRange{w, e});
                              return {arith::AddIOp::create(b, loc, c[0], n)};
                            })[0];
    store(total, first, ValueRange{e});
  });
  barrier();
}

/// Step 2b: subgroup 0 turns the totals into their exclusive prefix (first
/// and starts), starts[E] = all slots.
void MoeGroupBuilder::scanTotals(Value numSlots) {
  ifThen(ieq(subgroup, idx(0)), [&] {
    loopCarry(idx(0), idx(s.experts), lanes, ValueRange{ci32(0)},
              [&](Value base, ValueRange carry) -> SmallVector<Value> {
                Value e = add(base, lane);
                Value in = ult(e, idx(s.experts));
                Value v = select(
                    in, load(first, ValueRange{minu(e, idx(s.experts - 1))}),
                    ci32(0));
                Value inclusive = v;
                for (int64_t offset = 1; offset < lanes; offset *= 2) {
                  Value other =
                      shuffle(inclusive, ci32(offset), gpu::ShuffleMode::UP);
                  Value below = ult(lane, idx(offset));
                  inclusive = arith::AddIOp::create(
                      b, loc, inclusive, select(below, ci32(0), other));
                }
                Value before =
                    arith::AddIOp::create(b, loc, carry[0], sub(inclusive, v));
                ifThen(in, [&] {
                  store(before, first, ValueRange{e});
                  store(before, starts, ValueRange{e});
                });
                Value row =
                    shuffle(inclusive, ci32(lanes - 1), gpu::ShuffleMode::IDX);
                return {arith::AddIOp::create(b, loc, carry[0], row)};
              });
    ifThen(ieq(tid, idx(0)),
           [&] { store(asI32(numSlots), starts, ValueRange{idx(s.experts)}); });
  });
  barrier();
}

/// Step 3: the share's slots placed a row of lanes at a time.
void MoeGroupBuilder::placeSlots(Value begin, Value end, Value rows) {
  Value none = ci32(-1);
  Value laneI32 = asI32(lane);
  loop(idx(0), rows, 1, [&](Value row) {
    Value slot = add(add(begin, mul(row, lanes)), lane);
    Value valid = ult(slot, end);
    // Rows past the share's end read its last slot (never past T k: a row
    // is walked only when the share has slots).
    Value e = select(valid, expertOf(minu(slot, sub(end, idx(1)))), none);
    SmallVector<Value> rc = loopCarry(
        idx(0), idx(lanes), 1, ValueRange{ci32(0), ci32(0)},
        [&](Value j, ValueRange c) -> SmallVector<Value> {
          Value other = shuffle(e, asI32(j), gpu::ShuffleMode::IDX);
          Value same = ieq(other, e);
          Value earlier = arith::AndIOp::create(
              b, loc, same, cmpi(arith::CmpIPredicate::slt, asI32(j), laneI32));
          Value one = ci32(1), zero = ci32(0);
          return {
              arith::AddIOp::create(b, loc, c[0], select(earlier, one, zero)),
              arith::AddIOp::create(b, loc, c[1], select(same, one, zero))};
        });
    Value rank = rc[0], count = rc[1];
    Value expert = toIndex(select(valid, e, ci32(0)));
    ifThen(valid, [&] {
      Value at = arith::AddIOp::create(
          b, loc,
          arith::AddIOp::create(b, loc, load(first, ValueRange{expert}),
                                load(counts, ValueRange{subgroup, expert})),
          rank);
      Value pos = toIndex(at);
      store(asI32(slot), order,
            ValueRange{divu(pos, s.topK), remu(pos, s.topK)});
    });
    barrier();
    Value last =
        arith::AndIOp::create(b, loc, valid, ieq(rank, sub(count, ci32(1))));
    ifThen(last, [&] {
      Value n = load(counts, ValueRange{subgroup, expert});
      store(arith::AddIOp::create(b, loc, n, count), counts,
            ValueRange{subgroup, expert});
    });
    barrier();
  });
}

void MoeGroupBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  chosen = roles.value(args, KernelRole::Chosen);
  order = roles.value(args, KernelRole::SlotOrder);
  starts = roles.value(args, KernelRole::ExpertStarts);
  counts = addWorkgroupBuffer(func, loc, {subgroups, s.experts}, i32);
  first = addWorkgroupBuffer(func, loc, {s.experts}, i32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = remu(tid, lanes);
  subgroup = divu(tid, lanes);
  Value numSlots = mul(memref::DimOp::create(b, loc, chosen, 0), s.topK);
  // A share: ceil(T k / subgroups) slots rounded up to whole rows.
  Value rows = divu(
      add(divu(add(numSlots, subgroups - 1), subgroups), lanes - 1), lanes);
  Value share = mul(rows, lanes);
  Value begin = minu(arith::MulIOp::create(b, loc, subgroup, share), numSlots);
  Value end = minu(add(begin, share), numSlots);
  countShares(begin, end);
  prefixShares();
  scanTotals(numSlots);
  placeSlots(begin, end, rows);
  gpu::ReturnOp::create(b, loc);
}

int64_t mlir::strata::moeGroupWorkgroupBytes(const MoeGroup &shape,
                                             const TargetInfo &target) {
  int64_t subgroups = kThreads / target.getSubgroupSize();
  return 4 * (subgroups + 1) * shape.experts;
}

gpu::GPUFuncOp mlir::strata::buildMoeGroupKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const MoeGroup &shape,
    const TargetInfo &target) {
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes, kThreads,
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   MoeGroupBuilder(builder, loc, shape,
                                                   target.getSubgroupSize())
                                       .build(func, KernelArguments(roles));
                                 });
}
