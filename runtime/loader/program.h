//===- program.h - an artifact's target loaded onto a device ----*- C++ -*-===//
//
// Part of strata. A Program is one TargetDef of a validated Artifact loaded
// onto a Device: every KernelBinary becomes an Executable, every Kernel a
// resolved entry point. Program::run executes one step's ExecutionPlan:
// evaluates the size expressions for the step's RuntimeSizes, and dispatches
// each kernel with its bindings resolved to weight buffers (by manifest
// index), plan buffers (by buffer id) and cache buffers (by cache id).
//
// Ownership: a Program borrows the Artifact and the Device (both must outlive
// it) and owns its Executables. PlanBuffers are owned by the caller.
// Thread-safety: one thread at a time per Program.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_PROGRAM_H
#define STRATA_RUNTIME_LOADER_PROGRAM_H

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/device/device.h"
#include "runtime/loader/artifact.h"
#include "runtime/loader/size_expr.h"

namespace strata::runtime {

/// Device buffers bound by a step. `weights` is indexed by manifest index and
/// `caches` by cache id; entries a plan never binds may be null.
struct PlanResources {
  /// Weight buffers by manifest index.
  std::vector<Buffer *> weights;
  /// Cache buffers by cache id.
  std::vector<Buffer *> caches;
};

/// The buffers of one plan, allocated for one set of runtime sizes.
struct PlanBuffers {
  /// By buffer id.
  std::vector<std::unique_ptr<Buffer>> buffers;
};

/// What Program::run reports for one dispatch when it is observed.
struct DispatchTiming {
  /// Index of the dispatch in the plan.
  size_t dispatch_index = 0;
  /// Index of its kernel in the target's kernel list.
  size_t kernel_index = 0;
  /// Seconds between an event recorded before the launch and one recorded
  /// after it (GPU: device time of the kernel; CPU: steady_clock around the
  /// synchronous call).
  double seconds = 0;
  /// Sum of the byte sizes of the dispatch's bound buffer regions (extents
  /// after size evaluation × element bytes): an upper bound of the bytes the
  /// kernel reads and writes.
  uint64_t bound_bytes = 0;
};

/// Called by Program::run after each observed dispatch has finished.
using DispatchObserver = std::function<void(const DispatchTiming &)>;

class Program {
public:
  /// Loads target `kind` of `artifact` onto `device`. Fails with NOT_FOUND if
  /// the artifact has no kernels for the target.
  static StatusOr<std::unique_ptr<Program>>
  load(const Artifact &artifact, artifact::TargetKind kind, Device &device);

  /// The loaded target.
  const artifact::TargetDef &target() const { return *target_; }

  /// Allocates the buffers of `step`'s plan for `sizes` (zeroed).
  StatusOr<PlanBuffers> allocateBuffers(artifact::StepKind step,
                                        const RuntimeSizes &sizes);

  /// Runs `step`'s plan. `buffers` comes from allocateBuffers with the same
  /// sizes (inputs written by the caller); `resources` provides weights and
  /// caches. Every dispatch is checked before launch. The dispatches go to
  /// `stream` (default: the device's default stream); on GPU devices they
  /// are asynchronous, so synchronize the stream before reading results.
  /// With a capturing stream the step is recorded into its graph
  /// (Stream::beginCapture), to be replayed for later steps of the same
  /// sizes and buffers.
  ///
  /// With an `observer`, every dispatch is bracketed by two events on the
  /// stream and the call waits for the second one before the next launch,
  /// so each kernel is timed alone (and the step runs synchronously);
  /// rejected with FAILED_PRECONDITION on a capturing stream.
  Status run(artifact::StepKind step, const RuntimeSizes &sizes,
             PlanBuffers &buffers, const PlanResources &resources,
             Stream *stream = nullptr,
             const DispatchObserver *observer = nullptr);

private:
  Program(const Artifact &artifact, const artifact::TargetDef &target,
          Device &device)
      : artifact_(artifact), target_(&target), device_(device) {}

  const Artifact &artifact_;
  const artifact::TargetDef *target_;
  Device &device_;
  std::vector<std::unique_ptr<Executable>> executables_;
  /// Per kernel index: (executable, index inside it).
  std::vector<std::pair<size_t, size_t>> kernel_slots_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_PROGRAM_H
