//===- Patterns.h - convert-llm-to-kernel pattern groups --------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// One populate function per op group of the llm dialect. Each adds
// OpConversionPatterns that outline the group's ops into kernel functions
// (KernelBuilder.h) and call them. `converter` maps llm operand types to
// their kernel memref types (populateKernelTypeConversions). GPU lowerings
// reuse the same grouping with their own bodies.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_PATTERNS_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_PATTERNS_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::strata {

/// llm.weight, llm.expert_weights (tensor results) -> memref.get_global.
void populateWeightToKernelPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
/// llm.embedding, llm.position_mask, llm.rms_norm, llm.layer_norm.
void populateElementwiseToKernelPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns);
/// llm.linear, llm.lm_head.
void populateLinearToKernelPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
/// llm.argmax.
void populateArgmaxToKernelPatterns(const TypeConverter &converter,
                                    RewritePatternSet &patterns);
/// llm.hc_expand, llm.hc_collapse, llm.mhc_pre, llm.mhc_post.
void populateHyperConnectionToKernelPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns);
/// llm.swiglu_mlp, llm.moe_ffn.
void populateFfnToKernelPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// llm.kda_attention.
void populateKdaToKernelPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// llm.mla_attention.
void populateMlaToKernelPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// llm.kpool_compress, llm.kpool_indexer.
void populateIndexerToKernelPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);
/// llm.latent_cache_write/gather, llm.index_cache_write/gather,
/// llm.tail_ring_write/gather.
void populateCacheToKernelPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns);
/// llm.all_reduce (the streams form as the bare reduction and an
/// llm.mhc_post), llm.all_gather: calls of collective declarations.
void populateCollectiveToKernelPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns);

/// Region-free arith / math / tensor compute ops on ranked tensors inside
/// step functions (isOutlinedUpstreamOp), each outlined into a kernel.
void populateUpstreamToKernelPatterns(const TypeConverter &converter,
                                      RewritePatternSet &patterns);
/// True for the ops populateUpstreamToKernelPatterns outlines.
bool isOutlinedUpstreamOp(Operation *op);

/// All groups above.
void populateLLMToKernelPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_PATTERNS_H
