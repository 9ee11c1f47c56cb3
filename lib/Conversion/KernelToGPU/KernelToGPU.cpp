//===- KernelToGPU.cpp - the convert-kernels-to-gpu pass ------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Turns every outlined llm.kernel function (convert-llm-to-kernel: scf loops
// over memrefs) into a gpu.func whose outermost parallel loop is spread over
// the grid (a grid-stride loop) and whose threads share the work of a row
// (ThreadMapping.h); scratch goes to private or workgroup memory or to the
// block's slice of a global scratch argument. The matrix ops have their own
// tiled kernels (convert-llm-to-gpu). See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "lib/Conversion/KernelToGPU/KernelToGPU.h"
#include "lib/Conversion/KernelToGPU/ThreadMapping.h"
#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/Passes.h"
#include "lib/Target/TargetInfo.h"

#define DEBUG_TYPE "convert-kernels-to-gpu"

namespace mlir::strata {
#define GEN_PASS_DEF_CONVERTKERNELSTOGPUPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Scratch bytes that may live in private memory per kernel.
constexpr int64_t kPrivateScratchBytes = 32 * 1024;
/// Largest grid extent in y and z.
constexpr int64_t kMaxGridYZ = 65535;

bool isAllocated(Value value) {
  Operation *def = bufferOf(value).getDefiningOp();
  return def && isa<memref::AllocOp, memref::AllocaOp>(def);
}

/// Whether `op` is the copy of all of `src` into `dst`: memref.copy,
/// linalg.copy, or a linalg.generic with identity maps yielding its input.
bool isCopy(Operation *op, Value &src, Value &dst) {
  if (auto copy = dyn_cast<memref::CopyOp>(op)) {
    src = copy.getSource();
    dst = copy.getTarget();
    return true;
  }
  if (auto copy = dyn_cast<linalg::CopyOp>(op)) {
    src = copy.getInputs()[0];
    dst = copy.getOutputs()[0];
    return true;
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || body.getOperations().size() != 1 ||
      yield.getValues()[0] != body.getArgument(0))
    return false;
  src = generic.getDpsInputs()[0];
  dst = generic.getDpsInits()[0];
  return true;
}

/// Extent `outDim` of argument `out` equals extent `srcDim` of argument
/// `src` (known from a forwarded temporary's allocation).
struct EqualExtent {
  unsigned out, outDim, src, srcDim;
};

/// Step 1: `%t = memref.alloc ... ; <compute into %t> ; copy %t -> %out`
/// with %out an argument used by nothing else becomes computing into %out.
/// Records which extents of %out equal extents of other arguments (the
/// allocation's sizes), so that loops over %out and over the inputs get
/// the same bounds and fuse.
void forwardOutputTemporaries(func::FuncOp func,
                              SmallVectorImpl<EqualExtent> &equal) {
  Block &entry = func.getBody().front();
  SmallVector<Operation *> copies;
  for (Operation &op : entry) {
    Value src, dst;
    if (isCopy(&op, src, dst))
      copies.push_back(&op);
  }
  for (Operation *copyOp : copies) {
    Operation &op = *copyOp;
    Value src, dst;
    (void)isCopy(&op, src, dst);
    auto alloc = src.getDefiningOp<memref::AllocOp>();
    auto arg = dyn_cast<BlockArgument>(dst);
    if (!alloc || alloc->getBlock() != &entry || !arg ||
        arg.getOwner() != &entry || !arg.hasOneUse() ||
        alloc.getType() != arg.getType())
      continue;
    // Every other use of the temporary must come before the copy (or be
    // its deallocation).
    bool ok = true;
    SmallVector<Operation *> deallocs;
    for (Operation *user : alloc->getUsers()) {
      if (user == &op)
        continue;
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
        continue;
      }
      Operation *top = entry.findAncestorOpInBlock(*user);
      if (!top || !top->isBeforeInBlock(&op))
        ok = false;
    }
    if (!ok)
      continue;
    unsigned dynamicIndex = 0;
    for (auto [d, extent] : llvm::enumerate(alloc.getType().getShape())) {
      if (!ShapedType::isDynamic(extent))
        continue;
      Value size = alloc.getDynamicSizes()[dynamicIndex++];
      auto dim = size.getDefiningOp<memref::DimOp>();
      auto src = dim ? dyn_cast<BlockArgument>(dim.getSource()) : nullptr;
      std::optional<int64_t> srcDim =
          dim ? dim.getConstantIndex() : std::nullopt;
      if (src && srcDim && src.getOwner() == &entry)
        equal.push_back({arg.getArgNumber(), static_cast<unsigned>(d),
                         src.getArgNumber(), static_cast<unsigned>(*srcDim)});
    }
    op.erase();
    for (Operation *d : deallocs)
      d->erase();
    alloc.getResult().replaceAllUsesWith(arg);
    alloc.erase();
  }
}

/// Whether every access of `loop`'s body to `buffer` indexes it exactly by
/// the loop's induction variables.
bool accessesOnlyOwnElement(scf::ParallelOp loop, Value buffer) {
  auto ivs = loop.getInductionVars();
  bool ok = true;
  loop.getBody()->walk([&](Operation *op) {
    ValueRange indices;
    Value memref;
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      memref = load.getMemRef();
      indices = load.getIndices();
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      memref = store.getMemRef();
      indices = store.getIndices();
    } else {
      return;
    }
    if (memref == buffer && !llvm::equal(indices, ivs))
      ok = false;
  });
  return ok;
}

/// The buffers `loop` stores into.
llvm::SmallPtrSet<Value, 4> storedBuffers(Operation *loop) {
  llvm::SmallPtrSet<Value, 4> stored;
  loop->walk([&](memref::StoreOp store) { stored.insert(store.getMemRef()); });
  return stored;
}

/// The buffers `loop` loads from or stores into.
llvm::SmallPtrSet<Value, 8> accessedBuffers(Operation *loop) {
  llvm::SmallPtrSet<Value, 8> accessed;
  loop->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      accessed.insert(load.getMemRef());
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      accessed.insert(store.getMemRef());
  });
  return accessed;
}

/// Fuses `first` into the adjacent `second` (first's body at the start of
/// second's) when both have the same bounds and every buffer one of them
/// writes and the other touches is accessed only at the loops' own element
/// in both; their other side effects are loads and stores. Kernel arguments
/// do not alias (the plan binds distinct buffers), which upstream
/// scf-parallel-loop-fusion cannot assume.
bool fuseParallelLoops(scf::ParallelOp first, scf::ParallelOp second) {
  if (first.getNumResults() || second.getNumResults() ||
      first.getLowerBound() != second.getLowerBound() ||
      first.getUpperBound() != second.getUpperBound() ||
      first.getStep() != second.getStep())
    return false;
  bool ok = true;
  for (scf::ParallelOp loop : {first, second})
    loop.getBody()->walk([&](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp, scf::ReduceOp>(op) &&
          !isPure(op) && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        ok = false;
    });
  if (!ok)
    return false;
  auto stored1 = storedBuffers(first), stored2 = storedBuffers(second);
  auto accessed1 = accessedBuffers(first), accessed2 = accessedBuffers(second);
  for (Value buffer : accessed1) {
    if (!accessed2.contains(buffer) ||
        (!stored1.contains(buffer) && !stored2.contains(buffer)))
      continue;
    if (!accessesOnlyOwnElement(first, buffer) ||
        !accessesOnlyOwnElement(second, buffer))
      return false;
  }
  IRMapping map;
  map.map(first.getInductionVars(), second.getInductionVars());
  OpBuilder b(second.getBody(), second.getBody()->begin());
  for (Operation &op : first.getBody()->without_terminator())
    b.clone(op, map);
  first.erase();
  return true;
}

/// A kernel-allocated temporary that lives in one loop iteration (every
/// access inside one scf.parallel, at its own element) becomes one element
/// per thread: `memref<1xT>` (placeScratch then puts it in private memory).
void privatizeElementTemporaries(func::FuncOp func) {
  Block &entry = func.getBody().front();
  for (auto alloc :
       llvm::make_early_inc_range(entry.getOps<memref::AllocOp>())) {
    scf::ParallelOp loop;
    bool ok = true;
    SmallVector<Operation *> deallocs;
    for (Operation *user : alloc->getUsers()) {
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
        continue;
      }
      auto parent = user->getParentOfType<scf::ParallelOp>();
      while (parent && parent->getBlock() != &entry)
        parent = parent->getParentOfType<scf::ParallelOp>();
      if (!isa<memref::LoadOp, memref::StoreOp>(user) || !parent ||
          (loop && parent != loop)) {
        ok = false;
        break;
      }
      loop = parent;
    }
    if (!ok || !loop || !accessesOnlyOwnElement(loop, alloc))
      continue;
    OpBuilder b(alloc);
    auto type = MemRefType::get({1}, alloc.getType().getElementType());
    Value element = memref::AllocOp::create(b, alloc.getLoc(), type);
    Value zero = arith::ConstantIndexOp::create(b, alloc.getLoc(), 0);
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers())) {
      OpBuilder ub(user);
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        load.replaceAllUsesWith(
            memref::LoadOp::create(ub, load.getLoc(), element, zero)
                .getResult());
        load.erase();
      } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
        memref::StoreOp::create(ub, store.getLoc(), store.getValueToStore(),
                                element, zero);
        store.erase();
      } else {
        memref::DeallocOp::create(ub, user->getLoc(), element);
        user->erase();
      }
    }
    alloc.erase();
  }
}

/// Whether `value` is an argument of `func` that no op of `func` writes.
bool isReadOnlyArgument(func::FuncOp func, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &func.getBody().front())
    return false;
  bool written = false;
  func.walk([&](memref::StoreOp store) {
    if (bufferOf(store.getMemRef()) == value)
      written = true;
  });
  return !written;
}

/// A static temporary filled element by element from read-only arguments
/// (the fp8 weight dequantisation: `W[n, k] = decode(w[n, k]) * s[n/128,
/// k/128]`) is recomputed at each of its loads instead: every block would
/// otherwise build the whole table. The producer is a perfect nest of loops
/// from 0 to the temporary's extents whose innermost body stores once at
/// the induction variables; an earlier fill of the temporary is dropped.
void recomputeElementwiseTables(func::FuncOp func) {
  Block &entry = func.getBody().front();
  for (auto alloc :
       llvm::make_early_inc_range(entry.getOps<memref::AllocOp>())) {
    MemRefType type = alloc.getType();
    if (!type.hasStaticShape())
      continue;
    memref::StoreOp producerStore;
    SmallVector<Operation *> fills, loads, deallocs;
    bool ok = true;
    for (Operation *user : alloc->getUsers()) {
      if (isa<memref::DeallocOp>(user)) {
        deallocs.push_back(user);
      } else if (isa<memref::LoadOp>(user)) {
        loads.push_back(user);
      } else if (auto store = dyn_cast<memref::StoreOp>(user)) {
        Operation *top = entry.findAncestorOpInBlock(*store);
        auto fill = dyn_cast_or_null<scf::ParallelOp>(top);
        if (fill && store->getParentOp() == fill &&
            store.getValueToStore().getDefiningOp<arith::ConstantOp>()) {
          fills.push_back(top);
        } else if (!producerStore) {
          producerStore = store;
        } else {
          ok = false;
        }
      } else {
        ok = false;
      }
    }
    if (!ok || !producerStore || loads.empty())
      continue;
    // The nest: each index is the induction variable of one enclosing loop,
    // innermost last, each from 0 to the extent in steps of 1, nothing else
    // in the loops but the next loop.
    Block *body = producerStore->getBlock();
    SmallVector<Value> ivs;
    Operation *outer = nullptr;
    for (Value index : llvm::reverse(producerStore.getIndices())) {
      auto forOp = dyn_cast_or_null<scf::ForOp>(
          isa<BlockArgument>(index)
              ? cast<BlockArgument>(index).getOwner()->getParentOp()
              : nullptr);
      int64_t d = static_cast<int64_t>(producerStore.getIndices().size() -
                                       ivs.size() - 1);
      if (!forOp || forOp.getInductionVar() != index ||
          forOp.getNumResults() != 0 ||
          getConstantIntValue(forOp.getLowerBound()) != 0 ||
          getConstantIntValue(forOp.getStep()) != 1 ||
          getConstantIntValue(forOp.getUpperBound()) != type.getDimSize(d) ||
          (outer && (outer->getParentOp() != forOp ||
                     forOp.getBody()->getOperations().size() != 2))) {
        ok = false;
        break;
      }
      ivs.insert(ivs.begin(), index);
      outer = forOp;
    }
    if (!ok || !outer || outer->getBlock() != &entry)
      continue;
    for (Operation &op : body->without_terminator()) {
      if (&op == producerStore.getOperation())
        continue;
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        if (!isReadOnlyArgument(func, load.getMemRef()))
          ok = false;
      } else if (!isPure(&op) || op.getNumRegions() != 0) {
        ok = false;
      }
    }
    // Values from outside the nest must dominate the loads (constants and
    // arguments do: they are defined at the top).
    for (Operation &op : body->without_terminator())
      for (Value operand : op.getOperands().drop_back(
               &op == producerStore.getOperation() ? op.getNumOperands() : 0))
        if (Operation *def = operand.getDefiningOp();
            def && !outer->isAncestor(def) && !isa<arith::ConstantOp>(def))
          ok = false;
    if (!ok)
      continue;
    for (Operation *user : loads) {
      auto load = cast<memref::LoadOp>(user);
      IRMapping map;
      map.map(ValueRange(ivs), load.getIndices());
      OpBuilder b(load);
      for (Operation &op : body->without_terminator())
        if (&op != producerStore.getOperation())
          b.clone(op, map);
      load.replaceAllUsesWith(map.lookup(producerStore.getValueToStore()));
      load.erase();
    }
    outer->erase();
    for (Operation *op : fills)
      op->erase();
    for (Operation *op : deallocs)
      op->erase();
    alloc.erase();
  }
}

/// Whether every write of `op` (and of the ops nested in it) goes to memory
/// the kernel allocated itself.
bool writesOnlyScratch(Operation *op) {
  bool ok = true;
  op->walk([&](Operation *nested) {
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!iface) {
      ok = false;
      return WalkResult::interrupt();
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const auto &effect : effects) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
        continue;
      Value value = effect.getValue();
      if (!value || !isAllocated(value)) {
        ok = false;
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return ok;
}

/// The row loop of a kernel body, or null when the body has no such shape.
Operation *findRowLoop(Block &body) {
  Operation *loop = nullptr;
  for (Operation &op : llvm::reverse(body)) {
    if (isa<memref::DeallocOp>(op) || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (auto forOp = dyn_cast<scf::ForOp>(op);
        forOp && forOp.getNumResults() == 0)
      loop = &op;
    if (auto par = dyn_cast<scf::ParallelOp>(op);
        par && par.getNumResults() == 0)
      loop = &op;
    break;
  }
  if (!loop)
    return nullptr;
  for (Operation &op : body) {
    if (&op == loop)
      break;
    if (!writesOnlyScratch(&op))
      return nullptr;
  }
  return loop;
}

/// `strata.grid` entry for a loop dimension [lb, ub) step 1 from 0: the
/// extent it is bounded by. A constant trip count is divided by `perBlock`
/// (the threads that share the dimension) before the grid's cap applies.
Attribute gridEntry(Builder &b, Value lb, Value ub, Value step, int dim,
                    int64_t perBlock = 1) {
  auto constant = [&](int64_t n) {
    int64_t cap = dim == 0 ? INT32_MAX : kMaxGridYZ;
    return b.getDenseI64ArrayAttr({-1, std::clamp<int64_t>(n, 1, cap)});
  };
  std::optional<int64_t> lo = getConstantIntValue(lb);
  std::optional<int64_t> st = getConstantIntValue(step);
  if (!lo || !st || *st <= 0)
    return constant(1);
  if (std::optional<int64_t> hi = getConstantIntValue(ub))
    return constant(((*hi - *lo + *st - 1) / *st + perBlock - 1) / perBlock);
  // ub = dim(arg, d) [- c]: the grid-stride loop tolerates a few idle blocks.
  // Kernels that work only on steps of some size (the pairs of FfnOps and
  // MlaOps): ub = select(c, dim(arg, d), 0) is bounded by the extent;
  // ub = select(dim(arg, d) [* m] >= K, 0, dim(arg, d)) by the extent and by
  // ceil(K / m) - 1 (entry [arg, d, cap]), so a large step launches no
  // idle block per row; ub = select(dim(arg', d') >= K, rows, 0) by the
  // extent of rows with the floor K on dim(arg', d') (entry [arg, d, 0,
  // arg', d', K]), so a small step launches one block.
  Value bound = ub;
  int64_t cap = 0;
  SmallVector<int64_t, 3> floor;
  auto argumentExtent =
      [](Value v) -> std::optional<std::pair<int64_t, int64_t>> {
    auto d = v.getDefiningOp<memref::DimOp>();
    auto arg = d ? dyn_cast<BlockArgument>(d.getSource()) : nullptr;
    std::optional<int64_t> index = d ? d.getConstantIndex() : std::nullopt;
    if (!arg || !index || !isa<gpu::GPUFuncOp>(arg.getOwner()->getParentOp()))
      return std::nullopt;
    return std::make_pair(int64_t{arg.getArgNumber()}, *index);
  };
  if (auto select = bound.getDefiningOp<arith::SelectOp>()) {
    auto isZero = [](Value v) {
      return getConstantIntValue(v) == std::optional<int64_t>(0);
    };
    auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
    if (isZero(select.getFalseValue())) {
      bound = select.getTrueValue();
      std::optional<int64_t> k =
          cmp ? getConstantIntValue(cmp.getRhs()) : std::nullopt;
      auto size = cmp ? argumentExtent(cmp.getLhs()) : std::nullopt;
      if (k && *k > 0 && size &&
          (cmp.getPredicate() == arith::CmpIPredicate::sge ||
           cmp.getPredicate() == arith::CmpIPredicate::uge))
        floor = {size->first, size->second, *k};
    } else if (isZero(select.getTrueValue()) && cmp &&
               (cmp.getPredicate() == arith::CmpIPredicate::sge ||
                cmp.getPredicate() == arith::CmpIPredicate::uge)) {
      std::optional<int64_t> k = getConstantIntValue(cmp.getRhs());
      Value extent = select.getFalseValue();
      int64_t m = 0;
      if (cmp.getLhs() == extent) {
        m = 1;
      } else if (auto mul = cmp.getLhs().getDefiningOp<arith::MulIOp>()) {
        std::optional<int64_t> f = getConstantIntValue(mul.getRhs());
        if (mul.getLhs() == extent && f && *f > 0)
          m = *f;
      }
      if (k && *k > 0 && m > 0) {
        bound = extent;
        cap = std::max<int64_t>(1, (*k + m - 1) / m - 1);
      }
    }
  }
  if (auto sub = bound.getDefiningOp<arith::SubIOp>();
      sub && getConstantIntValue(sub.getRhs()))
    bound = sub.getLhs();
  if (dim == 0 && *lo == 0 && *st == 1) {
    if (auto extent = argumentExtent(bound)) {
      SmallVector<int64_t, 6> entry = {extent->first, extent->second};
      if (cap > 0 || !floor.empty())
        entry.push_back(cap);
      entry.append(floor.begin(), floor.end());
      return b.getDenseI64ArrayAttr(entry);
    }
  }
  return constant(1);
}

/// Step 3: the row loop's dimensions become grid-stride loops. Dimension
/// `threadDim` (if any) is shared by the grid and the `threads` threads of a
/// block: iteration lb + (blockIdx · threads + tid) · step, stepping by
/// gridDim · threads · step, and its constant grid extent shrinks to
/// ceil(n / threads) (then capped).
SmallVector<Attribute> mapRowLoop(OpBuilder &b, Operation *loop,
                                  int threadDim = -1, int64_t threads = 1,
                                  Value tid = nullptr) {
  Location loc = loop->getLoc();
  b.setInsertionPoint(loop);
  SmallVector<Attribute> grid;
  auto stride = [&](int dim, Value lb, Value step, Value &newLb,
                    Value &newStep) {
    gpu::Dimension d = static_cast<gpu::Dimension>(dim);
    Value id = gpu::BlockIdOp::create(b, loc, d);
    Value count = gpu::GridDimOp::create(b, loc, d);
    if (dim == threadDim) {
      Value n = arith::ConstantIndexOp::create(b, loc, threads);
      id = arith::AddIOp::create(b, loc, arith::MulIOp::create(b, loc, id, n),
                                 tid);
      count = arith::MulIOp::create(b, loc, count, n);
    }
    newLb = arith::AddIOp::create(b, loc, lb,
                                  arith::MulIOp::create(b, loc, id, step));
    newStep = arith::MulIOp::create(b, loc, count, step);
  };
  if (auto forOp = dyn_cast<scf::ForOp>(loop)) {
    grid.push_back(gridEntry(b, forOp.getLowerBound(), forOp.getUpperBound(),
                             forOp.getStep(), 0, threadDim == 0 ? threads : 1));
    Value lb, step;
    stride(0, forOp.getLowerBound(), forOp.getStep(), lb, step);
    forOp.setLowerBound(lb);
    forOp.setStep(step);
  } else {
    auto par = cast<scf::ParallelOp>(loop);
    SmallVector<Value> lbs(par.getLowerBound()), steps(par.getStep());
    SmallVector<Value> ubs(par.getUpperBound());
    for (int dim = 0; dim < 3 && dim < static_cast<int>(lbs.size()); ++dim) {
      grid.push_back(gridEntry(b, lbs[dim], ubs[dim], steps[dim], dim,
                               dim == threadDim ? threads : 1));
      stride(dim, lbs[dim], steps[dim], lbs[dim], steps[dim]);
    }
    par.getLowerBoundMutable().assign(lbs);
    par.getStepMutable().assign(steps);
  }
  while (grid.size() < 3)
    grid.push_back(b.getDenseI64ArrayAttr({-1, 1}));
  return grid;
}

/// Step 4: small static scratch to private memory: the kernel-scope static
/// allocations in program order, each that still fits the budget (a kernel
/// puts the buffers it wants close first: KDA's state columns).
void placeScratch(gpu::GPUFuncOp kernel) {
  SmallVector<memref::AllocOp> allocs;
  int64_t bytes = 0;
  for (auto alloc : kernel.getBody().front().getOps<memref::AllocOp>()) {
    MemRefType type = alloc.getType();
    Type element = type.getElementType();
    if (!type.hasStaticShape() || !element.isIntOrIndexOrFloat())
      continue;
    int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
    int64_t size = type.getNumElements() * ((bits + 7) / 8);
    if (bytes + size > kPrivateScratchBytes)
      continue;
    bytes += size;
    allocs.push_back(alloc);
  }
  // In the private address space (what AMDGPU requires of a stack
  // object), cast to the generic one the kernel body indexes.
  auto space = gpu::AddressSpaceAttr::get(kernel.getContext(),
                                          gpu::AddressSpace::Private);
  Block &entry = kernel.getBody().front();
  // At the top of the entry block, in program order: an alloca after a loop
  // would land outside LLVM's entry block and make the stack dynamic.
  OpBuilder top = OpBuilder::atBlockBegin(&entry);
  for (memref::AllocOp alloc : allocs) {
    OpBuilder b(alloc);
    MemRefType type = alloc.getType();
    auto privateType = MemRefType::get(type.getShape(), type.getElementType(),
                                       type.getLayout(), space);
    auto alloca = memref::AllocaOp::create(
        top, alloc.getLoc(), privateType, ValueRange{},
        alloc.getAlignmentAttr());
    auto generic = memref::MemorySpaceCastOp::create(b, alloc.getLoc(), type,
                                                     alloca.getResult());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.getResult().replaceAllUsesWith(generic.getResult());
    alloc.erase();
  }
}

/// Appends to `program` (kGpuScratchAttrName) the computation of `size`, an
/// index value of `kernel`'s entry block: constants, extents of the
/// kernel's first `numArgs` arguments, sums, products and maxima of those.
LogicalResult scratchSizeProgram(Value size, unsigned numArgs, Builder &b,
                                 SmallVectorImpl<Attribute> &program) {
  auto emit = [&](ScratchOp op, ArrayRef<int64_t> operands = {}) {
    SmallVector<int64_t> entry{static_cast<int64_t>(op)};
    entry.append(operands.begin(), operands.end());
    program.push_back(b.getDenseI64ArrayAttr(entry));
  };
  if (std::optional<int64_t> c = getConstantIntValue(size)) {
    if (*c < 0)
      return failure();
    emit(ScratchOp::Constant, {*c});
    return success();
  }
  if (auto dim = size.getDefiningOp<memref::DimOp>()) {
    auto arg = dyn_cast<BlockArgument>(dim.getSource());
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!arg || !index || arg.getArgNumber() >= numArgs ||
        !isa<gpu::GPUFuncOp>(arg.getOwner()->getParentOp()))
      return failure();
    emit(ScratchOp::Extent, {arg.getArgNumber(), *index});
    return success();
  }
  Operation *def = size.getDefiningOp();
  std::optional<ScratchOp> op;
  if (isa_and_nonnull<arith::AddIOp>(def))
    op = ScratchOp::Add;
  else if (isa_and_nonnull<arith::MulIOp>(def))
    op = ScratchOp::Mul;
  else if (isa_and_nonnull<arith::MaxSIOp, arith::MaxUIOp>(def))
    op = ScratchOp::Max;
  if (!op || failed(scratchSizeProgram(def->getOperand(0), numArgs, b,
                                       program)) ||
      failed(scratchSizeProgram(def->getOperand(1), numArgs, b, program)))
    return failure();
  emit(*op);
  return success();
}

/// Step 4, the rest: every allocation left (larger than private memory
/// takes, or of a runtime size) becomes a view into the kernel's slice of a
/// global scratch buffer, a new last argument `memref<?xi8>`. Block
/// `blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)` owns
/// bytes [id * S, (id + 1) * S) with S = dim(scratch) / (gridDim.x *
/// gridDim.y * gridDim.z): the runtime binds grid blocks x bytes per block.
/// A block reuses its slice for every iteration of its grid-stride loop
/// (iterations of one block run in sequence). Each allocation starts at a
/// multiple of kGpuScratchAlignment within the slice. The bytes per block
/// are recorded in kGpuScratchAttrName. Allocations must be in the kernel's
/// entry block with sizes that are expressions of argument extents
/// (scratchSizeProgram).
LogicalResult placeGlobalScratch(gpu::GPUFuncOp kernel) {
  Block &entry = kernel.getBody().front();
  SmallVector<memref::AllocOp> allocs;
  WalkResult walk = kernel.walk([&](memref::AllocOp alloc) {
    if (alloc->getBlock() != &entry) {
      alloc.emitError("kernel '")
          << kernel.getName() << "' allocates " << alloc.getType()
          << " inside a loop; GPU scratch must be allocated at kernel "
             "scope";
      return WalkResult::interrupt();
    }
    allocs.push_back(alloc);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (allocs.empty())
    return success();

  MLIRContext *ctx = kernel.getContext();
  Builder attrs(ctx);
  unsigned numArgs = kernel.getNumArguments();
  SmallVector<Attribute> program;
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    Type element = type.getElementType();
    if (!element.isIntOrIndexOrFloat() || !type.getLayout().isIdentity() ||
        type.getMemorySpace())
      return alloc.emitError("kernel '")
             << kernel.getName() << "' allocates " << type
             << ", which cannot live in the GPU scratch buffer";
    int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
    int64_t bytes = (bits + 7) / 8;
    for (int64_t extent : type.getShape())
      if (!ShapedType::isDynamic(extent))
        bytes *= extent;
    program.push_back(attrs.getDenseI64ArrayAttr(
        {static_cast<int64_t>(ScratchOp::Constant), bytes}));
    for (Value size : alloc.getDynamicSizes()) {
      if (failed(scratchSizeProgram(size, numArgs, attrs, program)))
        return alloc.emitError("kernel '")
               << kernel.getName() << "': the size of scratch " << type
               << " is not an expression of argument extents (constants, "
                  "memref.dim of arguments, +, *, max), so the plan cannot "
                  "size the scratch buffer";
      program.push_back(attrs.getDenseI64ArrayAttr(
          {static_cast<int64_t>(ScratchOp::Mul)}));
    }
    program.push_back(attrs.getDenseI64ArrayAttr(
        {static_cast<int64_t>(ScratchOp::AlignUp), kGpuScratchAlignment}));
    if (alloc != allocs.front())
      program.push_back(attrs.getDenseI64ArrayAttr(
          {static_cast<int64_t>(ScratchOp::Add)}));
  }

  // The scratch argument and this block's slice of it.
  Location loc = kernel.getLoc();
  auto scratchType = MemRefType::get({ShapedType::kDynamic},
                                     IntegerType::get(ctx, 8));
  if (failed(kernel.insertArgument(numArgs, scratchType,
                                   DictionaryAttr::get(ctx), loc)))
    return kernel.emitError("cannot add the scratch argument");
  Value scratch = kernel.getArgument(numArgs);
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  auto id = [&](gpu::Dimension d) -> std::pair<Value, Value> {
    return {gpu::BlockIdOp::create(b, loc, d),
            gpu::GridDimOp::create(b, loc, d)};
  };
  auto [bx, gx] = id(gpu::Dimension::x);
  auto [by, gy] = id(gpu::Dimension::y);
  auto [bz, gz] = id(gpu::Dimension::z);
  Value linear = arith::AddIOp::create(
      b, loc, bx,
      arith::MulIOp::create(
          b, loc, gx,
          arith::AddIOp::create(b, loc, by,
                                arith::MulIOp::create(b, loc, gy, bz))));
  Value blocks = arith::MulIOp::create(
      b, loc, gx, arith::MulIOp::create(b, loc, gy, gz));
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value total = memref::DimOp::create(b, loc, scratch, zero);
  Value perBlock = arith::DivUIOp::create(b, loc, total, blocks);
  Value offset = arith::MulIOp::create(b, loc, linear, perBlock);
  for (memref::AllocOp alloc : allocs) {
    b.setInsertionPoint(alloc);
    Location at = alloc.getLoc();
    MemRefType type = alloc.getType();
    Type element = type.getElementType();
    int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
    int64_t staticBytes = (bits + 7) / 8;
    for (int64_t extent : type.getShape())
      if (!ShapedType::isDynamic(extent))
        staticBytes *= extent;
    Value bytes = arith::ConstantIndexOp::create(b, at, staticBytes);
    for (Value size : alloc.getDynamicSizes())
      bytes = arith::MulIOp::create(b, at, bytes, size);
    Value align = arith::ConstantIndexOp::create(b, at, kGpuScratchAlignment);
    Value aligned = arith::MulIOp::create(
        b, at,
        arith::CeilDivUIOp::create(b, at, bytes, align).getResult(), align);
    auto view = memref::ViewOp::create(b, at, type, scratch, offset,
                                       alloc.getDynamicSizes());
    offset = arith::AddIOp::create(b, at, offset, aligned);
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.getResult().replaceAllUsesWith(view.getResult());
    alloc.erase();
  }
  kernel->setAttr(kGpuScratchAttrName, attrs.getArrayAttr(program));
  return success();
}

struct ConvertKernelsToGPUPass
    : mlir::strata::impl::ConvertKernelsToGPUPassBase<ConvertKernelsToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kKernelAttrName) && !func.isExternal())
        kernels.push_back(func);
    if (kernels.empty())
      return;
    if (!chip.empty()) {
      std::unique_ptr<TargetInfo> target = createGpuTargetInfo(module, chip);
      if (!target)
        return signalPassFailure();
      // Four subgroups: 128 threads on NVIDIA (warp32), 256 on AMD (wave64).
      threads = std::min(4 * target->getSubgroupSize(),
                         target->getMaxWorkgroupSize());
      workgroupBytes = target->getStaticSharedMemoryBytes();
    }

    // Step 2 (upstream passes), on the kernels only.
    OpPassManager lower("func.func");
    lower.addPass(createConvertMemRefCopyToLinalgPass());
    lower.addPass(createConvertLinalgToParallelLoopsPass());
    OpPassManager fuse("func.func");
    fuse.addPass(createCSEPass());
    fuse.addPass(createCanonicalizerPass());
    fuse.addPass(createParallelLoopFusionPass());
    for (func::FuncOp func : kernels) {
      SmallVector<EqualExtent> equal;
      forwardOutputTemporaries(func, equal);
      if (failed(runPipeline(lower, func)))
        return signalPassFailure();
      func.walk([&](memref::DimOp dim) {
        auto arg = dyn_cast<BlockArgument>(dim.getSource());
        std::optional<int64_t> index = dim.getConstantIndex();
        if (!arg || !index || arg.getOwner() != &func.getBody().front())
          return;
        for (const EqualExtent &e : equal) {
          if (e.out != arg.getArgNumber() || e.outDim != *index)
            continue;
          OpBuilder b(dim);
          dim.getResult().replaceAllUsesWith(memref::DimOp::create(
              b, dim.getLoc(), func.getArgument(e.src), e.srcDim));
          dim.erase();
          return;
        }
      });
      if (failed(runPipeline(fuse, func)))
        return signalPassFailure();
      recomputeElementwiseTables(func);
      for (bool changed = true; changed;) {
        changed = false;
        for (Operation &op : func.getBody().front()) {
          auto first = dyn_cast<scf::ParallelOp>(op);
          auto second =
              first ? dyn_cast_or_null<scf::ParallelOp>(first->getNextNode())
                    : nullptr;
          if (second && fuseParallelLoops(first, second)) {
            changed = true;
            break;
          }
        }
      }
      privatizeElementTemporaries(func);
    }

    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule =
        module.lookupSymbol<gpu::GPUModuleOp>(kGpuKernelModuleName);
    if (!gpuModule) {
      gpuModule =
          gpu::GPUModuleOp::create(b, module.getLoc(), kGpuKernelModuleName);
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      b.getUnitAttr());
    }
    for (func::FuncOp func : kernels) {
      if (func.getNumResults() != 0) {
        func.emitError("kernel '")
            << func.getSymName() << "' returns values; expected DPS";
        return signalPassFailure();
      }
      if (!func.getBody().hasOneBlock()) {
        func.emitError("kernel '")
            << func.getSymName() << "' has more than one block";
        return signalPassFailure();
      }
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(b, func.getLoc(), func.getSymName(),
                                           func.getFunctionType());
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
      // The key only: the thread mapping does not read the roles, and a
      // scratch argument may follow the function's own.
      auto contract = func->getAttrOfType<llm::KernelAttr>(kKernelAttrName);
      kernel->setAttr(kKernelAttrName,
                      llm::KernelAttr::get(b.getContext(), contract.getKey(),
                                           /*roles=*/{}));
      kernel.getBody().takeBody(func.getBody());
      Block &body = kernel.getBody().front();
      Operation *ret = body.getTerminator();
      b.setInsertionPoint(ret);
      gpu::ReturnOp::create(b, ret->getLoc());
      ret->erase();

      placeScratch(kernel);
      func.erase();
      if (threads > 1)
        kernel = mapThreads(b, kernel);
      if (!kernel->hasAttr(kGpuGridAttrName)) {
        SmallVector<Attribute> grid;
        if (Operation *loop = findRowLoop(kernel.getBody().front()))
          grid = mapRowLoop(b, loop);
        else
          grid.assign(3, b.getDenseI64ArrayAttr({-1, 1}));
        kernel->setAttr(kGpuGridAttrName, b.getArrayAttr(grid));
        kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({1, 1, 1}));
      }
      // After the thread mapping, which tells each allocation apart as its
      // own buffer (slices of one argument would look like aliases); the
      // slices are per block, so the block's threads share them.
      if (failed(placeGlobalScratch(kernel)))
        return signalPassFailure();
    }
  }

  /// Step 5 on a copy of `kernel`: the copy replaces it when every part of
  /// the mapping applies; else `kernel` keeps one thread per block and says
  /// why in `strata.single_thread`.
  gpu::GPUFuncOp mapThreads(OpBuilder &b, gpu::GPUFuncOp kernel) {
    b.setInsertionPointAfter(kernel);
    auto copy = cast<gpu::GPUFuncOp>(b.clone(*kernel));
    Operation *loop = findRowLoop(copy.getBody().front());
    BlockThreads mapping(copy, loop, threads, workgroupBytes, unroll);
    SmallVector<Attribute> grid;
    if (loop)
      grid = mapRowLoop(b, loop, mapping.rowLoopThreadDim(), threads,
                        mapping.threadId());
    else
      grid.assign(3, b.getDenseI64ArrayAttr({-1, 1}));
    std::string why;
    if (failed(mapping.apply(why))) {
      copy.erase();
      kernel->setAttr(kSingleThreadAttrName, b.getStringAttr(why));
      return kernel;
    }
    copy->setAttr(kGpuGridAttrName, b.getArrayAttr(grid));
    copy.setKnownBlockSizeAttr(
        b.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
    kernel.erase();
    return copy;
  }

  int64_t threads = 1;
  int64_t workgroupBytes = 0;
};

} // namespace
