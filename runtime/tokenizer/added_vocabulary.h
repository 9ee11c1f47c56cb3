//===- added_vocabulary.h - added and special tokens ------------------------===//
//
// Part of strata. The "added_tokens" of a tokenizer.json and how Hugging Face
// finds them in text before pre-tokenization (AddedVocabulary):
//   - tokens with `normalized: false` are matched in the raw text, the others
//     in each normalized remaining piece (their own content normalized too);
//   - matching is leftmost-longest (a byte trie walked from each position);
//   - `single_word`: a match is dropped when a word character (\w of UTS #18,
//     as Hugging Face's regex \b) touches it on either side;
//   - `lstrip` / `rstrip`: the match swallows the White_Space run to its left
//     (not past the previous match) / right.
// "special" marks tokens that decode skips on request.
//
// Thread-safety: immutable after construction; all methods are const.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_TOKENIZER_ADDED_VOCABULARY_H
#define STRATA_RUNTIME_TOKENIZER_ADDED_VOCABULARY_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/tokenizer/normalizer.h"

namespace strata::runtime::tokenizer {

/// One entry of "added_tokens".
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  /// What decode spells for this token: the content, normalized when
  /// `normalized` is set (Hugging Face keeps the normalized form). Filled by
  /// AddedVocabulary::create.
  std::string decoded_content;
};

/// A piece of text: either plain text to tokenize (token_id < 0) or the text
/// an added token matched (token_id >= 0).
struct TextPiece {
  size_t begin = 0;
  size_t end = 0;
  int32_t token_id = -1;
};

class AddedVocabulary {
public:
  AddedVocabulary() = default;

  /// Indexes `tokens`; the content of tokens with `normalized` is normalized
  /// with `normalizer` first. Fails on an empty content, a negative id, or
  /// two tokens with one id.
  static StatusOr<AddedVocabulary> create(std::vector<AddedToken> tokens,
                                          const Normalizer &normalizer);

  /// Splits `text` (valid UTF-8) around matches of the non-normalized tokens
  /// (`normalized_pass` false) or of the normalized ones (true).
  std::vector<TextPiece> split(std::string_view text, bool normalized_pass) const;

  const std::vector<AddedToken> &tokens() const { return tokens_; }
  /// The added token with `id`, or nullptr.
  const AddedToken *findById(int32_t id) const;
  /// The id of the added token whose content is `content`.
  std::optional<int32_t> findByContent(std::string_view content) const;
  /// True when some special added token has this content.
  bool isSpecialContent(std::string_view content) const {
    return special_contents_.count(std::string(content)) != 0;
  }

private:
  /// A byte trie over token patterns; node 0 is the root.
  struct Trie {
    std::unordered_map<uint64_t, int> edges; // (node << 8 | byte) -> node
    std::vector<int> token_of_node{-1};      // index into tokens_, or -1
    void insert(std::string_view pattern, int token_index);
    /// Longest pattern starting at text[pos]: its length and token index.
    std::optional<std::pair<size_t, int>> longestAt(std::string_view text,
                                                    size_t pos) const;
  };

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> index_of_id_;
  std::unordered_map<std::string, int32_t> id_of_content_;
  std::unordered_set<std::string> special_contents_;
  Trie raw_trie_;
  Trie normalized_trie_;
};

} // namespace strata::runtime::tokenizer

#endif // STRATA_RUNTIME_TOKENIZER_ADDED_VOCABULARY_H
