//===- program.h - an artifact's target loaded onto a device ----*- C++ -*-===//
//
// Part of strata. A Program is one TargetDef of a validated Artifact loaded
// onto a Device: every KernelBinary becomes an Executable, every Kernel a
// resolved entry point. Program::run executes one step's ExecutionPlan:
// evaluates the size expressions for the step's RuntimeSizes, and dispatches
// each kernel with its bindings resolved to weight buffers (by manifest
// index), plan buffers (by buffer id), cache buffers (by cache id) and the
// program's scratch buffer (GPU kernels' scratch, sized per step), and runs
// each collective dispatch through the caller's CollectiveRunner. One
// Program serves every rank of a sharded artifact: the rank's coordinates
// are RuntimeSizes (tp_rank, ep_rank, world_rank).
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

/// Runs the collective dispatches of a plan (Dispatch.collective) for one
/// rank: the executor implements it over runtime/collectives
/// (runtime/executor/rank_groups.h), so the loader needs no communicator.
class CollectiveRunner {
public:
  virtual ~CollectiveRunner() = default;
  /// Runs `collective` from the region `send` into the region `recv` (their
  /// shapes in elements of collective.dtype(), checked by Program::run to
  /// fit their buffers) on `stream`.
  virtual Status run(const artifact::Collective &collective,
                     const DispatchArg &send, const DispatchArg &recv,
                     Stream &stream) = 0;
};

/// Device buffers bound by a step. `weights` is indexed by manifest index and
/// `caches` by cache id; entries a plan never binds may be null.
struct PlanResources {
  /// Weight buffers by manifest index.
  std::vector<Buffer *> weights;
  /// Cache buffers by cache id.
  std::vector<Buffer *> caches;
  /// What runs collective dispatches; required by a plan that has any (an
  /// artifact of more than one rank), else null.
  CollectiveRunner *collectives = nullptr;
};

/// The buffers of one plan, allocated for one set of runtime sizes.
struct PlanBuffers {
  /// By buffer id.
  std::vector<std::unique_ptr<Buffer>> buffers;
  /// The program's scratch buffer, what `scratch` bindings get; null when
  /// the plan has none. Shared: when a later step grows the program's
  /// scratch buffer, buffers allocated before (and graphs captured with
  /// them) keep the one they were given.
  std::shared_ptr<Buffer> scratch;
};

/// Default Program::scratchLimit: 8 GiB.
inline constexpr uint64_t kDefaultScratchLimit = uint64_t(8) << 30;

/// What Program::run reports for one dispatch when it is observed.
/// DispatchTiming::kernel_index of a collective dispatch.
inline constexpr size_t kNoKernel = static_cast<size_t>(-1);

struct DispatchTiming {
  /// Index of the dispatch in the plan.
  size_t dispatch_index = 0;
  /// Index of its kernel in the target's kernel list; kNoKernel for a
  /// collective dispatch.
  size_t kernel_index = 0;
  /// A collective dispatch's name ("all_reduce over tp"); empty for a
  /// kernel. Its seconds are the collective's (with Gloo the calling
  /// thread's), its bound bytes the send and recv regions'.
  std::string collective;
  /// Seconds between an event recorded before the launch and one recorded
  /// after it (GPU: device time of the kernel; CPU: steady_clock around the
  /// synchronous call).
  double seconds = 0;
  /// Whether the stream was held (Stream::hold) from before the first event
  /// until the launch and the second event were queued: the kernel's device
  /// time alone. Otherwise (the CPU, a driver without stream holds, a
  /// collective) a GPU's seconds include the launch's own latency, several
  /// microseconds.
  bool held = false;
  /// Sum of the byte sizes of the dispatch's bound buffer regions (extents
  /// after size evaluation × element bytes): an upper bound of the bytes the
  /// kernel reads and writes.
  uint64_t bound_bytes = 0;
  /// The dispatch's arguments as launched (buffers, regions, scalars), in the
  /// kernel's argument order; valid only during the observer call (the
  /// dispatch has finished, so an observer may read its outputs back).
  const std::vector<DispatchArg> *args = nullptr;
};

/// Called by Program::run after each observed dispatch has finished.
using DispatchObserver = std::function<void(const DispatchTiming &)>;

/// Bytes of scratch `plan` (of `target`) needs for `sizes`: the largest
/// region of its `scratch` bindings, each grid blocks (the product of the
/// kernel's launch.grid; 1 without launch info) x bytes per block (the
/// binding's value); 0 without scratch bindings. RESOURCE_EXHAUSTED when a
/// dispatch needs more than `limit` bytes, INVALID_ARGUMENT when a
/// binding's extent is not blocks x bytes per block; messages name the
/// dispatch.
StatusOr<uint64_t> planScratchBytes(const artifact::TargetDef &target,
                                    const artifact::ExecutionPlan &plan,
                                    const RuntimeSizes &sizes, uint64_t limit);

class Program {
public:
  /// Loads target `kind` of `artifact` onto `device`. Fails with NOT_FOUND if
  /// the artifact has no kernels for the target.
  static StatusOr<std::unique_ptr<Program>>
  load(const Artifact &artifact, artifact::TargetKind kind, Device &device);

  /// The loaded target.
  const artifact::TargetDef &target() const { return *target_; }

  /// Allocates the buffers of `step`'s plan for `sizes` (zeroed). When the
  /// plan has `scratch` bindings, the program's scratch buffer is allocated
  /// on first need and replaced by a larger one when this step needs more
  /// (scratchBytes); PlanBuffers::scratch holds it.
  StatusOr<PlanBuffers> allocateBuffers(artifact::StepKind step,
                                        const RuntimeSizes &sizes);

  /// Bytes of scratch `step`'s plan needs for `sizes` (planScratchBytes
  /// with scratchLimit()).
  StatusOr<uint64_t> scratchBytes(artifact::StepKind step,
                                  const RuntimeSizes &sizes) const;
  /// The most scratch one step may use (default kDefaultScratchLimit).
  uint64_t scratchLimit() const { return scratch_limit_; }
  void setScratchLimit(uint64_t bytes) { scratch_limit_ = bytes; }
  /// Bytes of the program's current scratch buffer (0 before any).
  uint64_t scratchCapacity() const { return scratch_ ? scratch_->size() : 0; }

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
  /// Runs collective dispatch `d` of `plan`; with `observer`, timed between
  /// `before` and `after` and reported with its send and recv bytes.
  Status runCollective(const artifact::ExecutionPlan &plan, size_t d,
                       const RuntimeSizes &sizes, PlanBuffers &buffers,
                       const PlanResources &resources, Stream &stream,
                       const DispatchObserver *observer, Event *before,
                       Event *after);

  Program(const Artifact &artifact, const artifact::TargetDef &target,
          Device &device)
      : artifact_(artifact), target_(&target), device_(device) {}

  const Artifact &artifact_;
  const artifact::TargetDef *target_;
  Device &device_;
  std::vector<std::unique_ptr<Executable>> executables_;
  /// Per kernel index: (executable, index inside it).
  std::vector<std::pair<size_t, size_t>> kernel_slots_;
  /// The scratch buffer `scratch` bindings get (grown, never shrunk).
  std::shared_ptr<Buffer> scratch_;
  uint64_t scratch_limit_ = kDefaultScratchLimit;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_PROGRAM_H
