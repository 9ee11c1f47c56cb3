// RUN: strata-compile %s --config %S/Inputs/small.json -verify-diagnostics

// Tests that reading a compile option that does not exist names it and the
// known ones.
entry main() {
  // expected-error@+1 {{unknown compile option 'opt.page_size' (known: opt.kv_cache_dtype, opt.indexer, opt.index_cache_dtype, opt.tensor_parallel_size, opt.expert_parallel_size)}}
  let p = opt.page_size;
  return;
}
