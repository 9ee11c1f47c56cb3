//===- compiled_settings.h - vLLM flags strata fixes at compile time -------===//
//
// Part of strata. vLLM's `--dtype`, `--kv-cache-dtype` and
// `--tensor-parallel-size` choose at start-up what strata compiles into the
// artifact (strata-compile --activation-type, --kv-cache-dtype,
// --tensor-parallel-size). strata-serve accepts the
// spellings so that a vLLM command line runs unchanged, and checks them
// against the artifact: a value that agrees (or `auto` / 0) passes, any other
// is an error naming the compile flag that gives it.
//
// Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_COMPILED_SETTINGS_H
#define STRATA_RUNTIME_SERVE_COMPILED_SETTINGS_H

#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/loader/artifact.h"

namespace strata::runtime::serve {

/// What the command line asked for.
struct CompiledSettingFlags {
  /// --kv-cache-dtype: auto (the artifact's), bfloat16 / bf16, float32 /
  /// f32, fp8 / fp8_e4m3. Default auto.
  std::string kv_cache_dtype = "auto";
  /// --tensor-parallel-size: 0 (not given) or the artifact's T.
  uint32_t tensor_parallel_size = 0;
  /// --dtype: auto (the artifact's), bfloat16 / bf16, float32 / float /
  /// f32, float16 / half. Default auto.
  std::string dtype = "auto";
};

/// The artifact's activation type in vLLM's words ("bfloat16", "float32"),
/// or "unrecorded" for an artifact written before it was recorded.
std::string artifactActivationDtype(const Artifact &artifact);

/// The artifact's MLA latent cache element type in vLLM's words
/// ("bfloat16", "fp8_e4m3", "float32"), or "none" without a latent cache.
std::string artifactKvCacheDtype(const Artifact &artifact);

/// The artifact's tensor-parallel size (1 without a parallel layout).
uint32_t artifactTensorParallelSize(const Artifact &artifact);

/// OK when `flags` agree with `artifact`; else INVALID_ARGUMENT saying what
/// the artifact holds and how to compile the asked one.
Status checkCompiledSettings(const Artifact &artifact,
                             const CompiledSettingFlags &flags);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_COMPILED_SETTINGS_H
