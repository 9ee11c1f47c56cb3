// RUN: strata-compile %s --compile-to=ast | FileCheck %s
// RUN: strata-compile %s --config %S/Inputs/small.json | FileCheck %s --check-prefix=LLM

// Tests that imports are resolved relative to the importing file, once each,
// and that imported blocks come first.

import "Inputs/blocks.dsl";
import "Inputs/blocks.dsl";

// CHECK:      Import "blocks.dsl"
// CHECK-NOT:  Import
// CHECK:      Def double_norm
// CHECK:      Entry main

// LLM-LABEL: func.func @main
// LLM: llm.weight "w0"
// LLM: llm.weight "w1"
entry main(x: [?, cfg.hidden_size] bf16) {
  let y = double_norm(x);
  return y;
}
