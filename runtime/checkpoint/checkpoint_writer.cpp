//===- checkpoint_writer.cpp - deterministic procedural checkpoint writer -===//
//
// Part of strata. See checkpoint_writer.h and docs/ProceduralWeights.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/checkpoint_writer.h"

#include "runtime/base/numeric.h"
#include "runtime/checkpoint/procedural.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace strata::runtime {

uint64_t tensorBytes(const TensorSpec &spec) {
  uint64_t n = static_cast<uint64_t>(dtypeSize(spec.dtype));
  for (int64_t d : spec.shape)
    n *= static_cast<uint64_t>(d);
  return n;
}

std::vector<ShardPlan> planShards(std::vector<TensorSpec> &specs,
                                  uint64_t max_shard_bytes) {
  std::sort(specs.begin(), specs.end(),
            [](const TensorSpec &a, const TensorSpec &b) {
              return a.name < b.name;
            });
  std::vector<ShardPlan> shards;
  for (const TensorSpec &spec : specs) {
    const uint64_t bytes = tensorBytes(spec);
    if (shards.empty() || (!shards.back().tensors.empty() &&
                           shards.back().tensor_bytes + bytes > max_shard_bytes))
      shards.emplace_back();
    shards.back().tensors.push_back(&spec);
    shards.back().tensor_bytes += bytes;
  }
  for (std::size_t i = 0; i < shards.size(); ++i)
    shards[i].file_name = fmt::format("model-{:05d}-of-{:05d}.safetensors",
                                      i + 1, shards.size());
  return shards;
}

std::string shardHeader(const ShardPlan &shard) {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  uint64_t offset = 0;
  for (const TensorSpec *spec : shard.tensors) {
    const uint64_t end = offset + tensorBytes(*spec);
    header += fmt::format(
        R"(,"{}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})",
        spec->name, dtypeName(spec->dtype), fmt::join(spec->shape, ","), offset,
        end);
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

std::string indexJson(const std::vector<ShardPlan> &shards) {
  std::map<std::string, std::string> names; // Sorted like sort_keys=True.
  uint64_t total = 0;
  for (const ShardPlan &shard : shards) {
    total += shard.tensor_bytes;
    for (const TensorSpec *spec : shard.tensors)
      names.emplace(spec->name, shard.file_name);
  }
  std::string out = fmt::format(
      "{{\n  \"metadata\": {{\n    \"total_size\": {}\n  }},\n"
      "  \"weight_map\": {{",
      total);
  bool first = true;
  for (const auto &[name, file] : names) {
    out += fmt::format("{}\n    \"{}\": \"{}\"", first ? "" : ",", name, file);
    first = false;
  }
  out += names.empty() ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

namespace {

// A FILE* that reports errors as Status.
class OutFile {
public:
  ~OutFile() {
    if (file_)
      std::fclose(file_);
  }
  Status open(const std::string &path) {
    path_ = path;
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_)
      return Status(errno == EACCES || errno == EROFS
                        ? StatusCode::kPermissionDenied
                        : StatusCode::kUnavailable,
                    fmt::format("cannot open '{}' for writing: {}", path,
                                std::strerror(errno)));
    return okStatus();
  }
  Status write(const void *data, std::size_t size) {
    if (size && std::fwrite(data, 1, size, file_) != size)
      return dataLoss("write to '{}' failed: {}", path_, std::strerror(errno));
    return okStatus();
  }
  Status close() {
    std::FILE *f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0)
      return dataLoss("closing '{}' failed: {}", path_, std::strerror(errno));
    return okStatus();
  }

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

// Streams one tensor's bytes. `scales` caches FP8 scales computed with a
// weight for its `_scale_inv` tensor.
Status writeTensor(OutFile &out, const TensorSpec &spec,
                   std::map<std::string, std::vector<float>> &scales) {
  if (spec.is_scale_inv) {
    auto it = scales.find(spec.name);
    std::vector<float> values;
    if (it != scales.end()) {
      values = std::move(it->second);
      scales.erase(it);
    } else {
      // Unreachable with planShards' order ("x.weight" sorts before
      // "x.weight_scale_inv"); kept as an error rather than an assert.
      return internalError("scale tensor '{}' written before its weight '{}'",
                           spec.name, spec.fp8_partner);
    }
    return out.write(values.data(), values.size() * sizeof(float));
  }
  ProceduralTensor gen(spec.name, spec.shape);
  if (spec.dtype == DType::kF8E4M3) {
    const int64_t rows = spec.shape[0], in = spec.shape[1];
    const int64_t blocks = (in + 127) / 128;
    std::vector<float> all_scales;
    std::vector<uint8_t> codes;
    std::vector<float> block_scales(static_cast<std::size_t>(blocks));
    for (int64_t r0 = 0; r0 < rows; r0 += 128) {
      const int64_t n = std::min<int64_t>(128, rows - r0);
      codes.resize(static_cast<std::size_t>(n * in));
      quantizeProceduralRows(gen, in, r0, n, codes.data(), block_scales.data());
      all_scales.insert(all_scales.end(), block_scales.begin(),
                        block_scales.end());
      STRATA_RETURN_IF_ERROR(out.write(codes.data(), codes.size()));
    }
    scales[spec.fp8_partner] = std::move(all_scales);
    return okStatus();
  }
  const uint64_t count = tensorBytes(spec) / dtypeSize(spec.dtype);
  constexpr uint64_t kChunk = 1 << 20;
  std::vector<float> values;
  std::vector<uint8_t> bytes;
  for (uint64_t begin = 0; begin < count; begin += kChunk) {
    const uint64_t n = std::min(kChunk, count - begin);
    values.resize(n);
    gen.values(begin, n, values.data());
    if (spec.dtype == DType::kF32) {
      bytes.resize(n * 4);
      std::memcpy(bytes.data(), values.data(), n * 4); // Little-endian host.
    } else if (spec.dtype == DType::kBF16) {
      bytes.resize(n * 2);
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t b = f32ToBf16(values[i]);
        bytes[2 * i] = static_cast<uint8_t>(b & 0xff);
        bytes[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
    } else {
      return invalidArgument("tensor '{}': procedural weights of dtype {} are "
                             "not supported",
                             spec.name, dtypeName(spec.dtype));
    }
    STRATA_RETURN_IF_ERROR(out.write(bytes.data(), bytes.size()));
  }
  return okStatus();
}

} // namespace

StatusOr<WriteCheckpointSummary>
writeProceduralCheckpoint(const WriteCheckpointOptions &options) {
  if (options.config_path.empty())
    return invalidArgument("no config given (--config)");
  if (options.out_dir.empty())
    return invalidArgument("no output directory given (--out)");
  std::string config_text;
  STRATA_RETURN_IF_ERROR(readTextFile(options.config_path, config_text));
  STRATA_ASSIGN_OR_RETURN(Glm5TextConfig config,
                          parseGlm5Config(config_text, options.config_path));
  STRATA_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs,
                          glm5TensorManifest(config, options.manifest));
  const uint64_t limit = options.max_shard_bytes ? options.max_shard_bytes
                                                 : kDefaultMaxShardBytes;
  std::vector<ShardPlan> shards = planShards(specs, limit);

  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec)
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("cannot create output directory '{}': {}",
                              options.out_dir, ec.message()));

  std::map<std::string, std::vector<float>> scales;
  WriteCheckpointSummary summary;
  for (const ShardPlan &shard : shards) {
    OutFile out;
    STRATA_RETURN_IF_ERROR(out.open(options.out_dir + "/" + shard.file_name));
    const std::string header = shardHeader(shard);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >>
                                       (8 * i));
    STRATA_RETURN_IF_ERROR(out.write(length, 8));
    STRATA_RETURN_IF_ERROR(out.write(header.data(), header.size()));
    for (const TensorSpec *spec : shard.tensors)
      STRATA_RETURN_IF_ERROR(writeTensor(out, *spec, scales));
    STRATA_RETURN_IF_ERROR(out.close());
    summary.num_tensors += shard.tensors.size();
    summary.total_bytes += shard.tensor_bytes;
  }
  summary.num_shards = shards.size();
  for (const auto &[path, text] :
       {std::pair<std::string, std::string>{"model.safetensors.index.json",
                                            indexJson(shards)},
        {"config.json", config_text}}) {
    OutFile out;
    STRATA_RETURN_IF_ERROR(out.open(options.out_dir + "/" + path));
    STRATA_RETURN_IF_ERROR(out.write(text.data(), text.size()));
    STRATA_RETURN_IF_ERROR(out.close());
  }
  return summary;
}

} // namespace strata::runtime
