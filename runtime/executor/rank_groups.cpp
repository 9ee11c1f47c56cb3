//===- rank_groups.cpp - one rank's communicators of a parallel layout ----===//
//
// Part of strata. See rank_groups.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/executor/rank_groups.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/collectives/gloo_communicator.h"
#include "runtime/collectives/host_staged_communicator.h"
#include "runtime/collectives/nccl_communicator.h"

namespace strata::runtime {

using artifact::CollectiveKind;
using artifact::RankGroup;

namespace {

StatusOr<DataType> dataTypeOf(artifact::DType dtype) {
  switch (dtype) {
  case artifact::DType::f32:
    return DataType::kF32;
  case artifact::DType::bf16:
    return DataType::kBF16;
  case artifact::DType::i32:
    return DataType::kI32;
  default:
    break;
  }
  return invalidArgument("no communicator element type for {}",
                         artifact::EnumNameDType(dtype));
}

uint64_t product(const std::vector<int64_t> &shape, size_t from, size_t to) {
  uint64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= static_cast<uint64_t>(shape[d]);
  return p;
}

/// The key prefix of `group` for rank coordinates (t, e).
std::string prefixOf(RankGroup group, uint32_t t, uint32_t e) {
  switch (group) {
  case RankGroup::tp:
    return fmt::format("strata/tp{}", e);
  case RankGroup::ep:
    return fmt::format("strata/ep{}", t);
  case RankGroup::world:
    break;
  }
  return "strata/world";
}

} // namespace

StatusOr<std::unique_ptr<RankGroups>>
RankGroups::create(const RankGroupsOptions &options, Device &device) {
  if (options.tensor_parallel_size < 1 || options.expert_parallel_size < 1)
    return invalidArgument("tensor- and expert-parallel sizes must be >= 1, "
                           "got {} and {}",
                           options.tensor_parallel_size,
                           options.expert_parallel_size);
  std::unique_ptr<RankGroups> groups(new RankGroups(options, device));
  int world = groups->worldSize();
  if (options.rank < 0 || options.rank >= world)
    return invalidArgument("rank {} outside [0, {})", options.rank, world);
  if (world > 1 && !options.store)
    return invalidArgument("{} ranks need a rendezvous store", world);
  for (RankGroup group : {RankGroup::tp, RankGroup::ep, RankGroup::world}) {
    if (groups->size(group) == 1)
      continue;
    StatusOr<std::unique_ptr<Communicator>> communicator = groups->join(group);
    if (!communicator.ok())
      return communicator.status().withContext(
          fmt::format("rank {}: joining group '{}'", options.rank,
                      artifact::EnumNameRankGroup(group)));
    groups->groups_[static_cast<int>(group)] = std::move(*communicator);
  }
  return groups;
}

StatusOr<CollectiveBackend> parseCollectiveBackend(std::string_view name) {
  if (name == "auto")
    return CollectiveBackend::kAuto;
  if (name == "gloo")
    return CollectiveBackend::kGloo;
  if (name == "nccl")
    return CollectiveBackend::kNccl;
  return invalidArgument("--collectives {}: expected auto, gloo or nccl",
                         name);
}

StatusOr<std::unique_ptr<Communicator>> RankGroups::join(RankGroup group) {
  CommunicatorOptions common;
  common.store = options_.store;
  common.rank = static_cast<int>(coordinate(group));
  common.size = static_cast<int>(size(group));
  common.prefix = prefixOf(group, coordinate(RankGroup::tp),
                           coordinate(RankGroup::ep));
  common.timeout = options_.timeout;
  std::string_view device = device_.name();
  bool gpu = device != "cpu";
  if (gpu && options_.backend != CollectiveBackend::kGloo) {
    NcclCommunicatorOptions nccl;
    nccl.group = common;
    nccl.device = &device_;
    nccl.flavor = device == "hip" ? NcclFlavor::kRccl : NcclFlavor::kNccl;
    return createNcclCommunicator(nccl);
  }
  if (!gpu && options_.backend == CollectiveBackend::kNccl)
    return invalidArgument("--collectives nccl needs a GPU target; the cpu "
                           "target runs Gloo");
  GlooCommunicatorOptions gloo;
  gloo.group = common;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> communicator,
                          createGlooCommunicator(gloo));
  capturable_ = false;
  if (!gpu)
    return communicator;
  HostStagedCommunicatorOptions staged;
  staged.inner = std::move(communicator);
  staged.device = &device_;
  return createHostStagedCommunicator(std::move(staged));
}

bool RankGroups::capturable() const { return capturable_; }

uint32_t RankGroups::coordinate(RankGroup group) const {
  uint32_t r = static_cast<uint32_t>(options_.rank);
  switch (group) {
  case RankGroup::tp:
    return r % options_.tensor_parallel_size;
  case RankGroup::ep:
    return r / options_.tensor_parallel_size;
  case RankGroup::world:
    break;
  }
  return r;
}

uint32_t RankGroups::size(RankGroup group) const {
  switch (group) {
  case RankGroup::tp:
    return options_.tensor_parallel_size;
  case RankGroup::ep:
    return options_.expert_parallel_size;
  case RankGroup::world:
    break;
  }
  return options_.tensor_parallel_size * options_.expert_parallel_size;
}

void RankGroups::setCoordinates(RuntimeSizes &sizes) const {
  sizes[artifact::SizeSymbol::tp_rank] = coordinate(RankGroup::tp);
  sizes[artifact::SizeSymbol::ep_rank] = coordinate(RankGroup::ep);
  sizes[artifact::SizeSymbol::world_rank] = coordinate(RankGroup::world);
}

Status RankGroups::run(const artifact::Collective &collective,
                       const DispatchArg &send, const DispatchArg &recv,
                       Stream &stream) {
  STRATA_ASSIGN_OR_RETURN(DataType type, dataTypeOf(collective.dtype()));
  uint32_t parts = size(collective.group());
  std::vector<int64_t> expected = send.shape;
  if (collective.kind() == CollectiveKind::all_gather)
    expected[collective.dim()] *= parts;
  if (recv.shape != expected)
    return invalidArgument("{} over {} ranks of [{}] into [{}]; expected [{}]",
                           artifact::EnumNameCollectiveKind(collective.kind()),
                           parts, fmt::join(send.shape, ", "),
                           fmt::join(recv.shape, ", "),
                           fmt::join(expected, ", "));
  Communicator *communicator =
      groups_[static_cast<int>(collective.group())].get();
  uint64_t count = product(send.shape, 0, send.shape.size());
  if (!communicator)
    return stream.copyBuffer(*send.buffer, send.offset_bytes, *recv.buffer,
                             recv.offset_bytes, count * dataTypeBytes(type));
  if (collective.kind() == CollectiveKind::all_gather)
    return allGather(communicator, parts, collective, send, recv, stream);
  return communicator->allReduce({send.buffer, send.offset_bytes},
                                 {recv.buffer, recv.offset_bytes}, count, type,
                                 ReduceOp::kSum, stream);
}

Status RankGroups::allGather(Communicator *communicator, uint32_t parts,
                             const artifact::Collective &collective,
                             const DispatchArg &send, const DispatchArg &recv,
                             Stream &stream) {
  STRATA_ASSIGN_OR_RETURN(DataType type, dataTypeOf(collective.dtype()));
  size_t dim = collective.dim();
  uint64_t count = product(send.shape, 0, send.shape.size());
  uint64_t outer = product(send.shape, 0, dim);
  if (outer == 1)
    return communicator->allGather({send.buffer, send.offset_bytes},
                                   {recv.buffer, recv.offset_bytes}, count,
                                   type, stream);
  // Rank-major parts [parts, outer, inner] -> [outer, parts, inner]: part p
  // is `outer` rows of inner_bytes, moved into bytes [p inner_bytes, +
  // inner_bytes) of recv's rows by one strided copy.
  uint64_t inner_bytes =
      product(send.shape, dim, send.shape.size()) * dataTypeBytes(type);
  STRATA_ASSIGN_OR_RETURN(
      Buffer * staging,
      gatherStaging(parts * count * dataTypeBytes(type), stream));
  STRATA_RETURN_IF_ERROR(communicator->allGather(
      {send.buffer, send.offset_bytes}, {staging, 0}, count, type, stream));
  for (uint32_t p = 0; p < parts; ++p) {
    Copy2D copy;
    copy.src_offset = uint64_t(p) * outer * inner_bytes;
    copy.src_pitch = inner_bytes;
    copy.dst_offset = recv.offset_bytes + uint64_t(p) * inner_bytes;
    copy.dst_pitch = uint64_t(parts) * inner_bytes;
    copy.row_bytes = inner_bytes;
    copy.rows = outer;
    STRATA_RETURN_IF_ERROR(stream.copyBuffer2D(*staging, *recv.buffer, copy));
  }
  return okStatus();
}

StatusOr<Buffer *> RankGroups::gatherStaging(uint64_t bytes, Stream &stream) {
  Buffer *current = staging_.empty() ? nullptr : staging_.back().get();
  if (current && current->size() >= bytes)
    return current;
  if (stream.capturing())
    return failedPrecondition(
        "all_gather needs a staging buffer of {} bytes (has {}), which "
        "cannot be allocated while the step is captured",
        bytes, current ? current->size() : 0);
  // At least doubled, so that growing steps reallocate rarely; the smaller
  // buffers stay allocated for the graphs captured with them.
  uint64_t size =
      std::max<uint64_t>({bytes, current ? 2 * current->size() : 0, 1});
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer,
                          device_.allocate(size, 64));
  staging_.push_back(std::move(buffer));
  return staging_.back().get();
}

} // namespace strata::runtime
