//===- LLMTypes.cpp - llm dialect type verifiers ----------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Parameter checks of the `llm` types. Messages follow style.md rule 7:
// lower case, no final period, expected vs found with values.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMTypes.h"
#include "dialects/llm/IR/LLMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::strata::llm;

#define GET_TYPEDEF_CLASSES
#include "dialects/llm/IR/LLMTypes.cpp.inc"

void LLMDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/llm/IR/LLMTypes.cpp.inc"
      >();
}

namespace {
using EmitFn = llvm::function_ref<InFlightDiagnostic()>;

/// Checks that a cache element type is bf16, f8E4M3FN or f32 (f32: the
/// full-precision mode of llm-promote-activations).
LogicalResult verifyCacheElementType(EmitFn emitError, StringRef what,
                                     Type type) {
  if (type.isBF16() || type.isF32() || isa<Float8E4M3FNType>(type))
    return success();
  return emitError() << what
                     << " element type must be bf16, f32 or f8E4M3FN, got "
                     << type;
}

/// Checks that `value` (named `what`) is strictly positive.
LogicalResult verifyPositive(EmitFn emitError, StringRef what, int64_t value) {
  if (value > 0)
    return success();
  return emitError() << "expected " << what << " > 0, got " << value;
}
} // namespace

LogicalResult Fp8WeightType::verify(EmitFn emitError, RankedTensorType weight,
                                    RankedTensorType scales, int64_t blockRows,
                                    int64_t blockCols) {
  if (!isa<Float8E4M3FNType>(weight.getElementType()))
    return emitError() << "fp8 weight element type must be f8E4M3FN, got "
                       << weight.getElementType();
  if (!scales.getElementType().isF32())
    return emitError() << "fp8 weight scale element type must be f32, got "
                       << scales.getElementType();
  if (!weight.hasStaticShape() || !scales.hasStaticShape())
    return emitError() << "fp8 weight and scale shapes must be static, got "
                       << weight << " and " << scales;
  if (weight.getRank() < 2 || weight.getRank() > 3)
    return emitError() << "expected fp8 weight rank 2 or 3, got "
                       << weight.getRank();
  if (scales.getRank() != weight.getRank())
    return emitError() << "expected scale rank " << weight.getRank()
                       << " to match the weight, got " << scales.getRank();
  if (blockRows <= 0 || blockCols <= 0)
    return emitError() << "expected positive block sizes, got [" << blockRows
                       << ", " << blockCols << "]";
  int64_t rank = weight.getRank();
  SmallVector<int64_t> expected(weight.getShape());
  expected[rank - 2] = llvm::divideCeil(expected[rank - 2], blockRows);
  expected[rank - 1] = llvm::divideCeil(expected[rank - 1], blockCols);
  if (ArrayRef<int64_t>(expected) != scales.getShape()) {
    auto diag = emitError() << "expected scale shape ";
    llvm::interleave(expected, diag, "x");
    diag << " (ceil(out/" << blockRows << ") x ceil(in/" << blockCols
         << ")), got " << scales;
    return diag;
  }
  return success();
}

LogicalResult LatentPoolType::verify(EmitFn emitError, int64_t pageSize,
                                     int64_t width, int64_t pad,
                                     Type elementType) {
  if (failed(verifyPositive(emitError, "page_size", pageSize)) ||
      failed(verifyPositive(emitError, "width", width)))
    return failure();
  if (pad < 0)
    return emitError() << "expected pad >= 0, got " << pad;
  // fp8 rows: the values, then one fp32 scale per 128 data lanes, which must
  // sit 4-byte aligned (docs/KVCache.md "fp8 pages").
  if (isa<Float8E4M3FNType>(elementType) && (width % 128 != 0 || pad % 4 != 0))
    return emitError() << "expected a width that is a multiple of 128 and a "
                          "pad that is a multiple of 4 for an fp8 latent "
                          "pool, got width "
                       << width << ", pad " << pad;
  return verifyCacheElementType(emitError, "latent pool", elementType);
}

LogicalResult IndexPoolType::verify(EmitFn emitError, int64_t pageSize,
                                    int64_t kpool, int64_t width,
                                    Type elementType) {
  if (failed(verifyPositive(emitError, "page_size", pageSize)) ||
      failed(verifyPositive(emitError, "kpool", kpool)) ||
      failed(verifyPositive(emitError, "width", width)))
    return failure();
  if (pageSize % kpool != 0)
    return emitError() << "expected page_size " << pageSize
                       << " to be a multiple of kpool " << kpool;
  if (isa<Float8E4M3FNType>(elementType) && !llvm::isPowerOf2_64(width))
    return emitError() << "expected a power-of-two width for the hadamard "
                          "rotation of an fp8 index pool, got "
                       << width;
  return verifyCacheElementType(emitError, "index pool", elementType);
}

LogicalResult TailRingType::verify(EmitFn emitError, int64_t depth,
                                   int64_t width, Type elementType) {
  if (failed(verifyPositive(emitError, "depth", depth)) ||
      failed(verifyPositive(emitError, "width", width)))
    return failure();
  if (!elementType.isBF16() && !elementType.isF32())
    return emitError() << "tail ring element type must be bf16 or f32, got "
                       << elementType;
  return success();
}

LogicalResult KdaStateType::verify(EmitFn emitError, int64_t heads,
                                   int64_t keyDim, int64_t valueDim,
                                   Type elementType) {
  if (failed(verifyPositive(emitError, "heads", heads)) ||
      failed(verifyPositive(emitError, "key_dim", keyDim)) ||
      failed(verifyPositive(emitError, "value_dim", valueDim)))
    return failure();
  if (!elementType.isF32())
    return emitError() << "kda state element type must be f32, got "
                       << elementType;
  return success();
}

LogicalResult SharedSelectionType::verify(EmitFn emitError, int64_t rows,
                                          int64_t width) {
  if (failed(verifyPositive(emitError, "rows", rows)) ||
      failed(verifyPositive(emitError, "width", width)))
    return failure();
  return success();
}

LogicalResult ConvStateType::verify(EmitFn emitError, int64_t channels,
                                    int64_t width, Type elementType) {
  if (failed(verifyPositive(emitError, "channels", channels)) ||
      failed(verifyPositive(emitError, "width", width)))
    return failure();
  if (!elementType.isBF16() && !elementType.isF32())
    return emitError() << "conv state element type must be bf16 or f32, got "
                       << elementType;
  return success();
}
