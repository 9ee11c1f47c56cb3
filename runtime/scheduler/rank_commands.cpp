//===- rank_commands.cpp - what rank 0 tells the other ranks --------------===//
//
// Part of strata. See rank_commands.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/scheduler/rank_commands.h"

#include <cstring>

namespace strata::runtime {

namespace {

class Writer {
public:
  template <typename T> void put(T value) {
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <typename T> void putVector(const std::vector<T> &values) {
    put<uint64_t>(values.size());
    const auto *p = reinterpret_cast<const uint8_t *>(values.data());
    bytes.insert(bytes.end(), p, p + values.size() * sizeof(T));
  }
  std::vector<uint8_t> bytes;
};

class Reader {
public:
  explicit Reader(const std::vector<uint8_t> &bytes) : bytes_(bytes) {}
  template <typename T> StatusOr<T> get() {
    if (bytes_.size() - at_ < sizeof(T))
      return truncated();
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  template <typename T> StatusOr<std::vector<T>> getVector() {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, get<uint64_t>());
    if (n > (bytes_.size() - at_) / sizeof(T))
      return truncated();
    std::vector<T> values(n);
    std::memcpy(values.data(), bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return values;
  }
  size_t remaining() const { return bytes_.size() - at_; }

private:
  Status truncated() const {
    return invalidArgument("rank command: truncated at byte {} of {}", at_,
                           bytes_.size());
  }
  const std::vector<uint8_t> &bytes_;
  size_t at_ = 0;
};

} // namespace

std::vector<uint8_t> encodeRankCommand(const RankCommand &c) {
  Writer w;
  w.put<uint8_t>(static_cast<uint8_t>(c.kind));
  switch (c.kind) {
  case RankCommandKind::kStep:
    w.put<uint8_t>(static_cast<uint8_t>(c.step));
    w.put<uint8_t>(c.outputs.logits);
    w.put<uint8_t>(c.outputs.hidden);
    w.put<uint8_t>(c.outputs.keep_hidden);
    w.put<uint8_t>(c.with_draft);
    w.put<uint32_t>(c.chain_passes);
    w.put<uint64_t>(c.requests.size());
    for (const StepRequest &r : c.requests) {
      w.putVector(r.tokens);
      w.put<int64_t>(r.start_position);
      w.putVector(r.block_table);
      w.put<int32_t>(r.slot);
      w.put<int32_t>(r.state_src_slot);
      w.put<int32_t>(r.state_dst_slot);
      w.putVector(r.state_token_slots);
      w.put<uint8_t>(r.all_logits);
      w.put<int32_t>(r.shared_selection_row);
      w.put<int64_t>(r.target_hidden_row);
      w.putVector(r.hidden);
    }
    break;
  case RankCommandKind::kResetSlot:
    w.put<int32_t>(c.slot);
    break;
  case RankCommandKind::kCopySlot:
    w.put<int32_t>(c.slot);
    w.put<int32_t>(c.dst_slot);
    w.put<int32_t>(c.slot_count);
    w.put<uint8_t>(static_cast<uint8_t>(c.pools));
    break;
  case RankCommandKind::kAllocateCaches:
    w.put<uint64_t>(c.kv_pages);
    w.put<uint32_t>(c.state_slots);
    break;
  case RankCommandKind::kKeepAlive:
  case RankCommandKind::kStop:
    break;
  }
  return std::move(w.bytes);
}

StatusOr<RankCommand> decodeRankCommand(const std::vector<uint8_t> &bytes) {
  Reader r(bytes);
  RankCommand c;
  STRATA_ASSIGN_OR_RETURN(uint8_t kind, r.get<uint8_t>());
  c.kind = static_cast<RankCommandKind>(kind);
  switch (c.kind) {
  case RankCommandKind::kStep: {
    STRATA_ASSIGN_OR_RETURN(uint8_t step, r.get<uint8_t>());
    if (step > static_cast<uint8_t>(artifact::StepKind::MAX))
      return invalidArgument("rank command: unknown step kind {}", step);
    c.step = static_cast<artifact::StepKind>(step);
    STRATA_ASSIGN_OR_RETURN(uint8_t logits, r.get<uint8_t>());
    STRATA_ASSIGN_OR_RETURN(uint8_t hidden, r.get<uint8_t>());
    STRATA_ASSIGN_OR_RETURN(uint8_t keep_hidden, r.get<uint8_t>());
    STRATA_ASSIGN_OR_RETURN(uint8_t with_draft, r.get<uint8_t>());
    c.outputs.logits = logits != 0;
    c.outputs.hidden = hidden != 0;
    c.outputs.keep_hidden = keep_hidden != 0;
    c.with_draft = with_draft != 0;
    STRATA_ASSIGN_OR_RETURN(c.chain_passes, r.get<uint32_t>());
    if (c.chain_passes == 0)
      return invalidArgument("rank command: a draft chain of no passes");
    STRATA_ASSIGN_OR_RETURN(uint64_t n, r.get<uint64_t>());
    if (n > bytes.size())
      return invalidArgument("rank command: {} requests in {} bytes", n,
                             bytes.size());
    c.requests.resize(n);
    for (StepRequest &q : c.requests) {
      STRATA_ASSIGN_OR_RETURN(q.tokens, r.getVector<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.start_position, r.get<int64_t>());
      STRATA_ASSIGN_OR_RETURN(q.block_table, r.getVector<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.slot, r.get<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.state_src_slot, r.get<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.state_dst_slot, r.get<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.state_token_slots, r.getVector<int32_t>());
      STRATA_ASSIGN_OR_RETURN(uint8_t all, r.get<uint8_t>());
      q.all_logits = all != 0;
      STRATA_ASSIGN_OR_RETURN(q.shared_selection_row, r.get<int32_t>());
      STRATA_ASSIGN_OR_RETURN(q.target_hidden_row, r.get<int64_t>());
      STRATA_ASSIGN_OR_RETURN(q.hidden, r.getVector<uint8_t>());
    }
    break;
  }
  case RankCommandKind::kResetSlot: {
    STRATA_ASSIGN_OR_RETURN(c.slot, r.get<int32_t>());
    break;
  }
  case RankCommandKind::kCopySlot: {
    STRATA_ASSIGN_OR_RETURN(c.slot, r.get<int32_t>());
    STRATA_ASSIGN_OR_RETURN(c.dst_slot, r.get<int32_t>());
    STRATA_ASSIGN_OR_RETURN(c.slot_count, r.get<int32_t>());
    STRATA_ASSIGN_OR_RETURN(uint8_t pools, r.get<uint8_t>());
    if (pools > static_cast<uint8_t>(StatePools::kda))
      return invalidArgument("rank command: unknown state pools {}", pools);
    c.pools = static_cast<StatePools>(pools);
    break;
  }
  case RankCommandKind::kAllocateCaches: {
    STRATA_ASSIGN_OR_RETURN(c.kv_pages, r.get<uint64_t>());
    STRATA_ASSIGN_OR_RETURN(c.state_slots, r.get<uint32_t>());
    break;
  }
  case RankCommandKind::kKeepAlive:
  case RankCommandKind::kStop:
    break;
  default:
    return invalidArgument("rank command: unknown kind {}", kind);
  }
  if (r.remaining() != 0)
    return invalidArgument("rank command: {} bytes, {} of them trailing",
                           bytes.size(), r.remaining());
  return c;
}

} // namespace strata::runtime
