//===- device.cpp - backend-independent device helpers --------------------===//
//
// Part of strata. Argument checks shared by every backend's dispatch.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/device.h"

namespace strata::runtime {

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

} // namespace strata::runtime
