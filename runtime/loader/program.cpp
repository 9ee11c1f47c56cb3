//===- program.cpp - an artifact's target loaded onto a device ------------===//
//
// Part of strata. See program.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/program.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace strata::runtime {

using namespace strata::artifact;

StatusOr<std::unique_ptr<Program>>
Program::load(const Artifact &artifact, TargetKind kind, Device &device) {
  STRATA_ASSIGN_OR_RETURN(const TargetDef *target, artifact.target(kind));
  std::unique_ptr<Program> program(new Program(artifact, *target, device));
  size_t num_kernels = target->kernels()->size();
  program->kernel_slots_.resize(num_kernels);
  size_t num_binaries = target->binaries() ? target->binaries()->size() : 0;
  for (size_t b = 0; b < num_binaries; ++b) {
    const KernelBinary *binary = target->binaries()->Get(b);
    ExecutableSpec spec;
    spec.format = static_cast<BinaryFormat>(binary->format());
    spec.data = binary->data()->data();
    spec.size = binary->data()->size();
    for (size_t k = 0; k < num_kernels; ++k) {
      const Kernel *kernel = target->kernels()->Get(k);
      if (kernel->binary_index() != b)
        continue;
      KernelSpec ks;
      ks.name = kernel->name()->str();
      ks.entry_symbol = kernel->entry_symbol()->str();
      if (kernel->args()) {
        for (const KernelArg *arg : *kernel->args()) {
          KernelArgInfo info;
          info.kind = arg->kind() == ArgKind::buffer ? KernelArgKind::kBuffer
                                                     : KernelArgKind::kScalar;
          info.rank = arg->rank();
          info.element_bytes = dtypeBytes(arg->dtype());
          ks.args.push_back(info);
        }
      }
      if (const LaunchInfo *launch = kernel->launch()) {
        for (int d = 0; d < 3; ++d)
          ks.launch.block[d] = launch->block()->Get(d);
        ks.launch.shared_memory_bytes = launch->shared_memory_bytes();
        ks.launch.grid_dependency_control = launch->grid_dependency_control();
      }
      program->kernel_slots_[k] = {b, spec.kernels.size()};
      spec.kernels.push_back(std::move(ks));
    }
    auto executable = device.loadExecutable(spec);
    if (!executable.ok())
      return executable.status().withContext(
          fmt::format("loading binary {} of target '{}'", b,
                      EnumNameTargetKind(kind)));
    program->executables_.push_back(std::move(executable).value());
  }
  return program;
}

StatusOr<PlanBuffers> Program::allocateBuffers(StepKind step,
                                               const RuntimeSizes &sizes) {
  STRATA_ASSIGN_OR_RETURN(const ExecutionPlan *plan,
                          Artifact::plan(*target_, step));
  PlanBuffers result;
  for (size_t b = 0; plan->buffers() && b < plan->buffers()->size(); ++b) {
    const BufferDef *def = plan->buffers()->Get(b);
    StatusOr<uint64_t> size = evaluateSizeExpr(def->size_bytes(), sizes);
    if (!size.ok())
      return size.status().withContext(
          fmt::format("buffer '{}'", def->name()->str()));
    STRATA_ASSIGN_OR_RETURN(auto buffer, device_.allocate(*size, 0));
    result.buffers.push_back(std::move(buffer));
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t scratch, scratchBytes(step, sizes));
  bool binds_scratch = false;
  for (size_t d = 0; plan->dispatches() && d < plan->dispatches()->size();
       ++d)
    for (const Binding *binding : *plan->dispatches()->Get(d)->bindings())
      binds_scratch |= binding->kind() == BindingKind::scratch;
  if (binds_scratch) {
    // Every scratch binding gets a buffer, even one of an empty region.
    scratch = std::max<uint64_t>(scratch, 1);
    if (!scratch_ || scratch_->size() < scratch) {
      StatusOr<std::unique_ptr<Buffer>> buffer =
          device_.allocate(scratch, 0);
      if (!buffer.ok())
        return buffer.status().withContext(fmt::format(
            "plan '{}': scratch buffer of {} bytes", EnumNameStepKind(step),
            scratch));
      scratch_ = std::move(buffer).value();
    }
    result.scratch = scratch_;
  }
  return result;
}

namespace {

/// Blocks of `kernel`'s launch for `sizes` (1 without launch info).
StatusOr<uint64_t> gridBlocks(const Kernel &kernel, const RuntimeSizes &sizes,
                              uint64_t grid[3]) {
  grid[0] = grid[1] = grid[2] = 1;
  if (const LaunchInfo *launch = kernel.launch()) {
    for (int i = 0; i < 3; ++i) {
      STRATA_ASSIGN_OR_RETURN(grid[i],
                              evaluateSizeExpr(launch->grid()->Get(i), sizes));
    }
  }
  uint64_t blocks = grid[0];
  for (int i = 1; i < 3; ++i)
    if (__builtin_mul_overflow(blocks, grid[i], &blocks))
      return outOfRange("grid {} x {} x {} overflows", grid[0], grid[1],
                        grid[2]);
  return blocks;
}

/// The region of a scratch binding for `sizes`: blocks x bytes per block,
/// which must equal the binding's extent.
StatusOr<uint64_t> scratchRegion(const Binding &binding, uint64_t blocks,
                                 const RuntimeSizes &sizes) {
  STRATA_ASSIGN_OR_RETURN(uint64_t per_block,
                          evaluateSizeExpr(binding.value(), sizes));
  STRATA_ASSIGN_OR_RETURN(uint64_t extent,
                          evaluateSizeExpr(binding.shape()->Get(0), sizes));
  uint64_t total = 0;
  if (__builtin_mul_overflow(blocks, per_block, &total))
    return outOfRange("scratch of {} blocks x {} bytes overflows", blocks,
                      per_block);
  if (total != extent)
    return invalidArgument("scratch region is {} bytes, the grid's {} blocks "
                           "x {} bytes per block are {}",
                           extent, blocks, per_block, total);
  return total;
}

} // namespace

StatusOr<uint64_t> planScratchBytes(const TargetDef &target,
                                    const ExecutionPlan &plan,
                                    const RuntimeSizes &sizes,
                                    uint64_t limit) {
  uint64_t need = 0;
  if (!plan.dispatches())
    return need;
  for (size_t d = 0; d < plan.dispatches()->size(); ++d) {
    const Dispatch *dispatch = plan.dispatches()->Get(d);
    if (dispatch->collective())
      continue;
    const Kernel *kernel = target.kernels()->Get(dispatch->kernel_index());
    for (const Binding *binding : *dispatch->bindings()) {
      if (binding->kind() != BindingKind::scratch)
        continue;
      std::string where =
          fmt::format("plan '{}' dispatch {} ('{}')",
                      EnumNameStepKind(plan.step()), d, kernel->name()->str());
      uint64_t grid[3];
      StatusOr<uint64_t> blocks = gridBlocks(*kernel, sizes, grid);
      if (!blocks.ok())
        return blocks.status().withContext(where);
      StatusOr<uint64_t> bytes = scratchRegion(*binding, *blocks, sizes);
      if (!bytes.ok())
        return bytes.status().withContext(where);
      if (*bytes > limit)
        return resourceExhausted(
            "{}: scratch of {} blocks x {} bytes = {} bytes exceeds the "
            "scratch limit of {} bytes (a step with fewer requests or tokens "
            "needs less)",
            where, *blocks, *bytes / std::max<uint64_t>(*blocks, 1), *bytes,
            limit);
      need = std::max(need, *bytes);
    }
  }
  return need;
}

StatusOr<uint64_t> Program::scratchBytes(StepKind step,
                                         const RuntimeSizes &sizes) const {
  STRATA_ASSIGN_OR_RETURN(const ExecutionPlan *plan,
                          Artifact::plan(*target_, step));
  return planScratchBytes(*target_, *plan, sizes, scratch_limit_);
}

Status Program::run(StepKind step, const RuntimeSizes &sizes,
                    PlanBuffers &buffers, const PlanResources &resources,
                    Stream *stream, const DispatchObserver *observer) {
  Stream &target_stream = stream ? *stream : device_.defaultStream();
  std::unique_ptr<Event> before, after;
  if (observer) {
    if (target_stream.capturing())
      return failedPrecondition("plan '{}': dispatches cannot be timed while "
                                "the stream captures a graph",
                                EnumNameStepKind(step));
    STRATA_ASSIGN_OR_RETURN(before, device_.createEvent());
    STRATA_ASSIGN_OR_RETURN(after, device_.createEvent());
  }
  STRATA_ASSIGN_OR_RETURN(const ExecutionPlan *plan,
                          Artifact::plan(*target_, step));
  size_t num_buffers = plan->buffers() ? plan->buffers()->size() : 0;
  if (buffers.buffers.size() != num_buffers)
    return invalidArgument("plan '{}' has {} buffers, got {}",
                           EnumNameStepKind(step), num_buffers,
                           buffers.buffers.size());
  if (!plan->dispatches())
    return okStatus();
  for (size_t d = 0; d < plan->dispatches()->size(); ++d) {
    const Dispatch *dispatch = plan->dispatches()->Get(d);
    if (dispatch->collective()) {
      STRATA_RETURN_IF_ERROR(runCollective(*plan, d, sizes, buffers, resources,
                                           target_stream, observer,
                                           before.get(), after.get()));
      continue;
    }
    const Kernel *kernel = target_->kernels()->Get(dispatch->kernel_index());
    std::string where =
        fmt::format("plan '{}' dispatch {} ('{}')", EnumNameStepKind(step), d,
                    kernel->name()->str());
    uint64_t grid[3];
    StatusOr<uint64_t> blocks = gridBlocks(*kernel, sizes, grid);
    if (!blocks.ok())
      return blocks.status().withContext(where);
    // A grid of no block has no work (a GPU target's empty `_rows` twin):
    // nothing to launch, time or capture.
    if (*blocks == 0)
      continue;
    std::vector<DispatchArg> args(dispatch->bindings()->size());
    for (size_t a = 0; a < args.size(); ++a) {
      const Binding *binding = dispatch->bindings()->Get(a);
      const KernelArg *arg = kernel->args()->Get(a);
      DispatchArg &out = args[a];
      switch (binding->kind()) {
      case BindingKind::int_scalar: {
        StatusOr<uint64_t> value = evaluateSizeExpr(binding->value(), sizes);
        if (!value.ok())
          return value.status().withContext(where);
        out.scalar_bits = *value;
        if (arg->dtype() == DType::i32 && *value > INT32_MAX)
          return outOfRange("{}: argument '{}': {} does not fit i32", where,
                            arg->name()->str(), *value);
        continue;
      }
      case BindingKind::float_scalar:
        if (arg->dtype() == DType::f32) {
          float f = static_cast<float>(binding->float_value());
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          out.scalar_bits = bits;
        } else {
          double f = binding->float_value();
          std::memcpy(&out.scalar_bits, &f, 8);
        }
        continue;
      case BindingKind::weight:
        out.buffer = binding->index() < resources.weights.size()
                         ? resources.weights[binding->index()]
                         : nullptr;
        if (!out.buffer)
          return failedPrecondition("{}: weight '{}' is not loaded", where,
                                    artifact_.def()
                                        .weights()
                                        ->Get(binding->index())
                                        ->name()
                                        ->str());
        break;
      case BindingKind::buffer:
        out.buffer = buffers.buffers[binding->index()].get();
        break;
      case BindingKind::cache:
        out.buffer = binding->index() < resources.caches.size()
                         ? resources.caches[binding->index()]
                         : nullptr;
        if (!out.buffer)
          return failedPrecondition("{}: cache {} is not allocated", where,
                                    binding->index());
        break;
      case BindingKind::scratch: {
        out.buffer = buffers.scratch.get();
        if (!out.buffer)
          return failedPrecondition("{}: no scratch buffer (the buffers were "
                                    "not allocated by allocateBuffers)",
                                    where);
        StatusOr<uint64_t> region = scratchRegion(*binding, *blocks, sizes);
        if (!region.ok())
          return region.status().withContext(where);
        break;
      }
      }
      if (binding->offset_bytes()) {
        StatusOr<uint64_t> offset =
            evaluateSizeExpr(binding->offset_bytes(), sizes);
        if (!offset.ok())
          return offset.status().withContext(where);
        out.offset_bytes = *offset;
      }
      for (size_t i = 0; i < binding->shape()->size(); ++i) {
        StatusOr<uint64_t> extent =
            evaluateSizeExpr(binding->shape()->Get(i), sizes);
        if (!extent.ok())
          return extent.status().withContext(where);
        int64_t expected = arg->static_shape()->Get(i);
        if (*extent > INT64_MAX ||
            (expected >= 0 && static_cast<uint64_t>(expected) != *extent))
          return invalidArgument("{}: argument '{}' dimension {} is {}, the "
                                 "kernel expects {}",
                                 where, arg->name()->str(), i, *extent,
                                 expected);
        out.shape.push_back(static_cast<int64_t>(*extent));
      }
    }
    auto [executable, index] = kernel_slots_[dispatch->kernel_index()];
    // Observed: the stream held until the launch is queued (where it can
    // be), so the events time the kernel, not the launch.
    std::unique_ptr<StreamHold> hold;
    if (observer) {
      StatusOr<std::unique_ptr<StreamHold>> held = target_stream.hold();
      if (held.ok())
        hold = std::move(*held);
      Status status = target_stream.recordEvent(*before);
      if (!status.ok())
        return status.withContext(where);
    }
    // A kernel whose small steps use less dynamic shared memory than its
    // large ones launches with the bytes of this step.
    const SizeExpr *shared = kernel->launch() ? kernel->launch()->shared_memory()
                                              : nullptr;
    Status status = okStatus();
    if (shared) {
      StatusOr<uint64_t> bytes = evaluateSizeExpr(shared, sizes);
      if (!bytes.ok())
        return bytes.status().withContext(where);
      status = target_stream.dispatchWithSharedMemory(
          *executables_[executable], index, args, grid, *bytes);
    } else {
      status =
          target_stream.dispatch(*executables_[executable], index, args, grid);
    }
    if (!status.ok())
      return status.withContext(where);
    if (observer) {
      STRATA_RETURN_IF_ERROR(target_stream.recordEvent(*after));
      bool was_held = hold != nullptr;
      hold.reset();
      StatusOr<float> millis = device_.elapsedMillis(*before, *after);
      if (!millis.ok())
        return millis.status().withContext(where);
      DispatchTiming timing;
      timing.dispatch_index = d;
      timing.kernel_index = dispatch->kernel_index();
      timing.seconds = static_cast<double>(*millis) * 1e-3;
      timing.held = was_held;
      for (size_t a = 0; a < args.size(); ++a) {
        if (!args[a].buffer)
          continue;
        uint64_t bytes = dtypeBytes(kernel->args()->Get(a)->dtype());
        for (int64_t extent : args[a].shape)
          bytes *= static_cast<uint64_t>(extent);
        timing.bound_bytes += bytes;
      }
      timing.args = &args;
      (*observer)(timing);
    }
  }
  return okStatus();
}

Status Program::runCollective(const ExecutionPlan &plan, size_t d,
                              const RuntimeSizes &sizes, PlanBuffers &buffers,
                              const PlanResources &resources, Stream &stream,
                              const DispatchObserver *observer, Event *before,
                              Event *after) {
  const Dispatch *dispatch = plan.dispatches()->Get(d);
  const Collective *collective = dispatch->collective();
  std::string where = fmt::format(
      "plan '{}' dispatch {} ({} over {})", EnumNameStepKind(plan.step()), d,
      EnumNameCollectiveKind(collective->kind()),
      EnumNameRankGroup(collective->group()));
  if (!resources.collectives)
    return failedPrecondition("{}: no communicators (the artifact is "
                              "compiled for {} ranks; run one process per "
                              "rank, docs/Parallel.md)",
                              where, artifact_.numRanks());
  DispatchArg regions[2];
  uint64_t bound_bytes = 0;
  for (size_t a = 0; a < 2; ++a) {
    const Binding *binding = dispatch->bindings()->Get(a);
    DispatchArg &out = regions[a];
    out.buffer = buffers.buffers[binding->index()].get();
    if (binding->offset_bytes()) {
      StatusOr<uint64_t> offset =
          evaluateSizeExpr(binding->offset_bytes(), sizes);
      if (!offset.ok())
        return offset.status().withContext(where);
      out.offset_bytes = *offset;
    }
    uint64_t bytes = dtypeBytes(collective->dtype());
    for (const SizeExpr *expr : *binding->shape()) {
      StatusOr<uint64_t> extent = evaluateSizeExpr(expr, sizes);
      if (!extent.ok())
        return extent.status().withContext(where);
      out.shape.push_back(static_cast<int64_t>(*extent));
      bytes *= *extent;
    }
    bound_bytes += bytes;
    if (out.offset_bytes + bytes > out.buffer->size())
      return outOfRange("{}: {} region [{}, {}) outside its {}-byte buffer",
                        where, a == 0 ? "send" : "recv", out.offset_bytes,
                        out.offset_bytes + bytes, out.buffer->size());
  }
  if (observer)
    STRATA_RETURN_IF_ERROR(stream.recordEvent(*before));
  Status status =
      resources.collectives->run(*collective, regions[0], regions[1], stream);
  if (!status.ok())
    return status.withContext(where);
  if (!observer)
    return okStatus();
  STRATA_RETURN_IF_ERROR(stream.recordEvent(*after));
  STRATA_ASSIGN_OR_RETURN(float millis, device_.elapsedMillis(*before, *after));
  DispatchTiming timing;
  timing.dispatch_index = d;
  timing.kernel_index = kNoKernel;
  timing.collective =
      fmt::format("{} over {}", EnumNameCollectiveKind(collective->kind()),
                  EnumNameRankGroup(collective->group()));
  timing.seconds = static_cast<double>(millis) * 1e-3;
  timing.bound_bytes = bound_bytes;
  (*observer)(timing);
  return okStatus();
}

} // namespace strata::runtime
