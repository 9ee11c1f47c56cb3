//===- model_executor.h - run model steps from an artifact ------*- C++ -*-===//
//
// Part of strata. A ModelExecutor joins a validated artifact, a checkpoint
// and a device: it binds every weight of the artifact's manifest (stacking
// per-expert tensors), allocates every cache of the artifact's cache layout
// (kv_pages pages per paged pool, state_slots slots per state pool), and runs
// one step at a time: a batch of requests, each contributing a run of new
// tokens at consecutive positions. It fills the plan inputs (ids, positions,
// seq_starts, slots, block_table, rows), runs the plan and returns the
// logits of the requested rows and the hidden state the MTP draft starts
// from.
//
// Page and slot ownership is the caller's (runtime/kv_cache, or strata-run's
// simple assignment): the executor only checks that ids are in range.
//
// Thread-safety: one thread at a time.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_EXECUTOR_MODEL_EXECUTOR_H
#define STRATA_RUNTIME_EXECUTOR_MODEL_EXECUTOR_H

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/progress.h"
#include "runtime/base/status.h"
#include "runtime/checkpoint/weight_source.h"
#include "runtime/device/device.h"
#include "runtime/executor/rank_groups.h"
#include "runtime/loader/artifact.h"
#include "runtime/loader/program.h"
#include "runtime/loader/weight_slice.h"

namespace strata::runtime {

struct ExecutorOptions {
  /// Pages in each paged pool (MLA latent, pooled index). Required (> 0).
  uint64_t kv_pages = 0;
  /// Slots in each per-request state pool (KDA, conv, tail ring). Required.
  uint32_t state_slots = 0;
  /// The artifact target to run: cpu (CPU backend), sm_90 (CUDA backend,
  /// GPU 0), gfx942 or gfx950 (HIP backend, GPU 0); rank r of a parallel
  /// run takes GPU r modulo the machine's GPUs. Weights, caches and plan
  /// buffers live in that device's memory; inputs and outputs are copied.
  std::string target = "cpu";
  /// Decode, MTP verify and small MTP draft steps run from captured
  /// graphs: a step whose kind and shape (the plan's sizes) were seen in
  /// one of the last kRecentStepShapes steps is captured on a stream of its
  /// own (Stream::beginCapture) with buffers kept for it; later steps of
  /// that kind and shape write their inputs into those buffers and replay
  /// the graph (Stream::launchGraph): one launch instead of one per
  /// dispatch. The block table is widened to a multiple of
  /// kStepGraphPageBucket pages (unused entries -1) so that a shape lasts
  /// while contexts grow. Prefill steps (shapes rarely repeat) and steps
  /// timed by an observer are never captured.
  bool step_graphs = true;
  /// On NVIDIA targets, the kernels of captured steps are launched as
  /// programmatic dependent launches where the artifact's kernels wait for
  /// their predecessor themselves (CudaDeviceOptions::dependent_launches):
  /// a kernel's launch overlaps the end of the one before it. Default off:
  /// on the H200 it speeds up steps of many tiny kernels (the micro model's
  /// decode at B <= 8 by 7-10 %) and slows down steps of larger ones (the
  /// 12-layer real-width model's by 1-4 %, docs/GPULowering.md).
  bool dependent_launches = false;
  /// Leave the caches to a later allocateCaches call (kv_pages and
  /// state_slots may then be 0): how a server sizes them from the device
  /// memory the weights left free.
  bool defer_caches = false;
  /// This process's rank of a sharded artifact (its parallel layout's T x E
  /// ranks, one process each) and the store the ranks meet at; required for
  /// such an artifact, whose sizes it must repeat. The executor then reads
  /// the rank's slices of the checkpoint, joins its groups (RankGroups) and,
  /// with Gloo collectives (which cannot be captured), runs decode steps
  /// dispatch by dispatch.
  std::optional<RankGroupsOptions> ranks;
  /// Shows the weight upload (bytes, rate, ETA) when set; not owned, must
  /// outlive create(). Default: none.
  ProgressReporter *progress = nullptr;
};

/// Block-table width granularity of captured steps (pages).
inline constexpr size_t kStepGraphPageBucket = 16;
/// Captured shapes kept per step kind (least recently used dropped).
inline constexpr size_t kStepGraphsPerKind = 8;
/// Shapes remembered to decide that one repeats (captured when it does).
inline constexpr size_t kRecentStepShapes = 16;

/// The step kinds that may be captured into graphs.
inline constexpr artifact::StepKind kGraphSteps[] = {
    artifact::StepKind::decode, artifact::StepKind::mtp_verify,
    artifact::StepKind::mtp_draft, artifact::StepKind::mtp_chain};

/// Step graphs captured and replayed, by step kind (artifact::StepKind);
/// drafted_*: target steps followed by their draft in one graph
/// (ModelExecutor::runWithDraft), by the target step's kind; chained_*:
/// draft chains of several passes in one graph (ModelExecutor::runChain).
struct StepGraphCounts {
  static constexpr size_t kKinds = size_t(artifact::StepKind::MAX) + 1;
  std::array<uint64_t, kKinds> captures{}, replays{};
  std::array<uint64_t, kKinds> drafted_captures{}, drafted_replays{};
  uint64_t chained_captures = 0, chained_replays = 0;
};

/// Which state pools a slot copy covers: every one (KDA recurrent and conv
/// state, tail rings) or the KDA state alone.
enum class StatePools { all, kda };

/// One request's part of a step.
struct StepRequest {
  /// New tokens, at positions start_position, start_position + 1, ...
  std::vector<int32_t> tokens;
  /// Position of tokens[0] (tokens before it are in the caches).
  int64_t start_position = 0;
  /// KV page ids covering positions [0, start_position + tokens.size()).
  std::vector<int32_t> block_table;
  /// The request's state slot (KDA, conv state and tail ring).
  int32_t slot = 0;
  /// The slots the KDA recurrent and conv state are read from and written
  /// to; -1: `slot`.
  int32_t state_src_slot = -1, state_dst_slot = -1;
  /// Empty, or one per token: the slot that keeps the KDA state after that
  /// token (the last one's is the destination slot). An MTP verification
  /// keeps the state after every position, so that accepting j drafts
  /// selects a slot instead of re-running tokens (docs/Scheduler.md). Kept
  /// for requests of at most 4 tokens; longer ones write the destination.
  /// Needs plans with per-token state slots (keepsTokenStates).
  std::vector<int32_t> state_token_slots;
  /// Logits for every new token (true) or only the last one (false).
  bool all_logits = false;
  /// mtp_chain only: the row of the request's shared selection cache whose
  /// selection the chain step attends to (its step 0's row of the last
  /// accepted token: llm.shared_selection_read; -1 reads the last row).
  int32_t shared_selection_row = -1;
  /// mtp_draft and mtp_chain: >= 0 takes the hidden rows from the device:
  /// rows [target_hidden_row, target_hidden_row + tokens) of the hidden
  /// output the last target step kept (StepOutputs::keep_hidden), and
  /// `hidden` stays empty. Every request of a step or none.
  int64_t target_hidden_row = -1;
  /// mtp_draft and mtp_chain: the hidden rows the draft starts from, one per token,
  /// in the artifact's activation element type (StepResult.hidden of the
  /// target step, row-sliced by the caller).
  std::vector<uint8_t> hidden;
};

/// What a step copies back to the host. The greedy tokens (4 bytes a row)
/// always come back when the plan computes them; the logits (vocab x 4
/// bytes a row: 79 MB for 128 rows of GLM's 154880) and the hidden rows
/// only when asked for.
struct StepOutputs {
  bool logits = true;
  bool hidden = true;
  /// Target steps: keep the hidden output on the device until the next
  /// target step, for draft steps whose requests name rows of it
  /// (StepRequest::target_hidden_row): no copy through the host.
  bool keep_hidden = false;
};

struct StepResult {
  /// Logits, row-major [rows, vocab] f32; rows in request order, each
  /// request's rows in token order. Empty when StepOutputs::logits is false
  /// and the plan has a greedy output.
  std::vector<float> logits;
  /// Per logits row: the index of its first maximum (the host sampler's
  /// greedy token), -1 for a row whose maximum is not finite (NaN, +inf,
  /// every entry -inf: the rows greedyToken refuses); from the plan's `greedy`
  /// output (llm.argmax). Empty for an artifact without one, whose logits
  /// are then always copied.
  std::vector<int32_t> greedy;
  /// Per request: index of its first logits row and its number of rows.
  std::vector<std::pair<size_t, size_t>> request_rows;
  /// The step's hidden output [num_tokens, hidden_size] in the artifact's
  /// activation element type (raw bytes); the MTP draft's input.
  std::vector<uint8_t> hidden;
  /// Bytes per hidden row.
  size_t hidden_row_bytes = 0;
};

/// A target step and the MTP draft's step 0 over every one of its rows
/// (ModelExecutor::runWithDraft).
struct DraftedStepResult {
  StepResult target;
  /// The draft's outputs, one row per target token (request_rows as the
  /// target's).
  StepResult draft;
  /// With a DraftChain: each pass's outputs, in pass order (request_rows
  /// those of the chain's requests).
  std::vector<StepResult> chain;
};

/// Draft chain passes that follow a step in the same device work
/// (ModelExecutor::runWithDraft with a chain): pass 0 runs `step` over
/// `requests` (one token each, as many as the rows before it), request t
/// taking the greedy token and hidden row of row t of the draft before it
/// as its id and hidden row (its own tokens are not read); pass j > 0 does
/// the same from pass j - 1, one position further.
struct DraftChain {
  artifact::StepKind step = artifact::StepKind::mtp_chain;
  std::vector<StepRequest> requests;
  size_t passes = 0;
  /// What each pass copies back.
  StepOutputs outputs{/*logits=*/false, /*hidden=*/false};
};

/// The mtp_chain chain of `passes` passes that follows a step of `step`'s
/// requests (each token a row) and its draft's step 0: one candidate per
/// row. Candidate j of a request (accepting j drafts commits rows 0..j)
/// runs at the position after row j and attends to step 0's selection of
/// row j (its shared selection row); its block table is the request's,
/// padded with repeats of the last page up to the last pass's position
/// (`page_tokens` per page; never read: mtp_chain reads only selected
/// positions and writes nothing).
DraftChain candidateDraftChains(const std::vector<StepRequest> &step,
                                size_t passes, uint64_t page_tokens);

class ModelExecutor {
public:
  /// Opens and validates the artifact, opens the checkpoint (a folder or
  /// `procedural:CONFIG.json`, openWeightSource) and checks it against the
  /// weight manifest, opens the device of options.target, loads
  /// that target, binds the weights and allocates the caches.
  static StatusOr<std::unique_ptr<ModelExecutor>>
  create(const std::string &artifact_path, const std::string &checkpoint_dir,
         const ExecutorOptions &options);
  /// The same over an artifact the caller already loaded (and read, e.g.
  /// for the page size that sizes options.kv_pages).
  static StatusOr<std::unique_ptr<ModelExecutor>>
  create(std::unique_ptr<Artifact> artifact, const std::string &checkpoint_dir,
         const ExecutorOptions &options);

  const artifact::ModelConfig &model() const { return *artifact_->def().model(); }
  const Artifact &artifact() const { return *artifact_; }
  /// KV page size in tokens.
  uint64_t pageSizeTokens() const;
  /// Whether the artifact has a plan for `step`.
  bool hasStep(artifact::StepKind step) const;

  /// Zeroes slot `slot` of every state pool (KDA recurrent and conv state,
  /// tail ring): what a new request starts from.
  Status resetSlot(int32_t slot);

  /// Copies slot `src` of every state pool (KDA recurrent and conv state,
  /// tail ring) into slot `dst`: how a prefix-cache snapshot is taken or
  /// restored, and how the scheduler saves and rolls back a request's state
  /// around an MTP verification. OUT_OF_RANGE for a slot outside
  /// [0, state_slots); copying a slot onto itself is a no-op.
  Status copySlot(int32_t src, int32_t dst) { return copySlots(src, dst, 1); }
  /// Copies the `count` slots from `src` on onto those from `dst` on, one
  /// copy per state pool of `pools` (how the scheduler saves the states of
  /// every request that verifies drafts at once). OUT_OF_RANGE for a slot
  /// outside [0, state_slots), INVALID_ARGUMENT for a count below 1 or
  /// overlapping runs; src == dst is a no-op.
  Status copySlots(int32_t src, int32_t dst, int32_t count,
                   StatePools pools = StatePools::all);
  /// Whether the target plans keep the KDA state after every token of a
  /// short request in a slot of its own (StepRequest::state_token_slots).
  bool keepsTokenStates() const;

  /// Slots in each state pool (ExecutorOptions::state_slots).
  uint32_t stateSlots() const { return options_.state_slots; }
  /// Pages in each paged pool (ExecutorOptions::kv_pages).
  uint64_t kvPages() const { return options_.kv_pages; }

  /// Runs one step over `requests` (each with at least one token) and
  /// copies back what `outputs` asks for. With an `observer`, every dispatch
  /// is timed alone (Program::run).
  StatusOr<StepResult> run(artifact::StepKind step,
                           const std::vector<StepRequest> &requests,
                           const DispatchObserver *observer = nullptr,
                           const StepOutputs &outputs = {});

  /// Runs `step` (decode or mtp_verify: every token a logits row) and, in
  /// the same device work, the mtp_draft step over the same rows: draft row
  /// t takes the target's greedy token of row t as its id and the target's
  /// hidden row t, at the target's positions (MTP step 0 with the device's
  /// tokens: exact for the rows a greedy verification accepts, whose next
  /// tokens those are; the other rows' draft cache entries lie beyond the
  /// committed tokens and are rewritten before they are read). Captured
  /// into one graph like a decode step. Copies back `outputs` of the target
  /// and `draft_outputs` of the draft. FAILED_PRECONDITION without an
  /// mtp_draft plan or greedy / hidden outputs; INVALID_ARGUMENT when a
  /// token has no logits row.
  StatusOr<DraftedStepResult> runWithDraft(
      artifact::StepKind step, const std::vector<StepRequest> &requests,
      const StepOutputs &outputs, const StepOutputs &draft_outputs,
      const DispatchObserver *observer = nullptr);
  /// runWithDraft, then `chain`'s passes after the draft in the same device
  /// work (one graph): MTP's candidate chains, one per verified row, whose
  /// row of the accepted position the caller keeps. INVALID_ARGUMENT when
  /// the chain's requests are not one per row or not one token each, or it
  /// has no passes; FAILED_PRECONDITION as checkChainedStep.
  StatusOr<DraftedStepResult> runWithDraftChain(
      artifact::StepKind step, const std::vector<StepRequest> &requests,
      const StepOutputs &outputs, const StepOutputs &draft_outputs,
      const DraftChain &chain, const DispatchObserver *observer = nullptr);

  /// Why `step` cannot be followed by its draft in one runWithDraft, or OK.
  Status checkDraftedStep(artifact::StepKind step) const;

  /// Runs `passes` (>= 1) passes of the MTP draft chain in the same device
  /// work: pass 0 is `run(step, requests)`; pass j > 0 runs `step` over the
  /// same requests with each one's id the greedy token of pass j - 1's row,
  /// its hidden row that pass's hidden output and its position one further
  /// (every other input as in pass 0). Captured into one graph like a
  /// decode step. `step` is mtp_chain (or mtp_draft for a chain without a
  /// shared selection); every request has one token. Copies back `outputs`
  /// of every pass, results in pass order. FAILED_PRECONDITION when the
  /// plan lacks greedy / hidden outputs; INVALID_ARGUMENT for another step
  /// kind, no passes or a request of several tokens.
  StatusOr<std::vector<StepResult>>
  runChain(artifact::StepKind step, const std::vector<StepRequest> &requests,
           size_t passes, const StepOutputs &outputs,
           const DispatchObserver *observer = nullptr);

  /// Why `step` cannot chain its passes in one runChain, or OK.
  Status checkChainedStep(artifact::StepKind step) const;

  /// Step graphs captured so far and steps that replayed one, by kind.
  const StepGraphCounts &graphCounts() const { return graph_counts_; }
  /// Why step graphs were turned off (a failed capture), or OK.
  const Status &graphError() const { return graph_error_; }

  /// The weights' source (WeightSource::description) and the seconds
  /// reading or generating and uploading them took.
  const std::string &weightsDescription() const { return weights_description_; }
  double weightsLoadSeconds() const { return weights_load_seconds_; }
  /// Device bytes of the buffers (and scratch) `step`'s plan allocates for
  /// a step of `num_tokens` tokens over `num_requests` requests at contexts
  /// up to `context` tokens, every token a logits row: what a step costs
  /// beside the weights and caches (for sizing the caches).
  StatusOr<uint64_t> stepBufferBytes(artifact::StepKind step,
                                     uint64_t num_tokens, uint64_t num_requests,
                                     uint64_t context) const;
  /// Bytes of device memory the weights take.
  uint64_t weightBytes() const;

  /// The device the executor runs on (for benchmarks' own measurements).
  Device &device() { return *device_; }
  /// The loaded target.
  const artifact::TargetDef &target() const { return program_->target(); }

  /// Allocates the caches (kv_pages pages per paged pool, state_slots slots
  /// per state pool), once; only after create with defer_caches.
  /// RESOURCE_EXHAUSTED (from the device) when they do not fit.
  Status allocateCaches(uint64_t kv_pages, uint32_t state_slots);

  /// The rank's groups of a sharded artifact; null for one rank.
  const RankGroups *rankGroups() const { return rank_groups_.get(); }

private:
  ModelExecutor() = default;
  Status joinRankGroups();
  /// The GPU of this process: its rank (modulo the GPUs), else 0.
  int deviceOrdinal() const;
  Status bindWeights(WeightSource &source);
  /// `run`, `runWithDraft` (draft_outputs: the draft's, or null for a
  /// step without it) and `runChain` (passes > 1: the results of passes 1..
  /// into `chained`).
  StatusOr<DraftedStepResult>
  execute(artifact::StepKind step, const std::vector<StepRequest> &requests,
          const DispatchObserver *observer, const StepOutputs &outputs,
          const StepOutputs *draft_outputs, const DraftChain *chain = nullptr);
  /// A step's plan inputs on the host (gatherInputs).
  struct HostInputs {
    std::vector<int32_t> ids, positions, seq_starts{0}, slots, rows,
        shared_rows, block_table;
    std::vector<int32_t> state_src_slots, state_dst_slots, state_token_slots;
    bool separate_state_slots = false, token_states = false;
    std::vector<std::pair<size_t, size_t>> request_rows;
    RuntimeSizes sizes;
  };
  /// Checks `requests` against `plan` and the caches and lays out the
  /// plan's inputs and sizes (`graph`: the block table's width rounded up to
  /// kStepGraphPageBucket pages).
  StatusOr<HostInputs> gatherInputs(const std::vector<StepRequest> &requests,
                                    const artifact::ExecutionPlan &plan,
                                    bool graph) const;
  /// Enqueues on `stream` the copies of `in` into `plan`'s input buffers:
  /// `positions` for the positions, and with `own_tokens` the ids and the
  /// KDA state slots too (a step fed by the one before it takes its ids
  /// from that step's outputs). The host vectors must live until the
  /// stream is synchronized.
  Status writeInputs(const artifact::ExecutionPlan &plan, PlanBuffers &buffers,
                     const HostInputs &in,
                     const std::vector<int32_t> &positions, bool own_tokens,
                     Stream &stream) const;
  /// Enqueues on `on` the copies of `from`'s greedy tokens and hidden output
  /// (of plan `from_plan`) into `to`'s ids and hidden inputs (of `to_plan`):
  /// how a draft step follows its target step or the previous chain pass.
  Status feedDraft(const artifact::ExecutionPlan &from_plan, PlanBuffers &from,
                   const artifact::ExecutionPlan &to_plan, PlanBuffers &to,
                   Stream &on);
  /// Enqueues copies of the plan's outputs that `outputs` asks for into
  /// `result` on `stream` (after the step's work on it); the caller
  /// synchronizes the stream before reading them.
  Status readOutputs(const artifact::ExecutionPlan &plan, PlanBuffers &buffers,
                     Stream &stream, size_t num_rows, size_t num_tokens,
                     const StepOutputs &outputs, StepResult &result);
  /// The box the rank reads of checkpoint tensor `name` (of extents
  /// `shape`; one expert's tensor of a stacked entry) of manifest entry
  /// `index`: its slice's offsets and the entry's extents.
  StatusOr<TensorBox> rankBox(size_t index, const std::string &name,
                              const std::vector<int64_t> &shape) const;

  ExecutorOptions options_;
  artifact::TargetKind target_kind_ = artifact::TargetKind::cpu;
  std::unique_ptr<Artifact> artifact_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Program> program_;
  std::unique_ptr<RankGroups> rank_groups_;
  std::vector<std::unique_ptr<Buffer>> weights_;
  std::string weights_description_;
  double weights_load_seconds_ = 0;
  std::vector<std::unique_ptr<Buffer>> caches_;
  /// Bytes per page or slot of each cache (by cache id).
  std::vector<uint64_t> cache_unit_bytes_;
  /// A step's kind and the plan's sizes, whether the draft follows it and
  /// the draft chain passes after them (their kind and sizes): what a
  /// captured graph stands for.
  struct StepShape {
    artifact::StepKind step;
    RuntimeSizes sizes;
    bool drafted = false;
    artifact::StepKind chain_step = artifact::StepKind::mtp_chain;
    RuntimeSizes chain_sizes;
    size_t chain_passes = 0;
    bool operator==(const StepShape &other) const;
  };
  /// A captured step: its shape, the buffers its graph binds (the draft's
  /// too when it follows; the chain passes'), the stream that replays it.
  struct StepGraph {
    StepShape shape;
    PlanBuffers buffers, draft_buffers;
    std::vector<PlanBuffers> pass_buffers;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Graph> graph;
    uint64_t last_use = 0;
  };
  /// Counts a capture or a replay of `shape` in graph_counts_.
  void countGraph(const StepShape &shape, bool capture);
  /// Whether `step` of `requests` may run from a graph now.
  bool takesGraph(artifact::StepKind step,
                  const std::vector<StepRequest> &requests,
                  const DispatchObserver *observer) const;
  /// The kept graph of `shape`, else null.
  StepGraph *findGraph(const StepShape &shape);
  /// Whether `shape` is among the recent ones; remembers it.
  bool repeatsRecentShape(const StepShape &shape);
  /// Captures `shape`'s step into a new graph over `buffers`,
  /// `draft_buffers` (null for a step without its draft) and `pass_buffers`
  /// (the chain passes after them), all moved into it, and keeps it; null
  /// (and graphs off, graph_error_ set) when the device cannot capture it.
  StepGraph *captureGraph(const StepShape &shape, PlanBuffers &buffers,
                          PlanBuffers *draft_buffers,
                          std::vector<PlanBuffers> &pass_buffers,
                          const PlanResources &resources);
  /// Enqueues `shape`'s step on `stream` (null: the default one); when
  /// shape.drafted, the copies of its greedy tokens and hidden rows into the
  /// draft's inputs and the draft step over `draft_buffers`; then the chain
  /// passes over `pass_buffers`, each fed by the step before it.
  Status launchPlans(const StepShape &shape, PlanBuffers &buffers,
                     PlanBuffers *draft_buffers,
                     std::vector<PlanBuffers> &pass_buffers,
                     const PlanResources &resources, Stream *stream,
                     const DispatchObserver *observer);
  std::vector<StepGraph> step_graphs_;
  std::vector<StepShape> recent_shapes_;
  /// The hidden output the last target step kept (StepOutputs::keep_hidden):
  /// owned when that step ran on fresh buffers, else its graph's buffer (a
  /// graph is replayed or dropped only by a later target step, which
  /// clears this first); its tokens.
  std::unique_ptr<Buffer> kept_hidden_owned_;
  Buffer *kept_hidden_ = nullptr;
  size_t kept_hidden_tokens_ = 0;
  /// Copies the draft requests' rows of the kept hidden output into the
  /// plan's `hidden` input on `stream`.
  Status copyKeptHidden(const std::vector<StepRequest> &requests,
                        Buffer &hidden, size_t num_tokens, Stream &stream);
  Status graph_error_;
  uint64_t graph_clock_ = 0;
  StepGraphCounts graph_counts_;
};

} // namespace strata::runtime

#endif // STRATA_RUNTIME_EXECUTOR_MODEL_EXECUTOR_H
