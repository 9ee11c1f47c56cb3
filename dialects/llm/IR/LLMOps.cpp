//===- LLMOps.cpp - llm dialect op verifiers --------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::strata::llm;

#define GET_OP_CLASSES
#include "dialects/llm/IR/LLMOps.cpp.inc"

LogicalResult WeightOp::verify() { return success(); }
LogicalResult ExpertWeightsOp::verify() { return success(); }
LogicalResult EmbeddingOp::verify() { return success(); }
LogicalResult PositionMaskOp::verify() { return success(); }
LogicalResult RmsNormOp::verify() { return success(); }
LogicalResult LayerNormOp::verify() { return success(); }
LogicalResult LinearOp::verify() { return success(); }
LogicalResult LmHeadOp::verify() { return success(); }
LogicalResult HcExpandOp::verify() { return success(); }
LogicalResult HcCollapseOp::verify() { return success(); }
LogicalResult MhcPreOp::verify() { return success(); }
LogicalResult MhcPostOp::verify() { return success(); }
LogicalResult KdaAttentionOp::verify() { return success(); }
LogicalResult MlaAttentionOp::verify() { return success(); }
LogicalResult KpoolCompressOp::verify() { return success(); }
LogicalResult KpoolIndexerOp::verify() { return success(); }
LogicalResult LatentCacheWriteOp::verify() { return success(); }
LogicalResult LatentCacheGatherOp::verify() { return success(); }
LogicalResult IndexCacheWriteOp::verify() { return success(); }
LogicalResult IndexCacheGatherOp::verify() { return success(); }
LogicalResult TailRingWriteOp::verify() { return success(); }
LogicalResult TailRingGatherOp::verify() { return success(); }
LogicalResult SwigluMlpOp::verify() { return success(); }
LogicalResult MoeFfnOp::verify() { return success(); }
