//===- roofline.cpp - what one model step must move and compute -----------===//
//
// Part of strata. See roofline.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/bench/roofline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

namespace strata::runtime {

using artifact::BindingKind;
using artifact::LayerKind;
using artifact::StepKind;
using artifact::WeightEntry;
using artifact::WeightTransform;

double StepRoofline::floorSeconds(double copy_bytes_per_second,
                                  double gemm_flops_per_second) const {
  double memory = copy_bytes_per_second > 0 ? bytes() / copy_bytes_per_second
                                            : 0;
  double compute =
      gemm_flops_per_second > 0 ? flops / gemm_flops_per_second : 0;
  return std::max(memory, compute);
}

uint64_t countDistinctExperts(const std::vector<int32_t> &chosen) {
  return std::set<int32_t>(chosen.begin(), chosen.end()).size();
}

namespace {

double product(const flatbuffers::Vector<int64_t> *shape) {
  double n = 1;
  for (size_t i = 0; shape && i < shape->size(); ++i)
    n *= static_cast<double>(shape->Get(i));
  return n;
}

double entryBytes(const WeightEntry &entry) {
  double bytes = product(entry.shape()) * dtypeBytes(entry.dtype());
  if (entry.scale_shape() && entry.scale_shape()->size() > 0)
    bytes += product(entry.scale_shape()) * dtypeBytes(entry.scale_dtype());
  return bytes;
}

bool contains(const flatbuffers::String *name, std::string_view part) {
  return name && name->string_view().find(part) != std::string_view::npos;
}

/// Where each weight of the plan is first bound: the MoE layer (moe_select
/// dispatches seen before it, minus one) for routed-expert stacks.
struct PlanWeights {
  std::map<uint32_t, int64_t> first_layer;
  int64_t moe_layers = 0;
};

PlanWeights collectPlanWeights(const artifact::TargetDef &target,
                               const artifact::ExecutionPlan &plan) {
  PlanWeights out;
  for (size_t d = 0; plan.dispatches() && d < plan.dispatches()->size(); ++d) {
    const artifact::Dispatch *dispatch = plan.dispatches()->Get(d);
    if (dispatch->collective())
      continue;
    const artifact::Kernel *kernel =
        target.kernels()->Get(dispatch->kernel_index());
    if (kernel->name()->string_view().rfind("moe_select", 0) == 0)
      ++out.moe_layers;
    for (size_t b = 0; b < dispatch->bindings()->size(); ++b) {
      const artifact::Binding *binding = dispatch->bindings()->Get(b);
      if (binding->kind() == BindingKind::weight)
        out.first_layer.emplace(binding->index(),
                                std::max<int64_t>(out.moe_layers - 1, 0));
    }
  }
  return out;
}

/// Rows of the sparse selection of a token at position p: the top-k tokens
/// plus the tail (at most kpool), never more than the p + 1 visible ones.
double selectedRows(const artifact::ModelConfig &model, double p) {
  double cap = static_cast<double>(model.index_topk()) +
               static_cast<double>(std::max<uint32_t>(model.index_kpool(), 1));
  return std::min(p + 1, cap);
}

/// Attention and state terms of one request (per layer counts applied).
void addAttention(const Artifact &artifact, const StepShape &shape,
                  StepRoofline &out) {
  const artifact::ModelConfig &model = *artifact.def().model();
  const artifact::CacheLayout &caches = *artifact.def().cache_layout();
  double mla = 0, kda = 0;
  for (size_t i = 0; model.layer_kinds() && i < model.layer_kinds()->size();
       ++i)
    (model.layer_kinds()->Get(i) == LayerKind::mla ? mla : kda) += 1;
  double requests = static_cast<double>(shape.requests);
  double tokens = static_cast<double>(shape.tokens);
  double context = static_cast<double>(shape.context);
  double kpool = std::max<uint32_t>(model.index_kpool(), 1);

  // FLOPs per request, summed over its token positions.
  double mla_flops = 0, index_flops = 0;
  for (int64_t t = 0; t < shape.tokens; ++t) {
    double p = context + static_cast<double>(t);
    mla_flops += 4.0 * model.num_attention_heads() * model.kv_lora_rank() *
                 selectedRows(model, p);
    index_flops += 2.0 * model.index_n_heads() * model.index_head_dim() *
                   std::ceil((p + 1) / kpool);
  }
  double kda_flops = 6.0 * model.kda_num_heads() * model.kda_head_dim() *
                     model.kda_head_dim() * tokens;
  out.flops += requests * (mla * (mla_flops + index_flops) + kda * kda_flops);

  // Bytes per request.
  double bytes = 0;
  if (const artifact::KdaStateCache *state = caches.kda())
    bytes += kda * 2.0 *
             static_cast<double>(state->recurrent_bytes_per_layer() +
                                 state->conv_bytes_per_layer());
  double end = context + tokens;
  if (const artifact::MlaLatentCache *latent = caches.mla_latent()) {
    double read = shape.tokens == 1 ? selectedRows(model, context) : end;
    bytes += mla * (read + tokens) * static_cast<double>(latent->row_bytes());
  }
  if (const artifact::IndexPageCache *index = caches.index_pages())
    bytes += mla * (std::ceil(end / kpool) + std::ceil(tokens / kpool)) *
             static_cast<double>(index->row_stride_bytes());
  out.state_bytes += requests * bytes;
}

} // namespace

StatusOr<StepRoofline>
computeStepRoofline(const Artifact &artifact,
                    const artifact::TargetDef &target, const StepShape &shape,
                    const std::vector<uint64_t> &distinct_experts) {
  if (shape.step != StepKind::prefill && shape.step != StepKind::decode)
    return invalidArgument("the roofline covers prefill and decode steps, "
                           "not {}",
                           artifact::EnumNameStepKind(shape.step));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(target, shape.step));
  const artifact::ModelConfig &model = *artifact.def().model();
  PlanWeights weights = collectPlanWeights(target, *plan);
  if (!distinct_experts.empty() &&
      distinct_experts.size() != static_cast<size_t>(weights.moe_layers))
    return invalidArgument("routing of {} MoE layers for a plan of {}",
                           distinct_experts.size(), weights.moe_layers);

  StepRoofline out;
  out.moe_layers = weights.moe_layers;
  out.routing_read_back = !distinct_experts.empty();
  double tokens = static_cast<double>(shape.requests * shape.tokens);
  double experts = std::max<uint32_t>(model.n_routed_experts(), 1);
  double top_k = model.num_experts_per_tok();
  double uniform =
      experts * (1 - std::pow(1 - std::min(top_k / experts, 1.0), tokens));
  double touched_sum = 0;
  for (uint64_t n : distinct_experts)
    touched_sum += static_cast<double>(n);
  out.experts_per_layer =
      out.routing_read_back && weights.moe_layers > 0
          ? touched_sum / static_cast<double>(weights.moe_layers)
          : uniform;

  for (const auto &[index, layer] : weights.first_layer) {
    const WeightEntry &entry = *artifact.def().weights()->Get(index);
    double bytes = entryBytes(entry);
    double elements = product(entry.shape());
    bool matrix = entry.shape() && entry.shape()->size() >= 2;
    if (entry.transform() == WeightTransform::stack_experts) {
      double touched = out.routing_read_back
                           ? static_cast<double>(distinct_experts[layer])
                           : uniform;
      out.expert_bytes += bytes * touched / experts;
      out.flops += 2.0 * elements / experts * tokens * top_k;
    } else if (contains(entry.name(), "embed_tokens")) {
      double row = entry.shape()->size() == 2
                       ? bytes / static_cast<double>(entry.shape()->Get(0))
                       : 0;
      out.weight_bytes += std::min(bytes, row * tokens);
    } else if (contains(entry.name(), "lm_head")) {
      out.weight_bytes += bytes;
      out.flops += 2.0 * elements * static_cast<double>(shape.logits_rows);
    } else {
      out.weight_bytes += bytes;
      if (matrix)
        out.flops += 2.0 * elements * tokens;
    }
  }
  addAttention(artifact, shape, out);
  return out;
}

} // namespace strata::runtime
