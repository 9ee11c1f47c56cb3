// models/common/paging.dsl - the page size of the paged caches (MLA latent
// pool and index pool; docs/KVCache.md).

// Tokens per page of the paged caches (runtime contract, not a model knob).
def page_size() { return 64; }
