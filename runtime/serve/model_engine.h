//===- model_engine.h - the engine strata-serve serves a model with ---------===//
//
// Part of strata. The single place where strata-serve turns its flags into a
// real Engine (engine.h): the scheduler (batching, paged KV cache, prefix
// reuse, MTP) over the model executor. strata-serve's CLI (cli.h) loads and
// validates the tokenizer and the artifact, then calls createModelEngine;
// everything else the server needs already exists.
//
// Ownership: the returned engine is owned by the caller (the Server). It
// keeps the artifact alive through the shared_ptr.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_MODEL_ENGINE_H
#define STRATA_RUNTIME_SERVE_MODEL_ENGINE_H

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/base/status.h"
#include "runtime/loader/artifact.h"
#include "runtime/serve/engine.h"

namespace strata::runtime::serve {

/// What the model engine is built from.
struct ModelEngineOptions {
  /// The validated compiled model (--artifact).
  std::shared_ptr<const Artifact> artifact;
  /// Checkpoint folder with config.json and *.safetensors (--checkpoint).
  std::string checkpoint_dir;
  /// Requests the server admits at once (--max-queue); the engine's queue
  /// needs no more room than this.
  size_t max_queue = 0;
};

/// Builds the engine that runs the model. Today no model executor is part of
/// the runtime, so this returns UNIMPLEMENTED naming what is missing; the
/// scheduler + executor plug in here and nowhere else.
StatusOr<std::unique_ptr<Engine>>
createModelEngine(const ModelEngineOptions &options);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_MODEL_ENGINE_H
