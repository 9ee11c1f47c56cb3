// RUN: strata-opt --split-input-file --convert-llm-to-kernel --verify-diagnostics %s

// Tests that an fp8 latent pool, which has no CPU kernel, is reported.
func.func @fp8_latent_pool(%c0: !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>,
    %ckv: tensor<?x512xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN> {
  // expected-error@+1 {{failed to legalize operation 'llm.latent_cache_write'}}
  %c1 = llm.latent_cache_write %c0, %ckv, %pos, %starts, %bt
      : (!llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>, tensor<?x512xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>
  return %c1 : !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>
}
