// RUN: strata-compile %s --config %S/Inputs/small.json | FileCheck %s --check-prefix=ONE
// RUN: strata-compile %s --config %S/Inputs/small.json --tensor-parallel-size 4 --expert-parallel-size 2 | FileCheck %s --check-prefix=EIGHT

// Tests that `opt.tensor_parallel_size` and `opt.expert_parallel_size` carry
// --tensor-parallel-size / --expert-parallel-size into the DSL as integers
// (default 1 each).

// ONE: func.func @main(%ranks_1_1: tensor<1xi32>)
// EIGHT: func.func @main(%ranks_4_2: tensor<8xi32>)
entry main() {
  let t = opt.tensor_parallel_size;
  let e = opt.expert_parallel_size;
  let r = input("ranks_{t}_{e}", tensor([t * e], i32));
  output(r);
  return;
}
