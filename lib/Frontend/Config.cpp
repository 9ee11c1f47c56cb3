//===- Config.cpp - Hugging Face config.json for the model DSL ------------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Frontend/Config.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace mlir::strata::dsl;

FailureOr<std::unique_ptr<ModelConfig>>
ModelConfig::load(llvm::StringRef path, MLIRContext *ctx) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return mlir::emitError(FileLineColLoc::get(ctx, path, 0, 0))
           << "cannot open config file: " << buffer.getError().message();
  return parse((*buffer)->getBuffer(), path, ctx);
}

FailureOr<std::unique_ptr<ModelConfig>>
ModelConfig::parse(llvm::StringRef text, llvm::StringRef path,
                   MLIRContext *ctx) {
  auto loc = FileLineColLoc::get(ctx, path, 0, 0);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value)
    return mlir::emitError(loc)
           << "invalid JSON in config: " << llvm::toString(value.takeError());
  auto config = std::make_unique<ModelConfig>();
  config->root = std::move(*value);
  config->path = path.str();
  const llvm::json::Object *top = config->root.getAsObject();
  if (!top)
    return mlir::emitError(loc) << "config must be a JSON object";
  if (const llvm::json::Value *tc = top->get("text_config")) {
    config->text = tc->getAsObject();
    if (!config->text)
      return mlir::emitError(loc) << "config key 'text_config' must be an object";
  }
  return config;
}

const llvm::json::Value *ModelConfig::lookup(llvm::StringRef key) const {
  if (text)
    if (const llvm::json::Value *v = text->get(key))
      return v;
  return root.getAsObject()->get(key);
}
