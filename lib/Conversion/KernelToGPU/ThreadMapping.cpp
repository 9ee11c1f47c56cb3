//===- ThreadMapping.cpp - threads of a block within a kernel row ---------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/KernelToGPU/ThreadMapping.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mlir::strata;

/// Alignment in bytes of every workgroup buffer (llvm.align of the
/// attribution): the widest vector access LLVM forms (16 bytes).
static constexpr int64_t kWorkgroupBufferAlignment = 16;
/// A strided loop body of at most kShortBodyOps operations is unrolled
/// kShortBodyUnroll times, one of at most kLongBodyOps kLongBodyUnroll
/// times; longer ones stay as they are.
static constexpr int64_t kShortBodyOps = 24;
static constexpr uint64_t kShortBodyUnroll = 8;
static constexpr int64_t kLongBodyOps = 64;
static constexpr uint64_t kLongBodyUnroll = 4;

/// The buffer `value` is a view (subview, cast, memory space cast) of.
Value mlir::strata::bufferOf(Value value) {
  while (true) {
    if (auto view = value.getDefiningOp<ViewLikeOpInterface>())
      value = view.getViewSource();
    else if (auto cast = value.getDefiningOp<memref::MemorySpaceCastOp>())
      value = cast.getSource();
    else
      return value;
  }
}

namespace {

/// Whether `op` or an op nested in it may have an effect of kind `Effect`
/// (an op without a memory-effect interface may have any).
template <typename... Effects> bool mayHave(Operation *op) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!iface) {
      found = true;
      return WalkResult::interrupt();
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const auto &effect : effects)
      if (isa<Effects...>(effect.getEffect())) {
        found = true;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return found;
}

bool mayWrite(Operation *op) {
  return mayHave<MemoryEffects::Write, MemoryEffects::Free>(op);
}
bool mayAccess(Operation *op) {
  return mayHave<MemoryEffects::Read, MemoryEffects::Write,
                 MemoryEffects::Free>(op);
}

/// Whether the iterations of `loop` (scf.for without results, index-typed)
/// touch disjoint memory: each buffer stored to inside the loop is accessed
/// inside it through one value only, and always with the induction
/// variable itself as the index of one fixed dimension. The other effects
/// inside are loads (of anything) and pure ops. Kernel arguments do not
/// alias one another, and scratch allocations are distinct buffers.
bool hasIndependentIterations(scf::ForOp loop) {
  if (!loop.getInductionVar().getType().isIndex())
    return false;
  Value iv = loop.getInductionVar();
  struct Access {
    Value memref;
    ValueRange indices;
    bool store;
  };
  SmallVector<Access> accesses;
  bool ok = true;
  loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      accesses.push_back({load.getMemRef(), load.getIndices(), false});
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      accesses.push_back({store.getMemRef(), store.getIndices(), true});
    else if (!isPure(op) && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      ok = false;
  });
  if (!ok)
    return false;
  for (const Access &stored : accesses) {
    if (!stored.store)
      continue;
    Value buffer = bufferOf(stored.memref);
    llvm::SmallBitVector dims(stored.indices.size(), true);
    for (const Access &access : accesses) {
      if (bufferOf(access.memref) != buffer)
        continue;
      if (access.memref != stored.memref)
        return false;
      for (auto [d, index] : llvm::enumerate(access.indices))
        if (index != iv)
          dims.reset(d);
    }
    if (dims.none())
      return false;
  }
  return true;
}

bool isIndependentFor(scf::ForOp loop) {
  return loop.getNumResults() == 0 && hasIndependentIterations(loop);
}

/// The gpu.all_reduce kind of a reduction's combining op.
std::optional<gpu::AllReduceOperation> reductionKind(Operation *op) {
  if (isa<arith::AddFOp>(op))
    return gpu::AllReduceOperation::ADD;
  if (isa<arith::MaximumFOp>(op))
    return gpu::AllReduceOperation::MAXIMUMF;
  if (isa<arith::MinimumFOp>(op))
    return gpu::AllReduceOperation::MINIMUMF;
  if (isa<arith::MaxNumFOp>(op))
    return gpu::AllReduceOperation::MAXNUMF;
  if (isa<arith::MinNumFOp>(op))
    return gpu::AllReduceOperation::MINNUMF;
  return std::nullopt;
}

/// The ops of `loop`'s body that depend on its iteration arguments (the
/// yield excepted), when they are pure ops directly in the body; else
/// nullopt.
std::optional<SetVector<Operation *>> carriedSlice(scf::ForOp loop) {
  SetVector<Operation *> slice;
  for (Value arg : loop.getRegionIterArgs())
    getForwardSlice(arg, &slice);
  SetVector<Operation *> ops;
  for (Operation *op : slice) {
    if (isa<scf::YieldOp>(op) && op->getParentOp() == loop)
      continue;
    if (op->getBlock() != loop.getBody() || !isPure(op) ||
        op->getNumRegions() != 0)
      return std::nullopt;
    ops.insert(op);
  }
  return ops;
}

/// Whether `loop` (results, no writes) is a reduction a block can share:
/// each result is combined by one add/max/min from its iteration argument
/// and a value that does not depend on any iteration argument.
bool isBlockReduction(scf::ForOp loop, int64_t threads) {
  if (!loop.getNumResults() || mayWrite(loop) ||
      !loop.getInductionVar().getType().isIndex())
    return false;
  if (auto lb = getConstantIntValue(loop.getLowerBound()),
      ub = getConstantIntValue(loop.getUpperBound()),
      step = getConstantIntValue(loop.getStep());
      lb && ub && step && *step > 0 && (*ub - *lb) / *step < threads)
    return false;
  std::optional<SetVector<Operation *>> slice = carriedSlice(loop);
  if (!slice || slice->size() != loop.getNumResults())
    return false;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [arg, yielded] :
       llvm::zip(loop.getRegionIterArgs(), yield.getOperands())) {
    Operation *combine = yielded.getDefiningOp();
    if (!combine || !slice->contains(combine) || !reductionKind(combine) ||
        !arg.hasOneUse() || arg.use_begin()->getOwner() != combine ||
        !combine->getResult(0).hasOneUse() || !arg.getType().isF32())
      return false;
    Value other = combine->getOperand(0) == arg ? combine->getOperand(1)
                                                : combine->getOperand(0);
    if (other.getDefiningOp() && slice->contains(other.getDefiningOp()))
      return false;
  }
  return true;
}

/// Splits a loop with results that also stores, e.g. `m = max over i of
/// (s = score(i); store s, buf[i]; s)`, into a loop without results doing
/// the stores (its iterations independent, so distributable) followed by
/// the reduction alone, which reads the stored values back instead of
/// recomputing them. Applies when nothing stored depends on the iteration
/// arguments and the reduction reads no other memory the loop writes.
bool splitStoresFromReduction(scf::ForOp loop) {
  if (!loop.getNumResults() || !mayWrite(loop) ||
      !hasIndependentIterations(loop))
    return false;
  std::optional<SetVector<Operation *>> slice = carriedSlice(loop);
  if (!slice)
    return false;
  llvm::SmallPtrSet<Value, 4> stored;
  loop.getBody()->walk(
      [&](memref::StoreOp store) { stored.insert(bufferOf(store.getMemRef())); });

  // The reduction: a copy of the loop after it, each stored value the
  // reduction uses read back, the stores and what only they used removed.
  OpBuilder b(loop->getContext());
  b.setInsertionPointAfter(loop);
  auto reduce = cast<scf::ForOp>(b.clone(*loop));
  llvm::SmallPtrSet<Operation *, 4> readBack;
  SmallVector<memref::StoreOp> stores;
  reduce.getBody()->walk([&](memref::StoreOp store) { stores.push_back(store); });
  std::optional<SetVector<Operation *>> reduceSlice = carriedSlice(reduce);
  bool ok = true;
  // A value read back must be the only one stored into its buffer.
  llvm::DenseMap<Value, int> storesPerBuffer;
  for (memref::StoreOp store : stores)
    ++storesPerBuffer[bufferOf(store.getMemRef())];
  for (memref::StoreOp store : stores) {
    Value value = store.getValueToStore();
    if (store->getBlock() == reduce.getBody() &&
        llvm::any_of(value.getUsers(), [&](Operation *user) {
          return reduceSlice->contains(user);
        })) {
      if (storesPerBuffer[bufferOf(store.getMemRef())] != 1)
        ok = false;
      Operation *at = store;
      for (Operation *user : value.getUsers())
        if (reduceSlice->contains(user) && user->isBeforeInBlock(at))
          at = user;
      for (Value index : store.getIndices())
        if (Operation *def = index.getDefiningOp();
            def && def->getBlock() == reduce.getBody() &&
            !def->isBeforeInBlock(at))
          ok = false;
      OpBuilder lb(at);
      auto load = memref::LoadOp::create(lb, store.getLoc(), store.getMemRef(),
                                         store.getIndices());
      readBack.insert(load);
      value.replaceUsesWithIf(load, [&](OpOperand &use) {
        return reduceSlice->contains(use.getOwner());
      });
    }
    store.erase();
  }
  SmallVector<Operation *> body;
  for (Operation &op : reduce.getBody()->without_terminator())
    body.push_back(&op);
  for (Operation *op : llvm::reverse(body))
    if (isOpTriviallyDead(op))
      op->erase();
  ok = ok && !mayWrite(reduce);
  reduce.getBody()->walk([&](memref::LoadOp load) {
    if (stored.contains(bufferOf(load.getMemRef())) && !readBack.contains(load))
      ok = false;
  });
  if (!ok) {
    reduce.erase();
    return false;
  }

  // The stores: the body without the reduction.
  b.setInsertionPoint(loop);
  auto stores2 = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                    loop.getUpperBound(), loop.getStep());
  IRMapping map;
  map.map(loop.getInductionVar(), stores2.getInductionVar());
  b.setInsertionPointToStart(stores2.getBody());
  for (Operation &op : loop.getBody()->without_terminator())
    if (!slice->contains(&op))
      b.clone(op, map);
  loop.replaceAllUsesWith(reduce.getResults());
  loop.erase();
  return true;
}

/// Whether `op` is a loop whose iterations may run on different threads.
bool isIndependentLoop(Operation *op) {
  if (auto par = dyn_cast<scf::ParallelOp>(op))
    return par.getNumResults() == 0;
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return isIndependentFor(forOp);
  return false;
}

/// Lower bounds, upper bounds, steps and induction variables of a loop.
struct LoopDims {
  SmallVector<Value> lbs, ubs, steps, ivs;
};

void appendDims(Operation *op, LoopDims &dims) {
  if (auto forOp = dyn_cast<scf::ForOp>(op)) {
    dims.lbs.push_back(forOp.getLowerBound());
    dims.ubs.push_back(forOp.getUpperBound());
    dims.steps.push_back(forOp.getStep());
    dims.ivs.push_back(forOp.getInductionVar());
    return;
  }
  auto par = cast<scf::ParallelOp>(op);
  llvm::append_range(dims.lbs, par.getLowerBound());
  llvm::append_range(dims.ubs, par.getUpperBound());
  llvm::append_range(dims.steps, par.getStep());
  llvm::append_range(dims.ivs, par.getInductionVars());
}

Block *loopBody(Operation *op) {
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return forOp.getBody();
  return cast<scf::ParallelOp>(op).getBody();
}

/// The constant number of iterations of `dims`, if every bound is constant.
std::optional<int64_t> constantTrips(const LoopDims &dims) {
  int64_t trips = 1;
  for (auto [lb, ub, step] : llvm::zip(dims.lbs, dims.ubs, dims.steps)) {
    auto l = getConstantIntValue(lb), u = getConstantIntValue(ub),
         s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return std::nullopt;
    trips *= std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
  }
  return trips;
}

} // namespace

BlockThreads::BlockThreads(gpu::GPUFuncOp kernel, Operation *rowLoop,
                           int64_t threads, int64_t workgroupBytes, bool unroll)
    : kernel(kernel), rowLoop(rowLoop), threads(threads),
      workgroupBytes(workgroupBytes), unroll(unroll) {
  Block &entry = kernel.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = kernel.getLoc();
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  zero = arith::ConstantIndexOp::create(b, loc, 0);
  isFirst = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zero);
  // Reductions whose loops also store: the stores become their own loop
  // (before any op is classified).
  SmallVector<scf::ForOp> mixed;
  kernel.walk([&](scf::ForOp loop) {
    if (loop.getNumResults() && mayWrite(loop))
      mixed.push_back(loop);
  });
  for (scf::ForOp loop : mixed)
    (void)splitStoresFromReduction(loop);
}

/// The loops of a perfect rectangular nest of independent loops starting at
/// `op` (an independent loop), outermost first.
SmallVector<Operation *> BlockThreads::loopNest(Operation *op) {
  SmallVector<Operation *> nest{op};
  while (true) {
    Block *body = loopBody(nest.back());
    if (body->getOperations().size() != 2)
      break;
    Operation *inner = &body->front();
    if (!isIndependentLoop(inner))
      break;
    LoopDims dims;
    appendDims(inner, dims);
    bool rectangular = true;
    for (ValueRange values : {ValueRange(dims.lbs), ValueRange(dims.ubs),
                              ValueRange(dims.steps)})
      for (Value v : values)
        if (nest.front()->isAncestor(v.getParentBlock()->getParentOp()))
          rectangular = false;
    if (!rectangular)
      break;
    nest.push_back(inner);
  }
  return nest;
}

bool BlockThreads::hasWork(Block &block) {
  for (Operation &op : block) {
    Role role = classify(&op);
    if (role == Role::Distribute || role == Role::Structural)
      return true;
  }
  return false;
}

BlockThreads::Role BlockThreads::classify(Operation *op) {
  if (op == rowLoop)
    return threadDim >= 0 ? Role::Threaded : Role::Structural;
  if (auto it = roles.find(op); it != roles.end())
    return it->second;
  Role role = Role::Redundant;
  if (isIndependentLoop(op)) {
    // A short loop around loops with more parallelism stays serial in every
    // thread; the loops inside are distributed instead.
    SmallVector<Operation *> nest = loopNest(op);
    LoopDims dims;
    for (Operation *loop : nest)
      appendDims(loop, dims);
    std::optional<int64_t> trips = constantTrips(dims);
    role = trips && *trips < threads && hasWork(*loopBody(nest.back()))
               ? Role::Structural
               : Role::Distribute;
  } else if (isa<scf::ForOp, scf::IfOp>(op) &&
             llvm::any_of(op->getRegions(), [&](Region &region) {
               return llvm::any_of(region,
                                   [&](Block &block) { return hasWork(block); });
             })) {
    role = Role::Structural;
  } else if (mayWrite(op)) {
    role = Role::Write;
  }
  roles[op] = role;
  return role;
}

int BlockThreads::rowLoopThreadDim() {
  if (threadDim != -2)
    return threadDim;
  threadDim = -1;
  if (!rowLoop)
    return threadDim;
  auto par = dyn_cast<scf::ParallelOp>(rowLoop);
  int dims = par ? std::min<int>(3, par.getNumLoops()) : 1;
  Block *body = loopBody(rowLoop);
  if (rowLoop->hasAttr(kThreadsWithinRowAttrName) ||
      (dims < 2 && hasWork(*body)))
    return threadDim;
  // Threads then run different rows: every scratch buffer the row loop
  // touches must be private to its iteration, i.e. touched nowhere else.
  bool privateScratch = true;
  rowLoop->walk([&](Operation *op) {
    for (Value operand : op->getOperands()) {
      Value buffer = bufferOf(operand);
      if (!isa<MemRefType>(buffer.getType()) ||
          !buffer.getDefiningOp<memref::AllocaOp>())
        continue;
      for (Operation *user : buffer.getUsers()) {
        SmallVector<Operation *> uses{user};
        if (auto cast = dyn_cast<memref::MemorySpaceCastOp>(user))
          uses.assign(cast->user_begin(), cast->user_end());
        for (Operation *use : uses)
          if (!rowLoop->isAncestor(use))
            privateScratch = false;
      }
    }
  });
  if (privateScratch)
    threadDim = dims - 1;
  return threadDim;
}

void BlockThreads::barrierBefore(Operation *op) {
  Operation *prev = op->getPrevNode();
  for (; prev; prev = prev->getPrevNode()) {
    if (isa<gpu::BarrierOp>(prev))
      return;
    if (mayAccess(prev))
      break;
  }
  // Nothing runs before the kernel's first op.
  if (!prev && op->getBlock() == &kernel.getBody().front())
    return;
  OpBuilder b(op);
  gpu::BarrierOp::create(b, op->getLoc());
}

void BlockThreads::barrierAfter(Operation *op) {
  if (isa_and_nonnull<gpu::BarrierOp>(op->getNextNode()))
    return;
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  gpu::BarrierOp::create(b, op->getLoc());
}

Value BlockThreads::workgroupBuffer(MemRefType type) {
  auto space = gpu::AddressSpaceAttr::get(kernel.getContext(),
                                          gpu::AddressSpace::Workgroup);
  auto shared = MemRefType::get(type.getShape(), type.getElementType(),
                                type.getLayout(), space);
  Type element = type.getElementType();
  int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  // Each buffer starts on a 16-byte boundary: LLVM merges neighbouring
  // accesses into 16-byte vector ones (st.shared.v2.b64, ds_write_b128),
  // which fault on a buffer placed at its element alignment.
  usedWorkgroupBytes =
      llvm::alignTo(usedWorkgroupBytes, kWorkgroupBufferAlignment) +
      type.getNumElements() * ((bits + 7) / 8);
  Value buffer = kernel.addWorkgroupAttribution(shared, kernel.getLoc());
  kernel.setWorkgroupAttributionAttr(
      kernel.getNumWorkgroupAttributions() - 1,
      LLVM::LLVMDialect::getAlignAttrName(),
      IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                       kWorkgroupBufferAlignment));
  return buffer;
}

Operation *BlockThreads::distribute(Operation *op) {
  SmallVector<Operation *> nest = loopNest(op);
  LoopDims dims;
  for (Operation *loop : nest)
    appendDims(loop, dims);
  Location loc = op->getLoc();
  OpBuilder b(op);
  Value count = arith::ConstantIndexOp::create(b, loc, threads);
  if (dims.ivs.size() == 1) {
    // lb + tid·step, step · threads.
    Value lb = arith::AddIOp::create(
        b, loc, dims.lbs[0], arith::MulIOp::create(b, loc, tid, dims.steps[0]));
    Value step = arith::MulIOp::create(b, loc, dims.steps[0], count);
    if (auto forOp = dyn_cast<scf::ForOp>(op)) {
      forOp.setLowerBound(lb);
      forOp.setStep(step);
      strided.push_back(forOp);
    } else {
      auto par = cast<scf::ParallelOp>(op);
      par.getLowerBoundMutable().assign(lb);
      par.getStepMutable().assign(step);
    }
    distributed.insert(op);
    return op;
  }
  // One loop over the flattened iteration space, delinearised.
  SmallVector<Value> trips;
  Value total = arith::ConstantIndexOp::create(b, loc, 1);
  for (auto [lb, ub, step] : llvm::zip(dims.lbs, dims.ubs, dims.steps)) {
    Value n = arith::CeilDivSIOp::create(
        b, loc, arith::SubIOp::create(b, loc, ub, lb), step);
    n = arith::MaxSIOp::create(b, loc, n, zero);
    trips.push_back(n);
    total = arith::MulIOp::create(b, loc, total, n);
  }
  auto flat = scf::ForOp::create(b, loc, tid, total, count);
  b.setInsertionPointToStart(flat.getBody());
  IRMapping map;
  Value rest = flat.getInductionVar();
  for (int64_t d = static_cast<int64_t>(trips.size()) - 1; d >= 0; --d) {
    Value index = rest;
    if (d > 0) {
      index = arith::RemUIOp::create(b, loc, rest, trips[d]);
      rest = arith::DivUIOp::create(b, loc, rest, trips[d]);
    }
    map.map(dims.ivs[d],
            arith::AddIOp::create(
                b, loc, dims.lbs[d],
                arith::MulIOp::create(b, loc, index, dims.steps[d])));
  }
  for (Operation &inner : *loopBody(nest.back()))
    if (!inner.hasTrait<OpTrait::IsTerminator>())
      b.clone(inner, map);
  for (Operation *loop : nest)
    roles.erase(loop);
  op->erase();
  distributed.insert(flat);
  strided.push_back(flat);
  return flat;
}

void BlockThreads::blockReduce(scf::ForOp loop) {
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  Value count = arith::ConstantIndexOp::create(b, loc, threads);
  loop.setLowerBound(arith::AddIOp::create(
      b, loc, loop.getLowerBound(),
      arith::MulIOp::create(b, loc, tid, loop.getStep())));
  loop.setStep(arith::MulIOp::create(b, loc, loop.getStep(), count));
  strided.push_back(loop);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<Value> inits(loop.getInitArgs());
  b.setInsertionPointAfter(loop);
  for (auto [index, init] : llvm::enumerate(inits)) {
    Operation *combine = yield.getOperand(index).getDefiningOp();
    gpu::AllReduceOperation kind = *reductionKind(combine);
    // Each thread starts from the identity; the init joins the block total.
    auto type = cast<FloatType>(init.getType());
    APFloat identity = APFloat::getZero(type.getFloatSemantics());
    if (kind == gpu::AllReduceOperation::MAXIMUMF ||
        kind == gpu::AllReduceOperation::MAXNUMF)
      identity = APFloat::getInf(type.getFloatSemantics(), /*Negative=*/true);
    else if (kind != gpu::AllReduceOperation::ADD)
      identity = APFloat::getInf(type.getFloatSemantics());
    OpBuilder ib(loop);
    loop.getInitArgsMutable()[index].set(
        arith::ConstantFloatOp::create(ib, loc, type, identity));
    Value partial = loop.getResult(index);
    auto total = gpu::AllReduceOp::create(
        b, loc, partial, gpu::AllReduceOperationAttr::get(b.getContext(), kind),
        b.getUnitAttr());
    IRMapping map;
    map.map(combine->getOperands(), ValueRange{init, total});
    Value result = b.clone(*combine, map)->getResult(0);
    partial.replaceAllUsesExcept(result, total);
  }
}

LogicalResult BlockThreads::guard(ArrayRef<Operation *> chunk) {
  barrierBefore(chunk.front());
  Block *block = chunk.front()->getBlock();
  llvm::SmallPtrSet<Operation *, 16> inChunk(chunk.begin(), chunk.end());
  SmallVector<Value> liveOuts;
  for (Operation *op : chunk)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !inChunk.contains(block->findAncestorOpInBlock(*user));
          }))
        liveOuts.push_back(result);
  for (Value value : liveOuts)
    if (!value.getType().isIntOrIndexOrFloat())
      return fail("a " + llvm::Twine(chunk.front()->getName().getStringRef()) +
                  " result computed on thread 0 is not a scalar");

  Location loc = chunk.front()->getLoc();
  OpBuilder b(chunk.front());
  auto ifOp = scf::IfOp::create(b, loc, isFirst, /*withElseRegion=*/false);
  Block *then = ifOp.thenBlock();
  for (Operation *op : chunk)
    op->moveBefore(then->getTerminator());
  b.setInsertionPoint(then->getTerminator());
  SmallVector<Value> slots;
  for (Value value : liveOuts) {
    Value slot = workgroupBuffer(MemRefType::get({1}, value.getType()));
    memref::StoreOp::create(b, loc, value, slot, zero);
    slots.push_back(slot);
  }
  b.setInsertionPointAfter(ifOp);
  gpu::BarrierOp::create(b, loc);
  for (auto [value, slot] : llvm::zip(liveOuts, slots)) {
    Value loaded = memref::LoadOp::create(b, loc, slot, zero);
    value.replaceUsesWithIf(loaded, [&](OpOperand &use) {
      return !ifOp->isAncestor(use.getOwner());
    });
  }
  return success();
}

LogicalResult BlockThreads::processBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (size_t i = 0; i < ops.size();) {
    Operation *op = ops[i];
    switch (classify(op)) {
    case Role::Distribute:
      barrierBefore(op);
      barrierAfter(distribute(op));
      ++i;
      continue;
    case Role::Threaded:
      barrierBefore(op);
      distributed.insert(op);
      ++i;
      continue;
    case Role::Structural:
      for (Region &region : op->getRegions())
        for (Block &inner : region)
          if (failed(processBlock(inner)))
            return failure();
      ++i;
      continue;
    case Role::Redundant:
    case Role::Write:
      break;
    }
    // A run of ops without distributed loops: the part from its first to
    // its last writing op runs on thread 0.
    size_t end = i, first = ops.size(), last = 0;
    for (; end < ops.size(); ++end) {
      Role role = classify(ops[end]);
      if (role != Role::Redundant && role != Role::Write)
        break;
      if (role == Role::Write) {
        first = std::min(first, end);
        last = end;
      }
    }
    // Reductions outside that part run in every thread: share them.
    for (size_t k = i; k < end; ++k) {
      auto forOp = dyn_cast<scf::ForOp>(ops[k]);
      if (forOp && (k < first || k > last) &&
          isBlockReduction(forOp, threads))
        blockReduce(forOp);
    }
    if (first < ops.size() &&
        failed(guard(ArrayRef(ops).slice(first, last - first + 1))))
      return failure();
    i = end;
  }
  return success();
}

/// Whether every access to `buffer` (through its views and casts) is inside
/// one loop of `distributed`.
static bool isIterationPrivate(
    Value buffer, const llvm::SmallPtrSetImpl<Operation *> &distributed) {
  Operation *owner = nullptr;
  SmallVector<Operation *> users(buffer.user_begin(), buffer.user_end());
  for (size_t i = 0; i < users.size(); ++i) {
    Operation *user = users[i];
    if (isa<memref::DeallocOp>(user))
      continue;
    if (isa<ViewLikeOpInterface, memref::MemorySpaceCastOp>(user)) {
      users.append(user->user_begin(), user->user_end());
      continue;
    }
    Operation *loop = user->getParentOp();
    while (loop && !distributed.contains(loop))
      loop = loop->getParentOp();
    if (!loop || (owner && owner != loop))
      return false;
    owner = loop;
  }
  return true;
}

LogicalResult BlockThreads::placeSharedScratch() {
  Block &entry = kernel.getBody().front();
  auto privateSpace = gpu::AddressSpaceAttr::get(kernel.getContext(),
                                                 gpu::AddressSpace::Private);
  // Block-shared memref.alloc scratch (sliced from a buffer per block after
  // this pass) that is a per-iteration temporary must be private.
  for (auto alloc : llvm::make_early_inc_range(entry.getOps<memref::AllocOp>())) {
    if (!isIterationPrivate(alloc, distributed))
      continue;
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape())
      return fail("per-iteration scratch of a runtime size");
    OpBuilder b(alloc);
    auto privateType = MemRefType::get(type.getShape(), type.getElementType(),
                                       type.getLayout(), privateSpace);
    Value generic = memref::MemorySpaceCastOp::create(
        b, alloc.getLoc(), type,
        memref::AllocaOp::create(b, alloc.getLoc(), privateType));
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.getResult().replaceAllUsesWith(generic);
    alloc.erase();
  }
  for (auto alloca :
       llvm::make_early_inc_range(entry.getOps<memref::AllocaOp>())) {
    if (isIterationPrivate(alloca, distributed))
      continue;
    MemRefType type = alloca.getType();
    if (!type.hasStaticShape() || !type.getElementType().isIntOrIndexOrFloat())
      return fail("shared scratch is not a static array of scalars");
    Value buffer = workgroupBuffer(type);
    auto generic =
        MemRefType::get(type.getShape(), type.getElementType(),
                        type.getLayout(), /*memorySpace=*/Attribute());
    for (Operation *user : llvm::make_early_inc_range(alloca->getUsers())) {
      auto cast = dyn_cast<memref::MemorySpaceCastOp>(user);
      if (!cast || cast.getType() != generic)
        return fail("scratch used other than through its cast");
      OpBuilder cb(cast);
      cast.getResult().replaceAllUsesWith(
          memref::MemorySpaceCastOp::create(cb, cast.getLoc(), generic, buffer)
              .getResult());
      cast.erase();
    }
    alloca.erase();
  }
  return success();
}

LogicalResult BlockThreads::fail(const llvm::Twine &message) {
  reason = message.str();
  return failure();
}

/// Moves the loads of `body` of buffers not in `written`, each with the
/// pure ops its address needs, ahead of everything else, keeping their
/// order: the loads of an unrolled body's copies are issued together.
static void loadsFirst(Block *body,
                       const llvm::SmallPtrSetImpl<Value> &written) {
  SmallVector<Operation *> front;
  llvm::SmallPtrSet<Operation *, 32> early;
  auto movableLoad = [&](Operation *op) {
    auto load = dyn_cast<memref::LoadOp>(op);
    return load && !written.contains(bufferOf(load.getMemRef()));
  };
  for (Operation &op : body->without_terminator()) {
    if (!movableLoad(&op))
      continue;
    SetVector<Operation *> slice;
    BackwardSliceOptions options;
    options.inclusive = true;
    options.filter = [&](Operation *o) { return o->getBlock() == body; };
    if (failed(getBackwardSlice(&op, &slice, options)) ||
        llvm::any_of(
            slice, [&](Operation *o) { return !movableLoad(o) && !isPure(o); }))
      continue;
    for (Operation *o : slice)
      if (early.insert(o).second)
        front.push_back(o);
  }
  Operation *anchor = nullptr;
  for (Operation &op : body->without_terminator())
    if (!early.contains(&op)) {
      anchor = &op;
      break;
    }
  if (!anchor)
    return;
  for (Operation *op : front)
    if (anchor->isBeforeInBlock(op))
      op->moveBefore(anchor);
}

void BlockThreads::unrollStridedLoops() {
  for (scf::ForOp loop : strided) {
    Block *body = loop.getBody();
    int64_t ops = 0;
    bool straight = true;
    llvm::SmallPtrSet<Value, 8> written;
    for (Operation &op : body->without_terminator()) {
      ++ops;
      straight &= op.getNumRegions() == 0 && !isa<gpu::BarrierOp>(op);
      if (!mayWrite(&op))
        continue;
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!store) {
        straight = false;
        break;
      }
      written.insert(bufferOf(store.getMemRef()));
    }
    if (!straight || ops > kLongBodyOps)
      continue;
    uint64_t factor = ops <= kShortBodyOps ? kShortBodyUnroll : kLongBodyUnroll;
    FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(loop, factor);
    if (failed(unrolled) || !unrolled->mainLoopOp)
      continue;
    loadsFirst(unrolled->mainLoopOp->getBody(), written);
  }
}

LogicalResult BlockThreads::apply(std::string &why) {
  (void)rowLoopThreadDim();
  // Scratch allocated below the top would be private to each thread.
  bool nested = false;
  kernel.walk([&](memref::AllocaOp alloca) {
    if (alloca->getBlock() != &kernel.getBody().front())
      nested = true;
  });
  LogicalResult result =
      nested ? fail("scratch allocated inside the kernel's loops")
             : processBlock(kernel.getBody().front());
  if (succeeded(result))
    result = placeSharedScratch();
  if (succeeded(result) && unroll)
    unrollStridedLoops();
  if (succeeded(result) && usedWorkgroupBytes > workgroupBytes)
    result = fail(llvm::Twine(usedWorkgroupBytes) +
                  " bytes of workgroup memory, more than the " +
                  llvm::Twine(workgroupBytes) + " available");
  why = reason;
  return result;
}
