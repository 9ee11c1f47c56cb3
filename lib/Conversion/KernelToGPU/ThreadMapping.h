//===- ThreadMapping.h - threads of a block within a kernel row -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Step 5 of convert-kernels-to-gpu: a block of threads shares the work of
// one row (docs/GPULowering.md, "Threads within a row").
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_KERNELTOGPU_THREADMAPPING_H
#define STRATA_LIB_CONVERSION_KERNELTOGPU_THREADMAPPING_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::strata {

/// The buffer `value` is a view of (through subviews, casts, memory space
/// casts and other view-like ops); `value` itself when it is no view.
Value bufferOf(Value value);

/// Maps the `threads` threads of a block (threadIdx.x) onto one kernel:
///
/// * The loops whose iterations are independent (scf.parallel without
///   reductions; scf.for without results whose every stored buffer is
///   indexed by the induction variable in one fixed dimension at every
///   access inside the loop) are distributed: iteration lb + (tid + k·T)·step
///   runs on thread tid. A perfect rectangular nest of such loops is
///   distributed as one flattened loop.
/// * Loops and ifs that contain distributed loops stay serial in every
///   thread (uniform control flow); the code between distributed loops runs
///   in every thread when it only computes and loads, and on thread 0 alone
///   (`scf.if tid == 0`) when it writes memory; values it computes that later
///   code uses are broadcast through workgroup memory.
/// * gpu.barrier before and after every phase that writes memory (a
///   distributed loop or a thread-0 section): no thread reads what another
///   writes, or writes what another may still read, without a barrier in
///   between. The barrier before is left out when nothing since the previous
///   barrier of the same block reads or writes memory.
/// * A loop with results that also stores values independent of its
///   iteration arguments (softmax: store each score, carry their maximum) is
///   first split into the stores (a distributable loop) and the reduction,
///   which reads the stored values back.
/// * A reduction loop (results combined by addf/maximumf/minimumf/maxnumf/
///   minnumf from per-iteration values, no writes, at least as many
///   iterations as threads) in code every thread runs is shared: each thread
///   reduces its strided part, gpu.all_reduce combines the parts.
/// * Kernel scratch (memref.alloca of step 4) that more than one thread
///   touches becomes workgroup memory; scratch touched only inside one
///   distributed loop (a per-iteration temporary) stays private.
/// * A thread's strided loop (a distributed scf.for, a block reduction's
///   part) whose body is straight-line code is unrolled (8 copies for short
///   bodies, 4 for longer ones) with the copies' loads of buffers the loop
///   does not write moved first: a thread's iterations wait for memory once
///   per unrolled step instead of once per iteration (an RMS norm of 4096
///   columns on 128 threads: 32 waits, now 4). Each thread's sums keep their
///   order.
///
/// A row loop marked kThreadsWithinRowAttrName always keeps the threads
/// within the row (its reductions become block reductions). Otherwise, when
/// the row loop's body has no loop to distribute, or the row loop is a
/// multi-dimensional scf.parallel, the threads go into the row loop itself
/// (its innermost grid dimension) instead, provided the kernel's scratch is
/// private to an iteration.
class BlockThreads {
public:
  /// `unroll`: unroll the strided loops (last bullet above).
  BlockThreads(gpu::GPUFuncOp kernel, Operation *rowLoop, int64_t threads,
               int64_t workgroupBytes, bool unroll = true);

  /// The dimension of the row loop the threads share with the grid, or -1
  /// when they go into the row loop's body.
  int rowLoopThreadDim();
  /// threadIdx.x, created at the start of the kernel.
  Value threadId() const { return tid; }
  /// Rewrites the kernel. Fails, saying why in `why` and leaving a partly
  /// rewritten kernel the caller discards, when a value computed on thread 0
  /// cannot be broadcast or the workgroup memory exceeds `workgroupBytes`.
  LogicalResult apply(std::string &why);

private:
  enum class Role { Redundant, Write, Distribute, Structural, Threaded };

  Role classify(Operation *op);
  bool hasWork(Block &block);
  SmallVector<Operation *> loopNest(Operation *op);
  LogicalResult processBlock(Block &block);
  Operation *distribute(Operation *op);
  LogicalResult guard(ArrayRef<Operation *> chunk);
  void blockReduce(scf::ForOp loop);
  void barrierBefore(Operation *op);
  void barrierAfter(Operation *op);
  LogicalResult placeSharedScratch();
  void unrollStridedLoops();
  LogicalResult fail(const llvm::Twine &message);
  Value workgroupBuffer(MemRefType type);

  gpu::GPUFuncOp kernel;
  Operation *rowLoop;
  int64_t threads;
  int64_t workgroupBytes;
  int64_t usedWorkgroupBytes = 0;
  bool unroll;
  int threadDim = -2; // not chosen yet
  Value tid, isFirst, zero;
  std::string reason;
  llvm::DenseMap<Operation *, Role> roles;
  /// Loops whose iterations run on different threads.
  llvm::SmallPtrSet<Operation *, 16> distributed;
  /// The scf.for loops each thread runs with a stride of `threads`
  /// iterations (distributed loops, block reductions): unrolled last.
  SmallVector<scf::ForOp> strided;
};

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_KERNELTOGPU_THREADMAPPING_H
