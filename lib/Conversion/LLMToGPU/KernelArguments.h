//===- KernelArguments.h - kernel arguments by role -------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The GPU strategies' builders read a kernel function's arguments through
// its contract (#llm.kernel's roles, set by convert-llm-to-kernel and
// checked by the llm dialect's verifier) instead of by position: which
// argument holds the weight, its scales, the result, the routing, and
// whether an optional one (fp8 scales, mHC streams, the expert-parallel
// coordinate) is there at all.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_KERNELARGUMENTS_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_KERNELARGUMENTS_H

#include <optional>
#include <string>

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "dialects/llm/IR/LLMDialect.h"

namespace mlir::strata {

/// A kernel function's arguments by role.
class KernelArguments {
public:
  /// The roles of `kernel`, or failure with `why` when its #llm.kernel names
  /// none (a kernel only the generic thread mapping builds).
  static FailureOr<KernelArguments> of(func::FuncOp kernel, std::string &why);
  /// Roles given directly (kernels built from an llm op, not a function).
  explicit KernelArguments(ArrayRef<llm::KernelRole> roles)
      : roles(roles.begin(), roles.end()) {}

  /// The position of `role`'s argument, if the kernel has one.
  std::optional<unsigned> index(llm::KernelRole role) const;
  bool has(llm::KernelRole role) const { return index(role).has_value(); }
  /// `role`'s argument among `args` (the kernel's, in its order); null when
  /// the kernel has none.
  Value value(ValueRange args, llm::KernelRole role) const;
  /// `role`'s argument type among `types`; null when the kernel has none.
  Type type(TypeRange types, llm::KernelRole role) const;
  /// Fails with `why` unless the kernel's roles are exactly `expected` (in
  /// any order): what a builder takes, no more and no less.
  LogicalResult expectExactly(ArrayRef<llm::KernelRole> expected,
                              std::string &why) const;
  ArrayRef<llm::KernelRole> all() const { return roles; }
  /// `actual` (the kernel's signature) with its arguments put in `order`,
  /// a permutation of the kernel's roles (after expectExactly).
  FunctionType inOrder(FunctionType actual,
                       ArrayRef<llm::KernelRole> order) const;

private:
  SmallVector<llm::KernelRole> roles;
};

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_KERNELARGUMENTS_H
