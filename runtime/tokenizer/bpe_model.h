//===- bpe_model.h - byte-pair-encoding model -------------------------------===//
//
// Part of strata. The "BPE" model of a Hugging Face tokenizer.json: a vocab
// (token -> id), merges with ranks (their order in the file, in either the
// "a b" string form or the ["a", "b"] list form) and the options
// `ignore_merges` (a word that is itself in the vocab becomes one token
// without merging) and `unk_token`. Options that change results and that this
// model does not implement (dropout, byte_fallback, fuse_unk, a non-empty
// continuing_subword_prefix or end_of_word_suffix) are rejected at load time
// with UNIMPLEMENTED rather than silently ignored.
//
// Merging follows Hugging Face's Word::merge_all exactly: a priority queue of
// adjacent pairs ordered by (rank, position), stale entries skipped. A merge
// rank map keyed by the pair of ids gives O(1) lookups; encoded words are kept
// in a bounded cache.
//
// Ownership: a BpeModel owns its tables. Thread-safety: encodeWord may be
// called concurrently (the cache is guarded by a shared mutex).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_BPE_MODEL_H
#define STRATA_RUNTIME_TOKENIZER_BPE_MODEL_H

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "runtime/base/status.h"

namespace strata::runtime::tokenizer {

class BpeModel {
public:
  /// Most words kept in the encode cache (Hugging Face uses 10000 too); once
  /// full, new words are encoded without being cached.
  static constexpr size_t kCacheCapacity = 10000;
  /// Words of this many bytes or more are not cached.
  static constexpr size_t kMaxCachedWordBytes = 256;

  /// Builds the model from the "model" object of a tokenizer.json.
  static StatusOr<std::unique_ptr<BpeModel>> fromJson(const nlohmann::json &model);

  /// Appends the ids of `word` (one pre-token, already byte-level mapped when
  /// the tokenizer is byte-level) to `out_ids`. Characters missing from the
  /// vocab become `unk_token` when set and are dropped otherwise (as in
  /// Hugging Face).
  void encodeWord(std::string_view word, std::vector<int32_t> &out_ids) const;

  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// The token of `id`, or nullptr when `id` is not in the vocab.
  const std::string *idToToken(int32_t id) const;
  /// One more than the largest id of the vocab.
  size_t idLimit() const { return id_to_token_.size(); }
  size_t vocabSize() const { return vocab_.size(); }
  size_t mergeCount() const { return merges_.size(); }

private:
  BpeModel() = default;
  void mergeWord(std::string_view word, std::vector<int32_t> &out_ids) const;

  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  static uint64_t pairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
           static_cast<uint32_t>(b);
  }

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> id_present_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<int32_t> unk_id_;
  bool ignore_merges_ = false;

  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_BPE_MODEL_H
