//===- model_engine.cpp - the engine strata-serve serves a model with -------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/model_engine.h"

namespace strata::runtime::serve {

StatusOr<std::unique_ptr<Engine>>
createModelEngine(const ModelEngineOptions &options) {
  if (!options.artifact)
    return invalidArgument("engine construction: no artifact");
  return unimplemented(
      "engine construction: this build has no model executor and scheduler "
      "(runtime/executor, runtime/scheduler), so strata-serve cannot run the "
      "model of {}; the server itself is ready (docs/Serving.md)",
      options.checkpoint_dir);
}

} // namespace strata::runtime::serve
