//===- model_executor.cpp - run model steps from an artifact --------------===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/model_executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <initializer_list>
#include <string_view>

#include <fmt/format.h>

#include "runtime/device/cpu/cpu_device.h"
#include "runtime/device/cuda/cuda_device.h"
#include "runtime/device/hip/hip_device.h"
#include "runtime/checkpoint/weight_source.h"
#include "runtime/loader/weight_manifest.h"
#include "runtime/schemas/mtp_draft_limit.h"

namespace strata::runtime {

using artifact::BufferKind;
using artifact::CacheKind;
using artifact::SizeSymbol;
using artifact::StepKind;
using artifact::WeightTransform;

namespace {

/// The buffer id of the plan buffer called `name`, or -1.
int findBuffer(const artifact::ExecutionPlan &plan, std::string_view name) {
  for (size_t i = 0; i < plan.buffers()->size(); ++i)
    if (plan.buffers()->Get(i)->name()->string_view() == name)
      return static_cast<int>(i);
  return -1;
}

bool isPaged(CacheKind kind) {
  return kind == CacheKind::mla_latent || kind == CacheKind::index_pages;
}

/// Bytes of one page (paged kinds) or one slot (state kinds).
uint64_t unitBytes(const artifact::CacheLayout &layout, CacheKind kind) {
  switch (kind) {
  case CacheKind::mla_latent:
    return layout.mla_latent()->page_bytes();
  case CacheKind::index_pages:
    return layout.index_pages()->page_bytes();
  case CacheKind::tail_ring:
    return layout.tail_ring()->bytes_per_layer();
  case CacheKind::kda_recurrent:
    return layout.kda()->recurrent_bytes_per_layer();
  case CacheKind::kda_conv:
    return layout.kda()->conv_bytes_per_layer();
  case CacheKind::shared_selection:
    return layout.shared_selection()->bytes_per_layer();
  }
  return 0;
}

/// Appends request `r`'s per-token KDA state slots to `out`: its
/// state_token_slots, or its destination slot `dst` for every token.
Status appendTokenStateSlots(const StepRequest &request, size_t r,
                             int32_t dst, uint32_t state_slots,
                             std::vector<int32_t> &out) {
  const std::vector<int32_t> &slots = request.state_token_slots;
  if (slots.empty()) {
    out.insert(out.end(), request.tokens.size(), dst);
    return okStatus();
  }
  if (slots.size() != request.tokens.size())
    return invalidArgument("request {}: {} per-token state slots for {} "
                           "tokens",
                           r, slots.size(), request.tokens.size());
  for (int32_t slot : slots)
    if (slot < 0 || uint64_t(slot) >= state_slots)
      return outOfRange("request {}: KDA state slot {} outside [0, {})", r,
                        slot, state_slots);
  if (slots.back() != dst)
    return invalidArgument("request {}: the state after its last token goes "
                           "to slot {}, its destination slot is {}",
                           r, slots.back(), dst);
  out.insert(out.end(), slots.begin(), slots.end());
  return okStatus();
}

} // namespace

static StatusOr<artifact::TargetKind> targetKindOf(const std::string &name) {
  if (name == "cpu")
    return artifact::TargetKind::cpu;
  if (name == "sm_90")
    return artifact::TargetKind::sm_90;
  if (name == "sm_90a")
    return artifact::TargetKind::sm_90a;
  if (name == "gfx942")
    return artifact::TargetKind::gfx942;
  if (name == "gfx950")
    return artifact::TargetKind::gfx950;
  return invalidArgument("unknown target '{}' (expected cpu, sm_90, sm_90a, "
                         "gfx942 or gfx950)",
                         name);
}

StatusOr<std::unique_ptr<ModelExecutor>>
ModelExecutor::create(const std::string &artifact_path,
                      const std::string &checkpoint_dir,
                      const ExecutorOptions &options) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Artifact> artifact,
                          Artifact::fromFile(artifact_path));
  return create(std::move(artifact), checkpoint_dir, options);
}

StatusOr<std::unique_ptr<ModelExecutor>>
ModelExecutor::create(std::unique_ptr<Artifact> artifact,
                      const std::string &checkpoint_dir,
                      const ExecutorOptions &options) {
  if (!options.defer_caches &&
      (options.kv_pages == 0 || options.state_slots == 0))
    return invalidArgument("executor: kv_pages ({}) and state_slots ({}) "
                           "must be positive",
                           options.kv_pages, options.state_slots);
  std::unique_ptr<ModelExecutor> executor(new ModelExecutor());
  executor->options_ = options;
  executor->artifact_ = std::move(artifact);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> weights,
                          openWeightSource(checkpoint_dir));
  STRATA_RETURN_IF_ERROR(checkWeightManifest(
      *executor->artifact_,
      [&](std::string_view name) -> std::optional<CheckpointTensorInfo> {
        std::optional<WeightInfo> info = weights->find(name);
        if (!info)
          return std::nullopt;
        return CheckpointTensorInfo{std::string(dtypeName(info->dtype)),
                                    info->shape};
      }));
  STRATA_ASSIGN_OR_RETURN(executor->target_kind_,
                          targetKindOf(options.target));
  // The artifact must have the target before a device is opened.
  STRATA_RETURN_IF_ERROR(
      executor->artifact_->target(executor->target_kind_).status());
  switch (executor->target_kind_) {
  case artifact::TargetKind::cpu:
    executor->device_ = createCpuDevice();
    break;
  case artifact::TargetKind::sm_90:
  case artifact::TargetKind::sm_90a: {
    CudaDeviceOptions cuda;
    cuda.ordinal = executor->deviceOrdinal();
    cuda.ordinal_modulo_count = true;
    cuda.dependent_launches = options.dependent_launches;
    STRATA_ASSIGN_OR_RETURN(executor->device_, createCudaDevice(cuda));
    break;
  }
  default: {
    HipDeviceOptions hip;
    hip.ordinal = executor->deviceOrdinal();
    hip.ordinal_modulo_count = true;
    STRATA_ASSIGN_OR_RETURN(executor->device_, createHipDevice(hip));
    break;
  }
  }
  STRATA_ASSIGN_OR_RETURN(
      executor->program_,
      Program::load(*executor->artifact_, executor->target_kind_,
                    *executor->device_));
  STRATA_RETURN_IF_ERROR(executor->joinRankGroups());
  const auto load_start = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(executor->bindWeights(*weights));
  executor->weights_description_ = weights->description();
  executor->weights_load_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    load_start)
          .count();
  if (!options.defer_caches)
    STRATA_RETURN_IF_ERROR(
        executor->allocateCaches(options.kv_pages, options.state_slots));
  return executor;
}

int ModelExecutor::deviceOrdinal() const {
  return options_.ranks ? options_.ranks->rank : 0;
}

Status ModelExecutor::joinRankGroups() {
  const artifact::ParallelLayout *layout = artifact_->def().parallel();
  uint32_t ranks = artifact_->numRanks();
  uint32_t asked = options_.ranks ? options_.ranks->tensor_parallel_size *
                                        options_.ranks->expert_parallel_size
                                  : 1;
  if (ranks == 1 && asked == 1)
    return okStatus();
  uint32_t tp = layout ? layout->tensor_parallel_size() : 1;
  uint32_t ep = layout ? layout->expert_parallel_size() : 1;
  if (!options_.ranks)
    return failedPrecondition(
        "artifact is compiled for {} ranks (tensor-parallel {} x "
        "expert-parallel {}): run one process per rank (strata-run "
        "--tensor-parallel-size {} --expert-parallel-size {}; "
        "docs/Parallel.md)",
        ranks, tp, ep, tp, ep);
  if (options_.ranks->tensor_parallel_size != tp ||
      options_.ranks->expert_parallel_size != ep)
    return invalidArgument("tensor-parallel {} x expert-parallel {} ranks "
                           "asked for, the artifact is compiled for {} x {}",
                           options_.ranks->tensor_parallel_size,
                           options_.ranks->expert_parallel_size, tp, ep);
  STRATA_ASSIGN_OR_RETURN(rank_groups_,
                          RankGroups::create(*options_.ranks, *device_));
  // Gloo collectives run on the calling thread and cannot be captured.
  if (!rank_groups_->capturable())
    options_.step_graphs = false;
  return okStatus();
}

StatusOr<TensorBox>
ModelExecutor::rankBox(size_t index, const std::string &name,
                       const std::vector<int64_t> &shape) const {
  const artifact::WeightEntry *entry = artifact_->def().weights()->Get(index);
  std::vector<int64_t> extents(entry->shape()->begin(), entry->shape()->end());
  std::vector<int64_t> offsets(extents.size(), 0);
  const artifact::ParallelLayout *layout = artifact_->def().parallel();
  if (layout && rank_groups_) {
    const artifact::WeightSlice *slice =
        layout->ranks()->Get(rank_groups_->rank())->weights()->Get(index);
    offsets.assign(slice->offsets()->begin(), slice->offsets()->end());
  }
  // A stacked entry's tensors are its experts: drop the expert dimension.
  if (entry->transform() == WeightTransform::stack_experts) {
    extents.erase(extents.begin());
    offsets.erase(offsets.begin());
  }
  return weightBox(name, shape, std::move(offsets), std::move(extents));
}

Status ModelExecutor::bindWeights(WeightSource &source) {
  // The CPU backend copies each tensor into device memory (a GPU backend
  // must; on the CPU this costs one copy of the weights at load time).
  // Every buffer is allocated first; then the tensors are read one at a
  // time, the next one on a helper thread while the current one is copied:
  // a procedural source generates each into a scratch vector (a checkpoint
  // folder's point into its mapping), so at most two tensors are on the
  // host at once and generation overlaps the upload.
  // A part is one checkpoint tensor (of a stacked entry: one expert's) and
  // the box of it the rank reads (the whole tensor without a layout).
  struct Part {
    size_t weight;
    uint64_t offset, size;
    std::string name;
    TensorBox box;
    uint32_t element_bytes;
  };
  std::vector<Part> parts;
  const auto *manifest = artifact_->def().weights();
  for (size_t i = 0; manifest && i < manifest->size(); ++i) {
    const artifact::WeightEntry *entry = manifest->Get(i);
    std::string name = entry->name()->str();
    std::vector<std::string> names;
    if (entry->transform() == WeightTransform::stack_experts) {
      // The rank's experts start at its slice's offset along dimension 0.
      int64_t first = 0;
      if (artifact_->def().parallel() && rank_groups_)
        first = artifact_->def()
                    .parallel()
                    ->ranks()
                    ->Get(rank_groups_->rank())
                    ->weights()
                    ->Get(i)
                    ->offsets()
                    ->Get(0);
      for (int64_t e = 0; e < entry->shape()->Get(0); ++e)
        names.push_back(expertTensorName(name, first + e));
    } else if (entry->transform() == WeightTransform::none) {
      names.push_back(name);
    } else {
      return unimplemented("weight '{}': transform {} is not supported by "
                           "the CPU executor",
                           name, artifact::EnumNameWeightTransform(
                                     entry->transform()));
    }
    uint64_t total = 0;
    for (std::string &part : names) {
      std::optional<WeightInfo> info = source.find(part);
      if (!info)
        return notFound("weight '{}': no tensor '{}' in the checkpoint", name,
                        part);
      STRATA_ASSIGN_OR_RETURN(TensorBox box, rankBox(i, part, info->shape));
      uint32_t element_bytes = dtypeBytes(entry->dtype());
      uint64_t bytes = boxBytes(box, element_bytes);
      parts.push_back(Part{weights_.size(), total, bytes, std::move(part),
                           std::move(box), element_bytes});
      total += bytes;
    }
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer,
                            device_->allocate(std::max<uint64_t>(total, 1), 64));
    weights_.push_back(std::move(buffer));
  }
  ProgressReporter *progress = options_.progress;
  if (progress) {
    uint64_t total = 0;
    for (const Part &part : parts)
      total += part.size;
    progress->begin("loading weights", total);
  }
  std::vector<uint8_t> scratch[2], box_bytes;
  auto read = [&](size_t i) { return source.bytes(parts[i].name, scratch[i % 2]); };
  std::future<StatusOr<const uint8_t *>> next;
  if (!parts.empty())
    next = std::async(std::launch::async, read, 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    StatusOr<const uint8_t *> bytes = next.get();
    // Part i + 1 goes into the other scratch vector while part i is copied.
    if (bytes.ok() && i + 1 < parts.size())
      next = std::async(std::launch::async, read, i + 1);
    Status copied = bytes.status();
    const uint8_t *data = copied.ok() ? *bytes : nullptr;
    if (copied.ok() && !coversWholeTensor(parts[i].box)) {
      // The rank's box, packed out of the tensor's bytes (the mapping).
      box_bytes.resize(parts[i].size);
      copyTensorBox(data, parts[i].box, parts[i].element_bytes,
                    box_bytes.data());
      data = box_bytes.data();
    }
    if (copied.ok())
      copied = device_->copyToDevice(*weights_[parts[i].weight],
                                     parts[i].offset, data, parts[i].size);
    if (!copied.ok()) {
      if (next.valid())
        next.wait(); // It writes into `scratch`.
      return copied;
    }
    if (progress)
      progress->advance(parts[i].size);
  }
  if (progress)
    progress->finish();
  return okStatus();
}

Status ModelExecutor::allocateCaches(uint64_t kv_pages, uint32_t state_slots) {
  if (!caches_.empty())
    return failedPrecondition("executor: caches are already allocated");
  if (kv_pages == 0 || state_slots == 0)
    return invalidArgument("executor: kv_pages ({}) and state_slots ({}) "
                           "must be positive",
                           kv_pages, state_slots);
  options_.kv_pages = kv_pages;
  options_.state_slots = state_slots;
  const artifact::CacheLayout &layout = *artifact_->def().cache_layout();
  for (size_t i = 0; layout.caches() && i < layout.caches()->size(); ++i) {
    const artifact::CacheDef *cache = layout.caches()->Get(i);
    uint64_t unit = unitBytes(layout, cache->kind());
    uint64_t count = isPaged(cache->kind()) ? options_.kv_pages
                                            : options_.state_slots;
    if (unit != 0 && count > UINT64_MAX / unit)
      return outOfRange("cache '{}': {} x {} bytes overflows",
                        cache->name()->str(), count, unit);
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<Buffer> buffer,
        device_->allocate(count * unit, layout.alignment()));
    caches_.push_back(std::move(buffer));
    cache_unit_bytes_.push_back(unit);
  }
  return okStatus();
}

StatusOr<uint64_t> ModelExecutor::stepBufferBytes(StepKind step,
                                                  uint64_t num_tokens,
                                                  uint64_t num_requests,
                                                  uint64_t context) const {
  STRATA_ASSIGN_OR_RETURN(const artifact::TargetDef *target,
                          artifact_->target(target_kind_));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(*target, step));
  const uint64_t page = pageSizeTokens();
  RuntimeSizes sizes;
  sizes[SizeSymbol::num_tokens] = num_tokens;
  sizes[SizeSymbol::num_requests] = num_requests;
  sizes[SizeSymbol::num_pages] = (context + page - 1) / page;
  sizes[SizeSymbol::max_context] = context;
  sizes[SizeSymbol::logit_rows] = num_tokens;
  sizes[SizeSymbol::kv_pages] = options_.kv_pages;
  sizes[SizeSymbol::state_slots] = options_.state_slots;
  uint64_t total = 0;
  for (size_t b = 0; plan->buffers() && b < plan->buffers()->size(); ++b) {
    STRATA_ASSIGN_OR_RETURN(
        uint64_t bytes,
        evaluateSizeExpr(plan->buffers()->Get(b)->size_bytes(), sizes));
    total += bytes;
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t scratch,
                          program_->scratchBytes(step, sizes));
  return total + scratch;
}

uint64_t ModelExecutor::weightBytes() const {
  uint64_t total = 0;
  for (const std::unique_ptr<Buffer> &buffer : weights_)
    total += buffer->size();
  return total;
}

uint64_t ModelExecutor::pageSizeTokens() const {
  return artifact_->def().cache_layout()->page_size_tokens();
}

bool ModelExecutor::hasStep(StepKind step) const {
  StatusOr<const artifact::TargetDef *> target =
      artifact_->target(target_kind_);
  return target.ok() && Artifact::plan(**target, step).ok();
}

Status ModelExecutor::resetSlot(int32_t slot) {
  if (slot < 0 || static_cast<uint64_t>(slot) >= options_.state_slots)
    return outOfRange("state slot {} outside [0, {})", slot,
                      options_.state_slots);
  const artifact::CacheLayout &layout = *artifact_->def().cache_layout();
  for (size_t i = 0; i < caches_.size(); ++i) {
    if (isPaged(layout.caches()->Get(i)->kind()))
      continue;
    std::vector<uint8_t> zeros(cache_unit_bytes_[i], 0);
    STRATA_RETURN_IF_ERROR(device_->copyToDevice(
        *caches_[i], uint64_t(slot) * cache_unit_bytes_[i], zeros.data(),
        zeros.size()));
  }
  return okStatus();
}

bool ModelExecutor::keepsTokenStates() const {
  StatusOr<const artifact::TargetDef *> target =
      artifact_->target(target_kind_);
  if (!target.ok())
    return false;
  StatusOr<const artifact::ExecutionPlan *> plan =
      Artifact::plan(**target, StepKind::decode);
  return plan.ok() && findBuffer(**plan, "state_token_slots") >= 0;
}

Status ModelExecutor::copySlots(int32_t src, int32_t dst, int32_t count,
                                StatePools pools) {
  if (count < 1)
    return invalidArgument("copy of {} state slots", count);
  for (int32_t first : {src, dst})
    if (first < 0 ||
        static_cast<uint64_t>(first) + uint64_t(count) > options_.state_slots)
      return outOfRange("state slots [{}, {}) outside [0, {})", first,
                        int64_t(first) + count, options_.state_slots);
  if (src == dst)
    return okStatus();
  if (std::abs(int64_t(src) - int64_t(dst)) < count)
    return invalidArgument("state slots [{}, {}) and [{}, {}) overlap", src,
                           src + count, dst, dst + count);
  const artifact::CacheLayout &layout = *artifact_->def().cache_layout();
  Stream &stream = device_->defaultStream();
  for (size_t i = 0; i < caches_.size(); ++i) {
    CacheKind kind = layout.caches()->Get(i)->kind();
    bool kda = kind == CacheKind::kda_recurrent || kind == CacheKind::kda_conv;
    // Shared selections are rewritten by a request's step 0 before its
    // chain reads them: nothing to keep.
    if (isPaged(kind) || kind == CacheKind::shared_selection ||
        (pools == StatePools::kda && !kda))
      continue;
    uint64_t unit = cache_unit_bytes_[i];
    STRATA_RETURN_IF_ERROR(stream.copyBuffer(*caches_[i], uint64_t(src) * unit,
                                             *caches_[i], uint64_t(dst) * unit,
                                             uint64_t(count) * unit));
  }
  return device_->synchronize();
}

StatusOr<StepResult>
ModelExecutor::run(StepKind step, const std::vector<StepRequest> &requests,
                   const DispatchObserver *observer,
                   const StepOutputs &outputs) {
  STRATA_ASSIGN_OR_RETURN(DraftedStepResult result,
                          execute(step, requests, observer, outputs, nullptr));
  return std::move(result.target);
}

StatusOr<DraftedStepResult>
ModelExecutor::runWithDraft(StepKind step,
                            const std::vector<StepRequest> &requests,
                            const StepOutputs &outputs,
                            const StepOutputs &draft_outputs,
                            const DispatchObserver *observer) {
  return execute(step, requests, observer, outputs, &draft_outputs);
}

namespace {

/// Copies `bytes` from `data` (which must stay valid until the stream has
/// run the copy) into plan input `name` of `buffers`, whose size must be
/// `bytes`.
Status writeInput(const artifact::ExecutionPlan &plan, PlanBuffers &buffers,
                  std::string_view name, const void *data, size_t bytes,
                  Stream &stream) {
  const char *kind = artifact::EnumNameStepKind(plan.step());
  int id = findBuffer(plan, name);
  if (id < 0)
    return notFound("plan '{}' has no input buffer '{}'", kind, name);
  Buffer &buffer = *buffers.buffers[id];
  if (buffer.size() != bytes)
    return internalError("plan '{}' input '{}' is {} bytes, the step has {}",
                         kind, name, buffer.size(), bytes);
  return stream.copyToDevice(buffer, 0, data, bytes);
}

/// Why `next` cannot start from `source`'s greedy tokens and hidden rows
/// (`next_what`, for the message) reading its `inputs`, or OK.
Status checkFeeds(const artifact::ExecutionPlan &source,
                  const artifact::ExecutionPlan &next,
                  std::string_view next_what,
                  std::initializer_list<std::string_view> inputs) {
  for (std::string_view name : {"greedy", "hidden_out"})
    if (findBuffer(source, name) < 0)
      return failedPrecondition("plan '{}' has no '{}' output for {} to start "
                                "from (an artifact compiled before greedy "
                                "outputs?)",
                                artifact::EnumNameStepKind(source.step()), name,
                                next_what);
  for (std::string_view name : inputs)
    if (findBuffer(next, name) < 0)
      return failedPrecondition("plan '{}' has no '{}' input",
                                artifact::EnumNameStepKind(next.step()), name);
  return okStatus();
}

} // namespace

Status ModelExecutor::checkDraftedStep(StepKind step) const {
  STRATA_ASSIGN_OR_RETURN(const artifact::TargetDef *target,
                          artifact_->target(target_kind_));
  if (step == StepKind::mtp_draft)
    return invalidArgument("a draft step cannot be followed by one");
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(*target, step));
  if (!hasStep(StepKind::mtp_draft))
    return failedPrecondition("the artifact has no mtp_draft plan to follow "
                              "the {} step with",
                              artifact::EnumNameStepKind(step));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *draft,
                          Artifact::plan(*target, StepKind::mtp_draft));
  return checkFeeds(*plan, *draft, "the draft step", {"ids", "hidden"});
}

DraftChain candidateDraftChains(const std::vector<StepRequest> &step,
                                size_t passes, uint64_t page_tokens) {
  const uint64_t page = std::max<uint64_t>(page_tokens, 1);
  DraftChain chain;
  chain.step = StepKind::mtp_chain;
  chain.passes = passes;
  for (const StepRequest &s : step) {
    size_t count = s.tokens.size();
    for (size_t j = 0; j < count; ++j) {
      StepRequest c;
      c.tokens = {0}; // the draft's greedy token of row j, on the device
      c.start_position = s.start_position + int64_t(j) + 1;
      c.shared_selection_row =
          int32_t(kSharedSelectionRows) - 1 - int32_t(count - 1 - j);
      c.slot = s.slot;
      c.block_table = s.block_table;
      uint64_t end = uint64_t(c.start_position) + passes;
      while (!c.block_table.empty() && c.block_table.size() * page < end)
        c.block_table.push_back(c.block_table.back());
      chain.requests.push_back(std::move(c));
    }
  }
  return chain;
}

StatusOr<DraftedStepResult> ModelExecutor::runWithDraftChain(
    StepKind step, const std::vector<StepRequest> &requests,
    const StepOutputs &outputs, const StepOutputs &draft_outputs,
    const DraftChain &chain, const DispatchObserver *observer) {
  return execute(step, requests, observer, outputs, &draft_outputs, &chain);
}

StatusOr<std::vector<StepResult>>
ModelExecutor::runChain(StepKind step, const std::vector<StepRequest> &requests,
                        size_t passes, const StepOutputs &outputs,
                        const DispatchObserver *observer) {
  if (passes == 0)
    return invalidArgument("a draft chain of no passes");
  STRATA_RETURN_IF_ERROR(checkChainedStep(step));
  // Passes 1.. are a chain after pass 0, each request one position on.
  DraftChain chain;
  chain.step = step;
  chain.passes = passes - 1;
  chain.outputs = outputs;
  chain.requests = requests;
  for (StepRequest &request : chain.requests) {
    request.start_position += 1;
    request.hidden.clear();
    request.target_hidden_row = -1;
  }
  STRATA_ASSIGN_OR_RETURN(DraftedStepResult first,
                          execute(step, requests, observer, outputs, nullptr,
                                  passes > 1 ? &chain : nullptr));
  std::vector<StepResult> results;
  results.push_back(std::move(first.target));
  for (StepResult &pass : first.chain)
    results.push_back(std::move(pass));
  return results;
}

Status ModelExecutor::checkChainedStep(StepKind step) const {
  if (step != StepKind::mtp_chain && step != StepKind::mtp_draft)
    return invalidArgument("only draft steps chain their passes, not {}",
                           artifact::EnumNameStepKind(step));
  STRATA_ASSIGN_OR_RETURN(const artifact::TargetDef *target,
                          artifact_->target(target_kind_));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(*target, step));
  return checkFeeds(*plan, *plan, "the next pass",
                    {"ids", "hidden", "positions"});
}

StatusOr<ModelExecutor::HostInputs>
ModelExecutor::gatherInputs(const std::vector<StepRequest> &requests,
                            const artifact::ExecutionPlan &plan,
                            bool graph) const {
  if (requests.empty())
    return invalidArgument("step with no requests");
  HostInputs in;
  const char *kind = artifact::EnumNameStepKind(plan.step());
  uint64_t page = pageSizeTokens();
  size_t max_pages = 1;
  uint64_t max_context = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    const StepRequest &request = requests[r];
    if (request.tokens.empty())
      return invalidArgument("request {} has no tokens", r);
    // Decode and verify plans leave out the kernels of longer requests
    // (KDA's chunk path).
    if (plan.max_request_tokens() &&
        request.tokens.size() > plan.max_request_tokens())
      return invalidArgument("request {}: {} tokens; the {} plan takes at "
                             "most {} per request",
                             r, request.tokens.size(), kind,
                             plan.max_request_tokens());
    if (request.start_position < 0)
      return invalidArgument("request {}: negative start position", r);
    uint64_t end = uint64_t(request.start_position) + request.tokens.size();
    if (end > model().max_position_embeddings())
      return outOfRange("request {}: position {} beyond the model's {} "
                        "positions",
                        r, end - 1, model().max_position_embeddings());
    uint64_t needed = (end + page - 1) / page;
    if (request.block_table.size() < needed)
      return invalidArgument("request {}: block table has {} pages, {} "
                             "tokens need {}",
                             r, request.block_table.size(), end, needed);
    for (int32_t id : request.block_table)
      if (id < 0 || uint64_t(id) >= options_.kv_pages)
        return outOfRange("request {}: page id {} outside [0, {})", r, id,
                          options_.kv_pages);
    if (request.slot < 0 || uint64_t(request.slot) >= options_.state_slots)
      return outOfRange("request {}: state slot {} outside [0, {})", r,
                        request.slot, options_.state_slots);
    for (int32_t state_slot : {request.state_src_slot, request.state_dst_slot})
      if (state_slot < -1 || state_slot >= int64_t(options_.state_slots))
        return outOfRange("request {}: KDA state slot {} outside [0, {})", r,
                          state_slot, options_.state_slots);
    in.state_src_slots.push_back(
        request.state_src_slot < 0 ? request.slot : request.state_src_slot);
    in.state_dst_slots.push_back(
        request.state_dst_slot < 0 ? request.slot : request.state_dst_slot);
    in.separate_state_slots |= in.state_src_slots.back() != request.slot ||
                               in.state_dst_slots.back() != request.slot;
    STRATA_RETURN_IF_ERROR(
        appendTokenStateSlots(request, r, in.state_dst_slots.back(),
                              options_.state_slots, in.state_token_slots));
    in.token_states |= !request.state_token_slots.empty();
    size_t first_row = in.rows.size();
    for (size_t t = 0; t < request.tokens.size(); ++t) {
      int32_t token = request.tokens[t];
      if (token < 0 || uint64_t(token) >= model().vocab_size())
        return invalidArgument("request {}: token id {} outside the "
                               "vocabulary [0, {})",
                               r, token, model().vocab_size());
      if (request.all_logits || t + 1 == request.tokens.size())
        in.rows.push_back(static_cast<int32_t>(in.ids.size()));
      in.ids.push_back(token);
      in.positions.push_back(static_cast<int32_t>(request.start_position + t));
    }
    in.request_rows.emplace_back(first_row, in.rows.size() - first_row);
    in.seq_starts.push_back(static_cast<int32_t>(in.ids.size()));
    in.slots.push_back(request.slot);
    in.shared_rows.push_back(request.shared_selection_row);
    max_pages = std::max(max_pages, request.block_table.size());
    max_context = std::max(max_context, end);
  }
  if (graph)
    max_pages = (max_pages + kStepGraphPageBucket - 1) /
                kStepGraphPageBucket * kStepGraphPageBucket;
  in.block_table.assign(requests.size() * max_pages, -1);
  for (size_t r = 0; r < requests.size(); ++r)
    std::copy(requests[r].block_table.begin(), requests[r].block_table.end(),
              in.block_table.begin() + r * max_pages);

  RuntimeSizes &sizes = in.sizes;
  sizes[SizeSymbol::num_tokens] = in.ids.size();
  sizes[SizeSymbol::num_requests] = requests.size();
  sizes[SizeSymbol::num_pages] = max_pages;
  // A captured step stands for every step whose contexts fit its block
  // table: max_context is then that bound (an upper bound is what sizes are
  // for; no kernel reads lengths from it).
  sizes[SizeSymbol::max_context] = graph ? max_pages * page : max_context;
  sizes[SizeSymbol::logit_rows] = in.rows.size();
  sizes[SizeSymbol::kv_pages] = options_.kv_pages;
  sizes[SizeSymbol::state_slots] = options_.state_slots;
  if (rank_groups_)
    rank_groups_->setCoordinates(sizes);
  return in;
}

Status ModelExecutor::writeInputs(const artifact::ExecutionPlan &plan,
                                  PlanBuffers &buffers, const HostInputs &in,
                                  const std::vector<int32_t> &positions,
                                  bool own_tokens, Stream &stream) const {
  const char *kind = artifact::EnumNameStepKind(plan.step());
  auto write = [&](std::string_view name,
                   const std::vector<int32_t> &values) -> Status {
    return writeInput(plan, buffers, name, values.data(),
                      values.size() * sizeof(int32_t), stream);
  };
  if (own_tokens)
    STRATA_RETURN_IF_ERROR(write("ids", in.ids));
  for (auto [name, values] :
       {std::pair<std::string_view, const std::vector<int32_t> *>{"positions",
                                                                  &positions},
        {"seq_starts", &in.seq_starts},
        {"slots", &in.slots},
        {"block_table", &in.block_table},
        {"rows", &in.rows}})
    STRATA_RETURN_IF_ERROR(write(name, *values));
  if (findBuffer(plan, "shared_rows") >= 0)
    STRATA_RETURN_IF_ERROR(write("shared_rows", in.shared_rows));
  if (!own_tokens)
    return okStatus();
  // KDA state slots: inputs of target plans with KDA layers (artifacts
  // compiled before they existed read and write `slots`).
  if (findBuffer(plan, "state_src_slots") >= 0) {
    STRATA_RETURN_IF_ERROR(write("state_src_slots", in.state_src_slots));
    STRATA_RETURN_IF_ERROR(write("state_dst_slots", in.state_dst_slots));
  } else if (in.separate_state_slots) {
    return failedPrecondition("plan '{}' reads and writes the KDA state in "
                              "`slots`: it cannot take separate state slots "
                              "(an artifact compiled before them?)",
                              kind);
  }
  if (findBuffer(plan, "state_token_slots") >= 0)
    return write("state_token_slots", in.state_token_slots);
  if (in.token_states)
    return failedPrecondition("plan '{}' keeps no per-token KDA states (an "
                              "artifact compiled before them?)",
                              kind);
  return okStatus();
}

StatusOr<DraftedStepResult> ModelExecutor::execute(
    StepKind step, const std::vector<StepRequest> &requests,
    const DispatchObserver *observer, const StepOutputs &outputs,
    const StepOutputs *draft_outputs, const DraftChain *chain) {
  STRATA_ASSIGN_OR_RETURN(const artifact::TargetDef *target,
                          artifact_->target(target_kind_));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(*target, step));
  const bool drafted = draft_outputs != nullptr;
  const artifact::ExecutionPlan *draft_plan = nullptr;
  if (drafted) {
    STRATA_RETURN_IF_ERROR(checkDraftedStep(step));
    STRATA_ASSIGN_OR_RETURN(draft_plan,
                            Artifact::plan(*target, StepKind::mtp_draft));
  }
  const artifact::ExecutionPlan *chain_plan = nullptr;
  if (chain) {
    if (chain->passes == 0)
      return invalidArgument("a draft chain of no passes");
    STRATA_RETURN_IF_ERROR(checkChainedStep(chain->step));
    STRATA_ASSIGN_OR_RETURN(chain_plan, Artifact::plan(*target, chain->step));
    for (size_t r = 0; r < chain->requests.size(); ++r)
      if (chain->requests[r].tokens.size() != 1)
        return invalidArgument("chain request {}: {} tokens; a draft chain "
                               "takes one per request",
                               r, chain->requests[r].tokens.size());
  }
  const bool draft_step =
      step == StepKind::mtp_draft || step == StepKind::mtp_chain;
  if (!draft_step) {
    // A new target step: the kept hidden output goes (a graph may replay
    // over it).
    kept_hidden_owned_.reset();
    kept_hidden_ = nullptr;
    kept_hidden_tokens_ = 0;
  }

  // Host copies of the plan inputs.
  bool graph = takesGraph(step, requests, observer);
  STRATA_ASSIGN_OR_RETURN(HostInputs in, gatherInputs(requests, *plan, graph));
  // The draft starts from every row: its ids are the target's greedy tokens
  // of all of them, in token order.
  if (drafted && in.rows.size() != in.ids.size())
    return invalidArgument("a step followed by its draft needs logits for "
                           "every token ({} rows for {} tokens): requests "
                           "of one token or all_logits",
                           in.rows.size(), in.ids.size());
  HostInputs chain_in;
  if (chain) {
    STRATA_ASSIGN_OR_RETURN(chain_in,
                            gatherInputs(chain->requests, *chain_plan, graph));
    // Chain request t starts from row t of the step before it.
    if (chain_in.ids.size() != in.rows.size())
      return invalidArgument("a draft chain of {} requests after a step of "
                             "{} rows: one per row",
                             chain_in.ids.size(), in.rows.size());
  }

  // A captured step of this shape, if any (its buffers take the inputs);
  // else fresh buffers, which a capture moves into its graph.
  StepShape shape{step,           in.sizes,
                  drafted,        chain ? chain->step : StepKind::mtp_chain,
                  chain_in.sizes, chain ? chain->passes : 0};
  StepGraph *captured = graph ? findGraph(shape) : nullptr;
  bool capture = graph && !captured && repeatsRecentShape(shape);
  PlanBuffers fresh, fresh_draft;
  std::vector<PlanBuffers> fresh_passes(shape.chain_passes);
  if (!captured) {
    STRATA_ASSIGN_OR_RETURN(fresh, program_->allocateBuffers(step, in.sizes));
    if (drafted) {
      STRATA_ASSIGN_OR_RETURN(fresh_draft, program_->allocateBuffers(
                                               StepKind::mtp_draft, in.sizes));
    }
    for (PlanBuffers &pass : fresh_passes) {
      STRATA_ASSIGN_OR_RETURN(
          pass, program_->allocateBuffers(shape.chain_step, chain_in.sizes));
    }
  }
  PlanBuffers *buffers = captured ? &captured->buffers : &fresh;
  PlanBuffers *draft_buffers =
      !drafted ? nullptr : captured ? &captured->draft_buffers : &fresh_draft;
  std::vector<PlanBuffers> *pass_buffers =
      captured ? &captured->pass_buffers : &fresh_passes;
  // The inputs are copied on the stream that runs the step (a replayed
  // graph's, else the default one) without waiting; the host vectors they
  // read live until the stream is synchronized, which every return does.
  Stream *stream = captured ? captured->stream.get() : &device_->defaultStream();
  struct SyncOnReturn {
    Stream *&stream;
    ~SyncOnReturn() { (void)stream->synchronize(); }
  } sync_on_return{stream};

  std::vector<uint8_t> host_hidden;
  STRATA_RETURN_IF_ERROR(
      writeInputs(*plan, *buffers, in, in.positions, true, *stream));
  // The draft reads the target's batch (its ids and hidden rows come from
  // the target's outputs on the device, launchPlans); chain pass j its
  // requests' positions + j.
  if (drafted)
    STRATA_RETURN_IF_ERROR(writeInputs(*draft_plan, *draft_buffers, in,
                                       in.positions, false, *stream));
  std::vector<std::vector<int32_t>> pass_positions(shape.chain_passes,
                                                   chain_in.positions);
  for (size_t j = 0; j < shape.chain_passes; ++j) {
    for (int32_t &position : pass_positions[j])
      position += int32_t(j);
    STRATA_RETURN_IF_ERROR(writeInputs(*chain_plan, (*pass_buffers)[j],
                                       chain_in, pass_positions[j], false,
                                       *stream));
  }
  if (draft_step && requests.front().target_hidden_row >= 0) {
    int id = findBuffer(*plan, "hidden");
    if (id < 0)
      return notFound("plan '{}' has no input buffer 'hidden'",
                      artifact::EnumNameStepKind(step));
    STRATA_RETURN_IF_ERROR(copyKeptHidden(requests, *buffers->buffers[id],
                                          in.ids.size(), *stream));
  } else if (draft_step) {
    for (const StepRequest &request : requests)
      host_hidden.insert(host_hidden.end(), request.hidden.begin(),
                         request.hidden.end());
    STRATA_RETURN_IF_ERROR(writeInput(*plan, *buffers, "hidden",
                                      host_hidden.data(), host_hidden.size(),
                                      *stream));
  }

  PlanResources resources;
  resources.collectives = rank_groups_.get();
  for (auto &w : weights_)
    resources.weights.push_back(w.get());
  for (auto &c : caches_)
    resources.caches.push_back(c.get());
  bool captured_now = false;
  if (capture) {
    // Captured, then launched for this step too (on its own stream, after
    // the inputs copied on the default one); a device that cannot capture
    // the plan runs it dispatch by dispatch below.
    STRATA_RETURN_IF_ERROR(stream->synchronize());
    captured =
        captureGraph(shape, fresh, draft_buffers, fresh_passes, resources);
    captured_now = captured != nullptr;
    if (captured) {
      buffers = &captured->buffers;
      if (drafted)
        draft_buffers = &captured->draft_buffers;
      pass_buffers = &captured->pass_buffers;
      stream = captured->stream.get();
    }
  }
  if (captured) {
    STRATA_RETURN_IF_ERROR(captured->stream->launchGraph(*captured->graph));
    captured->last_use = ++graph_clock_;
    if (!captured_now)
      countGraph(shape, /*capture=*/false);
  } else {
    STRATA_RETURN_IF_ERROR(launchPlans(shape, *buffers, draft_buffers,
                                       *pass_buffers, resources,
                                       /*stream=*/nullptr, observer));
    // The plan may have used other streams: the copies below read results.
    STRATA_RETURN_IF_ERROR(device_->synchronize());
  }

  DraftedStepResult result;
  result.target.request_rows = in.request_rows;
  STRATA_RETURN_IF_ERROR(readOutputs(*plan, *buffers, *stream, in.rows.size(),
                                     in.ids.size(), outputs, result.target));
  if (outputs.keep_hidden && !draft_step) {
    int id = findBuffer(*plan, "hidden_out");
    if (id < 0)
      return notFound("plan '{}' has no 'hidden_out' output to keep",
                      artifact::EnumNameStepKind(step));
    // Fresh buffers end with this call: the kept one moves out of them.
    if (buffers == &fresh) {
      kept_hidden_owned_ = std::move(fresh.buffers[id]);
      kept_hidden_ = kept_hidden_owned_.get();
    } else {
      kept_hidden_ = buffers->buffers[id].get();
    }
    kept_hidden_tokens_ = in.ids.size();
  }
  if (drafted) {
    result.draft.request_rows = in.request_rows;
    STRATA_RETURN_IF_ERROR(readOutputs(*draft_plan, *draft_buffers, *stream,
                                       in.rows.size(), in.ids.size(),
                                       *draft_outputs, result.draft));
  }
  result.chain.resize(shape.chain_passes);
  for (size_t j = 0; j < shape.chain_passes; ++j) {
    result.chain[j].request_rows = chain_in.request_rows;
    STRATA_RETURN_IF_ERROR(readOutputs(
        *chain_plan, (*pass_buffers)[j], *stream, chain_in.rows.size(),
        chain_in.ids.size(), chain->outputs, result.chain[j]));
  }
  STRATA_RETURN_IF_ERROR(stream->synchronize());
  return result;
}

void ModelExecutor::countGraph(const StepShape &shape, bool capture) {
  if (shape.drafted)
    ++(capture ? graph_counts_.drafted_captures
               : graph_counts_.drafted_replays)[size_t(shape.step)];
  else if (shape.chain_passes > 0)
    ++(capture ? graph_counts_.chained_captures
               : graph_counts_.chained_replays);
  else
    ++(capture ? graph_counts_.captures
               : graph_counts_.replays)[size_t(shape.step)];
}

Status ModelExecutor::copyKeptHidden(const std::vector<StepRequest> &requests,
                                     Buffer &hidden, size_t num_tokens,
                                     Stream &stream) {
  if (!kept_hidden_)
    return failedPrecondition("a draft step takes hidden rows of the last "
                              "target step, which kept none "
                              "(StepOutputs::keep_hidden)");
  const uint64_t row_bytes = hidden.size() / num_tokens;
  if (kept_hidden_->size() != row_bytes * kept_hidden_tokens_)
    return internalError("the kept hidden output is {} bytes for {} rows, "
                         "the draft's rows are {} bytes",
                         kept_hidden_->size(), kept_hidden_tokens_, row_bytes);
  uint64_t at = 0;
  for (size_t r = 0; r < requests.size(); ++r) {
    const StepRequest &request = requests[r];
    uint64_t n = request.tokens.size();
    if (request.target_hidden_row < 0)
      return invalidArgument("request {}: hidden rows from the host in a step "
                             "whose others take the kept ones",
                             r);
    if (uint64_t(request.target_hidden_row) + n > kept_hidden_tokens_)
      return outOfRange("request {}: hidden rows [{}, {}) of the {} the last "
                        "target step kept",
                        r, request.target_hidden_row,
                        request.target_hidden_row + int64_t(n),
                        kept_hidden_tokens_);
    STRATA_RETURN_IF_ERROR(stream.copyBuffer(
        *kept_hidden_, uint64_t(request.target_hidden_row) * row_bytes, hidden,
        at * row_bytes, n * row_bytes));
    at += n;
  }
  return okStatus();
}

Status ModelExecutor::feedDraft(const artifact::ExecutionPlan &from_plan,
                                PlanBuffers &from,
                                const artifact::ExecutionPlan &to_plan,
                                PlanBuffers &to, Stream &on) {
  for (auto [out, in] :
       {std::pair<std::string_view, std::string_view>{"greedy", "ids"},
        {"hidden_out", "hidden"}}) {
    Buffer &src = *from.buffers[findBuffer(from_plan, out)];
    Buffer &dst = *to.buffers[findBuffer(to_plan, in)];
    if (src.size() != dst.size())
      return internalError(
          "the {} plan's '{}' output is {} bytes, the {} "
          "plan's '{}' input {}",
          artifact::EnumNameStepKind(from_plan.step()), out, src.size(),
          artifact::EnumNameStepKind(to_plan.step()), in, dst.size());
    STRATA_RETURN_IF_ERROR(on.copyBuffer(src, 0, dst, 0, src.size()));
  }
  return okStatus();
}

Status ModelExecutor::launchPlans(const StepShape &shape, PlanBuffers &buffers,
                                  PlanBuffers *draft_buffers,
                                  std::vector<PlanBuffers> &pass_buffers,
                                  const PlanResources &resources,
                                  Stream *stream,
                                  const DispatchObserver *observer) {
  STRATA_RETURN_IF_ERROR(program_->run(shape.step, shape.sizes, buffers,
                                       resources, stream, observer));
  if (!shape.drafted && shape.chain_passes == 0)
    return okStatus();
  Stream &on = stream ? *stream : device_->defaultStream();
  STRATA_ASSIGN_OR_RETURN(const artifact::TargetDef *target,
                          artifact_->target(target_kind_));
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *plan,
                          Artifact::plan(*target, shape.step));
  // The draft's ids are the target's greedy tokens of every row, its hidden
  // rows the target's hidden output (row t of both: token t).
  const artifact::ExecutionPlan *last_plan = plan;
  PlanBuffers *last = &buffers;
  if (shape.drafted) {
    STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *draft,
                            Artifact::plan(*target, StepKind::mtp_draft));
    STRATA_RETURN_IF_ERROR(
        feedDraft(*plan, buffers, *draft, *draft_buffers, on));
    STRATA_RETURN_IF_ERROR(program_->run(StepKind::mtp_draft, shape.sizes,
                                         *draft_buffers, resources, stream,
                                         observer));
    last_plan = draft;
    last = draft_buffers;
  }
  // Chain pass j reads the greedy tokens and hidden rows of the step before
  // it (row t: chain request t).
  if (shape.chain_passes == 0)
    return okStatus();
  STRATA_ASSIGN_OR_RETURN(const artifact::ExecutionPlan *chain,
                          Artifact::plan(*target, shape.chain_step));
  for (PlanBuffers &pass : pass_buffers) {
    STRATA_RETURN_IF_ERROR(feedDraft(*last_plan, *last, *chain, pass, on));
    STRATA_RETURN_IF_ERROR(program_->run(shape.chain_step, shape.chain_sizes,
                                         pass, resources, stream, observer));
    last_plan = chain;
    last = &pass;
  }
  return okStatus();
}

bool ModelExecutor::takesGraph(StepKind step,
                               const std::vector<StepRequest> &requests,
                               const DispatchObserver *observer) const {
  if (!options_.step_graphs || observer ||
      std::find(std::begin(kGraphSteps), std::end(kGraphSteps), step) ==
          std::end(kGraphSteps))
    return false;
  // A draft step over a finished prefill chunk takes the chunk's rows: a
  // shape that rarely repeats and whose buffers are large.
  for (const StepRequest &request : requests)
    if (request.tokens.size() > kMaxMtpDraftTokens + 1)
      return false;
  return true;
}

bool ModelExecutor::StepShape::operator==(const StepShape &other) const {
  return step == other.step && drafted == other.drafted &&
         chain_step == other.chain_step && chain_passes == other.chain_passes &&
         std::equal(std::begin(sizes.values), std::end(sizes.values),
                    std::begin(other.sizes.values)) &&
         std::equal(std::begin(chain_sizes.values),
                    std::end(chain_sizes.values),
                    std::begin(other.chain_sizes.values));
}

ModelExecutor::StepGraph *ModelExecutor::findGraph(const StepShape &shape) {
  for (StepGraph &g : step_graphs_)
    if (g.shape == shape)
      return &g;
  return nullptr;
}

bool ModelExecutor::repeatsRecentShape(const StepShape &shape) {
  auto seen = std::find(recent_shapes_.begin(), recent_shapes_.end(), shape);
  bool repeats = seen != recent_shapes_.end();
  if (repeats)
    recent_shapes_.erase(seen);
  else if (recent_shapes_.size() == kRecentStepShapes)
    recent_shapes_.erase(recent_shapes_.begin());
  recent_shapes_.push_back(shape);
  return repeats;
}

ModelExecutor::StepGraph *ModelExecutor::captureGraph(
    const StepShape &shape, PlanBuffers &buffers, PlanBuffers *draft_buffers,
    std::vector<PlanBuffers> &pass_buffers, const PlanResources &resources) {
  StatusOr<std::unique_ptr<Stream>> created = device_->createStream();
  Status recorded = created.status();
  StatusOr<std::unique_ptr<Graph>> made = created.status();
  std::unique_ptr<Stream> stream;
  if (created.ok()) {
    stream = std::move(*created);
    recorded = stream->beginCapture();
    if (recorded.ok()) {
      recorded = launchPlans(shape, buffers, draft_buffers, pass_buffers,
                             resources, stream.get(), /*observer=*/nullptr);
      made = stream->endCapture();
    } else {
      made = recorded;
    }
  }
  if (!recorded.ok() || !made.ok()) {
    options_.step_graphs = false;
    graph_error_ = !recorded.ok() ? recorded : made.status();
    return nullptr;
  }
  // Keep kStepGraphsPerKind of this kind: drop its least recently used.
  auto oldest = step_graphs_.end();
  size_t kept = 0;
  for (auto g = step_graphs_.begin(); g != step_graphs_.end(); ++g) {
    if (g->shape.step != shape.step || g->shape.drafted != shape.drafted)
      continue;
    ++kept;
    if (oldest == step_graphs_.end() || g->last_use < oldest->last_use)
      oldest = g;
  }
  if (kept == kStepGraphsPerKind)
    step_graphs_.erase(oldest);
  PlanBuffers kept_draft;
  if (draft_buffers)
    kept_draft = std::move(*draft_buffers);
  step_graphs_.push_back(StepGraph{
      shape, std::move(buffers), std::move(kept_draft), std::move(pass_buffers),
      std::move(stream), std::move(*made), ++graph_clock_});
  countGraph(shape, /*capture=*/true);
  return &step_graphs_.back();
}

Status ModelExecutor::readOutputs(const artifact::ExecutionPlan &plan,
                                  PlanBuffers &buffers, Stream &stream,
                                  size_t num_rows,
                                  size_t num_tokens, const StepOutputs &outputs,
                                  StepResult &result) {
  int logits_id = findBuffer(plan, "logits");
  int greedy_id = findBuffer(plan, "greedy");
  int hidden_id = findBuffer(plan, "hidden_out");
  if (logits_id < 0)
    return notFound("plan '{}' has no 'logits' output",
                    artifact::EnumNameStepKind(plan.step()));
  if (greedy_id >= 0) {
    Buffer &greedy = *buffers.buffers[greedy_id];
    if (greedy.size() != num_rows * sizeof(int32_t))
      return internalError("greedy output is {} bytes, expected {} i32 rows",
                           greedy.size(), num_rows);
    result.greedy.resize(num_rows);
    STRATA_RETURN_IF_ERROR(stream.copyFromDevice(
        greedy, 0, result.greedy.data(), greedy.size()));
  }
  if (outputs.logits || greedy_id < 0) {
    Buffer &logits = *buffers.buffers[logits_id];
    if (logits.size() != num_rows * model().vocab_size() * sizeof(float))
      return internalError("logits output is {} bytes, expected {} f32 rows "
                           "of {}",
                           logits.size(), num_rows, model().vocab_size());
    result.logits.resize(num_rows * model().vocab_size());
    STRATA_RETURN_IF_ERROR(stream.copyFromDevice(
        logits, 0, result.logits.data(), logits.size()));
  }
  if (hidden_id >= 0 && outputs.hidden) {
    Buffer &hidden = *buffers.buffers[hidden_id];
    result.hidden.resize(hidden.size());
    STRATA_RETURN_IF_ERROR(stream.copyFromDevice(hidden, 0,
                                                   result.hidden.data(),
                                                   hidden.size()));
    result.hidden_row_bytes = hidden.size() / num_tokens;
  }
  return okStatus();
}

} // namespace strata::runtime
