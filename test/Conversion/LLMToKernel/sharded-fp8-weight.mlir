// RUN: strata-opt --convert-llm-to-kernel %s | FileCheck %s

// Tests that a sharded fp8 weight's data and scale globals both carry the
// weight's shards, and the scale global the data's blocks and per-rank shape
// (the emitter's block-scale split: 64 rows inside one 128-row block read
// that block's scale row).
// CHECK-DAG: memref.global constant @w : memref<64x256xf8E4M3FN> {llm.shards = [#llm.shard<tp, dim = 0, parts = 2>]}
// CHECK-DAG: memref.global constant @w_scale_inv : memref<1x2xf32> {llm.scale_blocks = array<i64: 128, 128>, llm.scale_data_shape = array<i64: 64, 256>, llm.shards = [#llm.shard<tp, dim = 0, parts = 2>]}
func.func @sharded_fp8_weight(%x: tensor<?x256xbf16>) -> tensor<?x64xbf16> {
  %w = llm.weight "w" {shards = [#llm.shard<tp, dim = 0, parts = 2>]} : !llm.fp8_weight<tensor<64x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>
  %y = llm.linear %x, %w : (tensor<?x256xbf16>, !llm.fp8_weight<tensor<64x256xf8E4M3FN>, tensor<1x2xf32>, block = [128, 128]>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
