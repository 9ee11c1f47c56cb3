//===- cpu_device.cpp - the CPU device backend ----------------------------===//
//
// Part of strata. See cpu_device.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/cpu/cpu_device.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace strata::runtime {
namespace {

constexpr uint64_t kDefaultAlignment = 64;

class CpuBuffer final : public Buffer {
public:
  CpuBuffer(void *data, uint64_t size) : data_(data), size_(size) {}
  ~CpuBuffer() override { std::free(data_); }
  uint64_t size() const override { return size_; }
  void *hostPointer() override { return data_; }
  void *devicePointer() override { return data_; }

private:
  void *data_;
  uint64_t size_;
};

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

class CpuDevice final : public Device {
public:
  explicit CpuDevice(const CpuDeviceOptions &options) : options_(options) {}

  const char *name() const override { return "cpu"; }

  StatusOr<std::unique_ptr<Buffer>> allocate(uint64_t size,
                                             uint64_t alignment) override {
    if (alignment == 0)
      alignment = kDefaultAlignment;
    if ((alignment & (alignment - 1)) != 0)
      return invalidArgument("alignment {} is not a power of two", alignment);
    if (alignment < sizeof(void *))
      alignment = sizeof(void *);
    // aligned_alloc needs a size that is a multiple of the alignment; never 0.
    uint64_t rounded = size == 0 ? alignment : size;
    if (rounded > UINT64_MAX - alignment)
      return resourceExhausted("cannot allocate {} bytes", size);
    rounded = (rounded + alignment - 1) / alignment * alignment;
    void *data = std::aligned_alloc(alignment, rounded);
    if (!data)
      return resourceExhausted("cannot allocate {} bytes", size);
    std::memset(data, 0, rounded);
    return std::unique_ptr<Buffer>(new CpuBuffer(data, size));
  }

  Status copyToDevice(Buffer &dst, uint64_t offset, const void *src,
                      uint64_t size) override {
    if (offset > dst.size() || size > dst.size() - offset)
      return outOfRange("copy of {} bytes at offset {} exceeds buffer of {} "
                        "bytes",
                        size, offset, dst.size());
    std::memcpy(static_cast<uint8_t *>(dst.hostPointer()) + offset, src, size);
    return okStatus();
  }

  Status copyFromDevice(const Buffer &src, uint64_t offset, void *dst,
                        uint64_t size) override {
    if (offset > src.size() || size > src.size() - offset)
      return outOfRange("copy of {} bytes at offset {} exceeds buffer of {} "
                        "bytes",
                        size, offset, src.size());
    auto &buffer = const_cast<Buffer &>(src);
    std::memcpy(dst, static_cast<uint8_t *>(buffer.hostPointer()) + offset,
                size);
    return okStatus();
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
    (void)grid;
    auto &cpu = static_cast<CpuExecutable &>(executable);
    if (kernel_index >= cpu.kernelCount())
      return outOfRange("kernel index {} out of range ({} kernels)",
                        kernel_index, cpu.kernelCount());
    const KernelSpec &kernel = cpu.kernel(kernel_index);
    STRATA_RETURN_IF_ERROR(validateDispatchArgs(kernel, args));

    // Flatten every argument into 8-byte slots (docs/Artifact.md "Kernel
    // ABI"): buffers as allocated ptr, aligned ptr, offset, sizes, strides.
    size_t slots = 0;
    for (const KernelArgInfo &info : kernel.args)
      slots += info.kind == KernelArgKind::kBuffer ? 3 + 2 * info.rank : 1;
    std::vector<uint64_t> values(slots, 0);
    std::vector<void *> pointers(slots, nullptr);
    size_t slot = 0;
    auto pushPointer = [&](void *p) {
      std::memcpy(&values[slot], &p, sizeof(p));
      ++slot;
    };
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArgInfo &info = kernel.args[i];
      const DispatchArg &arg = args[i];
      if (info.kind == KernelArgKind::kScalar) {
        values[slot++] = arg.scalar_bits;
        continue;
      }
      auto *base = static_cast<uint8_t *>(arg.buffer->devicePointer());
      pushPointer(base);
      pushPointer(base + arg.offset_bytes);
      values[slot++] = 0; // offset in elements: folded into aligned ptr.
      for (int64_t extent : arg.shape)
        values[slot++] = static_cast<uint64_t>(extent);
      int64_t stride = 1;
      std::vector<int64_t> strides(info.rank, 1);
      for (size_t d = info.rank; d-- > 0;) {
        strides[d] = stride;
        stride *= arg.shape[d];
      }
      for (int64_t s : strides)
        values[slot++] = static_cast<uint64_t>(s);
    }
    for (size_t s = 0; s < slots; ++s)
      pointers[s] = &values[s];
    cpu.entry(kernel_index)(pointers.data());
    return okStatus();
  }

  Status synchronize() override { return okStatus(); }

private:
  CpuDeviceOptions options_;
};

} // namespace

std::unique_ptr<Device> createCpuDevice(const CpuDeviceOptions &options) {
  return std::make_unique<CpuDevice>(options);
}

} // namespace strata::runtime
