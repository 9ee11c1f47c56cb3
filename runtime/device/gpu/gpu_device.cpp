//===- gpu_device.cpp - a Device over a GpuDriver -------------------------===//
//
// Part of strata. See gpu_device.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/gpu/gpu_device.h"
#include "runtime/device/gpu/memory_cache.h"

#include <cstring>
#include <memory>
#include <optional>

namespace strata::runtime {
namespace {

/// Vendor allocations are aligned to (at least) this many bytes.
constexpr uint64_t kGpuAllocationAlignment = 256;

class GpuBuffer final : public Buffer {
public:
  /// Host memory, freed on destruction.
  GpuBuffer(GpuDriver &driver, void *host, uint64_t size)
      : driver_(driver), address_(reinterpret_cast<uint64_t>(host)),
        host_(host), size_(size),
        kind_(MemoryKind::kHost) {}
  /// Device memory of size class `size_class`, handed back to `cache` on
  /// destruction.
  GpuBuffer(GpuDriver &driver, DeviceMemoryCache &cache, uint64_t address,
            uint64_t size, uint64_t size_class)
      : driver_(driver), cache_(&cache), address_(address), host_(nullptr),
        size_(size), size_class_(size_class), kind_(MemoryKind::kDevice) {}
  ~GpuBuffer() override {
    if (kind_ == MemoryKind::kDevice) {
      cache_->release(address_, size_class_);
      return;
    }
    (void)driver_.makeCurrent();
    (void)driver_.hostFree(host_);
  }
  uint64_t size() const override { return size_; }
  MemoryKind memoryKind() const override { return kind_; }
  void *hostPointer() override { return host_; }
  void *devicePointer() override { return reinterpret_cast<void *>(address_); }
  uint64_t address() const { return address_; }

private:
  GpuDriver &driver_;
  DeviceMemoryCache *cache_ = nullptr;
  uint64_t address_;
  void *host_;
  uint64_t size_;
  uint64_t size_class_ = 0;
  MemoryKind kind_;
};

uint64_t addressOf(const Buffer &buffer) {
  return static_cast<const GpuBuffer &>(buffer).address();
}

class GpuExecutable final : public Executable {
public:
  GpuExecutable(GpuDriver &driver, void *module, std::vector<KernelSpec> specs,
                std::vector<void *> functions)
      : driver_(driver), module_(module), specs_(std::move(specs)),
        functions_(std::move(functions)) {}
  ~GpuExecutable() override {
    (void)driver_.makeCurrent();
    (void)driver_.moduleUnload(module_);
  }
  size_t kernelCount() const override { return specs_.size(); }
  const KernelSpec &kernel(size_t index) const override {
    return specs_[index];
  }
  void *function(size_t index) const { return functions_[index]; }

private:
  GpuDriver &driver_;
  void *module_;
  std::vector<KernelSpec> specs_;
  std::vector<void *> functions_;
};

class GpuEvent final : public Event {
public:
  GpuEvent(GpuDriver &driver, void *event) : driver_(driver), event_(event) {}
  ~GpuEvent() override {
    (void)driver_.makeCurrent();
    (void)driver_.eventDestroy(event_);
  }
  bool recorded() const override { return recorded_; }
  Status synchronize() override {
    if (!recorded_)
      return failedPrecondition("event has not been recorded");
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.eventSynchronize(event_);
  }
  void *handle() const { return event_; }
  void markRecorded() { recorded_ = true; }

private:
  GpuDriver &driver_;
  void *event_;
  bool recorded_ = false;
};

class GpuGraph final : public Graph {
public:
  GpuGraph(GpuDriver &driver, void *exec, size_t operations)
      : driver_(driver), exec_(exec), operations_(operations) {}
  ~GpuGraph() override {
    (void)driver_.makeCurrent();
    (void)driver_.graphExecDestroy(exec_);
  }
  size_t operationCount() const override { return operations_; }
  void *exec() const { return exec_; }

private:
  GpuDriver &driver_;
  void *exec_;
  size_t operations_;
};

class GpuDevice;

class GpuStream final : public Stream {
public:
  GpuStream(GpuDevice &device, GpuDriver &driver, void *stream)
      : device_(device), driver_(driver), stream_(stream) {}
  ~GpuStream() override;

  void *nativeHandle() const override { return stream_; }

  Status dispatch(Executable &executable, size_t kernel_index,
                  const std::vector<DispatchArg> &args,
                  const uint64_t grid[3]) override {
    return launchKernel(executable, kernel_index, args, grid, std::nullopt);
  }

  Status dispatchWithSharedMemory(Executable &executable, size_t kernel_index,
                                  const std::vector<DispatchArg> &args,
                                  const uint64_t grid[3],
                                  uint64_t shared_memory_bytes) override {
    return launchKernel(executable, kernel_index, args, grid,
                        shared_memory_bytes);
  }

  Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                      uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("copy from a host pointer"));
    STRATA_RETURN_IF_ERROR(checkBufferRange(dst, offset, size));
    if (size == 0)
      return okStatus();
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.memcpyAsync(addressOf(dst) + offset,
                               reinterpret_cast<uint64_t>(src), size, stream_);
  }

  Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                        uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("copy to a host pointer"));
    STRATA_RETURN_IF_ERROR(checkBufferRange(src, offset, size));
    if (size == 0)
      return okStatus();
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.memcpyAsync(reinterpret_cast<uint64_t>(dst),
                               addressOf(src) + offset, size, stream_);
  }

  Status copyBuffer(const Buffer &src, uint64_t src_offset, Buffer &dst,
                    uint64_t dst_offset, uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkBufferRange(src, src_offset, size));
    STRATA_RETURN_IF_ERROR(checkBufferRange(dst, dst_offset, size));
    if (size == 0)
      return okStatus();
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    STRATA_RETURN_IF_ERROR(driver_.memcpyAsync(addressOf(dst) + dst_offset,
                                               addressOf(src) + src_offset,
                                               size, stream_));
    countOperation();
    return okStatus();
  }

  Status copyBuffer2D(const Buffer &src, Buffer &dst,
                      const Copy2D &copy) override {
    STRATA_RETURN_IF_ERROR(checkCopy2D(src, dst, copy));
    if (copy.rows == 0 || copy.row_bytes == 0)
      return okStatus();
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    // One row: the pitches are unused; the vendor calls still want them at
    // least the row's width.
    uint64_t src_pitch = copy.rows > 1 ? copy.src_pitch : copy.row_bytes;
    uint64_t dst_pitch = copy.rows > 1 ? copy.dst_pitch : copy.row_bytes;
    STRATA_RETURN_IF_ERROR(driver_.memcpy2DAsync(
        addressOf(dst) + copy.dst_offset, dst_pitch,
        addressOf(src) + copy.src_offset, src_pitch, copy.row_bytes, copy.rows,
        stream_));
    countOperation();
    return okStatus();
  }

  StatusOr<std::unique_ptr<StreamHold>> hold() override;

  Status recordEvent(Event &event) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("record an event"));
    auto &gpu = static_cast<GpuEvent &>(event);
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    STRATA_RETURN_IF_ERROR(driver_.eventRecord(gpu.handle(), stream_));
    gpu.markRecorded();
    return okStatus();
  }

  Status waitEvent(const Event &event) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("wait for an event"));
    if (!event.recorded())
      return failedPrecondition("event has not been recorded");
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.streamWaitEvent(
        stream_, static_cast<const GpuEvent &>(event).handle());
  }

  Status synchronize() override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("synchronize"));
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.streamSynchronize(stream_);
  }

  Status beginCapture() override;
  bool capturing() const override { return capturing_; }
  StatusOr<std::unique_ptr<Graph>> endCapture() override;

  Status launchGraph(Graph &graph) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("launch a graph"));
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    return driver_.graphLaunch(static_cast<GpuGraph &>(graph).exec(), stream_);
  }

  void *handle() const { return stream_; }

private:
  /// The kernel launch of dispatch, with `shared_memory_bytes` (at most the
  /// kernel's) instead of the kernel's dynamic shared memory when given.
  Status launchKernel(Executable &executable, size_t kernel_index,
                      const std::vector<DispatchArg> &args,
                      const uint64_t grid[3],
                      std::optional<uint64_t> shared_memory_bytes) {
    auto &gpu = static_cast<GpuExecutable &>(executable);
    STRATA_ASSIGN_OR_RETURN(const KernelSpec *spec,
                            dispatchedKernel(gpu, kernel_index, args));
    const KernelSpec &kernel = *spec;
    LaunchDims launch = kernel.launch;
    if (shared_memory_bytes) {
      if (*shared_memory_bytes > launch.shared_memory_bytes)
        return invalidArgument("kernel '{}': {} bytes of dynamic shared "
                               "memory, more than its {}",
                               kernel.name, *shared_memory_bytes,
                               launch.shared_memory_bytes);
      launch.shared_memory_bytes = *shared_memory_bytes;
    }
    uint32_t blocks[3];
    for (int d = 0; d < 3; ++d) {
      if (grid[d] == 0 || grid[d] > UINT32_MAX)
        return invalidArgument("kernel '{}': grid ({}, {}, {}) has an extent "
                               "outside [1, 2^32)",
                               kernel.name, grid[0], grid[1], grid[2]);
      blocks[d] = static_cast<uint32_t>(grid[d]);
    }
    // Kernel parameters: one pointer per flattened 8-byte value; the
    // driver copies the values at launch (and into the graph node).
    std::vector<uint64_t> values = flattenDispatchArgs(kernel, args);
    std::vector<void *> params(values.size());
    for (size_t s = 0; s < values.size(); ++s)
      params[s] = &values[s];
    STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
    // Dependent launches only into graphs: the steps replayed from them
    // are the ones whose gaps between small kernels matter.
    bool dependent = capturing_ && launch.grid_dependency_control;
    Status launched = driver_.launch(gpu.function(kernel_index), blocks,
                                     launch, stream_, params.data(), dependent);
    if (!launched.ok())
      return launched.withContext(fmt::format("kernel '{}'", kernel.name));
    countOperation();
    return okStatus();
  }

  Status checkNotCapturing(const char *what) const {
    if (capturing_)
      return failedPrecondition("cannot {} while the stream is capturing",
                                what);
    return okStatus();
  }
  void countOperation() {
    if (capturing_)
      ++captured_operations_;
  }

  GpuDevice &device_;
  GpuDriver &driver_;
  void *stream_;
  bool capturing_ = false;
  /// The word this stream's holds wait on (page-locked host memory, made by
  /// the first hold; shared with the holds) and the latest hold's value.
  std::shared_ptr<uint32_t> hold_word_;
  uint32_t hold_value_ = 0;
  size_t captured_operations_ = 0;
};

class GpuDevice final : public Device {
public:
  explicit GpuDevice(std::unique_ptr<GpuDriver> driver)
      : driver_(std::move(driver)),
        cache_(
            [this](uint64_t size, uint64_t &address) {
              return driver_->deviceAlloc(size, address);
            },
            [this](uint64_t address) {
              (void)driver_->makeCurrent();
              return driver_->deviceFree(address);
            },
            [this] { return driver_->contextSynchronize(); }) {}

  /// Creates the default stream; separate from the constructor so failures
  /// are reported.
  Status init() {
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *stream = nullptr;
    STRATA_RETURN_IF_ERROR(driver_->streamCreate(stream));
    default_stream_ = std::make_unique<GpuStream>(*this, *driver_, stream);
    return okStatus();
  }

  const char *name() const override { return driver_->backendName(); }
  std::string description() const override { return driver_->description(); }
  Status makeCurrent() override { return driver_->makeCurrent(); }

  StatusOr<MemoryInfo> memoryInfo() override {
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    MemoryInfo info;
    STRATA_RETURN_IF_ERROR(
        driver_->memoryInfo(info.free_bytes, info.total_bytes));
    // Cached blocks are free for the next allocation.
    info.free_bytes += cache_.cachedBytes();
    return info;
  }

  StatusOr<std::unique_ptr<Buffer>> allocate(uint64_t size,
                                             uint64_t alignment) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("allocate"));
    if ((alignment & (alignment - 1)) != 0)
      return invalidArgument("alignment {} is not a power of two", alignment);
    if (alignment > kGpuAllocationAlignment)
      return invalidArgument("alignment {} exceeds the {}-byte alignment of "
                             "{} allocations",
                             alignment, kGpuAllocationAlignment, name());
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    uint64_t address = 0, size_class = 0;
    Status allocated = cache_.allocate(size, address, size_class);
    if (!allocated.ok())
      return allocated.withContext(
          fmt::format("cannot allocate {} bytes", size));
    auto buffer = std::make_unique<GpuBuffer>(*driver_, cache_, address, size,
                                              size_class);
    // Zero on the default stream and wait, so the memory is zero for every
    // stream that uses it afterwards.
    if (size > 0) {
      STRATA_RETURN_IF_ERROR(
          driver_->memsetZeroAsync(address, size, default_stream_->handle()));
      STRATA_RETURN_IF_ERROR(
          driver_->streamSynchronize(default_stream_->handle()));
    }
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  StatusOr<std::unique_ptr<Buffer>> allocateHost(uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("allocate"));
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *pointer = nullptr;
    Status allocated = driver_->hostAlloc(size == 0 ? 1 : size, pointer);
    if (!allocated.ok())
      return allocated.withContext(
          fmt::format("cannot allocate {} bytes of host memory", size));
    std::memset(pointer, 0, size);
    return std::unique_ptr<Buffer>(new GpuBuffer(*driver_, pointer, size));
  }

  Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                      uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("copy to the device"));
    STRATA_RETURN_IF_ERROR(
        default_stream_->copyToDevice(dst, offset, src, size));
    return default_stream_->synchronize();
  }

  Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                        uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("copy from the device"));
    STRATA_RETURN_IF_ERROR(
        default_stream_->copyFromDevice(src, offset, dst, size));
    return default_stream_->synchronize();
  }

  StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableSpec &spec) override {
    if (spec.format != driver_->binaryFormat())
      return invalidArgument("the {} device cannot load binary format {}",
                             name(), static_cast<int>(spec.format));
    if (!spec.data || spec.size == 0)
      return invalidArgument("kernel binary is empty");
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *module = nullptr;
    STRATA_RETURN_IF_ERROR(driver_->moduleLoad(spec.data, spec.size, module));
    std::vector<void *> functions;
    for (const KernelSpec &kernel : spec.kernels) {
      void *function = nullptr;
      Status found =
          driver_->moduleGetFunction(module, kernel.entry_symbol, function);
      if (found.ok())
        found = driver_->prepareFunction(function, kernel.launch);
      if (!found.ok()) {
        (void)driver_->moduleUnload(module);
        if (found.code() == StatusCode::kNotFound)
          return notFound("kernel '{}': entry symbol '{}' not found in "
                          "binary",
                          kernel.name, kernel.entry_symbol);
        return found.withContext(fmt::format("kernel '{}'", kernel.name));
      }
      functions.push_back(function);
    }
    return std::unique_ptr<Executable>(new GpuExecutable(
        *driver_, module, spec.kernels, std::move(functions)));
  }

  Status dispatch(Executable &executable, size_t kernel_index,
                  const std::vector<DispatchArg> &args,
                  const uint64_t grid[3]) override {
    return default_stream_->dispatch(executable, kernel_index, args, grid);
  }

  Status synchronize() override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("synchronize"));
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    return driver_->contextSynchronize();
  }

  Stream &defaultStream() override { return *default_stream_; }

  StatusOr<std::unique_ptr<Stream>> createStream() override {
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *stream = nullptr;
    STRATA_RETURN_IF_ERROR(driver_->streamCreate(stream));
    return std::unique_ptr<Stream>(new GpuStream(*this, *driver_, stream));
  }

  StatusOr<std::unique_ptr<Event>> createEvent() override {
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *event = nullptr;
    STRATA_RETURN_IF_ERROR(driver_->eventCreate(event));
    return std::unique_ptr<Event>(new GpuEvent(*driver_, event));
  }

  StatusOr<float> elapsedMillis(const Event &start, const Event &end) override {
    if (!start.recorded() || !end.recorded())
      return failedPrecondition("event has not been recorded");
    STRATA_RETURN_IF_ERROR(driver_->makeCurrent());
    void *end_handle = static_cast<const GpuEvent &>(end).handle();
    STRATA_RETURN_IF_ERROR(driver_->eventSynchronize(end_handle));
    float millis = 0;
    STRATA_RETURN_IF_ERROR(driver_->eventElapsedMillis(
        static_cast<const GpuEvent &>(start).handle(), end_handle, millis));
    return millis;
  }

  void addCapture(int delta) { capturing_streams_ += delta; }

private:
  Status checkNoCapture(const char *what) const {
    if (capturing_streams_ > 0)
      return failedPrecondition("cannot {} while a stream is capturing", what);
    return okStatus();
  }

  // Declaration order is destruction order in reverse: the default stream
  // goes before the driver that destroys it.
  std::unique_ptr<GpuDriver> driver_;
  // Freed device allocations (memory_cache.h); freed before the driver goes.
  DeviceMemoryCache cache_;
  int capturing_streams_ = 0;
  std::unique_ptr<GpuStream> default_stream_;
};

/// A hold on a GpuStream: the stream waits until the word is at least
/// `value`; release() stores it.
class GpuStreamHold final : public StreamHold {
public:
  GpuStreamHold(std::shared_ptr<uint32_t> word, uint32_t value)
      : word_(std::move(word)), value_(value) {}
  ~GpuStreamHold() override { release(); }
  void release() override { releaseWord(*word_, value_); }

  /// Lets every hold up to `value` go (the word only grows).
  static void releaseWord(uint32_t &word, uint32_t value) {
    uint32_t now = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
    while (now < value &&
           !__atomic_compare_exchange_n(&word, &now, value,
                                        /*weak=*/true, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE)) {
    }
  }

private:
  std::shared_ptr<uint32_t> word_;
  uint32_t value_;
};

StatusOr<std::unique_ptr<StreamHold>> GpuStream::hold() {
  STRATA_RETURN_IF_ERROR(checkNotCapturing("hold the stream"));
  STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
  if (!hold_word_) {
    void *word = nullptr;
    STRATA_RETURN_IF_ERROR(driver_.hostAlloc(sizeof(uint32_t), word));
    std::memset(word, 0, sizeof(uint32_t));
    GpuDriver *driver = &driver_;
    hold_word_ = std::shared_ptr<uint32_t>(static_cast<uint32_t *>(word),
                                           [driver](uint32_t *p) {
                                             (void)driver->makeCurrent();
                                             (void)driver->hostFree(p);
                                           });
  }
  if (hold_value_ == UINT32_MAX)
    return resourceExhausted("the stream was held {} times", UINT32_MAX);
  STRATA_RETURN_IF_ERROR(
      driver_.streamWaitValue(stream_, hold_word_.get(), hold_value_ + 1));
  ++hold_value_;
  return std::unique_ptr<StreamHold>(
      new GpuStreamHold(hold_word_, hold_value_));
}

GpuStream::~GpuStream() {
  if (hold_word_)
    GpuStreamHold::releaseWord(*hold_word_, hold_value_);
  (void)driver_.makeCurrent();
  if (capturing_) {
    void *graph = nullptr;
    if (driver_.endCapture(stream_, graph).ok() && graph)
      (void)driver_.graphDestroy(graph);
    device_.addCapture(-1);
  }
  (void)driver_.streamDestroy(stream_);
}

Status GpuStream::beginCapture() {
  if (capturing_)
    return failedPrecondition("stream is already capturing");
  STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
  STRATA_RETURN_IF_ERROR(driver_.beginCapture(stream_));
  capturing_ = true;
  captured_operations_ = 0;
  device_.addCapture(1);
  return okStatus();
}

StatusOr<std::unique_ptr<Graph>> GpuStream::endCapture() {
  if (!capturing_)
    return failedPrecondition("stream is not capturing");
  capturing_ = false;
  device_.addCapture(-1);
  STRATA_RETURN_IF_ERROR(driver_.makeCurrent());
  void *graph = nullptr;
  STRATA_RETURN_IF_ERROR(driver_.endCapture(stream_, graph));
  void *exec = nullptr;
  Status instantiated = driver_.graphInstantiate(graph, exec);
  (void)driver_.graphDestroy(graph);
  STRATA_RETURN_IF_ERROR(instantiated);
  return std::unique_ptr<Graph>(
      new GpuGraph(driver_, exec, captured_operations_));
}

} // namespace

StatusOr<std::unique_ptr<Device>>
createGpuDevice(std::unique_ptr<GpuDriver> driver) {
  auto device = std::make_unique<GpuDevice>(std::move(driver));
  STRATA_RETURN_IF_ERROR(device->init());
  return std::unique_ptr<Device>(std::move(device));
}

StatusOr<int> resolveDeviceOrdinal(const char *backend, int ordinal,
                                   bool modulo, int count) {
  int resolved = modulo && ordinal >= 0 && count > 0 ? ordinal % count
                                                     : ordinal;
  if (resolved < 0 || resolved >= count)
    return invalidArgument("{} device {} requested, {} present", backend,
                           resolved, count);
  return resolved;
}

} // namespace strata::runtime
