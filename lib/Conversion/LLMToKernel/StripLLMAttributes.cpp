//===- StripLLMAttributes.cpp - the strip-llm-attributes pass -------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Drops the discardable attributes holding llm dialect attributes (the
// kernel contract, the strategy) from every op, so that the CPU pipeline's
// LLVM dialect output parses in upstream tools without the llm dialect.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

namespace mlir::strata {
#define GEN_PASS_DEF_STRIPLLMATTRIBUTESPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;

namespace {

/// True when `attr` or, for an array or dictionary, an element is an llm
/// dialect attribute.
bool holdsLLMAttribute(Attribute attr) {
  if (isa_and_nonnull<strata::llm::LLMDialect>(&attr.getDialect()))
    return true;
  if (auto array = dyn_cast<ArrayAttr>(attr))
    return llvm::any_of(array, holdsLLMAttribute);
  if (auto dict = dyn_cast<DictionaryAttr>(attr))
    return llvm::any_of(dict, [](NamedAttribute entry) {
      return holdsLLMAttribute(entry.getValue());
    });
  return false;
}

// --strip-llm-attributes
struct StripLLMAttributesPass
    : mlir::strata::impl::StripLLMAttributesPassBase<StripLLMAttributesPass> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      SmallVector<StringAttr> names;
      for (NamedAttribute attribute : op->getDiscardableAttrs())
        if (holdsLLMAttribute(attribute.getValue()))
          names.push_back(attribute.getName());
      for (StringAttr name : names)
        op->removeDiscardableAttr(name);
    });
  }
};

} // namespace
