// RUN: strata-compile %s --config %S/Inputs/small.json | FileCheck %s --check-prefix=CONFIG
// RUN: strata-compile %s --config %S/Inputs/small.json --indexer=pooled | FileCheck %s --check-prefix=POOLED
// RUN: strata-compile %s --config %S/Inputs/small.json --indexer=dense | FileCheck %s --check-prefix=DENSE

// Tests that `opt.indexer` carries --indexer into the DSL: "pooled" or
// "dense", and "config" without the flag (the model then reads
// index_kpool_compress; models/common/indexer.dsl).

// CONFIG: func.func @main(%indexer_config: tensor<1xi32>)
// POOLED: func.func @main(%indexer_pooled: tensor<1xi32>)
// DENSE: func.func @main(%indexer_dense: tensor<1xi32>)
entry main() {
  let r = input("indexer_{opt.indexer}", tensor([1], i32));
  output(r);
  return;
}
