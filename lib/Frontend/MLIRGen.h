//===- MLIRGen.h - model DSL AST to the llm dialect -------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//
//
// Evaluates a DSL module against a model config and emits one func.func per
// `entry`. Everything that depends only on the config (loops over layers,
// `if` on layer_types, shapes, weight names, fp8 or not) is evaluated at
// compile time; tensors become SSA values of `llm` (and upstream) ops. Every
// op carries the DSL FileLineColLoc, wrapped in a NameLoc "<scope>.<variable>"
// (e.g. "layer3.q_absorbed") naming the value it defines. Errors are MLIR
// diagnostics at DSL locations; generation stops at the first.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_FRONTEND_MLIRGEN_H
#define STRATA_LIB_FRONTEND_MLIRGEN_H

#include "lib/Frontend/AST.h"
#include "lib/Frontend/Config.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mlir::strata::dsl {

/// Compile options a model reads through `opt.<key>` (strata-compile flags;
/// docs/DSL.md). Values are strings.
struct DslOptions {
  /// `opt.kv_cache_dtype`: element type of the MLA latent cache as an MLIR
  /// type name, "bf16" or "f8E4M3FN" (`--kv-cache-dtype=bf16|fp8`).
  std::string kvCacheDtype = "bf16";
  /// `opt.indexer`: the MLA layers' indexer, "pooled", "dense" or "config"
  /// (as the config's `index_kpool_compress` says; `--indexer`).
  std::string indexer = "config";
  /// `opt.index_cache_dtype`: element type of the index pages, "bf16" or
  /// "f8E4M3FN" (`--index-cache-dtype=bf16|fp8`).
  std::string indexCacheDtype = "bf16";
  /// `opt.tensor_parallel_size` / `opt.expert_parallel_size`: the rank
  /// layout the program is compiled for (`--tensor-parallel-size`,
  /// `--expert-parallel-size`; integers, default 1). The model is written
  /// whole either way: llm-shard-model splits it, so a model reads these
  /// only to check a constraint of its own.
  int64_t tensorParallelSize = 1;
  int64_t expertParallelSize = 1;
};

/// Emits `module` for `config` and `options`. Returns null after reporting a
/// diagnostic. The context must have the llm, func, arith and tensor
/// dialects loaded.
OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const ModuleAST &module,
                              const ModelConfig &config,
                              const DslOptions &options = {});

} // namespace mlir::strata::dsl

#endif // STRATA_LIB_FRONTEND_MLIRGEN_H
