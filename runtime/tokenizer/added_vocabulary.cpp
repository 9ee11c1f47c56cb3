//===- added_vocabulary.cpp - added and special tokens ----------------------===//

#include "runtime/tokenizer/added_vocabulary.h"

#include <algorithm>

#include "runtime/tokenizer/utf8.h"

namespace strata::runtime::tokenizer {

void AddedVocabulary::Trie::insert(std::string_view pattern, int token_index) {
  int node = 0;
  for (char c : pattern) {
    uint64_t key = (static_cast<uint64_t>(node) << 8) |
                   static_cast<unsigned char>(c);
    auto it = edges.find(key);
    if (it == edges.end()) {
      int child = static_cast<int>(token_of_node.size());
      token_of_node.push_back(-1);
      edges.emplace(key, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  // The first token with a pattern keeps it.
  if (token_of_node[node] < 0)
    token_of_node[node] = token_index;
}

std::optional<std::pair<size_t, int>>
AddedVocabulary::Trie::longestAt(std::string_view text, size_t pos) const {
  std::optional<std::pair<size_t, int>> best;
  int node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    uint64_t key = (static_cast<uint64_t>(node) << 8) |
                   static_cast<unsigned char>(text[i]);
    auto it = edges.find(key);
    if (it == edges.end())
      break;
    node = it->second;
    if (token_of_node[node] >= 0)
      best = std::make_pair(i + 1 - pos, token_of_node[node]);
  }
  return best;
}

StatusOr<AddedVocabulary> AddedVocabulary::create(std::vector<AddedToken> tokens,
                                                  const Normalizer &normalizer) {
  AddedVocabulary vocab;
  vocab.tokens_ = std::move(tokens);
  for (size_t i = 0; i < vocab.tokens_.size(); ++i) {
    const AddedToken &token = vocab.tokens_[i];
    if (token.content.empty())
      return invalidArgument("added token {} has an empty content", token.id);
    if (token.id < 0)
      return invalidArgument("added token \"{}\" has a negative id {}",
                             token.content, token.id);
    if (!isValidUtf8(token.content))
      return invalidArgument("added token {} is not valid utf-8", token.id);
    if (!vocab.index_of_id_.emplace(token.id, i).second)
      return invalidArgument("added tokens repeat the id {}", token.id);
    vocab.id_of_content_.emplace(token.content, token.id);
    if (token.special)
      vocab.special_contents_.insert(token.content);
    if (token.normalized) {
      STRATA_ASSIGN_OR_RETURN(std::string pattern,
                              normalizer.apply(token.content));
      if (!pattern.empty())
        vocab.normalized_trie_.insert(pattern, static_cast<int>(i));
      vocab.tokens_[i].decoded_content = pattern;
    } else {
      vocab.raw_trie_.insert(token.content, static_cast<int>(i));
      vocab.tokens_[i].decoded_content = token.content;
    }
  }
  return vocab;
}

const AddedToken *AddedVocabulary::findById(int32_t id) const {
  auto it = index_of_id_.find(id);
  return it == index_of_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t>
AddedVocabulary::findByContent(std::string_view content) const {
  auto it = id_of_content_.find(std::string(content));
  if (it == id_of_content_.end())
    return std::nullopt;
  return it->second;
}

namespace {

/// The last code point of text[0, end), which must be non-empty valid UTF-8.
uint32_t lastCodePoint(std::string_view text, size_t end) {
  size_t pos = end - 1;
  while (pos > 0 && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80)
    --pos;
  uint32_t cp = 0;
  decodeUtf8(text, pos, &cp);
  return cp;
}

} // namespace

std::vector<TextPiece> AddedVocabulary::split(std::string_view text,
                                              bool normalized_pass) const {
  const Trie &trie = normalized_pass ? normalized_trie_ : raw_trie_;
  std::vector<TextPiece> pieces;
  if (text.empty())
    return pieces;
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    std::optional<std::pair<size_t, int>> match =
        trie.edges.empty() ? std::nullopt : trie.longestAt(text, pos);
    if (!match) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + match->first;
    const AddedToken &token = tokens_[match->second];
    pos = stop; // the scan resumes after the raw match in every case
    if (token.single_word) {
      bool start_space =
          start == 0 || !isUnicodeWordChar(lastCodePoint(text, start));
      bool stop_space = true;
      if (stop < text.size()) {
        uint32_t cp = 0;
        decodeUtf8(text, stop, &cp);
        stop_space = !isUnicodeWordChar(cp);
      }
      if (!start_space || !stop_space)
        continue;
    }
    if (token.lstrip) {
      // Back over the White_Space run that ends at `start`.
      size_t new_start = start;
      while (new_start > 0) {
        size_t prev = new_start - 1;
        while (prev > 0 &&
               (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80)
          --prev;
        uint32_t cp = 0;
        decodeUtf8(text, prev, &cp);
        if (!isUnicodeWhitespace(cp))
          break;
        new_start = prev;
      }
      start = std::max(new_start, start_offset);
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        uint32_t cp = 0;
        size_t n = decodeUtf8(text, stop, &cp);
        if (!isUnicodeWhitespace(cp))
          break;
        stop += n;
      }
    }
    if (start_offset < start)
      pieces.push_back({start_offset, start, -1});
    pieces.push_back({start, stop, token.id});
    start_offset = stop;
  }
  if (start_offset < text.size())
    pieces.push_back({start_offset, text.size(), -1});
  return pieces;
}

} // namespace strata::runtime::tokenizer
