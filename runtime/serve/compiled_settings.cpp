//===- compiled_settings.cpp - vLLM flags strata fixes at compile time -----===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/compiled_settings.h"

namespace strata::runtime::serve {

namespace {

/// vLLM's spelling of a cache element type.
std::string vllmDtypeName(artifact::DType type) {
  switch (type) {
  case artifact::DType::bf16:
    return "bfloat16";
  case artifact::DType::f8e4m3fn:
    return "fp8_e4m3";
  case artifact::DType::f32:
    return "float32";
  case artifact::DType::f16:
    return "float16";
  default:
    return artifact::EnumNameDType(type);
  }
}

/// `asked` (any accepted spelling) in vLLM's canonical words, or "" when it
/// is no cache type strata knows.
std::string canonicalKvCacheDtype(const std::string &asked) {
  if (asked == "bfloat16" || asked == "bf16")
    return "bfloat16";
  if (asked == "fp8" || asked == "fp8_e4m3")
    return "fp8_e4m3";
  if (asked == "float32" || asked == "f32" || asked == "float")
    return "float32";
  return "";
}

/// `asked` (any accepted --dtype spelling) in vLLM's canonical words, or ""
/// when it is no activation type vLLM names.
std::string canonicalActivationDtype(const std::string &asked) {
  if (asked == "bfloat16" || asked == "bf16")
    return "bfloat16";
  if (asked == "float32" || asked == "f32" || asked == "float")
    return "float32";
  if (asked == "float16" || asked == "half" || asked == "f16")
    return "float16";
  return "";
}

/// strata-compile's --kv-cache-dtype / --activation-type for a cache type.
std::string compileFlagsFor(const std::string &dtype) {
  if (dtype == "fp8_e4m3")
    return "--kv-cache-dtype=fp8";
  if (dtype == "float32")
    return "--activation-type=f32";
  return "--kv-cache-dtype=bf16";
}

} // namespace

std::string artifactKvCacheDtype(const Artifact &artifact) {
  const artifact::CacheLayout *layout = artifact.def().cache_layout();
  if (!layout || !layout->mla_latent())
    return "none";
  return vllmDtypeName(layout->mla_latent()->dtype());
}

std::string artifactActivationDtype(const Artifact &artifact) {
  const artifact::ModelConfig *model = artifact.def().model();
  if (!model || model->activation_dtype() == artifact::DType::invalid)
    return "unrecorded";
  return vllmDtypeName(model->activation_dtype());
}

uint32_t artifactTensorParallelSize(const Artifact &artifact) {
  const artifact::ParallelLayout *layout = artifact.def().parallel();
  return layout ? layout->tensor_parallel_size() : 1;
}

Status checkCompiledSettings(const Artifact &artifact,
                             const CompiledSettingFlags &flags) {
  if (flags.dtype != "auto") {
    std::string asked = canonicalActivationDtype(flags.dtype);
    if (asked.empty())
      return invalidArgument("--dtype {}: expected auto, bfloat16, float32 "
                             "or float16",
                             flags.dtype);
    std::string compiled = artifactActivationDtype(artifact);
    if (asked != compiled)
      return invalidArgument(
          "--dtype {}: the artifact computes in {} (the activation type is "
          "compiled in: strata-compile --activation-type=bf16 or f32)",
          flags.dtype, compiled);
  }
  if (flags.kv_cache_dtype != "auto") {
    std::string asked = canonicalKvCacheDtype(flags.kv_cache_dtype);
    if (asked.empty())
      return invalidArgument("--kv-cache-dtype {}: expected auto, bfloat16, "
                             "fp8, fp8_e4m3 or float32",
                             flags.kv_cache_dtype);
    std::string compiled = artifactKvCacheDtype(artifact);
    if (asked != compiled)
      return invalidArgument(
          "--kv-cache-dtype {}: the artifact's KV cache is {} (the cache type "
          "is compiled in: strata-compile {})",
          flags.kv_cache_dtype, compiled, compileFlagsFor(asked));
  }
  uint32_t ranks = artifactTensorParallelSize(artifact);
  if (flags.tensor_parallel_size != 0 && flags.tensor_parallel_size != ranks)
    return invalidArgument(
        "--tensor-parallel-size {}: the artifact is compiled for tensor-"
        "parallel size {} (strata-compile --tensor-parallel-size {})",
        flags.tensor_parallel_size, ranks, flags.tensor_parallel_size);
  return okStatus();
}

} // namespace strata::runtime::serve
