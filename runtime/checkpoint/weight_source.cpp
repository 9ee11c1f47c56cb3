//===- weight_source.cpp - where a model's weights come from --------------===//
//
// Part of strata. See weight_source.h. The procedural source generates a
// tensor in parallel pieces: 128 x 128 blocks of an fp8 weight (each block
// is quantized on its own, docs/ProceduralWeights.md "FP8 block-quantized
// tensors"), 2^20-element chunks of any other tensor. Every element is a
// pure function of the name and the index, so the bytes equal
// strata-write-checkpoint's whatever the split (weight_source_test.cpp
// compares them with a written checkpoint).
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/weight_source.h"

#include "runtime/base/numeric.h"
#include "runtime/checkpoint/checkpoint_writer.h"
#include "runtime/checkpoint/procedural.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace strata::runtime {

namespace {

std::string gigabytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  return b >= 1e9 ? fmt::format("{:.1f} GB", b / 1e9)
                  : fmt::format("{:.1f} MB", b / 1e6);
}

//===----------------------------------------------------------------------===//
// Checkpoint folders
//===----------------------------------------------------------------------===//

class CheckpointSource : public WeightSource {
public:
  CheckpointSource(std::unique_ptr<Checkpoint> checkpoint, std::string dir)
      : checkpoint_(std::move(checkpoint)), dir_(std::move(dir)) {}

  std::string description() const override {
    return fmt::format("checkpoint {}: {} tensors, {}", dir_, numTensors(),
                       gigabytes(totalBytes()));
  }
  std::optional<WeightInfo> find(std::string_view name) const override {
    StatusOr<TensorView> view = checkpoint_->tensor(name);
    if (!view.ok())
      return std::nullopt;
    return WeightInfo{view->dtype, view->shape, view->byte_size};
  }
  StatusOr<const uint8_t *> bytes(std::string_view name,
                                  std::vector<uint8_t> &) override {
    STRATA_ASSIGN_OR_RETURN(TensorView view, checkpoint_->tensor(name));
    return view.data;
  }
  std::size_t numTensors() const override { return checkpoint_->numTensors(); }
  uint64_t totalBytes() const override {
    return checkpoint_->totalTensorBytes();
  }

private:
  std::unique_ptr<Checkpoint> checkpoint_;
  std::string dir_;
};

//===----------------------------------------------------------------------===//
// A small pool of generator threads
//===----------------------------------------------------------------------===//

// run(n, fn) calls fn(0..n-1) on the workers and the calling thread and
// returns when all calls have returned.
class WorkerPool {
public:
  explicit WorkerPool(unsigned threads) {
    for (unsigned t = 1; t < threads; ++t)
      workers_.emplace_back([this] { workerLoop(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  void run(std::size_t n, const std::function<void(std::size_t)> &fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &fn;
      count_ = n;
      next_ = 0;
      busy_ = workers_.size();
      ++generation_;
    }
    wake_.notify_all();
    work(fn, n);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    job_ = nullptr;
  }

private:
  void work(const std::function<void(std::size_t)> &fn, std::size_t n) {
    for (std::size_t i = next_++; i < n; i = next_++)
      fn(i);
  }
  void workerLoop() {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(std::size_t)> *job;
      std::size_t n;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        job = job_;
        n = count_;
      }
      work(*job, n);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        --busy_;
      }
      done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)> *job_ = nullptr;
  std::size_t count_ = 0, busy_ = 0;
  std::atomic<std::size_t> next_{0};
  uint64_t generation_ = 0;
  bool stop_ = false;
};

//===----------------------------------------------------------------------===//
// Procedural weights
//===----------------------------------------------------------------------===//

constexpr uint64_t kChunkElements = uint64_t(1) << 20;
constexpr int64_t kBlock = 128;

// Quantizes block (rb, cb) of an fp8 [out, in] procedural weight: the same
// arithmetic as quantizeProceduralRows (amax of the master values, scale_inv
// = amax / 448 or 1, codes e4m3fn(v / scale_inv)), for one 128 x 128 block.
// `codes` is the whole tensor (row stride `in`) or null for the scale alone.
float quantizeBlock(const ProceduralTensor &gen, int64_t out, int64_t in,
                    int64_t rb, int64_t cb, uint8_t *codes) {
  const int64_t r0 = rb * kBlock, r1 = std::min(out, r0 + kBlock);
  const int64_t c0 = cb * kBlock, c1 = std::min(in, c0 + kBlock);
  const int64_t cols = c1 - c0;
  float v[kBlock * kBlock];
  float amax = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    float *row = v + (r - r0) * kBlock;
    gen.values(static_cast<uint64_t>(r * in + c0), static_cast<uint64_t>(cols),
               row);
    for (int64_t c = 0; c < cols; ++c)
      amax = std::max(amax, std::fabs(row[c]));
  }
  const float scale_inv = amax == 0.0f ? 1.0f : amax / kE4m3Max;
  if (codes)
    for (int64_t r = r0; r < r1; ++r) {
      const float *row = v + (r - r0) * kBlock;
      uint8_t *dst = codes + r * in + c0;
      for (int64_t c = 0; c < cols; ++c)
        dst[c] = f32ToE4m3(row[c] / scale_inv);
    }
  return scale_inv;
}

class ProceduralSource : public WeightSource {
public:
  ProceduralSource(std::vector<TensorSpec> specs, std::string config_path,
                   unsigned threads)
      : specs_(std::move(specs)), config_path_(std::move(config_path)),
        pool_(threads) {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      index_.emplace(specs_[i].name, i);
      total_bytes_ += tensorBytes(specs_[i]);
    }
  }

  std::string description() const override {
    return fmt::format("procedural weights of {}: {} tensors, {}",
                       config_path_, numTensors(), gigabytes(totalBytes()));
  }
  std::optional<WeightInfo> find(std::string_view name) const override {
    auto it = index_.find(name);
    if (it == index_.end())
      return std::nullopt;
    const TensorSpec &spec = specs_[it->second];
    return WeightInfo{spec.dtype, spec.shape, tensorBytes(spec)};
  }
  std::size_t numTensors() const override { return specs_.size(); }
  uint64_t totalBytes() const override { return total_bytes_; }

  StatusOr<const uint8_t *> bytes(std::string_view name,
                                  std::vector<uint8_t> &scratch) override {
    auto it = index_.find(name);
    if (it == index_.end())
      return notFound("procedural weights of {} have no tensor '{}'",
                      config_path_, name);
    const TensorSpec &spec = specs_[it->second];
    scratch.resize(std::max<uint64_t>(tensorBytes(spec), 1));
    if (spec.is_scale_inv) {
      auto cached = scales_.find(spec.name);
      std::vector<float> scales;
      if (cached != scales_.end()) {
        scales = std::move(cached->second);
        scales_.erase(cached);
      } else {
        auto weight = index_.find(spec.fp8_partner);
        if (weight == index_.end())
          return internalError("scale tensor '{}' without its weight '{}'",
                               spec.name, spec.fp8_partner);
        scales = fp8(specs_[weight->second], nullptr);
      }
      std::memcpy(scratch.data(), scales.data(), scales.size() * sizeof(float));
      return scratch.data();
    }
    if (spec.dtype == DType::kF8E4M3) {
      // The scales come for free with the codes; keep them for the
      // `_scale_inv` tensor that is usually asked for next.
      scales_[spec.fp8_partner] = fp8(spec, scratch.data());
      return scratch.data();
    }
    if (spec.dtype != DType::kF32 && spec.dtype != DType::kBF16)
      return invalidArgument("tensor '{}': procedural weights of dtype {} are "
                             "not supported",
                             spec.name, dtypeName(spec.dtype));
    plain(spec, scratch.data());
    return scratch.data();
  }

private:
  // Codes into `codes` (may be null) and the block scales, row-major over
  // the block grid.
  std::vector<float> fp8(const TensorSpec &spec, uint8_t *codes) {
    const int64_t out = spec.shape[0], in = spec.shape[1];
    const int64_t row_blocks = (out + kBlock - 1) / kBlock;
    const int64_t col_blocks = (in + kBlock - 1) / kBlock;
    std::vector<float> scales(static_cast<std::size_t>(row_blocks * col_blocks));
    ProceduralTensor gen(spec.name, spec.shape);
    pool_.run(scales.size(), [&](std::size_t b) {
      const int64_t rb = static_cast<int64_t>(b) / col_blocks;
      const int64_t cb = static_cast<int64_t>(b) % col_blocks;
      scales[b] = quantizeBlock(gen, out, in, rb, cb, codes);
    });
    return scales;
  }

  void plain(const TensorSpec &spec, uint8_t *dst) {
    const uint64_t n = tensorBytes(spec) / dtypeSize(spec.dtype);
    const bool bf16 = spec.dtype == DType::kBF16;
    ProceduralTensor gen(spec.name, spec.shape);
    const std::size_t chunks = (n + kChunkElements - 1) / kChunkElements;
    pool_.run(chunks, [&](std::size_t c) {
      const uint64_t begin = c * kChunkElements;
      const uint64_t count = std::min(kChunkElements, n - begin);
      std::vector<float> values(count);
      gen.values(begin, count, values.data());
      if (!bf16) {
        std::memcpy(dst + begin * 4, values.data(), count * 4); // LE host.
        return;
      }
      uint8_t *out = dst + begin * 2;
      for (uint64_t i = 0; i < count; ++i) {
        const uint16_t b = f32ToBf16(values[i]);
        out[2 * i] = static_cast<uint8_t>(b & 0xff);
        out[2 * i + 1] = static_cast<uint8_t>(b >> 8);
      }
    });
  }

  std::vector<TensorSpec> specs_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::string config_path_;
  uint64_t total_bytes_ = 0;
  WorkerPool pool_;
  /// Block scales of fp8 weights generated but whose scale tensor has not
  /// been asked for yet, by scale tensor name.
  std::map<std::string, std::vector<float>, std::less<>> scales_;
};

} // namespace

std::unique_ptr<WeightSource>
checkpointWeightSource(std::unique_ptr<Checkpoint> checkpoint,
                       std::string dir) {
  return std::make_unique<CheckpointSource>(std::move(checkpoint),
                                            std::move(dir));
}

StatusOr<std::unique_ptr<WeightSource>>
proceduralWeightSource(const Glm5TextConfig &config, std::string config_path,
                       const WeightSourceOptions &options) {
  STRATA_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs,
                          glm5TensorManifest(config));
  unsigned threads =
      options.threads ? options.threads : std::thread::hardware_concurrency();
  return std::unique_ptr<WeightSource>(new ProceduralSource(
      std::move(specs), std::move(config_path), std::max(threads, 1u)));
}

StatusOr<std::unique_ptr<WeightSource>>
openWeightSource(const std::string &spec, const WeightSourceOptions &options) {
  if (spec.rfind(kProceduralWeightsPrefix, 0) == 0) {
    std::string path = spec.substr(kProceduralWeightsPrefix.size());
    if (path.empty())
      return invalidArgument("--checkpoint {}: expected procedural:CONFIG.json",
                             spec);
    STRATA_ASSIGN_OR_RETURN(Glm5TextConfig config, loadGlm5Config(path));
    return proceduralWeightSource(config, path, options);
  }
  if (!std::filesystem::is_directory(spec))
    return notFound("checkpoint folder {} does not exist", spec);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint,
                          Checkpoint::open(spec));
  return checkpointWeightSource(std::move(checkpoint), spec);
}

} // namespace strata::runtime
