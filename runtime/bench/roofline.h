//===- roofline.h - what one model step must move and compute ---*- C++ -*-===//
//
// Part of strata. The roofline of a step is the time no implementation can
// beat on a device with a given copy rate and GEMM rate:
//
//   floor = max(bytes / copy rate, FLOPs / GEMM rate)
//
// bytes: every weight the step's plan binds, read once (the embedding table
// only for the gathered rows, each MoE layer's routed experts only for the
// experts the step's routing touched), plus per request the KDA recurrent
// state read and written, the MLA latent rows the sparse attention reads
// (at most index_topk + index_kpool per token position) and writes, and the
// pooled index keys the indexer scans. FLOPs: 2 x weight elements per token
// for every matrix weight (lm_head per logits row, each routed expert per
// routed slot), the sparse MLA products (2 x 2 x heads x latent width per
// selected row), the indexer's scores and KDA's state products (6 x d_k x
// d_v per head per token). docs/Bench.md "Roofline" gives the formulas.
//
// Thread-safety: plain functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_BENCH_ROOFLINE_H
#define STRATA_RUNTIME_BENCH_ROOFLINE_H

#include <cstdint>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/loader/artifact.h"

namespace strata::runtime {

/// The shape of one benchmarked step.
struct StepShape {
  artifact::StepKind step = artifact::StepKind::decode;
  /// Requests, new tokens per request, position of each request's first
  /// new token.
  int64_t requests = 1, tokens = 1, context = 0;
  /// Rows of logits the step computes (decode: one per request; prefill:
  /// the last token of each request).
  int64_t logits_rows = 1;
};

struct StepRoofline {
  /// Weights other than the routed experts, each read once.
  double weight_bytes = 0;
  /// The routed experts the step's routing touched, each read once.
  double expert_bytes = 0;
  /// KDA state, MLA latent rows and index keys read and written.
  double state_bytes = 0;
  double flops = 0;
  /// MoE layers of the plan and the mean number of distinct routed experts
  /// per layer the routing touched.
  int64_t moe_layers = 0;
  double experts_per_layer = 0;
  /// Whether experts_per_layer was read back from the step's routing (else:
  /// the uniform-routing expectation E (1 - (1 - k / E)^slots)).
  bool routing_read_back = false;

  double bytes() const { return weight_bytes + expert_bytes + state_bytes; }
  /// max(bytes / copy rate, FLOPs / GEMM rate), seconds.
  double floorSeconds(double copy_bytes_per_second,
                      double gemm_flops_per_second) const;
};

/// The roofline of `shape` for the plan of `target` in `artifact`.
/// `distinct_experts` holds, per MoE layer in plan order, the distinct
/// routed experts the step's routing chose (empty: the uniform-routing
/// expectation). INVALID_ARGUMENT when the artifact has no plan for the step
/// or `distinct_experts` has another length than the plan's MoE layers.
StatusOr<StepRoofline>
computeStepRoofline(const Artifact &artifact,
                    const artifact::TargetDef &target, const StepShape &shape,
                    const std::vector<uint64_t> &distinct_experts);

/// Distinct values in `chosen` (expert ids of one MoE layer's slots).
uint64_t countDistinctExperts(const std::vector<int32_t> &chosen);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_BENCH_ROOFLINE_H
