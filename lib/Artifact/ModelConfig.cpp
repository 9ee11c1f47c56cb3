//===- ModelConfig.cpp - model hyperparameters from a config.json ---------===//
//
// Part of strata. See ModelConfig.h. The config.json is parsed and validated
// by the runtime's parser (runtime/checkpoint/glm5_config.h), the one reader
// of the format in strata; this file only maps its result onto the
// artifact's ModelConfig.
//
//===----------------------------------------------------------------------===//

#include "lib/Artifact/ModelConfig.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "runtime/checkpoint/glm5_config.h"

using namespace mlir::strata;

llvm::Expected<ModelDesc>
mlir::strata::parseModelConfigJson(llvm::StringRef json, llvm::StringRef name) {
  ::strata::runtime::StatusOr<::strata::runtime::Glm5TextConfig> parsed =
      ::strata::runtime::parseGlm5Config(std::string_view(json.data(),
                                                          json.size()),
                                         std::string_view(name.data(),
                                                          name.size()));
  if (!parsed.ok())
    return llvm::createStringError(std::string(parsed.status().message()));
  const ::strata::runtime::Glm5TextConfig &c = *parsed;
  ModelDesc m;
  m.name = name.str();
  m.vocabSize = c.vocab_size;
  m.hiddenSize = c.hidden_size;
  m.numHiddenLayers = c.num_hidden_layers;
  m.numNextnPredictLayers = c.num_nextn_predict_layers;
  m.numAttentionHeads = c.num_attention_heads;
  m.kvLoraRank = c.kv_lora_rank;
  m.qLoraRank = c.q_lora_rank;
  m.qkNopeHeadDim = c.qk_nope_head_dim;
  m.qkRopeHeadDim = c.qk_rope_head_dim;
  m.vHeadDim = c.v_head_dim;
  m.indexNHeads = c.index_n_heads;
  m.indexHeadDim = c.index_head_dim;
  m.indexTopk = c.index_topk;
  m.indexKpool = c.index_kpool;
  m.hcMult = c.hc_mult;
  m.nRoutedExperts = c.n_routed_experts;
  m.nSharedExperts = c.n_shared_experts;
  m.numExpertsPerTok = c.num_experts_per_tok;
  m.kdaNumHeads = c.linear_num_heads;
  m.kdaHeadDim = c.linear_head_dim;
  m.shortConvKernelSize = c.linear_conv_kernel_size;
  m.rmsNormEps = static_cast<float>(c.rms_norm_eps);
  m.maxPositionEmbeddings = c.max_position_embeddings;
  // The artifact records the first end-of-sequence id (GLM lists several;
  // the server stops on that one); -1 when the config names none.
  m.eosTokenId = c.eos_token_ids.empty() ? -1 : c.eos_token_ids.front();
  m.eosTokenIds = c.eos_token_ids;
  m.padTokenId = c.pad_token_id;
  for (::strata::runtime::Glm5AttentionKind kind : c.layer_types)
    m.layerKinds.push_back(kind == ::strata::runtime::Glm5AttentionKind::kKda
                               ? fb::LayerKind::kda
                               : fb::LayerKind::mla);
  for (::strata::runtime::Glm5MlpKind kind : c.mlp_layer_types)
    m.mlpKinds.push_back(kind == ::strata::runtime::Glm5MlpKind::kDense
                             ? fb::MlpKind::dense
                             : fb::MlpKind::moe);
  return m;
}

llvm::Expected<ModelDesc>
mlir::strata::readModelConfigFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  // The parser's messages start with the source name: the path.
  llvm::Expected<ModelDesc> model =
      parseModelConfigJson((*buffer)->getBuffer(), path);
  if (!model)
    return model.takeError();
  model->name = llvm::sys::path::stem(path).str();
  return model;
}
