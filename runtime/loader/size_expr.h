//===- size_expr.h - size expressions of the artifact -----------*- C++ -*-===//
//
// Part of strata. A SizeExpr (runtime/schemas/strata_artifact_def.fbs) is a
// postfix program over u64 that computes a byte size, extent or scalar from
// the runtime sizes of a step (num_tokens, num_requests, ...). The loader
// validates every expression once (validateSizeExpr); evaluation then only
// fails on arithmetic overflow or division by zero.
//
// Thread-safety: all functions are pure.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_SIZE_EXPR_H
#define STRATA_RUNTIME_LOADER_SIZE_EXPR_H

#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/schemas/strata_artifact_def_generated.h"

namespace strata::runtime {

/// Values of the SizeSymbols for one step. Zero-initialized: every size 0.
struct RuntimeSizes {
  /// Indexed by strata::artifact::SizeSymbol.
  uint64_t values[static_cast<int>(artifact::SizeSymbol::MAX) + 1] = {};

  uint64_t &operator[](artifact::SizeSymbol symbol) {
    return values[static_cast<int>(symbol)];
  }
  uint64_t operator[](artifact::SizeSymbol symbol) const {
    return values[static_cast<int>(symbol)];
  }
};

/// Checks that `expr` is well-formed (see the schema). `where` names the
/// field for the message, e.g. "plans[0].buffers[2].size_bytes".
Status validateSizeExpr(const artifact::SizeExpr *expr, std::string_view where);

/// Evaluates a well-formed `expr` for `sizes`. Fails with OUT_OF_RANGE on
/// overflow and INVALID_ARGUMENT on division by zero.
StatusOr<uint64_t> evaluateSizeExpr(const artifact::SizeExpr *expr,
                                    const RuntimeSizes &sizes);

/// Infix text of a well-formed `expr`, e.g. "(num_tokens * 1024)".
std::string formatSizeExpr(const artifact::SizeExpr *expr);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_SIZE_EXPR_H
