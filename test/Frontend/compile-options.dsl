// RUN: strata-compile %s --config %S/Inputs/small.json | FileCheck %s --check-prefix=BF16
// RUN: strata-compile %s --config %S/Inputs/small.json --kv-cache-dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: strata-compile %s --config %S/Inputs/small.json --kv-cache-dtype=fp8 | FileCheck %s --check-prefix=FP8
// RUN: strata-compile %s --config %S/Inputs/small.json --index-cache-dtype=fp8 | FileCheck %s --check-prefix=INDEX-FP8

// Tests that `opt.kv_cache_dtype` carries --kv-cache-dtype and
// `opt.index_cache_dtype` --index-cache-dtype into the DSL (default bf16; fp8
// is the MLIR type name f8E4M3FN) and that `has(opt.…)` sees the option.

// BF16: func.func @main(%cache: !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>, %index: !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>)
// FP8: func.func @main(%cache: !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>, %index: !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>)
// INDEX-FP8: func.func @main(%cache: !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>, %index: !llm.index_pool<page_size = 64, kpool = 1, width = 128, f8E4M3FN>)
entry main() {
  assert has(opt.kv_cache_dtype), "opt.kv_cache_dtype is always set";
  let cache = input("cache", mlir_type("!llm.latent_pool<page_size = 64, width = 512, pad = 0, {opt.kv_cache_dtype}>"));
  output(cache);
  let index = input("index", mlir_type("!llm.index_pool<page_size = 64, kpool = 1, width = 128, {opt.index_cache_dtype}>"));
  output(index);
  return;
}
