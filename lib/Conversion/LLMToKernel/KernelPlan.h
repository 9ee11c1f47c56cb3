//===- KernelPlan.h - the ordered kernel calls of a step --------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// After the `kernel` phase a step function (prefill, decode, ...) is a
// sequence of kernel calls over memrefs: arguments (inputs and caches),
// memref.get_global (weights), memref.alloc (activations), views
// (collapse/expand_shape, cast), func.call of `llm.kernel` functions, and in
// a sharded program calls of collective and rank-coordinate declarations
// (CollectiveOps.cpp).
// extractKernelPlan() turns it into the data the artifact writer serializes
// as an ExecutionPlan (runtime/schemas/strata_artifact_def.fbs): buffers,
// weights, caches and one dispatch per call with one binding per kernel
// argument. Extents stay symbolic: a dynamic extent is a reference to an
// extent of a step input (the writer maps inputs to SizeSymbols, e.g. dim 0
// of the token ids -> num_tokens).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELPLAN_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELPLAN_H

#include <optional>
#include <string>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::strata {

/// One extent: static (`input < 0`) or extent `dim` of step input `input`.
struct PlanExtent {
  int64_t value = 0;
  int input = -1;
  int64_t dim = 0;
};

/// A plan buffer (schema BufferDef): a step input or output, or an
/// activation allocated for the step.
struct PlanBuffer {
  enum class Role { Input, Output, Activation };
  std::string name;
  Role role = Role::Activation;
  Type elementType;
  /// Allocated extents; the byte size is their product times the element
  /// size.
  std::vector<PlanExtent> shape;
  /// Step-function argument number of an input, -1 otherwise.
  int argument = -1;
  /// Step-function result number of an output, -1 otherwise.
  int result = -1;
};

/// A cache operand of the step (schema CacheDef): a function argument whose
/// llm type is recorded in its `llm.cache_type` attribute.
struct PlanCache {
  int argument = -1;
  Type llmType;
  MemRefType bufferType;
};

/// What one kernel argument is bound to (schema Binding).
struct PlanBinding {
  /// RankCoordinate: an i64 scalar, the running rank's coordinate in group
  /// `index` (the #llm.rank_group value: 0 tp, 1 ep, 2 world).
  enum class Kind { Buffer, Weight, Cache, RankCoordinate };
  Kind kind = Kind::Buffer;
  /// Buffer id, weight index, cache index or rank group.
  unsigned index = 0;
  /// Extents of the bound region (the kernel argument's shape at the call).
  std::vector<PlanExtent> shape;
};

/// The communicator call of a collective dispatch (schema Collective).
struct PlanCollective {
  /// "all_reduce" or "all_gather".
  std::string kind;
  /// The #llm.rank_group value: 0 tp, 1 ep, 2 world.
  unsigned group = 0;
  /// all_gather: the dimension the parts are concatenated along.
  int64_t dim = 0;
  /// Element type of send and recv.
  Type elementType;
};

struct PlanDispatch {
  /// Symbol of the kernel function (Kernel.name / entry); for a collective
  /// the symbol of its declaration.
  std::string kernel;
  /// Set for a call of a collective declaration (kCollectiveAttrName): the
  /// bindings are send and recv.
  std::optional<PlanCollective> collective;
  std::vector<PlanBinding> bindings;
  /// Label for dumps: the callee name and the call's location.
  std::string label;
  /// The kernel works only for requests of at least this many tokens
  /// (kMinRequestTokensAttrName; 0: any).
  int64_t minRequestTokens = 0;
};

struct KernelPlan {
  std::vector<PlanBuffer> buffers;
  /// Checkpoint tensor names (weight index == position).
  std::vector<std::string> weights;
  std::vector<PlanCache> caches;
  std::vector<PlanDispatch> dispatches;

  void print(llvm::raw_ostream &os) const;
};

/// Extracts the plan of `step`; emits an error on an op that is neither a
/// kernel call, an allocation, a weight, a view nor size arithmetic.
FailureOr<KernelPlan> extractKernelPlan(func::FuncOp step);

/// Name of the argument attribute that keeps the llm cache type of a step
/// argument converted to a memref.
inline constexpr llvm::StringLiteral kCacheTypeAttrName = "llm.cache_type";

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELPLAN_H
