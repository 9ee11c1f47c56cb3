//===- LLMAttrs.cpp - llm dialect attribute verifiers -----------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Verifiers of the `llm` attributes (definitions in LLMAttrs.td). Each
// message has a case in test/Dialect/llm/invalid.mlir
// (test/Dialect/llm/verifier-coverage.test).
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMDialect.h"

using namespace mlir;
using namespace mlir::strata::llm;

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                RankGroup group, int64_t dim, int64_t parts) {
  if (dim < 0)
    return emitError() << "shard dimension must be >= 0, got " << dim;
  if (parts < 1)
    return emitError() << "shard parts must be >= 1, got " << parts;
  return success();
}
