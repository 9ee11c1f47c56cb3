//===- Driver.h - the library behind strata-compile -------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// strata-compile reads a model DSL file and a Hugging Face config.json and
// stops at a named compilation phase. Phases are an enum so later phases
// (fused, kernel, target, artifact) slot in without changing the tool;
// phases not built yet fail with a diagnostic instead of pretending.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_DRIVER_DRIVER_H
#define STRATA_LIB_DRIVER_DRIVER_H

#include "runtime/base/progress.h"

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::strata {

/// The phases of `strata-compile --compile-to=<phase>`, in pipeline order.
enum class CompilePhase { Ast, Llm, Fused, Kernel, Target, Artifact };

/// The spelling of `phase` on the command line.
llvm::StringRef stringifyCompilePhase(CompilePhase phase);

struct CompileOptions {
  /// The model DSL file ("-" reads stdin).
  std::string inputPath;
  /// The config.json; required from the llm phase on.
  std::string configPath;
  /// Where to stop. Default: llm.
  CompilePhase phase = CompilePhase::Llm;
  /// Targets of the target/artifact phases: a comma list of cpu, sm_90,
  /// gfx942, gfx950 (the artifact gets one TargetDef each; the target
  /// phase prints one target, cpu).
  std::string target = "cpu";
  /// CUDA toolkit folder for sm_90 (bin/ptxas, nvvm/libdevice); empty:
  /// /usr/local/cuda.
  std::string gpuToolkit;
  /// ROCm-like toolkit folder for gfx942/gfx950 (llvm/bin/ld.lld,
  /// amdgcn/bitcode); empty: MLIR's lookup (ROCM_PATH, /opt/rocm).
  std::string rocmToolkit;
  /// When set, also writes each GPU target's assembly (PTX for sm_90,
  /// AMDGCN for gfx*) to `<gpuIsaDir>/<chip>.{ptx,s}` (for tests and
  /// inspection; the artifact holds the binaries).
  std::string gpuIsaDir;
  /// GPU targets: threads share a block's rows (false: one thread per
  /// block) and tiled linears use the matrix units (false: generic
  /// kernels). Both on by default; off is for bisecting device results.
  bool gpuBlockThreads = true;
  bool gpuMatrixUnits = true;
  /// GPU targets: a remark for every kernel that could run on the matrix
  /// units but keeps the generic kernel, with the reason.
  bool kernelStrategyRemarks = false;
  /// GPU targets: strategies (#llm.gpu_strategy names, e.g. kda_decode)
  /// whose kernels keep the generic kernel instead (A/B timing, bisecting).
  std::vector<std::string> gpuGenericStrategies;
  /// llm-fuse-hyper-connections in the fused phase (false: the unfused
  /// graph, for bisecting and for checking that fusion changes no logits).
  bool fuseHyperConnections = true;
  /// Element type of activations and caches: "bf16" or "f32".
  std::string activationType = "bf16";
  /// Element type of the MLA latent cache: "bf16" or "fp8" (e4m3 with one
  /// fp32 scale per 128 lanes, docs/KVCache.md); the DSL reads it as
  /// `opt.kv_cache_dtype` ("bf16" / "f8E4M3FN").
  /// What the routed fp8 experts multiply: bf16 or fp8 activations.
  std::string expertActivations = "bf16";
  std::string kvCacheDtype = "bf16";
  /// Form of the MLA layers' indexer: "pooled" (the k-pool indexer), "dense"
  /// (one index key per token, docs/DSL.md "The dense indexer"), or empty:
  /// as the config's `index_kpool_compress` says. The DSL reads it as
  /// `opt.indexer` ("pooled", "dense" or "config").
  std::string indexer;
  /// Element type of the index pages (either indexer form): "bf16" or "fp8"
  /// (Hadamard-rotated e4m3 rows with one ue8m0 fp32 scale each,
  /// docs/KVCache.md "fp8 index pages"); the DSL reads it as
  /// `opt.index_cache_dtype` ("bf16" / "f8E4M3FN").
  std::string indexCacheDtype = "bf16";
  /// Rank layout (llm-shard-model in the fused phase; the DSL reads them as
  /// `opt.tensor_parallel_size` / `opt.expert_parallel_size`): T ranks
  /// split heads, dense intermediate dimensions and the vocabulary, E ranks
  /// the routed experts; T * E ranks in all (docs/Parallel.md). Sharded
  /// programs compile for the cpu target only.
  int64_t tensorParallelSize = 1;
  int64_t expertParallelSize = 1;
  /// Check `expected-error` comments in the input instead of printing
  /// diagnostics (lit tests).
  bool verifyDiagnostics = false;
  /// Shows the phase and the target being compiled, with the time so far
  /// (runtime/base/progress.h); not owned. Default: none.
  ::strata::runtime::ProgressReporter *progress = nullptr;
};

/// Runs the compiler up to `options.phase`, printing the result to `os`.
/// Diagnostics go to stderr through a SourceMgrDiagnosticHandler.
LogicalResult compile(const CompileOptions &options, llvm::raw_ostream &os);

/// The whole strata-compile tool: parses the command line, compiles, writes
/// the output file. Returns the process exit code.
int compileMain(int argc, char **argv);

} // namespace mlir::strata

#endif // STRATA_LIB_DRIVER_DRIVER_H
