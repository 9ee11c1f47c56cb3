//===- KernelPlan.cpp - the ordered kernel calls of a step ----------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToKernel/KernelPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Where a memref value's storage comes from.
struct Root {
  PlanBinding::Kind kind;
  unsigned index;
};

class PlanBuilder {
public:
  explicit PlanBuilder(func::FuncOp step) : step(step) {}

  FailureOr<KernelPlan> run() {
    for (BlockArgument arg : step.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type)
        return step.emitError("step argument ")
               << arg.getArgNumber() << " is not a memref";
      if (auto cacheType = step.getArgAttrOfType<TypeAttr>(
              arg.getArgNumber(), kCacheTypeAttrName)) {
        roots[arg] = {PlanBinding::Kind::Cache,
                      static_cast<unsigned>(plan.caches.size())};
        plan.caches.push_back(
            {static_cast<int>(arg.getArgNumber()), cacheType.getValue(), type});
        continue;
      }
      PlanBuffer buffer;
      buffer.name = "arg" + std::to_string(arg.getArgNumber());
      buffer.role = PlanBuffer::Role::Input;
      buffer.elementType = type.getElementType();
      buffer.argument = arg.getArgNumber();
      for (int64_t d = 0; d < type.getRank(); ++d)
        buffer.shape.push_back(type.isDynamicDim(d)
                                   ? PlanExtent{0, buffer.argument, d}
                                   : PlanExtent{type.getDimSize(d), -1, 0});
      roots[arg] = addBuffer(std::move(buffer));
    }
    for (Operation &op : step.getBody().front()) {
      if (failed(visit(&op)))
        return failure();
    }
    return plan;
  }

private:
  Root addBuffer(PlanBuffer buffer) {
    plan.buffers.push_back(std::move(buffer));
    return {PlanBinding::Kind::Buffer,
            static_cast<unsigned>(plan.buffers.size() - 1)};
  }

  /// The extent `index` (an index value) as a plan extent.
  FailureOr<PlanExtent> extent(Value index) {
    if (auto cst = index.getDefiningOp<arith::ConstantIndexOp>())
      return PlanExtent{cst.value(), -1, 0};
    if (auto dim = index.getDefiningOp<memref::DimOp>()) {
      std::optional<int64_t> d = dim.getConstantIndex();
      if (!d)
        return failure();
      return extentOf(dim.getSource(), *d);
    }
    return failure();
  }

  /// Extent `d` of memref value `v`.
  FailureOr<PlanExtent> extentOf(Value v, int64_t d) {
    auto type = cast<MemRefType>(v.getType());
    if (!type.isDynamicDim(d))
      return PlanExtent{type.getDimSize(d), -1, 0};
    auto it = extents.find(v);
    if (it != extents.end())
      return it->second[d];
    if (auto arg = dyn_cast<BlockArgument>(v))
      return PlanExtent{0, static_cast<int>(arg.getArgNumber()), d};
    return failure();
  }

  FailureOr<std::vector<PlanExtent>> shapeOf(Value v) {
    std::vector<PlanExtent> shape;
    for (int64_t d = 0; d < cast<MemRefType>(v.getType()).getRank(); ++d) {
      FailureOr<PlanExtent> e = extentOf(v, d);
      if (failed(e))
        return failure();
      shape.push_back(*e);
    }
    return shape;
  }

  LogicalResult visit(Operation *op) {
    if (isa<arith::ConstantOp, memref::DimOp, memref::DeallocOp>(op))
      return success();
    if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
      StringRef name = global.getName();
      auto [it, inserted] =
          weightIndex.try_emplace(name, plan.weights.size());
      if (inserted)
        plan.weights.push_back(name.str());
      roots[global] = {PlanBinding::Kind::Weight, it->second};
      return success();
    }
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      PlanBuffer buffer;
      buffer.name = "buf" + std::to_string(plan.buffers.size());
      buffer.elementType = alloc.getType().getElementType();
      std::vector<PlanExtent> shape;
      unsigned dyn = 0;
      for (int64_t d = 0; d < alloc.getType().getRank(); ++d) {
        if (!alloc.getType().isDynamicDim(d)) {
          shape.push_back({alloc.getType().getDimSize(d), -1, 0});
          continue;
        }
        FailureOr<PlanExtent> e = extent(alloc.getDynamicSizes()[dyn++]);
        if (failed(e))
          return alloc.emitError("allocation size is not an extent of a step input");
        shape.push_back(*e);
      }
      buffer.shape = shape;
      extents[alloc] = shape;
      roots[alloc] = addBuffer(std::move(buffer));
      return success();
    }
    if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp, memref::CastOp>(op)) {
      Value source = op->getOperand(0);
      auto it = roots.find(source);
      if (it == roots.end())
        return op->emitError("view of an unknown buffer");
      roots[op->getResult(0)] = it->second;
      auto type = cast<MemRefType>(op->getResult(0).getType());
      if (type.hasStaticShape())
        return success();
      FailureOr<std::vector<PlanExtent>> source_shape = shapeOf(source);
      if (failed(source_shape))
        return op->emitError("unknown extent of a view source");
      if (isa<memref::CastOp>(op)) {
        extents[op->getResult(0)] = *source_shape;
        return success();
      }
      // Reshapes: a dynamic extent must be the only non-unit extent of its
      // reassociation group on both sides (e.g. [?, 8192] <-> [?, 64, 128]).
      auto expand = dyn_cast<memref::ExpandShapeOp>(op);
      SmallVector<ReassociationIndices> groups =
          expand ? expand.getReassociationIndices()
                 : cast<memref::CollapseShapeOp>(op).getReassociationIndices();
      auto srcType = cast<MemRefType>(source.getType());
      std::vector<PlanExtent> shape(type.getRank());
      for (auto [g, group] : llvm::enumerate(groups)) {
        for (int64_t d : group) {
          int64_t outDim = expand ? d : static_cast<int64_t>(g);
          int64_t inDim = expand ? static_cast<int64_t>(g) : d;
          MemRefType wide = expand ? type : srcType;
          int64_t staticRest = 1;
          for (int64_t o : group)
            if (o != d)
              staticRest *= wide.isDynamicDim(o) ? -1 : wide.getDimSize(o);
          if (expand ? !type.isDynamicDim(d) : !srcType.isDynamicDim(d)) {
            if (expand)
              shape[d] = {type.getDimSize(d), -1, 0};
            continue;
          }
          if (staticRest != 1)
            return op->emitError("dynamic reshape that splits an extent");
          shape[outDim] = (*source_shape)[inDim];
        }
        if (!expand && !type.isDynamicDim(g))
          shape[g] = {type.getDimSize(g), -1, 0};
      }
      extents[op->getResult(0)] = shape;
      return success();
    }
    if (auto call = dyn_cast<func::CallOp>(op))
      return visitCall(call);
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto it = roots.find(v);
        if (it != roots.end() && it->second.kind == PlanBinding::Kind::Buffer &&
            plan.buffers[it->second.index].role ==
                PlanBuffer::Role::Activation) {
          plan.buffers[it->second.index].role = PlanBuffer::Role::Output;
          plan.buffers[it->second.index].result = i;
        }
      }
      return success();
    }
    return op->emitError("op outside a kernel in a step function: ")
           << op->getName();
  }

  LogicalResult visitCall(func::CallOp call) {
    auto module = step->getParentOfType<ModuleOp>();
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    if (callee && callee->hasAttr(kRankCoordinateAttrName)) {
      unsigned group = static_cast<unsigned>(
          cast<llm::RankGroupAttr>(callee->getAttr(kRankCoordinateAttrName))
              .getValue());
      roots[call.getResult(0)] = {PlanBinding::Kind::RankCoordinate, group};
      return success();
    }
    auto collective = callee ? callee->getAttrOfType<DictionaryAttr>(
                                   kCollectiveAttrName)
                             : DictionaryAttr();
    if (!callee || (!callee->hasAttr(kKernelAttrName) && !collective))
      return call.emitError("call of '") << call.getCallee()
                                         << "' which is not a kernel";
    PlanDispatch dispatch;
    dispatch.kernel = call.getCallee().str();
    std::string label;
    llvm::raw_string_ostream os(label);
    os << dispatch.kernel << " @ " << call.getLoc();
    dispatch.label = label;
    if (auto min = callee->getAttrOfType<IntegerAttr>(
            kMinRequestTokensAttrName))
      dispatch.minRequestTokens = min.getInt();
    if (collective) {
      PlanCollective c;
      c.kind = cast<StringAttr>(collective.get("kind")).getValue().str();
      c.group = static_cast<unsigned>(
          cast<llm::RankGroupAttr>(collective.get("group")).getValue());
      c.dim = cast<IntegerAttr>(collective.get("dim")).getInt();
      c.elementType =
          cast<MemRefType>(call.getOperand(0).getType()).getElementType();
      dispatch.collective = c;
    }
    for (Value operand : call.getOperands()) {
      auto it = roots.find(operand);
      if (it == roots.end())
        return call.emitError("kernel operand of unknown origin");
      if (it->second.kind == PlanBinding::Kind::RankCoordinate) {
        dispatch.bindings.push_back({it->second.kind, it->second.index, {}});
        continue;
      }
      FailureOr<std::vector<PlanExtent>> shape = shapeOf(operand);
      if (failed(shape))
        return call.emitError("kernel operand with an unknown extent");
      dispatch.bindings.push_back({it->second.kind, it->second.index, *shape});
    }
    plan.dispatches.push_back(std::move(dispatch));
    return success();
  }

  func::FuncOp step;
  KernelPlan plan;
  llvm::DenseMap<Value, Root> roots;
  llvm::DenseMap<Value, std::vector<PlanExtent>> extents;
  llvm::StringMap<unsigned> weightIndex;
};

void printExtents(llvm::raw_ostream &os, const std::vector<PlanExtent> &shape) {
  os << "[";
  llvm::interleaveComma(shape, os, [&](const PlanExtent &e) {
    if (e.input < 0)
      os << e.value;
    else
      os << "arg" << e.input << "." << e.dim;
  });
  os << "]";
}

} // namespace

FailureOr<KernelPlan> mlir::strata::extractKernelPlan(func::FuncOp step) {
  return PlanBuilder(step).run();
}

void KernelPlan::print(llvm::raw_ostream &os) const {
  static const char *roles[] = {"input", "output", "activation"};
  for (auto [i, b] : llvm::enumerate(buffers)) {
    os << "buffer " << i << " " << b.name << " " << roles[static_cast<int>(b.role)]
       << " " << b.elementType << " ";
    printExtents(os, b.shape);
    os << "\n";
  }
  for (auto [i, w] : llvm::enumerate(weights))
    os << "weight " << i << " " << w << "\n";
  for (auto [i, c] : llvm::enumerate(caches))
    os << "cache " << i << " arg" << c.argument << " " << c.llmType << " as "
       << c.bufferType << "\n";
  static const char *kinds[] = {"buffer", "weight", "cache", "rank"};
  for (const PlanDispatch &d : dispatches) {
    os << "dispatch " << d.kernel;
    if (d.collective)
      os << " collective " << d.collective->kind << " group "
         << d.collective->group << " dim " << d.collective->dim;
    os << "(";
    llvm::interleaveComma(d.bindings, os, [&](const PlanBinding &b) {
      os << kinds[static_cast<int>(b.kind)] << " " << b.index;
      printExtents(os, b.shape);
    });
    os << ")\n";
  }
}
