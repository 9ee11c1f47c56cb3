//===- ModelConfig.h - model hyperparameters from a config.json -*- C++ -*-===//
//
// Part of strata. Reads the hyperparameters the runtime needs (ModelDesc, the
// schema's ModelConfig) from a Hugging Face style GLM-5.3 config.json
// (models/glm5_next/configs/*.json) through the runtime's validating parser
// (runtime/checkpoint/glm5_config.h; its error messages name the file and
// the field). layer_types "linear_attention" maps to kda and
// "deepseek_sparse_attention"/"full_attention" to mla; mlp_layer_types
// "dense"/"sparse" to dense/moe. The first eos token id (GLM may list
// several) and the pad id are recorded, -1 when absent.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_ARTIFACT_MODELCONFIG_H
#define STRATA_LIB_ARTIFACT_MODELCONFIG_H

#include "lib/Artifact/ArtifactWriter.h"

#include "llvm/Support/Error.h"

namespace mlir::strata {

/// Parses `json` (the text of a config.json) into a ModelDesc named `name`.
/// Errors name the missing or malformed key, e.g. "missing integer
/// 'index_kpool'" or "layer_types[3]: unknown layer type 'mamba'".
llvm::Expected<ModelDesc> parseModelConfigJson(llvm::StringRef json,
                                               llvm::StringRef name);

/// Reads and parses the config file at `path`; the model is named after the
/// file's stem. Errors are prefixed with the path.
llvm::Expected<ModelDesc> readModelConfigFile(llvm::StringRef path);

} // namespace mlir::strata

#endif // STRATA_LIB_ARTIFACT_MODELCONFIG_H
