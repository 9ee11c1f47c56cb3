//===- npy.cpp - write NumPy .npy files -----------------------------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/npy.h"

#include <fstream>

#include <fmt/format.h>

namespace strata::runtime {

namespace {

Status writeRaw(const std::string &path, const char *descr, const void *data,
                size_t bytes, const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (count * 4 != static_cast<int64_t>(bytes))
    return invalidArgument("npy '{}': {} bytes for shape ({})", path, bytes,
                           fmt::join(shape, ", "));
  std::string shape_text = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1)
    shape_text += ",";
  std::string header = fmt::format(
      "{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr,
      shape_text);
  // Magic (6) + version (2) + header length (2) + header + '\n', padded to a
  // multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream file(path, std::ios::binary);
  if (!file)
    return notFound("npy '{}': cannot open for writing", path);
  uint16_t length = static_cast<uint16_t>(header.size());
  file.write("\x93NUMPY\x01\x00", 8);
  file.write(reinterpret_cast<const char *>(&length), 2);
  file.write(header.data(), header.size());
  file.write(static_cast<const char *>(data), bytes);
  if (!file)
    return dataLoss("npy '{}': write failed", path);
  return okStatus();
}

} // namespace

Status writeNpy(const std::string &path, const std::vector<float> &data,
                const std::vector<int64_t> &shape) {
  return writeRaw(path, "<f4", data.data(), data.size() * 4, shape);
}

Status writeNpy(const std::string &path, const std::vector<int32_t> &data,
                const std::vector<int64_t> &shape) {
  return writeRaw(path, "<i4", data.data(), data.size() * 4, shape);
}

} // namespace strata::runtime
