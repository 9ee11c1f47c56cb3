//===- bpe_model.cpp - byte-pair-encoding model -----------------------------===//

#include "runtime/tokenizer/bpe_model.h"

#include <mutex>
#include <queue>

#include <nlohmann/json.hpp>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

using json = nlohmann::json;

namespace {

/// True when an optional string option is absent, null or "".
bool isUnsetString(const json &model, const char *key) {
  auto it = model.find(key);
  return it == model.end() || it->is_null() ||
         (it->is_string() && it->get_ref<const std::string &>().empty());
}

} // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::fromJson(const json &model) {
  if (!model.is_object())
    return invalidArgument("model: expected an object");
  auto type = model.find("type");
  if (type != model.end() && !(type->is_string() && *type == "BPE"))
    return unimplemented("model: unsupported type {}, expected BPE",
                         type->dump());
  auto dropout = model.find("dropout");
  if (dropout != model.end() && !dropout->is_null() &&
      !(dropout->is_number() && dropout->get<double>() == 0.0))
    return unimplemented("model: bpe dropout {} is not supported",
                         dropout->dump());
  auto byte_fallback = model.find("byte_fallback");
  if (byte_fallback != model.end() && byte_fallback->is_boolean() &&
      byte_fallback->get<bool>())
    return unimplemented("model: bpe byte_fallback is not supported");
  auto fuse_unk = model.find("fuse_unk");
  if (fuse_unk != model.end() && fuse_unk->is_boolean() && fuse_unk->get<bool>())
    return unimplemented("model: bpe fuse_unk is not supported");
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!isUnsetString(model, key))
      return unimplemented("model: bpe {} {} is not supported", key,
                           model[key].dump());

  std::unique_ptr<BpeModel> bpe(new BpeModel());
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object())
    return invalidArgument("model: expected a vocab object");
  bpe->vocab_.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > INT32_MAX)
      return invalidArgument("model: vocab id of {} is not a valid id: {}",
                             json(it.key()).dump(), it.value().dump());
    int32_t id = it.value().get<int32_t>();
    bpe->vocab_[it.key()] = id;
    if (static_cast<size_t>(id) >= bpe->id_to_token_.size()) {
      bpe->id_to_token_.resize(id + 1);
      bpe->id_present_.resize(id + 1, false);
    }
    bpe->id_to_token_[id] = it.key();
    bpe->id_present_[id] = true;
  }

  auto ignore = model.find("ignore_merges");
  bpe->ignore_merges_ =
      ignore != model.end() && ignore->is_boolean() && ignore->get<bool>();
  auto unk = model.find("unk_token");
  if (unk != model.end() && unk->is_string()) {
    auto id = bpe->vocab_.find(unk->get<std::string>());
    if (id == bpe->vocab_.end())
      return invalidArgument("model: unk_token {} is not in the vocab",
                             unk->dump());
    bpe->unk_id_ = id->second;
  }

  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array())
    return invalidArgument("model: expected a merges array");
  bpe->merges_.reserve(merges->size());
  uint32_t rank = 0;
  for (const json &merge : *merges) {
    std::string left, right;
    if (merge.is_string()) {
      const std::string &s = merge.get_ref<const std::string &>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        return invalidArgument(
            "model: merge {} must be two tokens separated by one space",
            rank);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return invalidArgument(
          "model: merge {} must be \"a b\" or [\"a\", \"b\"], got {}", rank,
          merge.dump());
    }
    auto l = bpe->vocab_.find(left), r = bpe->vocab_.find(right),
         m = bpe->vocab_.find(left + right);
    if (l == bpe->vocab_.end() || r == bpe->vocab_.end())
      return invalidArgument("model: merge {} uses a token not in the vocab: {}",
                             rank, merge.dump());
    if (m == bpe->vocab_.end())
      return invalidArgument(
          "model: merge {} makes a token not in the vocab: {}", rank,
          json(left + right).dump());
    // Later duplicates win, as when Hugging Face collects its merge map.
    bpe->merges_[pairKey(l->second, r->second)] = Merge{rank, m->second};
    ++rank;
  }
  return bpe;
}

std::optional<int32_t> BpeModel::tokenToId(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end())
    return std::nullopt;
  return it->second;
}

const std::string *BpeModel::idToToken(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() ||
      !id_present_[id])
    return nullptr;
  return &id_to_token_[id];
}

void BpeModel::encodeWord(std::string_view word,
                          std::vector<int32_t> &out_ids) const {
  if (word.empty())
    return;
  if (ignore_merges_) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) {
      out_ids.push_back(it->second);
      return;
    }
  }
  std::string key(word);
  {
    std::shared_lock<std::shared_mutex> lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out_ids.insert(out_ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  mergeWord(word, ids);
  out_ids.insert(out_ids.end(), ids.begin(), ids.end());
  if (key.size() >= kMaxCachedWordBytes)
    return;
  std::unique_lock<std::shared_mutex> lock(cache_mutex_);
  if (cache_.size() < kCacheCapacity)
    cache_.emplace(std::move(key), std::move(ids));
}

void BpeModel::mergeWord(std::string_view word,
                         std::vector<int32_t> &out_ids) const {
  struct Symbol {
    int32_t id;
    int prev;
    int next;
    size_t len; // bytes; 0 once merged into its left neighbour
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  size_t pos = 0;
  std::string scratch;
  while (pos < word.size()) {
    uint32_t cp = 0;
    size_t n = decodeUtf8(word, pos, &cp);
    scratch.assign(word.substr(pos, n));
    pos += n;
    auto it = vocab_.find(scratch);
    int32_t id;
    if (it != vocab_.end()) {
      id = it->second;
    } else if (unk_id_) {
      id = *unk_id_;
    } else {
      continue; // Hugging Face drops characters it cannot spell.
    }
    int index = static_cast<int>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, n});
  }
  if (symbols.empty())
    return;
  symbols.back().next = -1;

  struct Candidate {
    uint32_t rank;
    int pos;
    int32_t new_id;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto lookup = [&](int32_t a, int32_t b) -> const Merge * {
    auto it = merges_.find(pairKey(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const Merge *m = lookup(symbols[i].id, symbols[i + 1].id))
      queue.push({m->rank, static_cast<int>(i), m->new_id});

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (left.len == 0 || left.next < 0)
      continue;
    Symbol right = symbols[left.next];
    const Merge *current = lookup(left.id, right.id);
    if (!current || current->new_id != top.new_id)
      continue; // stale entry
    int right_index = left.next;
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    symbols[right_index].len = 0;
    if (right.next >= 0)
      symbols[right.next].prev = top.pos;
    if (left.prev >= 0)
      if (const Merge *m = lookup(symbols[left.prev].id, left.id))
        queue.push({m->rank, left.prev, m->new_id});
    if (left.next >= 0)
      if (const Merge *m = lookup(left.id, symbols[left.next].id))
        queue.push({m->rank, top.pos, m->new_id});
  }
  for (const Symbol &s : symbols)
    if (s.len != 0)
      out_ids.push_back(s.id);
}

} // namespace strata::runtime::tokenizer
