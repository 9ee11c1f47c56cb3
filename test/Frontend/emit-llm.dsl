// RUN: strata-compile %s --config %S/Inputs/small.json --compile-to=llm | FileCheck %s
// RUN: strata-compile %s --config %S/Inputs/flat.json -emit=llm | FileCheck %s --check-prefix=FLAT
// RUN: strata-compile %s --config %S/Inputs/small.json --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// Tests llm emission: the config-driven loop and branch, weight names from
// the layer index, shapes from config expressions, NameLocs "layer<i>.<var>"
// over DSL FileLineColLocs, and a flat (no text_config) config.

def norm(x, name) {
  let w = weight(name, tensor([cfg.hidden_size], bf16));
  let y: [?, cfg.hidden_size] bf16 = llm.rms_norm(x, w, none, eps = cfg.rms_norm_eps);
  return y;
}

// CHECK-LABEL: func.func @main(%h: tensor<?x8xbf16>) -> tensor<?x8xbf16>
// CHECK:         %[[W0:.*]] = llm.weight "layers.0.norm_a.weight" : tensor<8xbf16>
// CHECK:         %layer0.h = llm.rms_norm %h weight(%[[W0]]) {eps = 9.99999974E-6 : f32}
// CHECK:         llm.weight "layers.1.norm_b.weight"
// CHECK:         %layer1.h = llm.rms_norm %layer0.h
// CHECK:         llm.weight "layers.2.norm_a.weight"
// CHECK:         %[[OUT:.*]] = arith.addf
// CHECK:         return %[[OUT]]
// FLAT-LABEL: func.func @main(%h: tensor<?x16xbf16>) -> tensor<?x16xbf16>
// FLAT-COUNT-2: llm.weight "layers.{{[01]}}.norm_a.weight" : tensor<16xbf16>
// FLAT-NOT: norm_b
// LOC: llm.rms_norm {{.*}} loc(#[[L:loc[0-9]+]])
// LOC: #[[FLC:loc[0-9]+]] = loc("{{.*}}emit-llm.dsl":11:{{[0-9]+}})
// LOC: #[[L]] = loc("layer0.h"(#[[FLC]]))
entry main(h: [?, cfg.hidden_size] bf16) {
  for i in 0 .. cfg.num_hidden_layers {
    scope "layer{i}" {
      if cfg.layer_types[i] == "a" {
        h = norm(h, "layers.{i}.norm_a.weight");
      } else {
        h = norm(h, "layers.{i}.norm_b.weight");
      }
    }
  }
  let out = h + h;
  return out;
}
