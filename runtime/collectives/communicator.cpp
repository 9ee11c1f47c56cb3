//===- communicator.cpp - argument checks shared by the backends ----------===//
//
// Part of strata. See communicator.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/collectives/communicator.h"

namespace strata::runtime {

uint64_t dataTypeBytes(DataType type) {
  switch (type) {
  case DataType::kF32:
  case DataType::kI32:
    return 4;
  case DataType::kBF16:
    return 2;
  case DataType::kU8:
    return 1;
  }
  return 1;
}

const char *dataTypeName(DataType type) {
  switch (type) {
  case DataType::kF32:
    return "f32";
  case DataType::kBF16:
    return "bf16";
  case DataType::kI32:
    return "i32";
  case DataType::kU8:
    return "u8";
  }
  return "?";
}

StatusOr<CommunicatorOptions> resolveOptions(const CommunicatorOptions &in) {
  CommunicatorOptions out = in;
  if (!out.store)
    return invalidArgument("communicator: no store given");
  if (out.size == 0)
    out.size = 1;
  if (out.size < 0)
    return invalidArgument("communicator: size must be positive, got {}",
                           out.size);
  if (out.rank < 0 || out.rank >= out.size)
    return invalidArgument("communicator: rank {} outside [0, {})", out.rank,
                           out.size);
  if (out.prefix.empty())
    out.prefix = "strata";
  if (out.timeout.count() <= 0)
    out.timeout = kDefaultCollectiveTimeout;
  return out;
}

Status checkRegion(const char *op, const char *what, Region region,
                   uint64_t count, DataType type) {
  if (!region.buffer)
    return invalidArgument("{}: no {} buffer", op, what);
  uint64_t bytes_per = dataTypeBytes(type);
  if (count > UINT64_MAX / bytes_per)
    return outOfRange("{}: {} count {} of {} overflows", op, what, count,
                      dataTypeName(type));
  uint64_t bytes = count * bytes_per;
  uint64_t size = region.buffer->size();
  if (region.offset_bytes > size || bytes > size - region.offset_bytes)
    return outOfRange(
        "{}: {} region [{}, {}) outside its {}-byte buffer", op, what,
        region.offset_bytes,
        static_cast<unsigned __int128>(region.offset_bytes) + bytes > UINT64_MAX
            ? UINT64_MAX
            : region.offset_bytes + bytes,
        size);
  return okStatus();
}

StatusOr<uint64_t> checkCounts(const char *op, const char *what,
                               const std::vector<uint64_t> &counts, int size) {
  if (counts.size() != static_cast<size_t>(size))
    return invalidArgument("{}: {} counts has {} entries for {} ranks", op,
                           what, counts.size(), size);
  uint64_t total = 0;
  for (uint64_t c : counts) {
    if (c > UINT64_MAX - total)
      return outOfRange("{}: {} counts overflow", op, what);
    total += c;
  }
  return total;
}

Status checkReducible(const char *op, DataType type) {
  if (type == DataType::kU8)
    return invalidArgument("{}: cannot reduce {} elements", op,
                           dataTypeName(type));
  return okStatus();
}

} // namespace strata::runtime
