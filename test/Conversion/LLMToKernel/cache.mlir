// RUN: strata-opt --split-input-file --convert-llm-to-kernel %s | FileCheck %s

// Tests that a latent cache write updates the pool buffer in place: no
// result allocation, and the returned cache is the argument buffer.
// CHECK-LABEL: func.func @latent_write
// CHECK-SAME: (%[[POOL:[^:]*]]: memref<?x64x512xbf16>
// CHECK-NOT: memref.alloc
// CHECK: call @latent_cache_write_0(%[[POOL]],
// CHECK: return %[[POOL]]
func.func @latent_write(%c0: !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>,
    %ckv: tensor<?x512xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16> {
  %c1 = llm.latent_cache_write %c0, %ckv, %pos, %starts, %bt
      : (!llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>, tensor<?x512xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>
  return %c1 : !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>
}

// -----

// Tests the memref layouts of the index pool ([pages, page_size / kpool,
// width]) and the tail ring ([slots, 2, depth, width]).
// CHECK-LABEL: func.func @index_and_ring
// CHECK-SAME: memref<?x16x128xbf16>
// CHECK-SAME: memref<?x2x16x128xbf16>
// CHECK: call @index_cache_write_0
// CHECK: call @tail_ring_write_0
func.func @index_and_ring(%p0: !llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>,
    %r0: !llm.tail_ring<depth = 16, width = 128, bf16>, %pk: tensor<?x128xf32>,
    %k: tensor<?x128xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>, %slots: tensor<?xi32>)
    -> (!llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>, !llm.tail_ring<depth = 16, width = 128, bf16>) {
  %p1 = llm.index_cache_write %p0, %pk, %pos, %starts, %bt
      : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>, tensor<?x128xf32>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>
  %r1 = llm.tail_ring_write %r0, %k, %k, %pos, %starts, %slots
      : (!llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?x128xbf16>, tensor<?x128xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !llm.tail_ring<depth = 16, width = 128, bf16>
  return %p1, %r1 : !llm.index_pool<page_size = 64, kpool = 4, width = 128, bf16>, !llm.tail_ring<depth = 16, width = 128, bf16>
}

// -----

// Tests that an fp8 latent pool is [pages, page_bytes] i8 (64 rows of 512
// e4m3 values + 4 f32 scales = 33792 bytes), written in place, its rows
// addressed through memref.view at page * 33792 and its scales at byte 512
// of each 528-byte row (f32 index row * 132 + group).
// CHECK-LABEL: func.func @latent_fp8
// CHECK-SAME: (%[[POOL:[^:]*]]: memref<?x33792xi8>
// CHECK-NOT: memref.alloc
// CHECK: call @latent_cache_write_0(%[[POOL]],
// CHECK: return %[[POOL]]
// CHECK-LABEL: func.func @latent_cache_write_0
// CHECK: memref.collapse_shape {{.*}} memref<?x33792xi8> into memref<?xi8>
// CHECK: memref.view {{.*}} : memref<?xi8> to memref<64x528xf8E4M3FN>
// CHECK: memref.view {{.*}} : memref<?xi8> to memref<8320xf32>
func.func @latent_fp8(%c0: !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>,
    %ckv: tensor<?x512xbf16>, %pos: tensor<?xi32>, %starts: tensor<?xi32>, %bt: tensor<?x?xi32>)
    -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN> {
  %c1 = llm.latent_cache_write %c0, %ckv, %pos, %starts, %bt
      : (!llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>, tensor<?x512xbf16>,
         tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>
  return %c1 : !llm.latent_pool<page_size = 64, width = 512, pad = 0, f8E4M3FN>
}
