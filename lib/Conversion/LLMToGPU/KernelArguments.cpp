//===- KernelArguments.cpp - a kernel function's arguments by role --------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToGPU/KernelArguments.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include "lib/Conversion/LLMToKernel/KernelBuilder.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

FailureOr<KernelArguments> KernelArguments::of(func::FuncOp kernel,
                                               std::string &why) {
  auto contract = kernel->getAttrOfType<llm::KernelAttr>(kKernelAttrName);
  if (!contract || contract.getRoles().empty() ||
      contract.getRoles().size() != kernel.getNumArguments()) {
    why = "the kernel names no argument roles";
    return failure();
  }
  return KernelArguments(contract.getRoles());
}

std::optional<unsigned> KernelArguments::index(KernelRole role) const {
  for (auto [i, held] : llvm::enumerate(roles))
    if (held == role)
      return i;
  return std::nullopt;
}

Value KernelArguments::value(ValueRange args, KernelRole role) const {
  std::optional<unsigned> i = index(role);
  return i ? args[*i] : Value();
}

Type KernelArguments::type(TypeRange types, KernelRole role) const {
  std::optional<unsigned> i = index(role);
  return i ? types[*i] : Type();
}

/// "[x, weight, out]".
static std::string listRoles(ArrayRef<KernelRole> roles) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(roles, os, [&](KernelRole role) {
    os << llm::stringifyKernelRole(role);
  });
  os << "]";
  return text;
}

LogicalResult KernelArguments::expectExactly(ArrayRef<KernelRole> expected,
                                             std::string &why) const {
  bool same = roles.size() == expected.size() &&
              llvm::all_of(expected, [&](KernelRole r) { return has(r); });
  if (same)
    return success();
  why = "argument roles " + listRoles(roles) + ", the builder takes " +
        listRoles(expected);
  return failure();
}

FunctionType KernelArguments::inOrder(FunctionType actual,
                                      ArrayRef<KernelRole> order) const {
  SmallVector<Type> inputs;
  for (KernelRole role : order)
    inputs.push_back(type(actual.getInputs(), role));
  return FunctionType::get(actual.getContext(), inputs, actual.getResults());
}
