//===- KernelBuilder.cpp - shared helpers of the llm kernel lowering ------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToKernel/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"

using namespace mlir;
using namespace mlir::strata;

//===----------------------------------------------------------------------===//
// KernelBuilder
//===----------------------------------------------------------------------===//

Value KernelBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value KernelBuilder::i32(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
}
Value KernelBuilder::dim(Value m, int64_t d) {
  return memref::DimOp::create(b, loc, m, d);
}

void KernelBuilder::loop(Value lb, Value ub,
                         llvm::function_ref<void(Value)> body) {
  auto forOp = scf::ForOp::create(b, loc, lb, ub, idx(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  body(forOp.getInductionVar());
}

Operation *KernelBuilder::parallel(ValueRange lbs, ValueRange ubs,
                                   llvm::function_ref<void(ValueRange)> body) {
  SmallVector<Value> steps(lbs.size(), idx(1));
  auto par = scf::ParallelOp::create(b, loc, lbs, ubs, steps);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(par.getBody()->getTerminator());
  body(par.getInductionVars());
  return par;
}

void KernelBuilder::parallelRows(ValueRange lbs, ValueRange ubs,
                                 llvm::function_ref<void(ValueRange)> body) {
  parallel(lbs, ubs, body)->setAttr(kThreadsWithinRowAttrName,
                                    b.getUnitAttr());
}

SmallVector<Value> KernelBuilder::loopCarry(
    Value lb, Value ub, ValueRange inits,
    llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, loc, lb, ub, idx(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(forOp.getBody());
    SmallVector<Value> next =
        body(forOp.getInductionVar(), forOp.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
  }
  return SmallVector<Value>(forOp.getResults());
}

Value KernelBuilder::reduce(Value lb, Value ub, Value init,
                            llvm::function_ref<Value(Value, Value)> body) {
  return loopCarry(lb, ub, init,
                   [&](Value iv, ValueRange acc) -> SmallVector<Value> {
                     return {body(iv, acc[0])};
                   })[0];
}

void KernelBuilder::ifThen(Value cond, llvm::function_ref<void()> then) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
}

Value KernelBuilder::ifElse(Value cond, Type type,
                            llvm::function_ref<Value()> then,
                            llvm::function_ref<Value()> other) {
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{type}, cond,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, then());
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, other());
  return ifOp.getResult(0);
}

Value KernelBuilder::decodeFp8(Value v) {
  // e4m3fn: s eeee mmm, bias 7; subnormals m * 2^-9.
  Type i32Ty = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, loc, b.getI8Type(), v);
  Value u = arith::ExtUIOp::create(b, loc, i32Ty, bits);
  Value e = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, u, i32(3)), i32(15));
  Value m = arith::AndIOp::create(b, loc, u, i32(7));
  Value normalBits = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(b, loc, arith::AddIOp::create(b, loc, e, i32(120)),
                            i32(23)),
      arith::ShLIOp::create(b, loc, m, i32(20)));
  Value normal = arith::BitcastOp::create(b, loc, b.getF32Type(), normalBits);
  Value subnormal =
      mul(arith::UIToFPOp::create(b, loc, b.getF32Type(), m), f32(1.0 / 512));
  Value isSub = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, e,
                                      i32(0));
  Value mag = select(isSub, subnormal, normal);
  Value sign = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, u,
                                     i32(128));
  return select(sign, neg(mag), mag);
}

Value KernelBuilder::load(Value m, ValueRange indices) {
  Value v = memref::LoadOp::create(b, loc, m, indices);
  Type t = v.getType();
  if (t.isF32())
    return v;
  if (isa<Float8E4M3FNType>(t))
    return decodeFp8(v);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

Value KernelBuilder::loadIndex(Value m, ValueRange indices) {
  Value v = memref::LoadOp::create(b, loc, m, indices);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

void KernelBuilder::store(Value v, Value m, ValueRange indices) {
  Type elementType = cast<MemRefType>(m.getType()).getElementType();
  if (!elementType.isF32())
    v = arith::TruncFOp::create(b, loc, elementType, v);
  memref::StoreOp::create(b, loc, v, m, indices);
}

void KernelBuilder::storeIndex(Value v, Value m, ValueRange indices) {
  Type elementType = cast<MemRefType>(m.getType()).getElementType();
  memref::StoreOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, elementType, v), m, indices);
}

Value KernelBuilder::sum(int64_t lb, int64_t ub, Type actType,
                         llvm::function_ref<Value(Value)> term) {
  Type acc = dotAccumulatorType(actType);
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(acc, 0.0));
  auto widen = [&](Value v) -> Value {
    return v.getType() == acc ? v : arith::ExtFOp::create(b, loc, acc, v);
  };
  Value total = reduce(lb, ub, zero, [&](Value i, Value running) {
    return add(running, widen(term(i)));
  });
  return round(total, b.getF32Type());
}

Value KernelBuilder::dot(
    int64_t lb, int64_t ub, Type actType,
    llvm::function_ref<std::pair<Value, Value>(Value)> factors) {
  Type acc = dotAccumulatorType(actType);
  auto widen = [&](Value v) -> Value {
    return v.getType() == acc ? v : arith::ExtFOp::create(b, loc, acc, v);
  };
  return sum(lb, ub, actType, [&](Value i) {
    auto [x, y] = factors(i);
    return mul(widen(x), widen(y));
  });
}

Value KernelBuilder::round(Value v, Type elementType) {
  if (v.getType().isF64())
    v = arith::TruncFOp::create(b, loc, b.getF32Type(), v);
  if (elementType.isF32())
    return v;
  Value t = arith::TruncFOp::create(b, loc, elementType, v);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), t);
}

Value KernelBuilder::add(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}
Value KernelBuilder::sub(Value a, Value c) {
  return arith::SubFOp::create(b, loc, a, c);
}
Value KernelBuilder::mul(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}
Value KernelBuilder::div(Value a, Value c) {
  return arith::DivFOp::create(b, loc, a, c);
}
Value KernelBuilder::neg(Value a) { return arith::NegFOp::create(b, loc, a); }
Value KernelBuilder::max(Value a, Value c) {
  return arith::MaximumFOp::create(b, loc, a, c);
}
Value KernelBuilder::min(Value a, Value c) {
  return arith::MinimumFOp::create(b, loc, a, c);
}
Value KernelBuilder::exp(Value a) { return math::ExpOp::create(b, loc, a); }
Value KernelBuilder::sqrt(Value a) { return math::SqrtOp::create(b, loc, a); }
Value KernelBuilder::rsqrt(Value a) { return div(f32(1.0), sqrt(a)); }
Value KernelBuilder::sigmoid(Value a) {
  return div(f32(1.0), add(f32(1.0), exp(neg(a))));
}
Value KernelBuilder::silu(Value a) { return mul(a, sigmoid(a)); }
Value KernelBuilder::gt(Value a, Value c) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a, c);
}
Value KernelBuilder::lt(Value a, Value c) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, a, c);
}
Value KernelBuilder::select(Value cond, Value a, Value c) {
  return arith::SelectOp::create(b, loc, cond, a, c);
}

Value KernelBuilder::iadd(Value a, Value c) {
  return arith::AddIOp::create(b, loc, a, c);
}
Value KernelBuilder::isub(Value a, Value c) {
  return arith::SubIOp::create(b, loc, a, c);
}
Value KernelBuilder::imul(Value a, Value c) {
  return arith::MulIOp::create(b, loc, a, c);
}
Value KernelBuilder::idiv(Value a, Value c) {
  return arith::DivUIOp::create(b, loc, a, c);
}
Value KernelBuilder::irem(Value a, Value c) {
  return arith::RemUIOp::create(b, loc, a, c);
}
Value KernelBuilder::imin(Value a, Value c) {
  return arith::MinSIOp::create(b, loc, a, c);
}
Value KernelBuilder::imax(Value a, Value c) {
  return arith::MaxSIOp::create(b, loc, a, c);
}
Value KernelBuilder::ieq(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a, c);
}
Value KernelBuilder::ine(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, a, c);
}
Value KernelBuilder::ilt(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, c);
}
Value KernelBuilder::ige(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, a, c);
}
Value KernelBuilder::rowsIfStepSize(Value rows, Value size, int64_t threshold,
                                    bool atLeast) {
  Value reached = ige(size, idx(threshold));
  return atLeast ? select(reached, rows, idx(0))
                 : select(reached, idx(0), rows);
}
Value KernelBuilder::andi(Value a, Value c) {
  return arith::AndIOp::create(b, loc, a, c);
}
Value KernelBuilder::toF32(Value indexValue) {
  Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), indexValue);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i);
}

Value KernelBuilder::scratch(ArrayRef<int64_t> shape, ValueRange dynamicSizes,
                             Type elementType) {
  if (!elementType)
    elementType = b.getF32Type();
  auto type = MemRefType::get(shape, elementType);
  Value m = memref::AllocOp::create(b, loc, type, dynamicSizes);
  Value zero =
      arith::ConstantOp::create(b, loc, b.getFloatAttr(elementType, 0.0));
  linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{m});
  return m;
}

void KernelBuilder::dealloc(Value m) { memref::DeallocOp::create(b, loc, m); }

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type mlir::strata::dotAccumulatorType(Type actType) {
  Builder b(actType.getContext());
  return actType.isF32() ? Type(b.getF64Type()) : Type(b.getF32Type());
}

MemRefType mlir::strata::getKernelMemRefType(Type type) {
  constexpr int64_t kDyn = ShapedType::kDynamic;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  if (std::optional<Fp8PageLayout> fp8 = getFp8PageLayout(type))
    return MemRefType::get({kDyn, fp8->pageBytes},
                           IntegerType::get(type.getContext(), 8));
  if (auto pool = dyn_cast<llm::LatentPoolType>(type))
    return MemRefType::get(
        {kDyn, pool.getPageSize(), pool.getWidth() + pool.getPad()},
        pool.getElementType());
  if (auto pool = dyn_cast<llm::IndexPoolType>(type))
    return MemRefType::get({kDyn, pool.getRowsPerPage(), pool.getWidth()},
                           pool.getElementType());
  if (auto ring = dyn_cast<llm::TailRingType>(type))
    return MemRefType::get({kDyn, 2, ring.getDepth(), ring.getWidth()},
                           ring.getElementType());
  if (auto state = dyn_cast<llm::KdaStateType>(type))
    return MemRefType::get(
        {kDyn, state.getHeads(), state.getKeyDim(), state.getValueDim()},
        state.getElementType());
  if (auto conv = dyn_cast<llm::ConvStateType>(type))
    return MemRefType::get({kDyn, conv.getWidth(), conv.getChannels()},
                           conv.getElementType());
  if (auto shared = dyn_cast<llm::SharedSelectionType>(type))
    return MemRefType::get({kDyn, shared.getRows(),
                            llm::SharedSelectionType::kSelectionColumn +
                                shared.getWidth()},
                           IntegerType::get(type.getContext(), 32));
  return nullptr;
}

void mlir::strata::populateKernelTypeConversions(TypeConverter &converter) {
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](Type type) -> std::optional<Type> {
    if (isa<RankedTensorType, llm::LatentPoolType, llm::IndexPoolType,
            llm::TailRingType, llm::KdaStateType, llm::ConvStateType,
            llm::SharedSelectionType>(type))
      return getKernelMemRefType(type);
    return std::nullopt;
  });
  // Tensor <-> memref bridges are bufferization casts, so one-shot-bufferize
  // folds them; everything else (caches) meets reconcile-unrealized-casts.
  converter.addTargetMaterialization([](OpBuilder &b, Type type,
                                        ValueRange inputs,
                                        Location loc) -> Value {
    if (inputs.size() != 1)
      return Value();
    if (isa<RankedTensorType>(inputs[0].getType()) && isa<MemRefType>(type))
      return bufferization::ToBufferOp::create(b, loc, type, inputs[0],
                                               /*readOnly=*/true);
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  });
  converter.addSourceMaterialization([](OpBuilder &b, Type type,
                                        ValueRange inputs,
                                        Location loc) -> Value {
    if (inputs.size() != 1)
      return Value();
    if (isa<RankedTensorType>(type) && isa<MemRefType>(inputs[0].getType()))
      return bufferization::ToTensorOp::create(b, loc, type, inputs[0],
                                               /*restrict=*/true,
                                               /*writable=*/true);
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  });
}

//===----------------------------------------------------------------------===//
// Outlining
//===----------------------------------------------------------------------===//

func::FuncOp mlir::strata::getOrCreateKernel(
    RewriterBase &rewriter, Operation *op, StringRef name, TypeRange argTypes,
    llvm::function_ref<void(KernelBuilder &, ValueRange)> body,
    ArrayRef<llm::KernelRole> roles) {
  auto module = op->getParentOfType<ModuleOp>();
  std::string key;
  {
    llvm::raw_string_ostream os(key);
    // Inherent attributes (including operand segment sizes) are properties.
    os << op->getName();
    if (Attribute properties = op->getPropertiesAsAttribute())
      os << " " << properties;
    if (!op->getDiscardableAttrDictionary().empty())
      os << " " << op->getDiscardableAttrDictionary();
    os << " (";
    llvm::interleaveComma(argTypes, os);
    // One op may lower to several kernels (moe_ffn's router, selection,
    // experts...): the kernel's name tells them apart.
    os << ") " << name;
  }
  for (auto func : module.getOps<func::FuncOp>())
    if (auto attr = func->getAttrOfType<llm::KernelAttr>(kKernelAttrName))
      if (attr.getKey() == key)
        return func;

  // Unique name: <name>_<n>.
  SymbolTable symbols(module);
  std::string symbol;
  for (unsigned n = 0;; ++n) {
    symbol = (name + "_" + Twine(n)).str();
    if (!symbols.lookup(symbol))
      break;
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  Location loc = op->getLoc();
  auto func = func::FuncOp::create(rewriter, loc, symbol,
                                   rewriter.getFunctionType(argTypes, {}));
  func->setAttr(kKernelAttrName,
                llm::KernelAttr::get(rewriter.getContext(), key, roles));
  Block *entry = func.addEntryBlock();
  rewriter.setInsertionPointToStart(entry);
  KernelBuilder kb(rewriter, loc);
  body(kb, entry->getArguments());
  func::ReturnOp::create(rewriter, loc);
  return func;
}

SmallVector<Value> mlir::strata::emitKernelCall(
    RewriterBase &rewriter, Location loc, func::FuncOp kernel,
    ValueRange inputs, ArrayRef<MemRefType> resultTypes,
    ArrayRef<SmallVector<Value>> dynamicSizes) {
  SmallVector<Value> results;
  for (auto [type, sizes] : llvm::zip_equal(resultTypes, dynamicSizes))
    results.push_back(memref::AllocOp::create(rewriter, loc, type, sizes));
  SmallVector<Value> operands(inputs);
  llvm::append_range(operands, results);
  func::CallOp::create(rewriter, loc, kernel, operands);
  return results;
}

Value mlir::strata::getDimValue(OpBuilder &b, Location loc, Value m,
                                int64_t d) {
  return memref::DimOp::create(b, loc, m, d);
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// Name of the scale tensor of fp8 weight `name` (llm.weight's rule:
/// `...weight` -> `...weight_scale_inv`, any other name -> `<name>_scale_inv`,
/// which is the same suffix).
static std::string scaleNameOf(StringRef name) {
  return (name + "_scale_inv").str();
}

/// `memref.get_global` of the global called `name` with `type`, declaring an
/// external global when the module has none of that name.
Value mlir::strata::getWeightGlobal(RewriterBase &rewriter, Location loc,
                             ModuleOp module, StringRef name,
                             MemRefType type) {
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(rewriter, loc, name,
                             /*sym_visibility=*/StringAttr(), type,
                             /*initial_value=*/Attribute(),
                             /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(rewriter, loc, type, name);
}

FailureOr<SmallVector<Value>>
mlir::strata::getWeightBuffers(RewriterBase &rewriter, Location loc,
                               Value original, Value converted) {
  auto fp8 = dyn_cast<llm::Fp8WeightType>(original.getType());
  if (!fp8)
    return SmallVector<Value>{converted};
  StringRef name;
  ArrayAttr shards;
  if (auto weight = original.getDefiningOp<llm::WeightOp>()) {
    name = weight.getName();
    shards = weight.getShardsAttr();
  } else if (auto experts = original.getDefiningOp<llm::ExpertWeightsOp>()) {
    name = experts.getPattern();
    shards = experts.getShardsAttr();
  } else {
    return failure();
  }
  auto module = original.getDefiningOp()->getParentOfType<ModuleOp>();
  std::string scaleName = scaleNameOf(name);
  Value data = getWeightGlobal(rewriter, loc, module, name,
                               getKernelMemRefType(fp8.getWeight()));
  Value scales = getWeightGlobal(rewriter, loc, module, scaleName,
                                 getKernelMemRefType(fp8.getScales()));
  if (shards) {
    // The rank's slices of both tensors: the scales follow the data's
    // blocks (the emitter writes block-scale splits).
    ArrayRef<int64_t> shape = fp8.getWeight().getShape();
    SmallVector<int64_t> blocks(shape.size(), 1);
    blocks[shape.size() - 2] = fp8.getBlockRows();
    blocks[shape.size() - 1] = fp8.getBlockCols();
    module.lookupSymbol<memref::GlobalOp>(name)->setAttr(kWeightShardsAttrName,
                                                         shards);
    Operation *scaleGlobal = module.lookupSymbol(scaleName);
    scaleGlobal->setAttr(kWeightShardsAttrName, shards);
    scaleGlobal->setAttr(kWeightScaleBlocksAttrName,
                         rewriter.getDenseI64ArrayAttr(blocks));
    scaleGlobal->setAttr(kWeightScaleDataShapeAttrName,
                         rewriter.getDenseI64ArrayAttr(shape));
  }
  return SmallVector<Value>{data, scales};
}

SmallVector<Type> mlir::strata::getWeightArgTypes(Type type) {
  if (auto fp8 = dyn_cast<llm::Fp8WeightType>(type))
    return {getKernelMemRefType(fp8.getWeight()),
            getKernelMemRefType(fp8.getScales())};
  return {getKernelMemRefType(type)};
}

WeightView mlir::strata::makeWeightView(Type type, ValueRange args) {
  WeightView view;
  view.data = args[0];
  if (auto fp8 = dyn_cast<llm::Fp8WeightType>(type)) {
    view.scales = args[1];
    view.blockRows = fp8.getBlockRows();
    view.blockCols = fp8.getBlockCols();
  }
  return view;
}

Value WeightView::load(KernelBuilder &kb, ValueRange indices) const {
  Value w = kb.load(data, indices);
  if (!scales)
    return w;
  SmallVector<Value> scaleIndices(indices);
  size_t n = scaleIndices.size();
  scaleIndices[n - 2] = kb.idiv(scaleIndices[n - 2], kb.idx(blockRows));
  scaleIndices[n - 1] = kb.idiv(scaleIndices[n - 1], kb.idx(blockCols));
  return kb.mul(w, kb.load(scales, scaleIndices));
}

FailureOr<unsigned> KernelCall::addMatmulWeight(RewriterBase &rewriter,
                                                Location loc, Value original,
                                                Value converted) {
  FailureOr<unsigned> first =
      addWeight(rewriter, loc, original, converted, WeightRoles{});
  if (succeeded(first))
    if (auto fp8 = dyn_cast<llm::Fp8WeightType>(original.getType()))
      attributes.push_back(rewriter.getNamedAttr(
          kWeightBlockAttrName,
          rewriter.getDenseI64ArrayAttr(
              {fp8.getBlockRows(), fp8.getBlockCols()})));
  return first;
}

void StreamWrite::emit(KernelBuilder &kb, Value t, Value c, Value y) const {
  kb.loop(0, hcMult, [&](Value j) {
    Value acc = kb.reduce(0, hcMult, kb.mul(kb.load(post, {t, j}), y),
                          [&](Value i, Value a) {
                            return kb.add(a, kb.mul(kb.load(comb, {t, i, j}),
                                                    kb.load(streams,
                                                            {t, i, c})));
                          });
    kb.store(acc, out, {t, j, c});
  });
}

void mlir::strata::forEachRow(
    KernelBuilder &kb, Value m, unsigned numDims,
    llvm::function_ref<void(SmallVector<Value>)> body) {
  std::function<void(unsigned, SmallVector<Value>)> nest =
      [&](unsigned d, SmallVector<Value> lead) {
        if (d == numDims) {
          body(lead);
          return;
        }
        kb.loop(kb.idx(0), kb.dim(m, d), [&](Value iv) {
          SmallVector<Value> next = lead;
          next.push_back(iv);
          nest(d + 1, next);
        });
      };
  nest(0, {});
}

SmallVector<Value> mlir::strata::dynamicSizesLike(OpBuilder &b, Location loc,
                                                  Value like,
                                                  MemRefType result) {
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < result.getRank(); ++d)
    if (result.isDynamicDim(d))
      sizes.push_back(memref::DimOp::create(b, loc, like, d));
  return sizes;
}

Value mlir::strata::emitRequestOfToken(OpBuilder &b, Location loc,
                                       Value seqStarts, Value t) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Invariant: seq_starts[lo] <= t (seq_starts[0] = 0) and hi = num_requests
  // or seq_starts[hi] > t.
  Value numRequests = arith::SubIOp::create(
      b, loc, memref::DimOp::create(b, loc, seqStarts, 0), idx(1));
  Type index = b.getIndexType();
  auto search = scf::WhileOp::create(
      b, loc, TypeRange{index, index}, ValueRange{idx(0), numRequests},
      [&](OpBuilder &nb, Location nl, ValueRange range) {
        Value width = arith::SubIOp::create(nb, nl, range[1], range[0]);
        Value open = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt,
                                           width, idx(1));
        scf::ConditionOp::create(nb, nl, open, range);
      },
      [&](OpBuilder &nb, Location nl, ValueRange range) {
        Value mid = arith::ShRUIOp::create(
            nb, nl, arith::AddIOp::create(nb, nl, range[0], range[1]),
            idx(1));
        Value begins = arith::IndexCastOp::create(
            nb, nl, index, memref::LoadOp::create(nb, nl, seqStarts, mid));
        Value started = arith::CmpIOp::create(
            nb, nl, arith::CmpIPredicate::ule, begins, t);
        scf::YieldOp::create(
            nb, nl,
            ValueRange{arith::SelectOp::create(nb, nl, started, mid, range[0]),
                       arith::SelectOp::create(nb, nl, started, range[1],
                                               mid)});
      });
  return search.getResult(0);
}

static Value requestOfToken(KernelBuilder &kb, Value seqStarts, Value t) {
  return emitRequestOfToken(kb.builder(), kb.getLoc(), seqStarts, t);
}

void mlir::strata::forEachTokenRow(
    KernelBuilder &kb, Value seqStarts, Value tokens,
    llvm::function_ref<void(Value, Value)> body) {
  kb.loop(kb.idx(0), kb.dim(tokens, 0), [&](Value t) {
    body(requestOfToken(kb, seqStarts, t), t);
  });
}

void mlir::strata::forEachTokenHeadRow(
    KernelBuilder &kb, Value seqStarts, Value tokens, int64_t perToken,
    llvm::function_ref<void(Value, Value, Value)> body, Value numTokens) {
  if (!numTokens)
    numTokens = kb.dim(tokens, 0);
  kb.parallelRows({kb.idx(0), kb.idx(0)},
                  {numTokens, kb.idx(perToken)}, [&](ValueRange th) {
    body(requestOfToken(kb, seqStarts, th[0]), th[0], th[1]);
  });
}

std::pair<Value, Value> mlir::strata::pagedRow(KernelBuilder &kb,
                                               Value blockTable, Value r,
                                               Value index,
                                               int64_t rowsPerPage) {
  Value rows = kb.idx(rowsPerPage);
  Value page = kb.loadIndex(blockTable, {r, kb.idiv(index, rows)});
  return {page, kb.irem(index, rows)};
}

//===----------------------------------------------------------------------===//
// fp8 paged pools (latent and index)
//===----------------------------------------------------------------------===//

Fp8PageLayout Fp8PageLayout::valuesThenScales(int64_t rowsPerPage,
                                              int64_t width) {
  Fp8PageLayout l;
  l.rowsPerPage = rowsPerPage;
  l.lanes = width;
  l.groupLanes = width;
  l.groups = 1;
  l.valueRowStride = width;
  l.scaleOffset = rowsPerPage * width;
  l.scaleRowStride = 4;
  l.pageBytes = llvm::alignTo(rowsPerPage * (width + 4), kCachePageAlignment);
  return l;
}

Fp8PageLayout Fp8PageLayout::rowInterleaved(int64_t rowsPerPage,
                                            int64_t width, int64_t pad) {
  Fp8PageLayout l;
  l.rowsPerPage = rowsPerPage;
  l.lanes = width + pad;
  l.groupLanes = 128;
  l.groups = llvm::divideCeil(width, 128);
  l.valueRowStride = l.rowBytes();
  l.scaleOffset = l.lanes;
  l.scaleRowStride = l.rowBytes();
  l.pageBytes = llvm::alignTo(rowsPerPage * l.rowBytes(), kCachePageAlignment);
  return l;
}

std::optional<Fp8PageLayout> mlir::strata::getFp8PageLayout(Type poolType) {
  if (auto pool = dyn_cast<llm::LatentPoolType>(poolType))
    if (isa<Float8E4M3FNType>(pool.getElementType()))
      return Fp8PageLayout::rowInterleaved(pool.getPageSize(), pool.getWidth(),
                                           pool.getPad());
  if (auto pool = dyn_cast<llm::IndexPoolType>(poolType))
    if (isa<Float8E4M3FNType>(pool.getElementType()))
      return Fp8PageLayout::valuesThenScales(pool.getRowsPerPage(),
                                             pool.getWidth());
  return std::nullopt;
}

PagedPoolAccess::PagedPoolAccess(Value buffer, Type poolType)
    : buffer(buffer), fp8(getFp8PageLayout(poolType)) {
  if (auto pool = dyn_cast<llm::LatentPoolType>(poolType)) {
    rowsPerPage = pool.getPageSize();
    width = pool.getWidth();
    pad = pool.getPad();
    indexPool = false;
    return;
  }
  auto pool = cast<llm::IndexPoolType>(poolType);
  rowsPerPage = pool.getRowsPerPage();
  width = pool.getWidth();
  pad = 0;
  indexPool = true;
}

/// The pool's bytes as one 1-D i8 memref (identity layout, as memref.view
/// requires).
static Value flatBytes(KernelBuilder &kb, Value buffer) {
  SmallVector<ReassociationIndices> all = {{0, 1}};
  return memref::CollapseShapeOp::create(kb.builder(), kb.getLoc(), buffer,
                                         all);
}

Value PagedPoolAccess::values(KernelBuilder &kb, Value page) const {
  auto type = MemRefType::get({rowsPerPage, fp8->valueRowStride},
                              Float8E4M3FNType::get(kb.builder().getContext()));
  return memref::ViewOp::create(kb.builder(), kb.getLoc(), type,
                                flatBytes(kb, buffer),
                                kb.imul(page, kb.idx(fp8->pageBytes)),
                                ValueRange{});
}

Value PagedPoolAccess::scales(KernelBuilder &kb, Value page) const {
  auto type = MemRefType::get({(fp8->pageBytes - fp8->scaleOffset) / 4},
                              kb.builder().getF32Type());
  Value shift = kb.iadd(kb.imul(page, kb.idx(fp8->pageBytes)),
                        kb.idx(fp8->scaleOffset));
  return memref::ViewOp::create(kb.builder(), kb.getLoc(), type,
                                flatBytes(kb, buffer), shift, ValueRange{});
}

Value PagedPoolAccess::scaleIndex(KernelBuilder &kb, Value row,
                                  Value group) const {
  return kb.iadd(kb.imul(row, kb.idx(fp8->scaleRowStride / 4)), group);
}

Value PagedPoolAccess::load(KernelBuilder &kb, Value page, Value row,
                            Value c) const {
  if (!fp8)
    return kb.load(buffer, {page, row, c});
  Value group = fp8->groups == 1 ? kb.idx(0)
                                 : kb.idiv(c, kb.idx(fp8->groupLanes));
  return kb.mul(kb.load(values(kb, page), {row, c}),
                kb.load(scales(kb, page), scaleIndex(kb, row, group)));
}

/// Stores e4m3(clamp(v / scale, -448, 448)) at values[row, c].
static void storeFp8(KernelBuilder &kb, Value v, Value scale, Value values,
                     Value row, Value c) {
  Value q = kb.max(kb.min(kb.div(v, scale), kb.f32(448.0)), kb.f32(-448.0));
  memref::StoreOp::create(kb.builder(), kb.getLoc(), encodeFp8(kb, q), values,
                          ValueRange{row, c});
}

void PagedPoolAccess::storeIndexRow(KernelBuilder &kb, Value page, Value row,
                                    Value vec, Value tmp) const {
  assert(indexPool && "storeIndexRow on a latent pool");
  if (!fp8) {
    kb.loop(0, width, [&](Value c) {
      kb.store(kb.load(vec, c), buffer, {page, row, c});
    });
    return;
  }
  Type bf16 = kb.builder().getBF16Type();
  // bf16 -> H -> bf16.
  kb.loop(0, width, [&](Value c) {
    kb.store(kb.round(kb.load(vec, c), bf16), vec, c);
  });
  buildHadamard(kb, vec, tmp, width);
  Value amax = kb.reduce(0, width, kb.f32(1e-4), [&](Value c, Value acc) {
    Value v = kb.round(kb.load(tmp, c), bf16);
    kb.store(v, tmp, c);
    return kb.max(acc, math::AbsFOp::create(kb.builder(), kb.getLoc(), v));
  });
  // sigma = 2^ceil(log2(amax / 448)).
  OpBuilder &b = kb.builder();
  Location loc = kb.getLoc();
  Value sigma = math::Exp2Op::create(
      b, loc,
      math::CeilOp::create(b, loc,
                           math::Log2Op::create(b, loc,
                                                kb.div(amax, kb.f32(448.0)))));
  Value vals = values(kb, page);
  kb.loop(0, width,
          [&](Value c) { storeFp8(kb, kb.load(tmp, c), sigma, vals, row, c); });
  memref::StoreOp::create(b, loc, sigma, scales(kb, page),
                          ValueRange{scaleIndex(kb, row, kb.idx(0))});
}

void PagedPoolAccess::storeLatentRow(
    KernelBuilder &kb, Value page, Value row,
    llvm::function_ref<Value(Value)> lane) const {
  assert(!indexPool && "storeLatentRow on an index pool");
  if (!fp8) {
    kb.loop(0, width,
            [&](Value c) { kb.store(lane(c), buffer, {page, row, c}); });
    kb.loop(width, width + pad, [&](Value c) {
      kb.store(kb.f32(0.0), buffer, {page, row, c});
    });
    return;
  }
  OpBuilder &b = kb.builder();
  Location loc = kb.getLoc();
  Value vals = values(kb, page), scl = scales(kb, page);
  int64_t n = fp8->groupLanes;
  kb.loop(0, fp8->groups, [&](Value g) {
    Value first = kb.imul(g, kb.idx(n));
    Value last = kb.imin(kb.iadd(first, kb.idx(n)), kb.idx(width));
    Value amax = kb.reduce(first, last, kb.f32(0.0), [&](Value c, Value acc) {
      return kb.max(acc, math::AbsFOp::create(b, loc, lane(c)));
    });
    // A zero (or underflowing) group keeps scale 1: its codes are all 0.
    Value scale = kb.div(amax, kb.f32(448.0));
    scale = kb.select(kb.gt(scale, kb.f32(0.0)), scale, kb.f32(1.0));
    kb.loop(first, last,
            [&](Value c) { storeFp8(kb, lane(c), scale, vals, row, c); });
    memref::StoreOp::create(b, loc, scale, scl,
                            ValueRange{scaleIndex(kb, row, g)});
  });
  // Pad lanes: e4m3 +0.
  kb.loop(width, width + pad, [&](Value c) {
    memref::StoreOp::create(b, loc, encodeFp8(kb, kb.f32(0.0)), vals,
                            ValueRange{row, c});
  });
}

void mlir::strata::buildHadamard(KernelBuilder &kb, Value vec, Value out,
                                 int64_t n) {
  OpBuilder &b = kb.builder();
  Location loc = kb.getLoc();
  Type i32 = b.getI32Type();
  double norm = 1.0 / std::sqrt(static_cast<double>(n));
  kb.loop(0, n, [&](Value i) {
    Value ii = arith::IndexCastOp::create(b, loc, i32, i);
    Value sum = kb.reduce(0, n, kb.f32(0.0), [&](Value j, Value acc) {
      Value jj = arith::IndexCastOp::create(b, loc, i32, j);
      // H[i][j] = (-1)^popcount(i & j): the parity by xor folding (plain
      // integer ops; math.ctpop has no lowering on the GPU targets).
      Value bits = arith::AndIOp::create(b, loc, ii, jj);
      for (int64_t shift : {16, 8, 4, 2, 1})
        bits = arith::XOrIOp::create(
            b, loc, bits,
            arith::ShRUIOp::create(b, loc, bits, kb.i32(shift)));
      Value odd = kb.ieq(arith::AndIOp::create(b, loc, bits, kb.i32(1)), kb.i32(1));
      Value v = kb.load(vec, j);
      return kb.add(acc, kb.select(odd, kb.neg(v), v));
    });
    kb.store(kb.mul(sum, kb.f32(norm)), out, i);
  });
}

Value mlir::strata::encodeFp8(KernelBuilder &kb, Value v) {
  OpBuilder &b = kb.builder();
  Location loc = kb.getLoc();
  Type i32 = b.getI32Type();
  Value mag = math::AbsFOp::create(b, loc, v);
  Value bits = arith::BitcastOp::create(b, loc, i32, mag);
  // Normal: round the f32 mantissa to 3 bits (RNE) and rebias 127 -> 7.
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, kb.i32(20)), kb.i32(1));
  Value rounded = arith::AddIOp::create(
      b, loc, bits, arith::AddIOp::create(b, loc, kb.i32(0x7FFFF), lsb));
  Value normal = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, rounded, kb.i32(20)),
      kb.i32(120 << 3));
  // Subnormal (|v| < 2^-6): m = rne(|v| * 2^9).
  Value sub = arith::FPToSIOp::create(
      b, loc, i32,
      math::RoundEvenOp::create(b, loc, kb.mul(mag, kb.f32(512.0))));
  Value isSub = kb.lt(mag, kb.f32(1.0 / 64.0));
  Value code = kb.select(isSub, sub, normal);
  Value negative = kb.lt(v, kb.f32(0.0));
  code = kb.select(negative, arith::OrIOp::create(b, loc, code, kb.i32(128)),
                   code);
  Value byte = arith::TruncIOp::create(b, loc, b.getI8Type(), code);
  return arith::BitcastOp::create(b, loc, Float8E4M3FNType::get(b.getContext()),
                                  byte);
}
