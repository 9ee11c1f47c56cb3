//===- ModelConfig.cpp - model hyperparameters from a config.json ---------===//
//
// Part of strata. See ModelConfig.h.
//
//===----------------------------------------------------------------------===//

#include "lib/Artifact/ModelConfig.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir::strata;

namespace {

/// Reads typed keys of one JSON object, remembering the first error.
class ConfigReader {
public:
  explicit ConfigReader(const llvm::json::Object &object) : object(object) {}

  template <typename T> void integer(llvm::StringRef key, T &out) {
    if (error)
      return;
    std::optional<int64_t> value = object.getInteger(key);
    if (!value || *value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        static_cast<uint64_t>(*value) >
            static_cast<uint64_t>(std::numeric_limits<T>::max()))
      error = ("missing integer '" + key + "'").str();
    else
      out = static_cast<T>(*value);
  }

  void number(llvm::StringRef key, float &out) {
    if (error)
      return;
    if (std::optional<double> value = object.getNumber(key))
      out = static_cast<float>(*value);
    else
      error = ("missing number '" + key + "'").str();
  }

  const llvm::json::Array *array(llvm::StringRef key) {
    if (error)
      return nullptr;
    const llvm::json::Array *value = object.getArray(key);
    if (!value)
      error = ("missing array '" + key + "'").str();
    return value;
  }

  const llvm::json::Object &object;
  std::optional<std::string> error;
};

} // namespace

llvm::Expected<ModelDesc>
mlir::strata::parseModelConfigJson(llvm::StringRef json, llvm::StringRef name) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return parsed.takeError();
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError("config is not a JSON object");
  const llvm::json::Object *text = root->getObject("text_config");
  ConfigReader r(text ? *text : *root);

  ModelDesc m;
  m.name = name.str();
  r.integer("vocab_size", m.vocabSize);
  r.integer("hidden_size", m.hiddenSize);
  r.integer("num_hidden_layers", m.numHiddenLayers);
  r.integer("num_nextn_predict_layers", m.numNextnPredictLayers);
  r.integer("num_attention_heads", m.numAttentionHeads);
  r.integer("kv_lora_rank", m.kvLoraRank);
  r.integer("q_lora_rank", m.qLoraRank);
  r.integer("qk_nope_head_dim", m.qkNopeHeadDim);
  r.integer("qk_rope_head_dim", m.qkRopeHeadDim);
  r.integer("v_head_dim", m.vHeadDim);
  r.integer("index_n_heads", m.indexNHeads);
  r.integer("index_head_dim", m.indexHeadDim);
  r.integer("index_topk", m.indexTopk);
  r.integer("index_kpool", m.indexKpool);
  r.integer("hc_mult", m.hcMult);
  r.integer("n_routed_experts", m.nRoutedExperts);
  r.integer("n_shared_experts", m.nSharedExperts);
  r.integer("num_experts_per_tok", m.numExpertsPerTok);
  r.number("rms_norm_eps", m.rmsNormEps);
  r.integer("max_position_embeddings", m.maxPositionEmbeddings);
  if (r.error)
    return llvm::createStringError(*r.error);

  // Token ids may sit in text_config or at the top level; -1 when absent.
  for (auto [key, out] : {std::pair{"eos_token_id", &m.eosTokenId},
                          std::pair{"pad_token_id", &m.padTokenId}}) {
    std::optional<int64_t> id = r.object.getInteger(key);
    if (!id)
      id = root->getInteger(key);
    *out = id.value_or(-1);
  }

  const llvm::json::Object *linear = r.object.getObject("linear_attn_config");
  if (!linear)
    return llvm::createStringError("missing object 'linear_attn_config'");
  ConfigReader lr(*linear);
  lr.integer("num_heads", m.kdaNumHeads);
  lr.integer("head_dim", m.kdaHeadDim);
  lr.integer("short_conv_kernel_size", m.shortConvKernelSize);
  if (lr.error)
    return llvm::createStringError("linear_attn_config: " + *lr.error);

  const llvm::json::Array *layers = r.array("layer_types");
  const llvm::json::Array *mlps = r.array("mlp_layer_types");
  if (r.error)
    return llvm::createStringError(*r.error);
  if (layers->size() != m.numHiddenLayers || mlps->size() != m.numHiddenLayers)
    return llvm::createStringError(
        "layer_types has %zu and mlp_layer_types %zu entries, expected "
        "num_hidden_layers %u",
        layers->size(), mlps->size(), m.numHiddenLayers);
  for (auto [i, value] : llvm::enumerate(*layers)) {
    std::optional<llvm::StringRef> kind = value.getAsString();
    if (kind == "linear_attention")
      m.layerKinds.push_back(fb::LayerKind::kda);
    else if (kind == "deepseek_sparse_attention" || kind == "full_attention")
      m.layerKinds.push_back(fb::LayerKind::mla);
    else
      return llvm::createStringError(
          "layer_types[%zu]: unknown layer type '%s'", i,
          kind.value_or("<not a string>").str().c_str());
  }
  for (auto [i, value] : llvm::enumerate(*mlps)) {
    std::optional<llvm::StringRef> kind = value.getAsString();
    if (kind == "dense")
      m.mlpKinds.push_back(fb::MlpKind::dense);
    else if (kind == "sparse")
      m.mlpKinds.push_back(fb::MlpKind::moe);
    else
      return llvm::createStringError(
          "mlp_layer_types[%zu]: unknown mlp type '%s'", i,
          kind.value_or("<not a string>").str().c_str());
  }
  return m;
}

llvm::Expected<ModelDesc>
mlir::strata::readModelConfigFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  llvm::Expected<ModelDesc> model = parseModelConfigJson(
      (*buffer)->getBuffer(), llvm::sys::path::stem(path));
  if (!model)
    return llvm::createStringError(
        path + ": " + llvm::toString(model.takeError()));
  return model;
}
