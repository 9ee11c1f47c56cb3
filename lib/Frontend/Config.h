//===- Config.h - Hugging Face config.json for the model DSL ----*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// The model configuration a DSL file reads through `cfg.<key>`: a Hugging
// Face config.json, either nested (model keys under `text_config`, as the
// glm5_next checkpoint ships it) or flat. A key is looked up in `text_config`
// first, then at the top level (where e.g. `quantization_config` lives).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_FRONTEND_CONFIG_H
#define STRATA_LIB_FRONTEND_CONFIG_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include "llvm/Support/JSON.h"

#include <memory>
#include <string>

namespace mlir::strata::dsl {

class ModelConfig {
public:
  /// Reads and parses `path`; errors are diagnostics located at the file.
  static FailureOr<std::unique_ptr<ModelConfig>> load(llvm::StringRef path,
                                                      MLIRContext *ctx);
  /// Parses `text` (named `path` in messages).
  static FailureOr<std::unique_ptr<ModelConfig>>
  parse(llvm::StringRef text, llvm::StringRef path, MLIRContext *ctx);

  /// The value of a top-level model key, or null when absent.
  const llvm::json::Value *lookup(llvm::StringRef key) const;
  /// The file the config came from, for messages.
  llvm::StringRef getPath() const { return path; }

private:
  llvm::json::Value root = nullptr;
  const llvm::json::Object *text = nullptr;
  std::string path;
};

} // namespace mlir::strata::dsl

#endif // STRATA_LIB_FRONTEND_CONFIG_H
