//===- LLMAttrs.cpp - llm dialect attribute verifiers -----------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Verifiers of the `llm` attributes (definitions in LLMAttrs.td), the
// assembly of `#llm.kernel` and the checks of the kernel contract on kernel
// functions (LLMDialect::verifyOperationAttribute). Each message has a case
// in test/Dialect/llm/invalid.mlir or kernel-contract-invalid.mlir
// (test/Dialect/llm/verifier-coverage.test).
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::strata::llm;

#define GET_ATTRDEF_CLASSES
#include "dialects/llm/IR/LLMAttrs.cpp.inc"

void LLMDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/llm/IR/LLMAttrs.cpp.inc"
      >();
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                RankGroup group, int64_t dim, int64_t parts) {
  if (dim < 0)
    return emitError() << "shard dimension must be >= 0, got " << dim;
  if (parts < 1)
    return emitError() << "shard parts must be >= 1, got " << parts;
  return success();
}

//===----------------------------------------------------------------------===//
// #llm.kernel
//===----------------------------------------------------------------------===//

// #llm.kernel<"key"> or #llm.kernel<"key", roles = [x, weight, out]>
Attribute KernelAttr::parse(AsmParser &parser, Type) {
  std::string key;
  if (parser.parseLess() || parser.parseString(&key))
    return {};
  SmallVector<KernelRole> roles;
  if (succeeded(parser.parseOptionalComma())) {
    auto parseRole = [&]() -> ParseResult {
      FailureOr<KernelRole> role = FieldParser<KernelRole>::parse(parser);
      if (failed(role))
        return failure();
      roles.push_back(*role);
      return success();
    };
    if (parser.parseKeyword("roles") || parser.parseEqual() ||
        parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseRole))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<KernelAttr>(parser.getContext(), key, roles);
}

void KernelAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printString(getKey());
  if (!getRoles().empty()) {
    printer << ", roles = [";
    llvm::interleaveComma(getRoles(), printer, [&](KernelRole role) {
      printer << stringifyKernelRole(role);
    });
    printer << "]";
  }
  printer << ">";
}

LogicalResult KernelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef key, ArrayRef<KernelRole> roles) {
  if (key.empty())
    return emitError() << "kernel key must not be empty";
  llvm::SmallBitVector seen(getMaxEnumValForKernelRole() + 1);
  for (KernelRole role : roles) {
    auto bit = static_cast<unsigned>(role);
    if (seen.test(bit))
      return emitError() << "argument role '" << stringifyKernelRole(role)
                         << "' appears twice";
    seen.set(bit);
  }
  return success();
}

std::optional<unsigned> KernelAttr::argumentOf(KernelRole role) const {
  for (auto [i, held] : llvm::enumerate(getRoles()))
    if (held == role)
      return i;
  return std::nullopt;
}

namespace {

/// The argument types a role admits.
enum class RoleClass { Memref, IndexMemref, F32Memref, Coordinate };

RoleClass classOf(KernelRole role) {
  switch (role) {
  case KernelRole::Chosen:
  case KernelRole::SlotOrder:
  case KernelRole::ExpertStarts:
  case KernelRole::Selection:
  case KernelRole::SelectionCounts:
  case KernelRole::SeqStarts:
  case KernelRole::BlockTable:
  case KernelRole::Positions:
  case KernelRole::SourceSlots:
  case KernelRole::DestSlots:
  case KernelRole::TokenSlots:
    return RoleClass::IndexMemref;
  case KernelRole::WeightScales:
  case KernelRole::UpScales:
  case KernelRole::RouteWeights:
    return RoleClass::F32Memref;
  case KernelRole::ExpertCoordinate:
    return RoleClass::Coordinate;
  default:
    return RoleClass::Memref;
  }
}

/// Why `type` cannot hold `role`, or "" when it can.
StringRef mismatch(KernelRole role, Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  switch (classOf(role)) {
  case RoleClass::Memref:
    return memref ? "" : "a memref";
  case RoleClass::IndexMemref:
    return memref && memref.getElementType().isInteger(32) ? ""
                                                           : "a memref of i32";
  case RoleClass::F32Memref:
    return memref && memref.getElementType().isF32() ? "" : "a memref of f32";
  case RoleClass::Coordinate:
    return type.isInteger(64) ? "" : "an i64";
  }
  return "";
}

LogicalResult verifyKernelContract(Operation *op, KernelAttr kernel) {
  auto function = dyn_cast<FunctionOpInterface>(op);
  if (!function)
    return op->emitOpError("llm.kernel is only valid on a function");
  ArrayRef<KernelRole> roles = kernel.getRoles();
  // The roles describe the memref-level signature; an LLVM function's
  // arguments are the expanded memref descriptors (the attribute rides
  // along through the CPU and GPU binary lowerings).
  if (roles.empty() || op->getName().getStringRef() == "llvm.func")
    return success();
  ArrayRef<Type> arguments = function.getArgumentTypes();
  if (roles.size() != arguments.size())
    return op->emitOpError("has ")
           << roles.size() << " kernel argument roles for " << arguments.size()
           << " arguments";
  for (auto [i, role, type] : llvm::enumerate(roles, arguments)) {
    StringRef expected = mismatch(role, type);
    if (!expected.empty())
      return op->emitOpError("argument ")
             << i << " (role '" << stringifyKernelRole(role) << "') must be "
             << expected << ", got " << type;
  }
  return success();
}

} // namespace

LogicalResult Fp8PageAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t rowsPerPage, int64_t rowLanes,
                                  int64_t rowBytes, int64_t scaleOffset,
                                  int64_t groupLanes) {
  if (rowsPerPage < 1 || rowLanes < 1 || groupLanes < 1)
    return emitError() << "fp8 page extents must be >= 1, got rows_per_page "
                       << rowsPerPage << ", row_lanes " << rowLanes
                       << ", group_lanes " << groupLanes;
  int64_t scales = (rowLanes + groupLanes - 1) / groupLanes;
  if (scaleOffset < rowLanes || scaleOffset + 4 * scales > rowBytes)
    return emitError() << "fp8 page scales must follow the " << rowLanes
                       << " values inside the row (" << scales
                       << " f32 at byte " << scaleOffset << " of " << rowBytes
                       << ")";
  return success();
}

LogicalResult
MlaAttendAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      FloatAttr softmaxScale, Fp8PageAttr) {
  if (!softmaxScale || !softmaxScale.getValue().isFiniteNonZero() ||
      softmaxScale.getValue().isNegative())
    return emitError() << "mla_attend softmax_scale must be finite and > 0";
  return success();
}

LogicalResult
KpoolScoresAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t kpool, FloatAttr) {
  if (kpool < 1)
    return emitError() << "kpool_scores kpool must be >= 1, got " << kpool;
  return success();
}

LogicalResult
KpoolSelectAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t kpool, int64_t topk) {
  if (kpool < 1 || topk < 1)
    return emitError() << "kpool_select kpool and topk must be >= 1, got "
                       << kpool << " and " << topk;
  return success();
}

LogicalResult KdaChunkAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   FloatAttr gateLowerBound,
                                   int64_t decodeMaxTokens, bool) {
  if (!gateLowerBound || !gateLowerBound.getValue().isFinite())
    return emitError() << "kda_chunk gate_lower_bound must be finite";
  if (decodeMaxTokens < 1)
    return emitError() << "kda_chunk decode_max_tokens must be >= 1, got "
                       << decodeMaxTokens;
  return success();
}

LogicalResult
KdaDecodeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      FloatAttr gateLowerBound, FloatAttr l2Eps,
                      FloatAttr qScale, FloatAttr normEps,
                      int64_t decodeMaxTokens) {
  for (auto [name, value] : {std::pair{"gate_lower_bound", gateLowerBound},
                             {"l2_eps", l2Eps},
                             {"q_scale", qScale},
                             {"norm_eps", normEps}})
    if (!value || !value.getValue().isFinite())
      return emitError() << "kda_decode " << name << " must be finite";
  if (!(l2Eps.getValueAsDouble() > 0) || !(normEps.getValueAsDouble() > 0))
    return emitError() << "kda_decode epsilons must be positive";
  if (decodeMaxTokens < 0)
    return emitError() << "kda_decode decode_max_tokens must be >= 0, got "
                       << decodeMaxTokens;
  return success();
}

LogicalResult
KdaPrepareAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       FloatAttr gateLowerBound, FloatAttr l2Eps,
                       FloatAttr qScale, int64_t decodeMaxTokens) {
  for (auto [name, value] : {std::pair{"gate_lower_bound", gateLowerBound},
                             {"l2_eps", l2Eps},
                             {"q_scale", qScale}})
    if (!value || !value.getValue().isFinite())
      return emitError() << "kda_prepare " << name << " must be finite";
  if (!(l2Eps.getValueAsDouble() > 0))
    return emitError() << "kda_prepare l2_eps must be positive";
  if (decodeMaxTokens < 1)
    return emitError() << "kda_prepare decode_max_tokens must be >= 1, got "
                       << decodeMaxTokens;
  return success();
}

LogicalResult
KdaOutputAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      FloatAttr normEps, int64_t decodeMaxTokens) {
  if (!normEps || !normEps.getValue().isFinite() ||
      !(normEps.getValueAsDouble() > 0))
    return emitError() << "kda_output norm_eps must be finite and positive";
  if (decodeMaxTokens < 1)
    return emitError() << "kda_output decode_max_tokens must be >= 1, got "
                       << decodeMaxTokens;
  return success();
}

LogicalResult
GroupQuantizeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t block) {
  if (block < 1)
    return emitError() << "group_quantize block must be >= 1, got " << block;
  return success();
}

LogicalResult MhcMixAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t slices) {
  if (slices < 1)
    return emitError() << "mhc_mix slices must be >= 1, got " << slices;
  return success();
}

LogicalResult
MoeSelectAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      int64_t experts, int64_t groups, int64_t topK, bool,
                      FloatAttr, FloatAttr) {
  if (topK < 1 || topK > experts)
    return emitError() << "moe_select top_k must be in [1, " << experts
                       << "], got " << topK;
  if (groups < 1 || experts % groups != 0)
    return emitError() << "moe_select groups must divide the " << experts
                       << " experts, got " << groups;
  return success();
}

LogicalResult MoeGroupAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t experts, int64_t topK) {
  if (topK < 1 || topK > experts)
    return emitError() << "moe_group top_k must be in [1, " << experts
                       << "], got " << topK;
  return success();
}

LogicalResult MhcPreAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t hcMult, int64_t sinkhornIters,
                                 FloatAttr, FloatAttr, FloatAttr, FloatAttr) {
  if (hcMult < 1 || sinkhornIters < 0)
    return emitError() << "mhc_pre needs hc_mult >= 1 and sinkhorn_iters >= "
                          "0, got "
                       << hcMult << " and " << sinkhornIters;
  return success();
}

LogicalResult
LinearEpilogueAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           LinearEpilogueKind, int64_t hcMult) {
  if (hcMult < 1)
    return emitError() << "linear_epilogue hc_mult must be >= 1, got "
                       << hcMult;
  return success();
}

LogicalResult
GroupedExpertsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           GroupedExpertsKind, int64_t topK, int64_t experts,
                           int64_t minSlots, FloatAttr, int64_t rankExperts) {
  if (topK < 1 || topK > experts)
    return emitError() << "grouped_experts top_k must be in [1, " << experts
                       << "], got " << topK;
  if (minSlots < 1)
    return emitError() << "grouped_experts min_slots must be >= 1, got "
                       << minSlots;
  if (rankExperts < 0 || (rankExperts && experts % rankExperts != 0))
    return emitError() << "grouped_experts rank_experts must divide the "
                       << experts << " experts, got " << rankExperts;
  return success();
}

LogicalResult
HeadBatchedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        int64_t heads, int64_t rowOffset, int64_t rowStride,
                        bool) {
  if (heads < 1 || rowOffset < 0 || rowStride < 0)
    return emitError() << "head_batched needs heads >= 1 and a non-negative "
                          "weight_row_offset and weight_row_stride, got "
                       << heads << ", " << rowOffset << " and " << rowStride;
  return success();
}

LogicalResult
DenseMatmulAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        DenseEpilogue epilogue, int64_t minRows,
                        FloatAttr swigluLimit, int64_t topK, int64_t hcMult,
                        HeadBatchedAttr headBatched) {
  if (minRows < 0 || topK < 0 || hcMult < 0)
    return emitError() << "dense_matmul min_rows, top_k and hc_mult must be "
                          "positive where given";
  if ((epilogue == DenseEpilogue::Swiglu) != bool(swigluLimit))
    return emitError() << "dense_matmul takes swiglu_limit exactly with the "
                          "swiglu epilogue";
  if ((epilogue == DenseEpilogue::AddSlotSum) != (topK > 0))
    return emitError() << "dense_matmul takes top_k exactly with the "
                          "add_slot_sum epilogue";
  if (headBatched && (epilogue != DenseEpilogue::Store || hcMult))
    return emitError() << "dense_matmul's head-batched form stores its "
                          "products (store epilogue, no hc_mult)";
  return success();
}

namespace {

/// A kernel function's parameters (`llm.<mnemonic>`): an `AttrT`, on a
/// function that has a kernel contract.
template <typename AttrT>
LogicalResult verifyKernelParameters(Operation *op, NamedAttribute attribute) {
  if (!isa<AttrT>(attribute.getValue()))
    return op->emitOpError()
           << attribute.getName().getValue() << " must be a #llm."
           << AttrT::getMnemonic() << ", got " << attribute.getValue();
  if (!op->hasAttr("llm.kernel"))
    return op->emitOpError() << attribute.getName().getValue()
                             << " is only valid on an llm.kernel function";
  return success();
}

/// verifyKernelParameters of the first of `AttrTs` whose `llm.<mnemonic>`
/// names `attribute`; std::nullopt when none does.
template <typename... AttrTs>
std::optional<LogicalResult>
verifyAnyKernelParameters(Operation *op, NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (!name.consume_front("llm."))
    return std::nullopt;
  std::optional<LogicalResult> result;
  ((!result && name == AttrTs::getMnemonic()
        ? (void)(result = verifyKernelParameters<AttrTs>(op, attribute))
        : (void)0),
   ...);
  return result;
}

} // namespace

LogicalResult LLMDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == "llm.kernel") {
    auto kernel = dyn_cast<KernelAttr>(attribute.getValue());
    if (!kernel)
      return op->emitOpError("llm.kernel must be a #llm.kernel, got ")
             << attribute.getValue();
    return verifyKernelContract(op, kernel);
  }
  if (std::optional<LogicalResult> parameters = verifyAnyKernelParameters<
          MlaAttendAttr, KpoolScoresAttr, KpoolSelectAttr, KdaChunkAttr,
          KdaDecodeAttr, KdaPrepareAttr, KdaOutputAttr, GroupQuantizeAttr,
          MoeSelectAttr, MoeGroupAttr, MhcPreAttr, LinearEpilogueAttr,
          MhcMixAttr, GroupedExpertsAttr, DenseMatmulAttr>(op, attribute))
    return *parameters;
  if (name == "llm.gpu_strategy") {
    if (!isa<GpuStrategyAttr>(attribute.getValue()))
      return op->emitOpError("llm.gpu_strategy must be a #llm.gpu_strategy, "
                             "got ")
             << attribute.getValue();
    if (!op->hasAttr("llm.kernel"))
      return op->emitOpError(
          "llm.gpu_strategy is only valid on an llm.kernel function");
  }
  return success();
}
