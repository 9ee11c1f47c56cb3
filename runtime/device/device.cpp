//===- device.cpp - backend-independent device helpers --------------------===//
//
// Part of strata. Argument checks and the memref-descriptor flattening shared
// by every backend's dispatch.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/device.h"

namespace strata::runtime {

StatusOr<const KernelSpec *>
dispatchedKernel(const Executable &executable, size_t kernel_index,
                 const std::vector<DispatchArg> &args) {
  if (kernel_index >= executable.kernelCount())
    return outOfRange("kernel index {} out of range ({} kernels)",
                      kernel_index, executable.kernelCount());
  const KernelSpec &kernel = executable.kernel(kernel_index);
  STRATA_RETURN_IF_ERROR(validateDispatchArgs(kernel, args));
  return &kernel;
}

Status validateDispatchArgs(const KernelSpec &kernel,
                            const std::vector<DispatchArg> &args) {
  if (args.size() != kernel.args.size())
    return invalidArgument("kernel '{}' takes {} arguments, got {}",
                           kernel.name, kernel.args.size(), args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArgInfo &info = kernel.args[i];
    const DispatchArg &arg = args[i];
    if (info.kind == KernelArgKind::kScalar) {
      if (info.element_bytes != 4 && info.element_bytes != 8)
        return invalidArgument(
            "kernel '{}' argument {}: scalar of {} bytes is not supported",
            kernel.name, i, info.element_bytes);
      continue;
    }
    if (!arg.buffer)
      return invalidArgument("kernel '{}' argument {}: no buffer bound",
                             kernel.name, i);
    if (arg.shape.size() != info.rank)
      return invalidArgument(
          "kernel '{}' argument {}: expected rank {}, got {} extents",
          kernel.name, i, info.rank, arg.shape.size());
    unsigned __int128 bytes = info.element_bytes;
    for (int64_t extent : arg.shape) {
      if (extent < 0)
        return invalidArgument("kernel '{}' argument {}: negative extent {}",
                               kernel.name, i, extent);
      bytes *= static_cast<uint64_t>(extent);
      if (bytes > (static_cast<unsigned __int128>(1) << 64))
        return outOfRange("kernel '{}' argument {}: region size overflows",
                          kernel.name, i);
    }
    unsigned __int128 end = bytes + arg.offset_bytes;
    if (end > arg.buffer->size())
      return outOfRange("kernel '{}' argument {}: region [{}, {}) exceeds "
                        "buffer of {} bytes",
                        kernel.name, i, arg.offset_bytes,
                        static_cast<uint64_t>(end), arg.buffer->size());
  }
  return okStatus();
}

std::vector<uint64_t> flattenDispatchArgs(const KernelSpec &kernel,
                                          const std::vector<DispatchArg> &args) {
  size_t slots = 0;
  for (const KernelArgInfo &info : kernel.args)
    slots += info.kind == KernelArgKind::kBuffer ? 3 + 2 * info.rank : 1;
  std::vector<uint64_t> values;
  values.reserve(slots);
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArgInfo &info = kernel.args[i];
    const DispatchArg &arg = args[i];
    if (info.kind == KernelArgKind::kScalar) {
      values.push_back(arg.scalar_bits);
      continue;
    }
    auto base = reinterpret_cast<uint64_t>(arg.buffer->devicePointer());
    values.push_back(base);
    values.push_back(base + arg.offset_bytes);
    values.push_back(0); // offset in elements: folded into the aligned ptr.
    for (int64_t extent : arg.shape)
      values.push_back(static_cast<uint64_t>(extent));
    std::vector<int64_t> strides(info.rank, 1);
    int64_t stride = 1;
    for (size_t d = info.rank; d-- > 0;) {
      strides[d] = stride;
      stride *= arg.shape[d];
    }
    for (int64_t s : strides)
      values.push_back(static_cast<uint64_t>(s));
  }
  return values;
}

Status checkBufferRange(const Buffer &buffer, uint64_t offset, uint64_t size) {
  if (offset > buffer.size() || size > buffer.size() - offset)
    return outOfRange("copy of {} bytes at offset {} exceeds buffer of {} "
                      "bytes",
                      size, offset, buffer.size());
  return okStatus();
}

} // namespace strata::runtime
