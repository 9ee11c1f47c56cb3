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

namespace {

/// Checks the rows [offset + r * pitch, + row_bytes) of one side of `copy`.
Status checkCopy2DSide(const char *side, const Buffer &buffer, uint64_t offset,
                       uint64_t pitch, const Copy2D &copy) {
  if (copy.rows > 1 && pitch < copy.row_bytes)
    return invalidArgument("2D copy: {} pitch {} is below the row's {} bytes",
                           side, pitch, copy.row_bytes);
  uint64_t last = copy.rows - 1;
  if (last != 0 && pitch > (UINT64_MAX - copy.row_bytes) / last)
    return outOfRange("2D copy: {} rows of {} bytes at pitch {} overflow",
                      copy.rows, copy.row_bytes, pitch);
  uint64_t extent = last * pitch + copy.row_bytes;
  if (offset > buffer.size() || extent > buffer.size() - offset)
    return outOfRange("2D copy of {} rows of {} bytes at {} pitch {} from "
                      "offset {} exceeds buffer of {} bytes",
                      copy.rows, copy.row_bytes, side, pitch, offset,
                      buffer.size());
  return okStatus();
}

} // namespace

Status checkCopy2D(const Buffer &src, const Buffer &dst, const Copy2D &copy) {
  if (copy.rows == 0 || copy.row_bytes == 0)
    return okStatus();
  STRATA_RETURN_IF_ERROR(
      checkCopy2DSide("source", src, copy.src_offset, copy.src_pitch, copy));
  return checkCopy2DSide("destination", dst, copy.dst_offset, copy.dst_pitch,
                         copy);
}

} // namespace strata::runtime
