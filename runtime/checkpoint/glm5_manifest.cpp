//===- glm5_manifest.cpp - the GLM-5.3-Flash checkpoint tensor list -------===//
//
// Part of strata. See glm5_manifest.h. Shapes are [out, in] for linears
// (PyTorch nn.Linear layout).
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/glm5_manifest.h"

#include <algorithm>
#include <set>

namespace strata::runtime {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Collects tensors of one layer under a fixed prefix.
struct Builder {
  const Glm5TextConfig &c;
  std::vector<TensorSpec> &out;
  std::string prefix;

  void add(const std::string &name, DType dtype, std::vector<int64_t> shape) {
    out.push_back(TensorSpec{prefix + name, dtype, std::move(shape), "", false});
  }
  void norm(const std::string &name, int64_t dim) {
    add(name + ".weight", DType::kBF16, {dim});
  }
  // A linear weight [out, in]; FP8 + scale when `quantizable` and the config
  // is FP8, else BF16.
  void linear(const std::string &name, int64_t out_dim, int64_t in_dim,
              bool quantizable) {
    const std::string weight = prefix + name + ".weight";
    if (quantizable && c.isFp8()) {
      const std::string scale = scaleInvName(weight);
      out.push_back(
          TensorSpec{weight, DType::kF8E4M3, {out_dim, in_dim}, scale, false});
      out.push_back(TensorSpec{scale,
                               DType::kF32,
                               {ceilDiv(out_dim, 128), ceilDiv(in_dim, 128)},
                               weight,
                               true});
    } else {
      out.push_back(
          TensorSpec{weight, DType::kBF16, {out_dim, in_dim}, "", false});
    }
  }

  void hyperConnections() {
    const int64_t mix = (2 + c.hc_mult) * c.hc_mult;
    for (const char *site : {"hc_attn", "hc_ffn"}) {
      add(std::string(site) + "_fn", DType::kF32, {mix, c.hc_mult * c.hidden_size});
      add(std::string(site) + "_base", DType::kF32, {mix});
      add(std::string(site) + "_scale", DType::kF32, {3});
    }
  }

  void kda() {
    const int64_t d = c.hidden_size, heads = c.linear_num_heads,
                  hd = c.linear_head_dim, p = heads * hd;
    for (const char *proj : {"q_proj", "k_proj", "v_proj"})
      linear(std::string("self_attn.") + proj, p, d, false);
    for (const char *conv : {"q_conv1d", "k_conv1d", "v_conv1d"})
      add(std::string("self_attn.") + conv + ".weight", DType::kBF16,
          {p, 1, c.linear_conv_kernel_size});
    linear("self_attn.f_a_proj", hd, d, false);
    linear("self_attn.f_b_proj", p, hd, false);
    linear("self_attn.g_a_proj", hd, d, false);
    linear("self_attn.g_b_proj", p, hd, false);
    linear("self_attn.b_proj", heads, d, false);
    add("self_attn.A_log", DType::kF32, {heads});
    add("self_attn.dt_bias", DType::kF32, {p});
    norm("self_attn.o_norm", hd);
    linear("self_attn.o_proj", d, p, false);
  }

  void mla(bool indexer) {
    const int64_t d = c.hidden_size, h = c.num_attention_heads;
    const int64_t qk = c.qk_nope_head_dim + c.qk_rope_head_dim;
    linear("self_attn.q_a_proj", c.q_lora_rank, d, true);
    norm("self_attn.q_a_layernorm", c.q_lora_rank);
    linear("self_attn.q_b_proj", h * qk, c.q_lora_rank, true);
    linear("self_attn.kv_a_proj_with_mqa", c.kv_lora_rank + c.qk_rope_head_dim,
           d, true);
    norm("self_attn.kv_a_layernorm", c.kv_lora_rank);
    linear("self_attn.kv_b_proj", h * (c.qk_nope_head_dim + c.v_head_dim),
           c.kv_lora_rank, false);
    linear("self_attn.o_proj", d, h * c.v_head_dim, true);
    if (!indexer)
      return;
    const int64_t ih = c.index_n_heads, idim = c.index_head_dim;
    linear("self_attn.indexer.wq_b", ih * idim, c.q_lora_rank, false);
    linear("self_attn.indexer.wk", idim, d, false);
    add("self_attn.indexer.k_norm.weight", DType::kBF16, {idim});
    add("self_attn.indexer.k_norm.bias", DType::kBF16, {idim});
    linear("self_attn.indexer.weights_proj", ih, d, false);
    // The dense indexer (index_kpool_compress false) pools nothing: no
    // compression gate or position table.
    if (!c.index_kpool_compress)
      return;
    add("self_attn.indexer.index_kpool_compress_gate", DType::kBF16, {idim, d});
    add("self_attn.indexer.index_kpool_compress_ape", DType::kBF16,
        {c.index_kpool, idim});
  }

  void swiglu(const std::string &prefix_name, int64_t width) {
    linear(prefix_name + ".gate_proj", width, c.hidden_size, true);
    linear(prefix_name + ".up_proj", width, c.hidden_size, true);
    linear(prefix_name + ".down_proj", c.hidden_size, width, true);
  }

  void moe() {
    add("mlp.gate.weight", DType::kF32, {c.n_routed_experts, c.hidden_size});
    add("mlp.gate.e_score_correction_bias", DType::kF32, {c.n_routed_experts});
    for (int64_t e = 0; e < c.n_routed_experts; ++e)
      swiglu("mlp.experts." + std::to_string(e), c.moe_intermediate_size);
    if (c.n_shared_experts > 0)
      swiglu("mlp.shared_experts",
             c.moe_intermediate_size * c.n_shared_experts);
  }
};

} // namespace

StatusOr<std::vector<TensorSpec>>
glm5TensorManifest(const Glm5TextConfig &c, const ManifestOptions &options) {
  const int64_t total_layers = c.num_hidden_layers + c.num_nextn_predict_layers;
  std::set<int64_t> selected;
  if (options.only_layers) {
    for (int64_t layer : *options.only_layers) {
      if (layer < 0 || layer >= total_layers)
        return invalidArgument("layer {} is out of range: the checkpoint has "
                               "layers 0..{} ({} target + {} MTP)",
                               layer, total_layers - 1, c.num_hidden_layers,
                               c.num_nextn_predict_layers);
      selected.insert(layer);
    }
  }
  std::vector<TensorSpec> out;
  Builder global{c, out, kGlm5Prefix};
  global.add("embed_tokens.weight", DType::kBF16, {c.vocab_size, c.hidden_size});
  global.norm("norm", c.hidden_size);
  out.push_back(TensorSpec{"lm_head.weight", DType::kBF16,
                           {c.vocab_size, c.hidden_size}, "", false});
  for (int64_t layer = 0; layer < total_layers; ++layer) {
    if (options.only_layers && !selected.count(layer))
      continue;
    Builder b{c, out,
              std::string(kGlm5Prefix) + "layers." + std::to_string(layer) + "."};
    b.norm("input_layernorm", c.hidden_size);
    b.norm("post_attention_layernorm", c.hidden_size);
    if (layer < c.num_hidden_layers) {
      b.hyperConnections();
      if (c.layer_types[layer] == Glm5AttentionKind::kKda)
        b.kda();
      else
        b.mla(c.indexer_full.empty() || c.indexer_full[layer]);
      if (c.mlp_layer_types[layer] == Glm5MlpKind::kDense)
        b.swiglu("mlp", c.intermediate_size);
      else
        b.moe();
    } else {
      // MTP layer: no mHC; MLA with its own indexer; MoE.
      b.norm("enorm", c.hidden_size);
      b.norm("hnorm", c.hidden_size);
      b.add("eh_proj.weight", DType::kBF16, {c.hidden_size, 2 * c.hidden_size});
      b.norm("shared_head.norm", c.hidden_size);
      b.mla(/*indexer=*/true);
      b.moe();
    }
  }
  return out;
}

Status validateCheckpoint(const Checkpoint &checkpoint,
                          const std::vector<TensorSpec> &manifest,
                          const ValidateOptions &options) {
  const int max_reported = options.max_reported > 0 ? options.max_reported : 20;
  std::vector<std::string> problems;
  std::size_t count = 0;
  auto report = [&](std::string problem) {
    ++count;
    if (problems.size() < static_cast<std::size_t>(max_reported))
      problems.push_back(std::move(problem));
  };
  std::set<std::string_view> listed;
  for (const TensorSpec &spec : manifest) {
    listed.insert(spec.name);
    auto view = checkpoint.tensor(spec.name);
    if (!view.ok()) {
      report(fmt::format("missing tensor '{}' ({} {})", spec.name,
                         dtypeName(spec.dtype), shapeString(spec.shape)));
      continue;
    }
    if (view->dtype != spec.dtype || view->shape != spec.shape)
      report(fmt::format("tensor '{}' in '{}': expected {} {}, found {} {}",
                         spec.name, view->file, dtypeName(spec.dtype),
                         shapeString(spec.shape), dtypeName(view->dtype),
                         shapeString(view->shape)));
  }
  if (options.reject_unlisted)
    for (const std::string &name : checkpoint.tensorNames())
      if (!listed.count(name))
        report(fmt::format("unlisted tensor '{}'", name));
  if (count == 0)
    return okStatus();
  std::string message = fmt::format(
      "checkpoint does not match the manifest: {} problem{}", count,
      count == 1 ? "" : "s");
  for (const std::string &p : problems)
    message += "; " + p;
  if (count > problems.size())
    message += fmt::format("; ... and {} more", count - problems.size());
  return Status(StatusCode::kInvalidArgument, message);
}

} // namespace strata::runtime
