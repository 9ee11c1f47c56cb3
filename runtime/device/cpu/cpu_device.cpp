//===- cpu_device.cpp - the CPU device backend ----------------------------===//
//
// Part of strata. See cpu_device.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cpu/cpu_device.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace strata::runtime {
namespace {

constexpr uint64_t kDefaultAlignment = 64;
/// Allocations from this size up (with at most page alignment) are anonymous
/// mappings: zero pages are committed lazily, so a large buffer costs only
/// the pages that are touched.
constexpr uint64_t kMmapThreshold = 1 << 20;

class CpuBuffer final : public Buffer {
public:
  /// `mapped_bytes` > 0: `data` is an mmap of that many bytes; else malloc'ed.
  CpuBuffer(void *data, uint64_t size, MemoryKind kind, uint64_t mapped_bytes)
      : data_(data), size_(size), kind_(kind), mapped_bytes_(mapped_bytes) {}
  ~CpuBuffer() override {
    if (mapped_bytes_)
      munmap(data_, mapped_bytes_);
    else
      std::free(data_);
  }
  uint64_t size() const override { return size_; }
  MemoryKind memoryKind() const override { return kind_; }
  void *hostPointer() override { return data_; }
  void *devicePointer() override { return data_; }

private:
  void *data_;
  uint64_t size_;
  MemoryKind kind_;
  uint64_t mapped_bytes_;
};

uint8_t *bytesOf(const Buffer &buffer) {
  return static_cast<uint8_t *>(const_cast<Buffer &>(buffer).hostPointer());
}

/// Entry point of the packed memref-descriptor ABI.
using PackedEntry = void (*)(void **);

class CpuExecutable final : public Executable {
public:
  CpuExecutable(void *handle, int fd, std::vector<KernelSpec> kernels,
                std::vector<PackedEntry> entries)
      : handle_(handle), fd_(fd), kernels_(std::move(kernels)),
        entries_(std::move(entries)) {}
  ~CpuExecutable() override {
    dlclose(handle_);
    // The memfd stays open while the object is loaded so its
    // "/proc/self/fd/N" name is not reused by another load meanwhile.
    if (fd_ >= 0)
      close(fd_);
  }
  size_t kernelCount() const override { return kernels_.size(); }
  const KernelSpec &kernel(size_t index) const override {
    return kernels_[index];
  }
  PackedEntry entry(size_t index) const { return entries_[index]; }

private:
  void *handle_;
  int fd_;
  std::vector<KernelSpec> kernels_;
  std::vector<PackedEntry> entries_;
};

Status writeAll(int fd, const uint8_t *data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return unavailable("cannot write kernel binary: {}", std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return okStatus();
}

/// Opens the shared object through an anonymous memfd. On success returns the
/// dlopen handle and sets `out_fd` (kept open for the handle's lifetime).
StatusOr<void *> dlopenFromMemfd(const ExecutableSpec &spec, int &out_fd) {
#ifdef MFD_CLOEXEC
  // Ask for an executable memfd explicitly: with vm.memfd_noexec = 1 a
  // plain memfd is sealed non-executable. Kernels before 6.3 reject the flag
  // (EINVAL); retry without it there.
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif
  int fd = memfd_create("strata-kernels", MFD_CLOEXEC | MFD_EXEC);
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create("strata-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return unavailable("memfd_create failed: {}", std::strerror(errno));
  Status written = writeAll(fd, spec.data, spec.size);
  if (!written.ok()) {
    close(fd);
    return written;
  }
  // glibc matches dlopen paths by name before opening them: an object still
  // resident under this "/proc/self/fd/N" name (loaded with NODELETE, or not
  // yet unloaded) would be returned instead of ours. Move to a fresh fd
  // number until the name is free.
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::vector<int> stale;
  for (int attempt = 0; attempt < 64; ++attempt) {
    void *existing = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!existing)
      break;
    dlclose(existing);
    int fresh = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    if (fresh < 0)
      break;
    stale.push_back(fd);
    fd = fresh;
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  for (int old : stale)
    close(old);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = dlerror();
    close(fd);
    return unavailable("dlopen of memfd failed: {}", err ? err : "unknown");
  }
  out_fd = fd;
  return handle;
#else
  (void)spec;
  (void)out_fd;
  return unavailable("memfd_create is not available");
#endif
}

/// Opens the shared object through a private temporary file, unlinked as soon
/// as dlopen has mapped it.
StatusOr<void *> dlopenFromTempFile(const ExecutableSpec &spec) {
  const char *dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/strata-kernels-XXXXXX";
  int fd = -1;
  std::string base = path;
  for (int attempt = 0; attempt < 64; ++attempt) {
    path = base;
    fd = mkstemp(path.data());
    if (fd < 0)
      return unavailable("cannot create temporary file '{}': {}", path,
                         std::strerror(errno));
    // An earlier, already unlinked object may still be resident under this
    // name (see dlopenFromMemfd); pick another name then.
    void *existing = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!existing)
      break;
    dlclose(existing);
    close(fd);
    unlink(path.c_str());
    fd = -1;
  }
  if (fd < 0)
    return unavailable("cannot find an unused temporary file name");
  Status written = writeAll(fd, spec.data, spec.size);
  close(fd);
  if (!written.ok()) {
    unlink(path.c_str());
    return written;
  }
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char *err = handle ? nullptr : dlerror();
  unlink(path.c_str());
  if (!handle)
    return unavailable("dlopen of '{}' failed: {}", path,
                       err ? err : "unknown");
  return handle;
}

class CpuEvent final : public Event {
public:
  bool recorded() const override { return recorded_; }
  Status synchronize() override {
    if (!recorded_)
      return failedPrecondition("event has not been recorded");
    return okStatus(); // CPU streams finish work before returning.
  }
  void record() {
    recorded_ = true;
    time_ = std::chrono::steady_clock::now();
  }
  std::chrono::steady_clock::time_point time() const { return time_; }

private:
  bool recorded_ = false;
  std::chrono::steady_clock::time_point time_;
};

/// A captured operation list: closures over the flattened kernel arguments
/// and the copy ranges, run in order on replay.
class CpuGraph final : public Graph {
public:
  explicit CpuGraph(std::vector<std::function<void()>> ops)
      : ops_(std::move(ops)) {}
  size_t operationCount() const override { return ops_.size(); }
  void run() const {
    for (const auto &op : ops_)
      op();
  }

private:
  std::vector<std::function<void()>> ops_;
};

class CpuDevice;

/// Runs every operation at once on the calling thread, or records it while
/// capturing.
class CpuStream final : public Stream {
public:
  explicit CpuStream(CpuDevice &device) : device_(device) {}
  ~CpuStream() override;

  Status dispatch(Executable &executable, size_t kernel_index,
                  const std::vector<DispatchArg> &args,
                  const uint64_t grid[3]) override {
    (void)grid;
    auto &cpu = static_cast<CpuExecutable &>(executable);
    STRATA_ASSIGN_OR_RETURN(const KernelSpec *spec,
                            dispatchedKernel(cpu, kernel_index, args));
    const KernelSpec &kernel = *spec;
    // The packed ABI: args[i] points at the i-th flattened 8-byte value.
    std::vector<uint64_t> values = flattenDispatchArgs(kernel, args);
    PackedEntry entry = cpu.entry(kernel_index);
    return runOrRecord([entry, values = std::move(values)]() mutable {
      std::vector<void *> pointers(values.size());
      for (size_t s = 0; s < values.size(); ++s)
        pointers[s] = &values[s];
      entry(pointers.data());
    });
  }

  Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                      uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("copy from a host pointer"));
    STRATA_RETURN_IF_ERROR(checkBufferRange(dst, offset, size));
    std::memcpy(bytesOf(dst) + offset, src, size);
    return okStatus();
  }

  Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                        uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("copy to a host pointer"));
    STRATA_RETURN_IF_ERROR(checkBufferRange(src, offset, size));
    std::memcpy(dst, bytesOf(src) + offset, size);
    return okStatus();
  }

  Status copyBuffer(const Buffer &src, uint64_t src_offset, Buffer &dst,
                    uint64_t dst_offset, uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkBufferRange(src, src_offset, size));
    STRATA_RETURN_IF_ERROR(checkBufferRange(dst, dst_offset, size));
    uint8_t *from = bytesOf(src) + src_offset;
    uint8_t *to = bytesOf(dst) + dst_offset;
    return runOrRecord([from, to, size] { std::memmove(to, from, size); });
  }

  Status copyBuffer2D(const Buffer &src, Buffer &dst,
                      const Copy2D &copy) override {
    STRATA_RETURN_IF_ERROR(checkCopy2D(src, dst, copy));
    uint8_t *from = bytesOf(src) + copy.src_offset;
    uint8_t *to = bytesOf(dst) + copy.dst_offset;
    return runOrRecord([from, to, copy] {
      for (uint64_t r = 0; r < copy.rows; ++r)
        std::memmove(to + r * copy.dst_pitch, from + r * copy.src_pitch,
                     copy.row_bytes);
    });
  }

  Status recordEvent(Event &event) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("record an event"));
    static_cast<CpuEvent &>(event).record();
    return okStatus();
  }

  Status waitEvent(const Event &event) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("wait for an event"));
    if (!event.recorded())
      return failedPrecondition("event has not been recorded");
    return okStatus(); // The recorded work has already run.
  }

  Status synchronize() override {
    return checkNotCapturing("synchronize");
  }

  Status beginCapture() override;
  bool capturing() const override { return capturing_; }
  StatusOr<std::unique_ptr<Graph>> endCapture() override;

  Status launchGraph(Graph &graph) override {
    STRATA_RETURN_IF_ERROR(checkNotCapturing("launch a graph"));
    static_cast<CpuGraph &>(graph).run();
    return okStatus();
  }

private:
  Status checkNotCapturing(const char *what) const {
    if (capturing_)
      return failedPrecondition("cannot {} while the stream is capturing",
                                what);
    return okStatus();
  }

  Status runOrRecord(std::function<void()> op) {
    if (capturing_)
      recording_.push_back(std::move(op));
    else
      op();
    return okStatus();
  }

  CpuDevice &device_;
  bool capturing_ = false;
  std::vector<std::function<void()>> recording_;
};

StatusOr<uint64_t> readMeminfoBytes(const char *key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key)
      return kib * 1024;
  }
  return unavailable("cannot read {} from /proc/meminfo", key);
}

class CpuDevice final : public Device {
public:
  explicit CpuDevice(const CpuDeviceOptions &options)
      : options_(options), default_stream_(*this) {}

  const char *name() const override { return "cpu"; }

  std::string description() const override {
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    StatusOr<uint64_t> total = readMeminfoBytes("MemTotal:");
    return fmt::format("host cpu ({} threads, {:.1f} GiB)", threads,
                       total.ok() ? static_cast<double>(*total) / (1ull << 30)
                                  : 0.0);
  }

  StatusOr<MemoryInfo> memoryInfo() override {
    MemoryInfo info;
    STRATA_ASSIGN_OR_RETURN(info.free_bytes, readMeminfoBytes("MemAvailable:"));
    STRATA_ASSIGN_OR_RETURN(info.total_bytes, readMeminfoBytes("MemTotal:"));
    return info;
  }

  StatusOr<std::unique_ptr<Buffer>> allocate(uint64_t size,
                                             uint64_t alignment) override {
    return allocateMemory(size, alignment, MemoryKind::kDevice);
  }

  StatusOr<std::unique_ptr<Buffer>> allocateHost(uint64_t size) override {
    return allocateMemory(size, 0, MemoryKind::kHost);
  }

  Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                      uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("copy to the device"));
    return default_stream_.copyToDevice(dst, offset, src, size);
  }

  Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                        uint64_t size) override {
    STRATA_RETURN_IF_ERROR(checkNoCapture("copy from the device"));
    return default_stream_.copyFromDevice(src, offset, dst, size);
  }

  StatusOr<std::unique_ptr<Executable>>
  loadExecutable(const ExecutableSpec &spec) override {
    if (spec.format != BinaryFormat::kElfSharedObject)
      return invalidArgument("the cpu device loads ELF shared objects only");
    if (!spec.data || spec.size < 4 || std::memcmp(spec.data, "\x7f"
                                                   "ELF",
                                                   4) != 0)
      return invalidArgument("kernel binary is not an ELF file");
    int fd = -1;
    StatusOr<void *> handle = unavailable("not loaded");
    if (!options_.force_temp_file)
      handle = dlopenFromMemfd(spec, fd);
    if (!handle.ok()) {
      StatusOr<void *> fallback = dlopenFromTempFile(spec);
      if (!fallback.ok())
        return options_.force_temp_file
                   ? fallback.status()
                   : unavailable("cannot load kernel binary: {}; {}",
                                 handle.status().message(),
                                 fallback.status().message());
      handle = std::move(fallback);
    }
    std::vector<PackedEntry> entries;
    for (const KernelSpec &kernel : spec.kernels) {
      dlerror();
      void *symbol = dlsym(*handle, kernel.entry_symbol.c_str());
      if (!symbol) {
        dlclose(*handle);
        if (fd >= 0)
          close(fd);
        return notFound("kernel '{}': entry symbol '{}' not found in binary",
                        kernel.name, kernel.entry_symbol);
      }
      entries.push_back(reinterpret_cast<PackedEntry>(symbol));
    }
    return std::unique_ptr<Executable>(
        new CpuExecutable(*handle, fd, spec.kernels, std::move(entries)));
  }

  Status dispatch(Executable &executable, size_t kernel_index,
                  const std::vector<DispatchArg> &args,
                  const uint64_t grid[3]) override {
    return default_stream_.dispatch(executable, kernel_index, args, grid);
  }

  Status synchronize() override { return checkNoCapture("synchronize"); }

  Stream &defaultStream() override { return default_stream_; }

  StatusOr<std::unique_ptr<Stream>> createStream() override {
    return std::unique_ptr<Stream>(new CpuStream(*this));
  }

  StatusOr<std::unique_ptr<Event>> createEvent() override {
    return std::unique_ptr<Event>(new CpuEvent());
  }

  StatusOr<float> elapsedMillis(const Event &start,
                                const Event &end) override {
    if (!start.recorded() || !end.recorded())
      return failedPrecondition("event has not been recorded");
    auto delta = static_cast<const CpuEvent &>(end).time() -
                 static_cast<const CpuEvent &>(start).time();
    return std::chrono::duration<float, std::milli>(delta).count();
  }

  /// Streams report capture begin/end so device-wide calls can refuse.
  void addCapture(int delta) { capturing_streams_ += delta; }

private:
  Status checkNoCapture(const char *what) const {
    if (capturing_streams_ > 0)
      return failedPrecondition("cannot {} while a stream is capturing", what);
    return okStatus();
  }

  StatusOr<std::unique_ptr<Buffer>>
  allocateMemory(uint64_t size, uint64_t alignment, MemoryKind kind) {
    STRATA_RETURN_IF_ERROR(checkNoCapture("allocate"));
    if (alignment == 0)
      alignment = kDefaultAlignment;
    if ((alignment & (alignment - 1)) != 0)
      return invalidArgument("alignment {} is not a power of two", alignment);
    if (alignment < sizeof(void *))
      alignment = sizeof(void *);
    uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (size >= kMmapThreshold && alignment <= page) {
      if (size > UINT64_MAX - page)
        return resourceExhausted("cannot allocate {} bytes", size);
      uint64_t mapped = (size + page - 1) / page * page;
      void *data = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (data == MAP_FAILED)
        return resourceExhausted("cannot allocate {} bytes: {}", size,
                                 std::strerror(errno));
      return std::unique_ptr<Buffer>(new CpuBuffer(data, size, kind, mapped));
    }
    // aligned_alloc needs a size that is a multiple of the alignment; never 0.
    uint64_t rounded = size == 0 ? alignment : size;
    if (rounded > UINT64_MAX - alignment)
      return resourceExhausted("cannot allocate {} bytes", size);
    rounded = (rounded + alignment - 1) / alignment * alignment;
    void *data = std::aligned_alloc(alignment, rounded);
    if (!data)
      return resourceExhausted("cannot allocate {} bytes", size);
    std::memset(data, 0, rounded);
    return std::unique_ptr<Buffer>(new CpuBuffer(data, size, kind, 0));
  }

  CpuDeviceOptions options_;
  int capturing_streams_ = 0;
  CpuStream default_stream_;
};

CpuStream::~CpuStream() {
  if (capturing_)
    device_.addCapture(-1);
}

Status CpuStream::beginCapture() {
  if (capturing_)
    return failedPrecondition("stream is already capturing");
  capturing_ = true;
  recording_.clear();
  device_.addCapture(1);
  return okStatus();
}

StatusOr<std::unique_ptr<Graph>> CpuStream::endCapture() {
  if (!capturing_)
    return failedPrecondition("stream is not capturing");
  capturing_ = false;
  device_.addCapture(-1);
  return std::unique_ptr<Graph>(new CpuGraph(std::move(recording_)));
}

} // namespace

std::unique_ptr<Device> createCpuDevice(const CpuDeviceOptions &options) {
  return std::make_unique<CpuDevice>(options);
}

} // namespace strata::runtime
