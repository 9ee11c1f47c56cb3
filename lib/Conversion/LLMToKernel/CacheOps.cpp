//===- CacheOps.cpp - paged caches and the tail ring to kernels -----------===//
//
// Part of strata, under the Apache License v2.0.
//
// Writes update the cache buffer in place (the op's cache result is the
// operand's buffer); gathers allocate their result. Layouts (docs/Lowering.md
// "Cache buffers"): latent pool [pages, page_size, width + pad], index pool
// [pages, page_size / kpool, width], tail ring [slots, 2, depth, width].
// fp8 latent and index pools are [pages, page_bytes] i8 pages
// (Fp8PageLayout, read and written through PagedPoolAccess): latent rows
// quantise on write (per-128-lane amax scales) and dequantise on read.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

struct LatentCacheWriteToKernel : OpConversionPattern<llm::LatentCacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LatentCacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto pool = cast<llm::LatentPoolType>(op.getCache().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    int64_t pageSize = pool.getPageSize();
    call.emit(rewriter, op, "latent_cache_write",
              [&](KernelBuilder &kb, ValueRange a) {
      PagedPoolAccess cache(a[0], pool);
      Value latent = a[1], positions = a[2], bt = a[4];
      forEachTokenRow(kb, a[3], latent, [&](Value r, Value t) {
        auto [page, row] =
            pagedRow(kb, bt, r, kb.loadIndex(positions, t), pageSize);
        cache.storeLatentRow(kb, page, row, [&](Value c) {
          return kb.load(latent, {t, c});
        });
      });
    });
    rewriter.replaceOp(op, adaptor.getCache());
    return success();
  }
};

/// The body of the paged gathers: for every token t of every request r and
/// every id of ids[t, :], out[t, i, :] is row `id` of the request's pages
/// (`loadElement(page, row, c)`, widened to f32), zeros where id < 0.
void buildPagedGather(KernelBuilder &kb, Value ids, Value seqStarts,
                      Value blockTable, Value out, int64_t rowsPerPage,
                      int64_t width,
                      llvm::function_ref<Value(Value, Value, Value)> loadElement) {
  forEachTokenRow(kb, seqStarts, ids, [&](Value r, Value t) {
    kb.loop(kb.idx(0), kb.dim(ids, 1), [&](Value i) {
      Value id = kb.loadIndex(ids, {t, i});
      kb.ifThen(kb.ige(id, kb.idx(0)), [&] {
        std::pair<Value, Value> at =
            pagedRow(kb, blockTable, r, id, rowsPerPage);
        kb.loop(0, width, [&](Value c) {
          kb.store(loadElement(at.first, at.second, c), out, {t, i, c});
        });
      });
      kb.ifThen(kb.ilt(id, kb.idx(0)), [&] {
        kb.loop(0, width,
                [&](Value c) { kb.store(kb.f32(0.0), out, {t, i, c}); });
      });
    });
  });
}

struct LatentCacheGatherToKernel
    : OpConversionPattern<llm::LatentCacheGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LatentCacheGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto pool = cast<llm::LatentPoolType>(op.getCache().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, op.getLoc(), adaptor.getIds(), resultType));
    int64_t pageSize = pool.getPageSize(), width = pool.getWidth();
    auto results = call.emit(rewriter, op, "latent_cache_gather",
                             [&](KernelBuilder &kb, ValueRange a) {
      PagedPoolAccess cache(a[0], pool);
      buildPagedGather(kb, a[1], a[2], a[3], a[out], pageSize, width,
                       [&](Value page, Value row, Value c) {
                         return cache.load(kb, page, row, c);
                       });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct IndexCacheWriteToKernel : OpConversionPattern<llm::IndexCacheWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::IndexCacheWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto pool = cast<llm::IndexPoolType>(op.getPool().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    int64_t kpool = pool.getKpool(), width = pool.getWidth();
    int64_t rowsPerPage = pool.getRowsPerPage();
    call.emit(rewriter, op, "index_cache_write",
              [&](KernelBuilder &kb, ValueRange a) {
      PagedPoolAccess cache(a[0], pool);
      Value pooled = a[1], positions = a[2], bt = a[4];
      Value vec = kb.scratch({width}), tmp = kb.scratch({width});
      forEachTokenRow(kb, a[3], pooled, [&](Value r, Value t) {
        Value x = kb.loadIndex(positions, t);
        Value closes = kb.ieq(kb.irem(x, kb.idx(kpool)), kb.idx(kpool - 1));
        kb.ifThen(closes, [&] {
          Value p = kb.idiv(x, kb.idx(kpool));
          auto [page, row] = pagedRow(kb, bt, r, p, rowsPerPage);
          kb.loop(0, width, [&](Value c) {
            kb.store(kb.load(pooled, {t, c}), vec, c);
          });
          cache.storeIndexRow(kb, page, row, vec, tmp);
        });
      });
      kb.dealloc(vec);
      kb.dealloc(tmp);
    });
    rewriter.replaceOp(op, adaptor.getPool());
    return success();
  }
};

struct IndexCacheGatherToKernel
    : OpConversionPattern<llm::IndexCacheGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::IndexCacheGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto pool = cast<llm::IndexPoolType>(op.getPool().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType, dynamicSizesLike(rewriter, op.getLoc(),
                                     adaptor.getPoolIds(), resultType));
    int64_t width = pool.getWidth(), rowsPerPage = pool.getRowsPerPage();
    auto results = call.emit(rewriter, op, "index_cache_gather",
                             [&](KernelBuilder &kb, ValueRange a) {
      PagedPoolAccess cache(a[0], pool);
      buildPagedGather(kb, a[1], a[2], a[3], a[out], rowsPerPage, width,
                       [&](Value page, Value row, Value c) {
                         return cache.load(kb, page, row, c);
                       });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct TailRingWriteToKernel : OpConversionPattern<llm::TailRingWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::TailRingWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto ring = cast<llm::TailRingType>(op.getRing().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    int64_t depth = ring.getDepth(), width = ring.getWidth();
    call.emit(rewriter, op, "tail_ring_write",
              [&](KernelBuilder &kb, ValueRange a) {
      Value buf = a[0], k = a[1], g = a[2], positions = a[3], slots = a[5];
      // A request's tokens have consecutive positions, so its last `depth`
      // tokens own distinct rows and overwrite whatever its earlier ones
      // would write: only they are written (tokens in any order).
      Value starts = a[4];
      forEachTokenRow(kb, starts, k, [&](Value r, Value t) {
        Value end = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
        kb.ifThen(kb.ige(kb.iadd(t, kb.idx(depth)), end), [&] {
          Value slot = kb.loadIndex(slots, r);
          Value row = kb.irem(kb.loadIndex(positions, t), kb.idx(depth));
          kb.loop(0, width, [&](Value c) {
            kb.store(kb.load(k, {t, c}), buf, {slot, kb.idx(0), row, c});
            kb.store(kb.load(g, {t, c}), buf, {slot, kb.idx(1), row, c});
          });
        });
      });
    });
    rewriter.replaceOp(op, adaptor.getRing());
    return success();
  }
};

// The shared selection cache (memref [slots, rows, kSelectionColumn + width]
// i32): column 0 of a row is the count, the selected positions start at
// column kSelectionColumn.
struct SharedSelectionWriteToKernel
    : OpConversionPattern<llm::SharedSelectionWriteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::SharedSelectionWriteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto cache = cast<llm::SharedSelectionType>(op.getCache().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    int64_t rows = cache.getRows(), width = cache.getWidth();
    constexpr int64_t kFirst = llm::SharedSelectionType::kSelectionColumn;
    call.emit(rewriter, op, "shared_selection_write",
              [&](KernelBuilder &kb, ValueRange a) {
      Value buf = a[0], selection = a[1], counts = a[2], starts = a[3],
            slots = a[4];
      forEachTokenRow(kb, starts, selection, [&](Value r, Value t) {
        // Token t is the (end - t)-th last of its request.
        Value end = kb.loadIndex(starts, kb.iadd(r, kb.idx(1)));
        kb.ifThen(kb.ige(kb.iadd(t, kb.idx(rows)), end), [&] {
          Value slot = kb.loadIndex(slots, r);
          Value row = kb.isub(kb.idx(rows), kb.isub(end, t));
          kb.storeIndex(kb.loadIndex(counts, t), buf, {slot, row, kb.idx(0)});
          kb.loop(0, width, [&](Value c) {
            kb.storeIndex(kb.loadIndex(selection, {t, c}), buf,
                          {slot, row, kb.iadd(c, kb.idx(kFirst))});
          });
        });
      });
    });
    rewriter.replaceOp(op, adaptor.getCache());
    return success();
  }
};

struct SharedSelectionReadToKernel
    : OpConversionPattern<llm::SharedSelectionReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::SharedSelectionReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto cache = cast<llm::SharedSelectionType>(op.getCache().getType());
    Location loc = op.getLoc();
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    MemRefType selectionType = getKernelMemRefType(op.getSelection().getType());
    MemRefType countsType = getKernelMemRefType(op.getCounts().getType());
    unsigned selection = call.addResult(
        selectionType,
        dynamicSizesLike(rewriter, loc, adaptor.getPositions(), selectionType));
    unsigned counts = call.addResult(
        countsType,
        dynamicSizesLike(rewriter, loc, adaptor.getPositions(), countsType));
    int64_t rows = cache.getRows(), width = cache.getWidth();
    constexpr int64_t kFirst = llm::SharedSelectionType::kSelectionColumn;
    auto results = call.emit(rewriter, op, "shared_selection_read",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value buf = a[0], starts = a[2], slots = a[3], chosen = a[4];
      forEachTokenRow(kb, starts, a[1], [&](Value r, Value t) {
        Value slot = kb.loadIndex(slots, r);
        Value row = kb.loadIndex(chosen, r);
        Value inside = kb.andi(kb.ige(row, kb.idx(0)),
                               kb.ilt(row, kb.idx(rows)));
        row = kb.select(inside, row, kb.idx(rows - 1));
        kb.storeIndex(kb.loadIndex(buf, {slot, row, kb.idx(0)}), a[counts], t);
        kb.loop(0, width, [&](Value c) {
          kb.storeIndex(kb.loadIndex(buf, {slot, row, kb.iadd(c, kb.idx(kFirst))}),
                        a[selection], {t, c});
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct TailRingGatherToKernel : OpConversionPattern<llm::TailRingGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::TailRingGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto ring = cast<llm::TailRingType>(op.getRing().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, op.getLoc(), adaptor.getSlots(), resultType));
    int64_t depth = ring.getDepth(), width = ring.getWidth();
    auto results = call.emit(rewriter, op, "tail_ring_gather",
                             [&](KernelBuilder &kb, ValueRange a) {
      kb.loop(kb.idx(0), kb.dim(a[1], 0), [&](Value n) {
        Value slot = kb.loadIndex(a[1], n);
        kb.loop(0, 2, [&](Value plane) {
          kb.loop(0, depth, [&](Value i) {
            kb.loop(0, width, [&](Value c) {
              kb.store(kb.load(a[0], {slot, plane, i, c}), a[out],
                       {n, plane, i, c});
            });
          });
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateCacheToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LatentCacheWriteToKernel, LatentCacheGatherToKernel,
               IndexCacheWriteToKernel, IndexCacheGatherToKernel,
               TailRingWriteToKernel, TailRingGatherToKernel,
               SharedSelectionWriteToKernel, SharedSelectionReadToKernel>(
      converter, patterns.getContext());
}
