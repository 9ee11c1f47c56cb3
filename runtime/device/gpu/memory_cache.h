//===- memory_cache.h - reuse of freed device allocations -------*- C++ -*-===//
//
// Part of strata. A GPU step that is not replayed from a captured graph (every
// prefill step, a decode step of a new shape) allocates its plan buffers and
// frees them at its end; each vendor allocation maps pages and each free
// waits for the device, which costs more than the step's small kernels. The
// device keeps freed allocations in size classes instead and hands them out
// again (the approach of PyTorch's caching allocator, without per-stream
// pools). A vendor free waits for the device; so does the cache, once, before
// it hands out a block released since its last wait: work still reading a
// freed buffer ends before the block is zeroed for its next owner.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_DEVICE_GPU_MEMORY_CACHE_H
#define STRATA_RUNTIME_DEVICE_GPU_MEMORY_CACHE_H

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "runtime/base/status.h"

namespace strata::runtime {

/// Freed device allocations kept for reuse, by size class.
class DeviceMemoryCache {
public:
  using AllocFn = std::function<Status(uint64_t size, uint64_t &address)>;
  using FreeFn = std::function<Status(uint64_t address)>;
  /// Waits for all work of the device.
  using SyncFn = std::function<Status()>;

  DeviceMemoryCache(AllocFn alloc, FreeFn free, SyncFn sync)
      : alloc_(std::move(alloc)), free_(std::move(free)),
        sync_(std::move(sync)) {}
  ~DeviceMemoryCache() { (void)trim(); }
  DeviceMemoryCache(const DeviceMemoryCache &) = delete;
  DeviceMemoryCache &operator=(const DeviceMemoryCache &) = delete;

  /// The size class of a request of `size` bytes: a multiple of 512 bytes,
  /// and of a quarter of the largest power of two not above `size` (at most
  /// 25 % more than asked for), so that steps of nearby sizes share blocks.
  static uint64_t sizeClass(uint64_t size);

  /// An allocation of at least `size` bytes (sizeClass(size) of them, in
  /// `out_class`): a cached one of that class (after waiting for the device
  /// when blocks were released since the last wait), else a new one; when the
  /// vendor allocation fails, every cached block is freed and it is tried
  /// once more.
  Status allocate(uint64_t size, uint64_t &out_address, uint64_t &out_class);
  /// Keeps `address` (of size class `size_class`) for reuse.
  void release(uint64_t address, uint64_t size_class);
  /// Frees every cached block.
  Status trim();
  /// Bytes held in the cache.
  uint64_t cachedBytes() const;

private:
  AllocFn alloc_;
  FreeFn free_;
  SyncFn sync_;
  mutable std::mutex mutex_;
  /// Blocks were released since the last wait for the device.
  bool released_since_sync_ = false;
  std::multimap<uint64_t, uint64_t> free_blocks_; // size class -> address
  uint64_t cached_bytes_ = 0;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_DEVICE_GPU_MEMORY_CACHE_H
