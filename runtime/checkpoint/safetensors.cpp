//===- safetensors.cpp - memory-mapped safetensors files and checkpoints --===//
//
// Part of strata. See safetensors.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/safetensors.h"

#include "runtime/base/numeric.h"
#include "runtime/checkpoint/glm5_config.h"
#include "runtime/checkpoint/json_util.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace strata::runtime {

using json_util::Json;

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::kBF16:
    return "BF16";
  case DType::kF16:
    return "F16";
  case DType::kF32:
    return "F32";
  case DType::kF8E4M3:
    return "F8_E4M3";
  case DType::kI32:
    return "I32";
  case DType::kI64:
    return "I64";
  }
  return "?";
}

int64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::kF8E4M3:
    return 1;
  case DType::kBF16:
  case DType::kF16:
    return 2;
  case DType::kF32:
  case DType::kI32:
    return 4;
  case DType::kI64:
    return 8;
  }
  return 1;
}

std::optional<DType> parseDType(std::string_view name) {
  for (DType d : {DType::kBF16, DType::kF16, DType::kF32, DType::kF8E4M3,
                  DType::kI32, DType::kI64})
    if (dtypeName(d) == name)
      return d;
  return std::nullopt;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string scaleInvName(std::string_view name) {
  return std::string(name) + "_scale_inv";
}

//===----------------------------------------------------------------------===//
// SafetensorsFile
//===----------------------------------------------------------------------===//

namespace {

// Reads one header entry `name` -> `value` into `out`.
Status parseEntry(const std::string &path, const std::string &name,
                  const Json &value, uint64_t data_size,
                  SafetensorsEntry &out) {
  if (!value.is_object())
    return invalidArgument("{}: tensor '{}': header entry must be an object, "
                           "found {}",
                           path, name, json_util::typeName(value));
  for (auto it = value.begin(); it != value.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" &&
        it.key() != "data_offsets")
      return invalidArgument("{}: tensor '{}': unknown header field '{}'",
                             path, name, it.key());
  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string())
    return invalidArgument("{}: tensor '{}': 'dtype' must be a string", path,
                           name);
  const std::string &dtype_name = dtype_it->get_ref<const std::string &>();
  std::optional<DType> dtype = parseDType(dtype_name);
  if (!dtype)
    return invalidArgument("{}: tensor '{}': unknown dtype '{}' (supported: "
                           "BF16, F16, F32, F8_E4M3, I32, I64)",
                           path, name, dtype_name);
  out.name = name;
  out.dtype = *dtype;
  auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array())
    return invalidArgument("{}: tensor '{}': 'shape' must be an array", path,
                           name);
  // Elements counted with overflow checks (bounded by the file size anyway).
  uint64_t elements = 1;
  bool overflow = false;
  for (const Json &dim : *shape_it) {
    if (!dim.is_number_unsigned() ||
        dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return invalidArgument("{}: tensor '{}': 'shape' entries must be "
                             "non-negative integers, found {}",
                             path, name, dim.dump());
    uint64_t d = dim.get<uint64_t>();
    out.shape.push_back(static_cast<int64_t>(d));
    if (d != 0 && elements > UINT64_MAX / d)
      overflow = true;
    elements *= d;
  }
  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() ||
      offsets_it->size() != 2 || !(*offsets_it)[0].is_number_unsigned() ||
      !(*offsets_it)[1].is_number_unsigned())
    return invalidArgument("{}: tensor '{}': 'data_offsets' must be two "
                           "non-negative integers",
                           path, name);
  out.begin = (*offsets_it)[0].get<uint64_t>();
  out.end = (*offsets_it)[1].get<uint64_t>();
  if (out.begin > out.end)
    return invalidArgument("{}: tensor '{}': data_offsets [{}, {}] are "
                           "reversed",
                           path, name, out.begin, out.end);
  if (out.end > data_size)
    return invalidArgument("{}: tensor '{}': data_offsets [{}, {}] extend "
                           "beyond the data section ({} bytes)",
                           path, name, out.begin, out.end, data_size);
  uint64_t size = static_cast<uint64_t>(dtypeSize(*dtype));
  if (overflow || elements > UINT64_MAX / size ||
      elements * size != out.end - out.begin)
    return invalidArgument(
        "{}: tensor '{}': dtype {} shape {} needs {} bytes, but data_offsets "
        "[{}, {}] hold {} bytes",
        path, name, dtype_name, shapeString(out.shape),
        overflow ? std::string("more than 2^64")
                 : fmt::format("{}", elements * size),
        out.begin, out.end, out.end - out.begin);
  return okStatus();
}

} // namespace

StatusOr<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::fromBytes(const uint8_t *bytes, uint64_t size,
                           std::string path) {
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = std::move(path);
  file->bytes_ = bytes;
  file->size_ = size;
  const std::string &p = file->path_;
  if (size < 8)
    return invalidArgument("{}: file is truncated: {} bytes, shorter than the "
                           "8-byte header length",
                           p, size);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i)
    header_len = (header_len << 8) | bytes[i];
  if (header_len > size - 8)
    return invalidArgument("{}: header length {} extends beyond the end of "
                           "the file ({} bytes after the length field)",
                           p, header_len, size - 8);
  file->data_ = bytes + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::string_view header(reinterpret_cast<const char *>(bytes + 8),
                          static_cast<std::size_t>(header_len));
  STRATA_ASSIGN_OR_RETURN(Json root,
                          json_util::parse(header, p + ": header"));
  if (!root.is_object())
    return invalidArgument("{}: header must be a JSON object, found {}", p,
                           json_util::typeName(root));
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        return invalidArgument("{}: '__metadata__' must be an object, found "
                               "{}",
                               p, json_util::typeName(*it));
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return invalidArgument("{}: '__metadata__.{}' must be a string, "
                                 "found {}",
                                 p, m.key(), json_util::typeName(*m));
        file->metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    SafetensorsEntry entry;
    STRATA_RETURN_IF_ERROR(parseEntry(p, it.key(), *it, data_size, entry));
    file->entries_.push_back(std::move(entry));
  }
  // Overlaps: sort non-empty ranges by start.
  std::vector<const SafetensorsEntry *> by_offset;
  for (const SafetensorsEntry &e : file->entries_)
    if (e.end > e.begin)
      by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry *a, const SafetensorsEntry *b) {
              return a->begin < b->begin;
            });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry *a = by_offset[i - 1], *b = by_offset[i];
    if (b->begin < a->end)
      return invalidArgument("{}: tensor '{}' data_offsets [{}, {}] overlap "
                             "tensor '{}' data_offsets [{}, {}]",
                             p, b->name, b->begin, b->end, a->name, a->begin,
                             a->end);
  }
  for (std::size_t i = 0; i < file->entries_.size(); ++i)
    file->index_.emplace(file->entries_[i].name, i);
  return file;
}

StatusOr<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return notFound("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalidArgument("{}: not a regular file", path);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t *bytes = nullptr;
  if (size > 0) {
    void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return resourceExhausted("{}: mmap of {} bytes failed: {}", path, size,
                               std::strerror(err));
    }
    bytes = static_cast<const uint8_t *>(map);
  }
  ::close(fd);
  auto file = fromBytes(bytes, size, path);
  if (!file.ok()) {
    if (bytes)
      ::munmap(const_cast<uint8_t *>(bytes), size);
    return file.status();
  }
  (*file)->mapped_ = bytes != nullptr;
  return std::move(file).value();
}

SafetensorsFile::~SafetensorsFile() {
  if (mapped_)
    ::munmap(const_cast<uint8_t *>(bytes_), size_);
}

const SafetensorsEntry *SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

TensorView SafetensorsFile::view(const SafetensorsEntry &entry) const {
  TensorView v;
  v.name = entry.name;
  v.file = path_;
  v.dtype = entry.dtype;
  v.shape = entry.shape;
  v.data = data_ + entry.begin;
  v.byte_size = entry.end - entry.begin;
  return v;
}

//===----------------------------------------------------------------------===//
// Checkpoint
//===----------------------------------------------------------------------===//

StatusOr<std::unique_ptr<Checkpoint>>
Checkpoint::fromFiles(std::vector<std::unique_ptr<SafetensorsFile>> files) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->files_ = std::move(files);
  for (const auto &file : ckpt->files_) {
    for (const SafetensorsEntry &entry : file->entries()) {
      auto [it, inserted] =
          ckpt->tensors_.emplace(entry.name, Location{file.get(), &entry});
      if (!inserted)
        return invalidArgument("duplicate tensor '{}': in '{}' and in '{}'",
                               entry.name, it->second.file->path(),
                               file->path());
    }
  }
  return ckpt;
}

StatusOr<std::unique_ptr<Checkpoint>>
Checkpoint::openFiles(const std::vector<std::string> &paths) {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  for (const std::string &path : paths) {
    STRATA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
    files.push_back(std::move(file));
  }
  return fromFiles(std::move(files));
}

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::open(const std::string &dir) {
  const std::string index_path = dir + "/model.safetensors.index.json";
  struct stat st;
  if (::stat(index_path.c_str(), &st) != 0) {
    const std::string single = dir + "/model.safetensors";
    if (::stat(single.c_str(), &st) != 0)
      return notFound("{}: no model.safetensors.index.json or "
                      "model.safetensors",
                      dir);
    return openFiles({single});
  }
  std::string text;
  STRATA_RETURN_IF_ERROR(readTextFile(index_path, text));
  STRATA_ASSIGN_OR_RETURN(Json root, json_util::parse(text, index_path));
  json_util::Reader reader{index_path};
  if (!root.is_object())
    return invalidArgument("{}: top level must be an object, found {}",
                           index_path, json_util::typeName(root));
  STRATA_ASSIGN_OR_RETURN(const Json *weight_map,
                          reader.requireObject(root, "", "weight_map"));
  // File names in order of first appearance (sorted by tensor name).
  std::vector<std::string> file_names;
  std::map<std::string, std::string> expected; // tensor -> file name
  for (auto it = weight_map->begin(); it != weight_map->end(); ++it) {
    if (!it->is_string())
      return invalidArgument("{}: weight_map entry '{}' must be a string, "
                             "found {}",
                             index_path, it.key(), json_util::typeName(*it));
    const std::string &file = it->get_ref<const std::string &>();
    if (file.empty() || file == "." || file == ".." ||
        file.find('/') != std::string::npos)
      return invalidArgument("{}: weight_map entry '{}' names '{}', which is "
                             "not a plain file name",
                             index_path, it.key(), file);
    if (std::find(file_names.begin(), file_names.end(), file) ==
        file_names.end())
      file_names.push_back(file);
    expected.emplace(it.key(), file);
  }
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  for (const std::string &name : file_names) {
    const std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0)
      return notFound("{}: weight_map names '{}', which does not exist "
                      "(tensor '{}')",
                      index_path, name,
                      std::find_if(expected.begin(), expected.end(),
                                   [&](const auto &kv) {
                                     return kv.second == name;
                                   })->first);
    STRATA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
    files.push_back(std::move(file));
  }
  STRATA_ASSIGN_OR_RETURN(auto ckpt, fromFiles(std::move(files)));
  for (const auto &[tensor, file] : expected) {
    auto it = ckpt->tensors_.find(tensor);
    const std::string path = dir + "/" + file;
    if (it == ckpt->tensors_.end() || it->second.file->path() != path)
      return invalidArgument("{}: weight_map puts tensor '{}' in '{}', but "
                             "that file has no such tensor",
                             index_path, tensor, file);
  }
  for (const auto &[tensor, location] : ckpt->tensors_)
    if (!expected.count(tensor))
      return invalidArgument("{}: tensor '{}' in '{}' is not listed in "
                             "weight_map",
                             index_path, tensor, location.file->path());
  return ckpt;
}

StatusOr<TensorView> Checkpoint::tensor(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return notFound("tensor '{}' is not in the checkpoint", name);
  return it->second.file->view(*it->second.entry);
}

StatusOr<TensorView> Checkpoint::tensor(std::string_view name, DType dtype,
                                        const std::vector<int64_t> &shape) const {
  STRATA_ASSIGN_OR_RETURN(TensorView view, tensor(name));
  if (view.dtype != dtype || view.shape != shape)
    return invalidArgument("tensor '{}' in '{}': expected {} {}, found {} {}",
                           name, view.file, dtypeName(dtype),
                           shapeString(shape), dtypeName(view.dtype),
                           shapeString(view.shape));
  return view;
}

StatusOr<Fp8Weight> Checkpoint::fp8Weight(std::string_view name, int64_t out,
                                          int64_t in) const {
  Fp8Weight result;
  STRATA_ASSIGN_OR_RETURN(result.weight,
                          tensor(name, DType::kF8E4M3, {out, in}));
  const std::string scale = scaleInvName(name);
  auto scale_view = tensor(scale, DType::kF32,
                           {(out + 127) / 128, (in + 127) / 128});
  if (!scale_view.ok()) {
    if (scale_view.status().code() == StatusCode::kNotFound)
      return notFound("fp8 tensor '{}' in '{}' has no scale tensor '{}'",
                      name, result.weight.file, scale);
    return scale_view.status().withContext(
        fmt::format("scale of fp8 tensor '{}'", name));
  }
  result.scale_inv = std::move(scale_view).value();
  return result;
}

std::vector<std::string> Checkpoint::tensorNames() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto &kv : tensors_)
    names.push_back(kv.first);
  return names;
}

uint64_t Checkpoint::totalTensorBytes() const {
  uint64_t total = 0;
  for (const auto &kv : tensors_)
    total += kv.second.entry->end - kv.second.entry->begin;
  return total;
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

Status toF32(const TensorView &tensor, float *out) {
  const int64_t n = tensor.numElements();
  const uint8_t *p = tensor.data;
  switch (tensor.dtype) {
  case DType::kF32:
    std::memcpy(out, p, static_cast<std::size_t>(n) * 4);
    return okStatus();
  case DType::kBF16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = bf16ToF32(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
    return okStatus();
  case DType::kF16:
    for (int64_t i = 0; i < n; ++i)
      out[i] = f16ToF32(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
    return okStatus();
  case DType::kF8E4M3:
    for (int64_t i = 0; i < n; ++i)
      out[i] = e4m3ToF32(p[i]);
    return okStatus();
  default:
    return invalidArgument("tensor '{}' in '{}': cannot convert dtype {} to "
                           "F32",
                           tensor.name, tensor.file, dtypeName(tensor.dtype));
  }
}

StatusOr<std::vector<float>> toF32(const TensorView &tensor) {
  std::vector<float> out(static_cast<std::size_t>(tensor.numElements()));
  STRATA_RETURN_IF_ERROR(toF32(tensor, out.data()));
  return out;
}

StatusOr<std::vector<float>> dequantizeFp8(const Fp8Weight &weight) {
  const TensorView &w = weight.weight, &s = weight.scale_inv;
  if (w.dtype != DType::kF8E4M3 || w.shape.size() != 2 ||
      s.dtype != DType::kF32 || s.shape.size() != 2 ||
      s.shape[0] != (w.shape[0] + 127) / 128 ||
      s.shape[1] != (w.shape[1] + 127) / 128)
    return invalidArgument("fp8 tensor '{}' ({} {}) does not match scale '{}' "
                           "({} {})",
                           w.name, dtypeName(w.dtype), shapeString(w.shape),
                           s.name, dtypeName(s.dtype), shapeString(s.shape));
  const int64_t rows = w.shape[0], cols = w.shape[1], scols = s.shape[1];
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float scale;
      std::memcpy(&scale, s.data + 4 * ((r / 128) * scols + c / 128), 4);
      out[r * cols + c] = e4m3ToF32(w.data[r * cols + c]) * scale;
    }
  }
  return out;
}

} // namespace strata::runtime
